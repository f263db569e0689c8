"""Reference questioners of the evaluation, known to be bad or good, so the benchmark can be checked.

They run without an LLM and search by plain text (`engine.search_text`), so every difference between
them comes from what they ask:

- `random_question`: a seeded question about something unrelated to the search ("Is there a piano?").
  Its answers (mostly "no") only add noise to the query: a benchmark that cannot rank this below a
  grounded questioner cannot rank anything.
- `attribute_question`: a grounded yes/no question on the word that best splits the current candidates'
  captions (the one closest to half of them), never one already asked or in the query. A "yes" adds the
  word to the query; a "no" adds nothing.
- the other known-bad strategies, played in `evaluation.protocols` (never offered in the web app):
  `wrong-marks` (the relevance actor's marks inverted), `inverted-pull` (the engine's grounded questions
  answered with the option least like the target, the opposite yes/no: an honest engine fed adversarial
  clicks) and `shuffled-page` (k random unseen images a round). With `random-questions` they must score
  below paging on the headline metrics (`evaluation.headline`); see tests/unit/evaluation/test_eval_ranking.py.
- `oracle_query`: not a questioner but a user who volunteers one more held-out caption each round
  (description, caption 1, caption 2, ...): the most a round of text can tell.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from interactive_ir.evaluation.words import content_words, surface_words

IRRELEVANT = (
    "Is there a piano?", "Is there a laptop on a desk?", "Is there a birthday cake?", "Is there a traffic light?",
    "Is there a television?", "Is there a clock on the wall?", "Is there a refrigerator?", "Is there a microwave?",
    "Is there a giraffe?", "Is there a computer keyboard?", "Is there a toothbrush?", "Is there a pizza?",
    "Is there a violin?", "Is there a telephone?", "Is there a bookshelf?", "Is there a zebra?",
    "Is there an umbrella stand?", "Is there a candle?", "Is there a teapot?", "Is there a sofa?",
)


def random_question(key: str, round_: int, asked: Sequence[str] = ()) -> str:
    """A question from `IRRELEVANT`, seeded by (key, round), not asked before in the search."""
    pool = [q for q in IRRELEVANT if q not in asked] or list(IRRELEVANT)
    return random.Random(f"{key}:{round_}").choice(pool)


def attribute_question(candidate_captions: Sequence[str], known_text: str, asked_words: Sequence[str] = ()
                       ) -> tuple[str, str] | None:
    """(question, word): a yes/no question on the content word found in the share of the candidates' captions
    closest to one half (ties: the more frequent, then the first seen), leaving out words of `known_text`
    and `asked_words`. None when no word qualifies."""
    known = set(content_words(known_text)) | set(asked_words)
    df: dict[str, int] = {}
    surface: dict[str, str] = {}
    for cap in candidate_captions:
        for w, form in surface_words(cap).items():
            if w in known or w.isdigit():
                continue
            df[w] = df.get(w, 0) + 1
            surface.setdefault(w, form)
    n = len(candidate_captions)
    usable = [w for w, c in df.items() if 0 < c < n] or list(df)
    if not usable:
        return None
    order = list(surface)
    best = min(usable, key=lambda w: (abs(df[w] / n - 0.5), -df[w], order.index(w)))
    return f"Is there {surface[best]}?", best


def attribute_query(description: str, yes_words: Sequence[str]) -> str:
    """The query after some attribute answers: the description and every word answered "yes"."""
    return " ".join([description, *yes_words]) if yes_words else description


def oracle_query(captions: Sequence[str], round_: int) -> str:
    """The description and the first `round_` held-out captions, ChatIR's ', ' layout (repeats none)."""
    return ", ".join(captions[: round_ + 1])


def candidate_captions(engine, text: str, n: int, captions_of: Callable[[Sequence[str]], list[str]]) -> list[str]:
    """The system's view: the index captions of the top `n` images for `text` over the whole index."""
    r = engine.retriever
    hits = r.search_row(r.text_query_row(r.encode_text(text)), n)
    return [c for c in captions_of([h.id for h in hits]) if c]
