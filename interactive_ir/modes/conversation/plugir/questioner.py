"""The questioner: Table 17 (ZS/CR) or Table 18 (with retrieval candidates) prompts -> q_n questions.

q_n questions come from ONE `generate()` call: either q_n copies of the paper's one-question prompt
sampled at temperature 0.7 in one batch (`style="sample"`, the paper's prompt unchanged) or one prompt
asking for a numbered list (`style="list"`). When no valid question comes back, `fallback_question`
builds one from the candidates' captions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from interactive_ir.modes.conversation.plugir.parsers import normalise, parse_questions
from interactive_ir.modes.conversation.plugir.prompts import Dialogue, questioner_prompt


def question_prompts(description: str, dialogue: Dialogue, candidates: Sequence[str] | None, n: int,
                     style: str = "sample", temperature: float = 0.7) -> list:
    """The prompts of one questioner call. `candidates` None -> Table 17, else Table 18.

    "sample" sends n identical prompts (one, at temperature 0, where copies would be identical).
    """
    if style == "list" and n > 1:
        return [questioner_prompt(description, dialogue, candidates, n_questions=n)]
    copies = n if temperature > 0 else 1
    prompt = questioner_prompt(description, dialogue, candidates)
    return [prompt for _ in range(max(1, copies))]


NEAR_COPY = 0.8  # questions whose content words overlap an asked one's this much (Jaccard) count as asked


def near_copy(question: str, asked: Sequence[str], threshold: float = NEAR_COPY) -> bool:
    """True when `question` asks what an earlier question asked in other words ("Is the dog black?" after
    "Is the dog's coat black?"): the content words overlap by `threshold` or more."""
    words = _words(question)
    if not words:
        return False
    for q in asked:
        other = _words(q)
        if other and len(words & other) / len(words | other) >= threshold:
            return True
    return False


def collect_questions(replies: Sequence[str], asked: Sequence[str], limit: int) -> list[str]:
    """The distinct valid questions across replies, in order, at most `limit`, none already asked (nor a
    near copy of one: see `near_copy`)."""
    out: list[str] = []
    for reply in replies:
        for q in parse_questions(reply, asked=[*asked, *out], limit=limit):
            if len(out) < limit and not near_copy(q, [*asked, *out]):
                out.append(q)
        if len(out) >= limit:
            break
    return out


# --- fallback: a question from the candidates' captions -------------------------------------------
_STOP = frozenset(
    "a an the and or but of to in on at for with by from into onto over under near next up down out off is are "
    "was were be been being am it its this that these those there here his her their he she they him them one two "
    "three four five some many several other another each while who whom which what as than then very has have "
    "had do does did not no yes some front top side back behind beside large small big little young old photo "
    "image picture shot view someone something people person man woman men women looking looks stands standing "
    "sits sitting".split())
COLOURS = frozenset("red orange yellow green blue purple pink brown black white gray grey silver gold".split())
GENERIC_QUESTIONS = (
    "What is the main subject of the image?",
    "Where was the photo taken?",
    "What colours stand out in the image?",
    "How many people or animals are in the image?",
    "What is happening in the background?",
    "Is the photo taken indoors or outdoors?",
)


MAX_WORD = 30  # a longer "word" (a caption's run of letters: a flood, a URL's letters) is no word to ask about


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", (text or "").lower()) if 3 <= len(w) <= MAX_WORD and w not in _STOP}


def _question_about(word: str) -> str:
    if word in COLOURS:
        return f"Is there something {word} in the image?"
    if word.endswith("ing"):
        return f"Is anyone {word} in the image?"
    if word.endswith("s") and not word.endswith("ss"):
        return f"Are there {word} in the image?"
    article = "an" if word[0] in "aeiou" else "a"
    return f"Is there {article} {word} in the image?"


def split_words(captions: Sequence[str], known: str = "", asked: Sequence[str] = ()) -> list[str]:
    """Content words of `captions`, best splitter first: present in as close to half of the captions as
    possible (an answer about it then rules out about half); ties go to the word seen first. Words the
    description and dialogue (`known`) mention, words of asked questions, and words in every caption
    (they split nothing) are left out."""
    known_words = _words(known) | {w for q in asked for w in _words(q)}
    docs = [_words(c) for c in captions if c]
    df: Counter = Counter()
    first_seen: dict[str, int] = {}
    for d in docs:
        for w in sorted(d):
            df[w] += 1
    for i, w in enumerate(w for c in captions for w in re.findall(r"[a-z]+", (c or "").lower())):
        first_seen.setdefault(w, i)
    half = len(docs) / 2
    splitting = [w for w in df if w not in known_words and (df[w] < len(docs) or len(docs) == 1)]
    return sorted(splitting, key=lambda w: (abs(df[w] - half), first_seen.get(w, 0)))


def has_word(caption: str, word: str) -> bool:
    """True when `word` is one of the content words of `caption`."""
    return word in _words(caption)


def question_about(word: str) -> str:
    """The yes/no question asking whether the target shows `word`."""
    return _question_about(word)


def fallback_question(captions: Sequence[str], known: str = "", asked: Sequence[str] = ()) -> str:
    """A yes/no question about the word that best splits the candidates' captions (`split_words`).

    Without any such word, the first generic question not asked yet.
    """
    asked_keys = {normalise(q) for q in asked}
    for w in split_words(captions, known, asked):
        q = _question_about(w)
        if normalise(q) not in asked_keys:
            return q
    for q in GENERIC_QUESTIONS:
        if normalise(q) not in asked_keys:
            return q
    return GENERIC_QUESTIONS[0]
