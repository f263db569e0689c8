"""Junk-proof parsers for the replies of the conversation-mode prompts.

Small local models answer a question prompt with a caption, echo the prompt or its few-shot example,
wrap "Uncertain" in a sentence, put several questions on one line, or return nothing. Every parser
here takes any string and returns either something usable or an explicit "nothing usable".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from interactive_ir.modes.conversation.plugir.prompts import ECHO_MARKERS, EXAMPLE_NEW_CAPTION, EXAMPLE_QUESTIONS

UNCERTAIN = "uncertain"  # the context cannot answer the question: keep it
ANSWERED = "answered"  # the context answers it: the question is redundant
EMPTY = "empty"  # no usable reply (empty, or the prompt echoed): keep it, nothing shows it redundant

_INTERROGATIVES = frozenset(
    "what which who whom whose where when why how is are was were do does did can could will would has have had "
    "should shall may might am".split())
_WH = frozenset("what which who whom whose where when why how".split())
_MARKER = re.compile(
    r"^\s*(?:[-*\u2022>#]+|\(?\d{1,2}\s*[.):\]-]|\(?[a-e][.)]\s|q\d*\s*[.:)-]|question\s*\d*\s*[:.)-]|"
    r"assistant\s*:|answer\s*\d*\s*:|new question\s*:|generated question\s*:|output\s*:)\s*",
    re.IGNORECASE)
_EXPLANATION = re.compile(r"\bexplanation\s*:", re.IGNORECASE)
_UNCERTAIN = re.compile(
    r"\buncertain(?:ty)?\b|\bunsure\b|\bunknown\b|\bunclear\b|\bundetermin|\bindetermin|\bcannot\b|\bcan't\b|"
    r"\bcan not\b|\bunable\b|\bimpossible\b|\bno information\b|\bno (?:mention|indication|details?)\b|"
    r"\bnot (?:be )?(?:sure|certain|clear|known|specified|mentioned|stated|provided|given|determined|"
    r"possible|enough|able)\b|\bdoes(?:n't| not) (?:say|mention|specify|state|tell)\b|\bdon't know\b|"
    r"\bdo not know\b|\binsufficient\b|\bn/a\b|\bnot in the context\b", re.IGNORECASE)
_CAPTION_LABEL = re.compile(
    r"^\s*(?:\[?new caption\]?|\[?caption\]?|assistant|answer|output|reconstructed caption|sure[^:\n]{0,60})\s*:\s*",
    re.IGNORECASE)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019*_ "


def normalise(text: str) -> str:
    """Lower case, letters and digits only, single spaces: for comparing questions and captions."""
    return " ".join(re.findall(r"[a-z0-9]+", (text or "").lower()))


_EXAMPLES = frozenset(normalise(q) for q in EXAMPLE_QUESTIONS)
# content words of the reformulation example (Table 20) that a weak model copies into its caption
_EXAMPLE_WORDS = frozenset(
    "guitar lap bench collection bucket flip flops grassy trees worn woman hair".split())


def _has_echo(text: str) -> bool:
    low = text.lower()
    return any(m in low for m in ECHO_MARKERS)


def _strip_markers(piece: str) -> str:
    prev = None
    while prev != piece:
        prev = piece
        piece = _MARKER.sub("", piece.strip().strip(_QUOTES)).strip()
    return piece


def _pieces(line: str) -> list[str]:
    """Candidate questions in one line: each `...?` span (the last sentence of it), or the whole line."""
    spans = re.findall(r"[^?]*\?", line)
    tail = line[sum(len(s) for s in spans):].strip()
    out = []
    for span in spans:
        # "Sure! Here is one: What colour is the car?" -> the last sentence before the "?"
        sentences = re.split(r"(?<=[.!:;])\s+|(?<=\s)-\s+", span.strip())
        out.append(sentences[-1] if sentences else span)
    if not spans and tail:
        out.append(tail)
    return out


def clean_question(piece: str) -> str | None:
    """One question made tidy, or None when `piece` is not a question."""
    q = _strip_markers(piece).strip(_QUOTES)
    q = re.sub(r"\s+", " ", q).strip()
    if not q or _has_echo(q) or "[" in q or "]" in q:
        return None
    words = q.rstrip("?").split()
    if not 3 <= len(words) <= 30:
        return None
    first = re.sub(r"[^a-z]", "", words[0].lower())
    wh_near_start = any(re.sub(r"[^a-z]", "", w.lower()) in _WH for w in words[:4])
    if q.endswith("?"):
        if first not in _INTERROGATIVES and not wh_near_start:
            return None  # "a dog on the beach?" is a caption with a question mark
    elif first in _INTERROGATIVES:
        q = q.rstrip(".!,;: ") + "?"
    else:
        return None
    return q[0].upper() + q[1:]


def parse_questions(reply: str | None, asked: Iterable[str] = (), limit: int | None = None) -> list[str]:
    """The questions in a questioner reply, in order, without duplicates, example copies or `asked` ones.

    Handles numbered lists, several questions on one line, preambles ("Sure! ..."), the chain-of-thought
    "Explanation:" that follows the question, and captions or echoed prompts (no question -> []).
    """
    text = (reply or "").strip()
    if not text:
        return []
    head = _EXPLANATION.split(text, maxsplit=1)[0]
    seen = {normalise(a) for a in asked} | _EXAMPLES
    out = _questions_in(head, seen, limit) if head.strip() else []
    if not out and head != text:  # no question before "Explanation:": small models put it inside
        out = _questions_in(text, seen, limit)
    return out


def _questions_in(text: str, seen: set[str], limit: int | None) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        for piece in _pieces(line):
            q = clean_question(piece)
            key = normalise(q) if q else ""
            if q and key not in seen:
                seen.add(key)
                out.append(q)
                if limit is not None and len(out) >= limit:
                    return out
    return out


def classify_answer(reply: str | None, question: str = "") -> str:
    """A Table 19 reply as UNCERTAIN, ANSWERED or EMPTY.

    "Uncertain", "uncertain.", "The answer is uncertain", "I cannot determine ..." -> UNCERTAIN;
    an empty reply, an echo of the prompt or of the question -> EMPTY; anything else -> ANSWERED.
    """
    text = (reply or "").strip().strip(_QUOTES)
    if not normalise(text):
        return EMPTY
    if _UNCERTAIN.search(text):
        return UNCERTAIN
    if _has_echo(text):
        return EMPTY
    nq = normalise(question)
    if nq and normalise(text).startswith(nq):
        return EMPTY
    return ANSWERED


def parse_caption(reply: str | None, source: str = "", max_words: int = 80) -> str | None:
    """The new caption of a Table 20 reply, or None when there is none (empty, a question, an echo,
    the few-shot example copied).

    Only the first sentence counts (small models ramble on); comma-separated clauses that bring in
    words of the few-shot example absent from `source` (the description and dialogue) are dropped
    ("a dog in the snow, with a slightly worn guitar" -> "a dog in the snow"), and so are repeated
    clauses and a last clause cut short that repeats the start of an earlier one.
    """
    text = (reply or "").strip()
    lines = [ln for ln in (_CAPTION_LABEL.sub("", ln).strip().strip(_QUOTES) for ln in text.splitlines()) if ln]
    if not lines:
        return None
    cap = re.sub(r"\s+", " ", lines[0]).strip()
    while True:  # "New Caption: [New Caption]: ..." and similar stacked labels
        stripped = _CAPTION_LABEL.sub("", cap).strip().strip(_QUOTES)
        if stripped == cap:
            break
        cap = stripped
    cap = re.split(r"(?<=[a-z0-9])[.!;](?:\s|$)", cap, maxsplit=1, flags=re.IGNORECASE)[0].strip()
    if _has_echo(cap) or cap.endswith("?"):
        return None
    n = normalise(cap)
    example = normalise(EXAMPLE_NEW_CAPTION)
    if n == example or (len(n) > 40 and example.startswith(n[:40])):
        return None
    allowed = set(normalise(source).split())
    leaked = _EXAMPLE_WORDS - allowed
    kept: list[str] = []
    seen: list[str] = []
    for clause in (c.strip() for c in cap.split(",")):
        key = normalise(clause)
        if not key or set(key.split()) & leaked:
            continue
        if any(k == key or k.startswith(key) for k in seen):
            continue  # a model in a loop repeats clauses, and the token limit cuts the last one short
        seen.append(key)
        kept.append(clause)
    cap = ", ".join(kept)
    words = cap.split()
    if len(words) < 2:
        return None
    return " ".join(words[:max_words])
