"""The model-free simulated user's answers: what was asked, from what the user knows, in a few words.

`rule_answer(context, question)` answers from `context`, the user's knowledge (`TargetKnowledge.captions`:
the description, then the held-out captions; never the index caption):

- yes/no questions ("Is there a dog?"): "yes" when every word the question names occurs in the knowledge
  (verb forms and plurals joined: "running" matches "runs"; "outdoors", "animal", "person", "vehicle"
  match any word of their list), "no" when one does not;
- alternatives ("Is it red or blue?", "indoors or outdoors?"): the alternative the knowledge names;
- open questions, by what they ask (`question_kind`): a colour ("what colour is the dog?" -> "black"), a
  count ("how many dogs?" -> "two"), a place ("where ..." -> "in the snow"), an action ("what is the dog
  doing?" -> "jumps into a lake"), a person ("who ..." -> "a young boy"), a kind ("what kind of dog?" ->
  "black dog"), else a thing: a few words around the question's content words in the caption sharing
  most of them ("what is the dog holding?" -> "a red stick").

"not sure" (`NOT_SURE`) when the knowledge has nothing on it: the question's subject is in no caption,
it asks what captions do not say (a name, a brand, the time: `words.UNKNOWABLE`), or it is junk. Never
a whole caption. The extractors are in `evaluation.phrases`, the word lists in `evaluation.words`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from interactive_ir.evaluation.phrases import (
    PUNCT,
    SHORT_WORDS,
    Text,
    action_phrase,
    age_phrase,
    alternative_named,
    colour_phrase,
    count_phrase,
    kind_phrase,
    person_phrase,
    place_phrase,
    short_phrase,
    subject_of,
    thing_phrase,
)
from interactive_ir.evaluation.words import CATEGORIES, QUESTION_FILLER, UNKNOWABLE, content_words, norm, tokens

__all__ = ["NOT_SURE", "SHORT_WORDS", "is_yes_no", "question_kind", "rule_answer"]

NOT_SURE = "not sure"

_YES_NO = re.compile(r"^\s*(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should|am)\b", re.I)
_GENERIC = frozenset("visible present there thing something anything someone anyone".split())
# ("Are there people ...?" asks whether people are there: `Text.has` meets it with any person word)


def is_yes_no(question: str) -> bool:
    """A question answered by yes or no ("Is there a dog?"), not one offering alternatives ("Is it red or blue?")."""
    return bool(_YES_NO.match(question or "")) and " or " not in f" {(question or '').lower()} "


# what an open question asks for, by the first pattern it matches (in this order); else "thing"
_KINDS = (
    ("colour", r"\bcolou?rs?\b"),
    ("age", r"\bhow old\b|\bwhat age\b"),
    ("count", r"\bhow many\b|\bnumber of\b|\bhow much\b"),
    ("place", r"\bwhere\b|\bwhat (?:kind of |sort of |type of )?(?:place|location|setting)\b"),
    ("action", r"\bdoing\b|\bhappening\b|\bgoing on\b|\bwhat (?:is|are) \w+(?: \w+)? (?:do|up to)\b"),
    ("person", r"\bwho\b|\bwhat (?:person|people)\b"),
    ("kind", r"\b(?:kind|type|sort|breed) of\b"),
)


def question_kind(question: str) -> str:
    """What an open question asks for: colour, count, age, place, action, person, kind or thing."""
    q = " ".join(tokens(question))
    return next((kind for kind, pattern in _KINDS if re.search(pattern, q)), "thing")


# --- the answer --------------------------------------------------------------------------------------------


def _order(text: Text, question: str, subject: set[str], similarity) -> tuple[list[int], float]:
    """Captions by how much of the question they share (description first on ties), and the best score."""
    n = len(text.captions)
    if similarity is not None and not getattr(similarity, "model_free", False) and n:
        scores = [float(x) for x in similarity.matrix([question], text.captions)[0]]
    else:
        scores = [float(len(subject & set(rs))) for rs in text.roots]
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    return order, (scores[order[0]] if n else 0.0)


def _not_whole(answer: str, text: Text) -> str:
    """Never a whole caption: a short caption that is the answer loses its article, then its first word."""
    whole = {norm(c) for c in text.captions}
    words = answer.split()
    while words and norm(" ".join(words)) in whole:
        words = words[1:]
    return " ".join(words)


def _guess(text: Text, question: str, subject: set[str], order: list[int]) -> str:
    """Without "not sure": a few words of the best caption (its first person, animal or thing)."""
    got = thing_phrase(text, question, subject, order) or thing_phrase(text, "what is in the picture", set(), order)
    return got or short_phrase(text.toks[order[0]], stop_at_prep=False) or NOT_SURE


def rule_answer(context: Sequence[str], question: str, allow_uncertain: bool = True, similarity=None,
                threshold: float = 0.25) -> tuple[str, bool]:
    """(answer, is_not_sure): the model-free answer to `question` from the user's knowledge `context` (see the
    module docstring). With an embedder `similarity`, captions are ranked by cosine and "not sure" below
    `threshold`; without `allow_uncertain` the best guess replaces "not sure" (still a few words)."""
    text = Text(context)
    question = question if isinstance(question, str) else ""
    if not text.captions:
        return NOT_SURE, True
    if is_yes_no(question):
        words = [w for w in content_words(question) if w not in _GENERIC and w not in QUESTION_FILLER]
        if words:
            return ("yes" if all(text.has(w) for w in words) else "no"), False
        if allow_uncertain:  # "Is it?": names nothing
            return NOT_SURE, True
    subject = subject_of(question)
    order, best = _order(text, question, subject, similarity)
    answer = _open(text, question, subject, order, similarity, best, threshold)
    if answer:
        answer = _not_whole(answer, text)
    if answer:
        return answer, False
    if allow_uncertain:
        return NOT_SURE, True
    return _not_whole(_guess(text, question, subject, order), text) or NOT_SURE, False


def _open(text: Text, question: str, subject: set[str], order: list[int], similarity, best: float,
          threshold: float) -> str | None:
    q = [t for t in tokens(question) if t not in PUNCT]
    if not q or not any(c.isalpha() for c in question):
        return None
    if any(w in UNKNOWABLE and not text.has(w) for w in q):
        return None  # a name, a brand, the time...: captions do not say
    kind = question_kind(question)
    if "or" in q and (is_yes_no(question.replace(" or ", " ")) or q[0] == "which"):
        return alternative_named(text, question) or None  # "Is it red or blue?"
    if kind == "age":
        return age_phrase(text, subject)
    if kind == "colour":
        return colour_phrase(text, subject)
    if kind == "count":
        return count_phrase(text, subject) if subject else None
    if kind == "place":
        return place_phrase(text, subject, order)
    if kind == "action":
        return action_phrase(text, subject, order)
    if kind == "person":
        return person_phrase(text, subject, order)
    if kind == "kind":
        return kind_phrase(text, subject)
    embedder = similarity is not None and not getattr(similarity, "model_free", False)
    if embedder and best < threshold:
        return None
    if not embedder and subject and best <= 0 and not any(w in CATEGORIES for w in q):
        return None
    return thing_phrase(text, question, subject, order)
