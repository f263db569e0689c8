"""With an LLM, the belief's yes/no question is written by the LLM about the belief's candidate groups
(PlugIR's retrieval context, applied to the posterior): the most probable images split into those whose
captions name the most informative word and those whose captions do not (`questions.best_word`), and the
LLM writes one yes/no question whose answer tells the two groups apart. Its answer is evidence as the rule
question's would be (the word's caption likelihood and the word said), so a question the LLM words badly
costs nothing. Three steps: `build_prompt` -> `llm.generate` -> `parse_question`; junk, a reply that is no
yes/no question, or a failing backend gives None and the rule question is asked instead."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from interactive_ir.backends.fence import CAPS, data_rule, fence, fence_items
from interactive_ir.errors import BackendError
from interactive_ir.retrieval.words import content_words

log = logging.getLogger(__name__)

MAX_CAPTIONS = 5  # captions shown to the LLM per group
MAX_WORDS = 20  # a longer reply is no question a person answers with yes or no
_START = re.compile(r"^(is|are|does|do|was|were|can|could|has|have|did)\b", re.I)
_PREFIX = re.compile(r"^\s*(?:question\s*[:\-]|q\s*[:\-]|\d+[.)]|[-*•])\s*", re.I)

PROMPT = """You help someone find one photo they have in mind. The search has two groups of likely photos.
{rule}
Group A (their captions mention {word}):
{group_a}
Group B:
{group_b}
Write one short yes/no question, in plain English, whose answer tells whether the photo is like group A or
group B. Do not mention groups or captions. Reply with the question only."""


def build_prompt(word: str, group_a: Sequence[str], group_b: Sequence[str]) -> str:
    """The prompt asking for a yes/no question telling `group_a` (captions naming `word`) from `group_b`; the word and
    the captions (an index's, a dataset's: untrusted) sit in data blocks (`backends.fence`)."""
    return PROMPT.format(rule=data_rule("word", "group a", "group b"), word=fence("word", word),
                         group_a=fence_items("group a", [c for c in group_a if c], CAPS["caption"], start=1,
                                             max_items=MAX_CAPTIONS, empty="(no captions)"),
                         group_b=fence_items("group b", [c for c in group_b if c], CAPS["caption"], start=1,
                                             max_items=MAX_CAPTIONS, empty="(no captions)"))


def parse_question(raw: object, word: str) -> str | None:
    """The first line of `raw` that is a yes/no question naming `word` (by stem), tidied; None for junk."""
    if not isinstance(raw, str):
        return None
    want = set(content_words(word))
    for line in raw.replace("\r", "\n").split("\n"):
        text = _PREFIX.sub("", line).strip().strip("\"'`*").strip()
        if "?" not in text:
            continue
        text = text[: text.index("?") + 1]
        if not _START.match(text) or len(text.split()) > MAX_WORDS or not want <= set(content_words(text)):
            continue
        return text[0].upper() + text[1:]
    return None


def written_question(llm, word: str, group_a: Sequence[str], group_b: Sequence[str]) -> str | None:
    """The LLM's yes/no question about `word`'s groups, or None (a failing backend, or a reply that is junk)."""
    try:
        raw = llm.generate([build_prompt(word, group_a, group_b)], temperature=0.0, max_tokens=48)[0]
    except BackendError as e:
        log.warning("the LLM could not write the belief's question (%s); asking the rule question", e)
        return None
    return parse_question(raw, word)
