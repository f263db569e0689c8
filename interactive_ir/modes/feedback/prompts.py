"""Prompts and parsers of LLM query editing from relevance feedback (Zhu et al., Table 1).

The expanded query C^t (the original query followed by the captions of relevant images) is rewritten
by one of three subtasks. The paper's prompt is "Given the video descriptions, generate {subtask},
{demonstration}, {query}"; its Table 1 gives the three subtask sentences and one worked example, kept
verbatim below (PAPER_*); we search images, so "video" reads "image". The demonstration's answer
layout ("Topic:", "Taggings:", "Keywords:" + "Description:") is ours: the paper does not print its
few-shot examples, and labelled answers are easier to parse from small models.

Every parser takes the raw reply and returns None (or an empty list) for junk, never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from interactive_ir.backends.fence import CAPS, data_rule, fence_items

# Table 1 of Zhu et al. ("Enhancing Interactive Image Retrieval With Query Rewriting ..."), verbatim.
PAPER_SUBTASKS = {
    "summary": "Given the video descriptions, generate the topic of this video.",
    "keywords": "Given the video descriptions, generate a list of video taggings",
    "cot": "Given the video descriptions, generate a list of keywords and a new description based on generated keywords.",
}
PAPER_EXAMPLE_QUERY = "A kid wearing a hat going inside the bus and 2 persons are standing behind them."
PAPER_EXAMPLE_CAPTIONS = (
    "A firefighter helps a young boy into the back of a fire truck.",
    "A young boy wearing a firefighter hat is standing next to a fire truck.",
)
PAPER_EXAMPLE_OUTPUTS = {
    "summary": "Children wearing hat boarding a fire truck, with the assistance of a firefighter",
    "keywords": "Video of kids, bus, Firefighter, Fire truck, hat.",
    "cot": "keywords: kids, bus, Firefighter, Fire truck, hat A group of kids as they board a firetruck, with the "
           "help of a friendly firefighter. ready for an exciting adventure!",
}

KEYWORDS_PREFIX = "image of"  # the paper prefixes its tags with "Video or image of" (CLIP's class-prompt style)

_SUBTASKS = {m: s.replace("video", "image") for m, s in PAPER_SUBTASKS.items()}
_EXAMPLE_ANSWERS = {
    "summary": "Topic: " + PAPER_EXAMPLE_OUTPUTS["summary"],
    "keywords": "Taggings: kids, bus, firefighter, fire truck, hat",
    "cot": "Keywords: kids, bus, firefighter, fire truck, hat\n"
           "Description: A group of kids as they board a firetruck, with the help of a friendly firefighter.",
}
_ANSWER_LABEL = {"summary": "Topic:", "keywords": "Taggings:", "cot": "Keywords:"}


def _descriptions(texts) -> str:
    """The numbered descriptions, in one data block (`backends.fence`): the visitor's query and the captions."""
    return fence_items("descriptions", texts, start=1, cap=CAPS["description"])


def build_prompt(method: str, expanded: list[str]) -> str:
    """The query-editing prompt for `method` over C^t = [original query, caption, caption, ...]; the texts sit in
    data blocks, and the instructions around them say they are data."""
    if method not in _SUBTASKS:  # one prompt per LLM method of the feedback mode's table entry
        raise ValueError(f"unknown query-editing method {method!r}; choose one of {', '.join(_SUBTASKS)}")
    example = [PAPER_EXAMPLE_QUERY, *PAPER_EXAMPLE_CAPTIONS]
    return (f"{_SUBTASKS[method]}\n{data_rule('descriptions')}\n\n"
            f"Example.\nDescriptions:\n{_descriptions(example)}\n{_EXAMPLE_ANSWERS[method]}\n\n"
            f"Now the descriptions to use.\nDescriptions:\n{_descriptions(expanded)}\n{_ANSWER_LABEL[method]}")


# --- parsing ---------------------------------------------------------------------------------------

_LABEL = re.compile(r"^\s*(?:\*\*)?(topic|summary|description|new description|query|answer|output|keywords?|"
                    r"taggings?|tags?|assistant|response)(?:\*\*)?\s*[:\-]\s*(?:\*\*)?\s*", re.I)
_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.)])\s*")
_PREFIX = re.compile(r"^\s*(?:a\s+)?(?:video\s+or\s+image|image\s+or\s+video|videos?|images?|photos?|pictures?)"
                     r"\s+of\s+", re.I)
_JUNK_LINE = re.compile(r"^\s*(?:example\.?|descriptions?:?|now the descriptions to use\.?|given the image "
                        r"descriptions.*|text between a <<<.*|<<</?descriptions>>>.*)\s*$", re.I)
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]*")
_PREAMBLE = re.compile(r"^\s*(?:sure|okay|ok|certainly|here is|here's|here are|the (?:topic|answer) is:?$)|:\s*$", re.I)


def _lines(reply: str) -> list[str]:
    text = re.sub(r"```[a-z]*", "", reply or "")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not _JUNK_LINE.match(ln)]


_LEAD_IN = re.compile(r"^\s*(?:so,?\s+)?(?:the|a|this|my)?\s*(?:main\s+|new\s+)?(?:topic|summary|description|query|"
                      r"answer)(?:\s+of\s+(?:this|the)\s+(?:image|images|picture|descriptions?))?\s+(?:is|would be)"
                      r"\s*:?\s*", re.I)


def _clean(s: str) -> str:
    s = _BULLET.sub("", s)
    s = _LABEL.sub("", s)
    s = _LEAD_IN.sub("", s)
    s = s.strip().strip("*").strip().strip('"\'“”‘’`').strip()
    return re.sub(r"\s+", " ", s)


def _is_echo(s: str, inputs: list[str]) -> bool:
    """True when `s` copies an input description or the paper's worked example."""
    low = s.lower().rstrip(". ")
    if len(low) < 3:
        return True
    known = [*inputs, PAPER_EXAMPLE_QUERY, *PAPER_EXAMPLE_CAPTIONS, PAPER_EXAMPLE_OUTPUTS["summary"],
             "A group of kids as they board a firetruck, with the help of a friendly firefighter."]
    return any(low == k.lower().rstrip(". ") for k in known)


def _sentence_ok(s: str, min_words: int) -> bool:
    return len(_WORDS.findall(s)) >= min_words


def _limit_words(s: str, n: int) -> str:
    words = s.split()
    return " ".join(words[:n])


def parse_summary(reply: str, inputs: list[str] = (), max_words: int = 60) -> str | None:
    """The topic sentence: the first labelled or plain line that is not an echo; None for junk."""
    inputs = list(inputs)
    lines = _lines(reply)
    labelled = [ln for ln in lines if re.match(r"^\s*(?:\*\*)?(topic|summary)", ln, re.I)]
    for ln in labelled + lines:
        if _PREAMBLE.search(ln) and not _LABEL.match(ln):
            continue
        s = _clean(ln)
        if _sentence_ok(s, 2) and not _is_echo(s, inputs):
            return _limit_words(s, max_words)
    return None


def split_keywords(text: str, limit: int = 15) -> list[str]:
    """Tags from a comma/semicolon/newline/bullet separated list; long phrases and duplicates dropped."""
    out: dict[str, str] = {}
    for part in re.split(r"[,;\n]|\s\|\s|\d{1,2}[.)]\s", text or ""):
        p = _PREFIX.sub("", _clean(part)).strip(" .!?:")
        p = re.sub(r"^(?:and|or)\s+", "", p, flags=re.I)
        words = _WORDS.findall(p)
        if not words or len(p.split()) > 5 or len(p) < 2:
            continue
        if p.lower() in {"keywords", "keyword", "taggings", "tags", "description", "topic", "none"}:
            continue
        out.setdefault(p.lower(), p.lower())
        if len(out) >= limit:
            break
    return list(out.values())


def _after_label(lines: list[str], names: str) -> tuple[int, str] | None:
    pat = re.compile(rf"^\s*(?:\*\*)?(?:{names})(?:\*\*)?\s*[:\-]\s*(?:\*\*)?\s*(.*)$", re.I)
    for i, ln in enumerate(lines):
        m = pat.match(ln)
        if m:
            return i, m.group(1).strip()
    return None


def parse_keywords(reply: str, limit: int = 15) -> list[str]:
    """Tags of a keywords reply (a "Taggings:" line when present, else the whole reply)."""
    lines = _lines(reply)
    found = _after_label(lines, "taggings?|tags?|keywords?")
    if found is not None:
        i, rest = found
        text = rest or (lines[i + 1] if i + 1 < len(lines) else "")
        kws = split_keywords(text, limit)
        if kws:
            return kws
    block = []  # the leading run of lines that read as tag lists
    for ln in lines:
        if _PREAMBLE.search(ln) or not split_keywords(ln, limit):
            if block:
                break
            continue
        block.append(ln)
    kws = split_keywords("\n".join(block), limit)
    return kws if len(kws) >= 2 else []


def keywords_query(keywords: list[str], prefix: str = KEYWORDS_PREFIX) -> str:
    return f"{prefix} {', '.join(keywords)}" if keywords else ""


@dataclass(frozen=True)
class CotResult:
    keywords: list[str]  # the extracted keywords ([] when none)
    description: str | None  # the new description, None when the reply had none usable

    @property
    def query(self) -> str | None:
        """The description; else "image of <keywords>"; else None."""
        return self.description or (keywords_query(self.keywords) or None)


def parse_cot(reply: str, inputs: list[str] = (), max_words: int = 60) -> CotResult:
    """Keywords then a new description (paper layout "keywords: a, b, c A sentence..." accepted too)."""
    inputs = list(inputs)
    lines = _lines(reply)
    kw_at = _after_label(lines, "keywords?|taggings?|tags?")
    desc_at = _after_label(lines, "new description|description|summary|query")
    keywords: list[str] = []
    description = None
    if kw_at is not None:
        i, rest = kw_at
        if desc_at is None and rest:
            # "kids, bus, hat A group of kids ...": the sentence starts at the first capital after the last comma
            m = re.match(r"^(.*,\s*[a-z][\w -]*?)\s+([A-Z](?:[a-z]|\s).*)$", rest)
            if m and _sentence_ok(m.group(2), 3):
                rest, description = m.group(1), _clean(m.group(2))
        keywords = split_keywords(rest)
    if desc_at is not None:
        j, rest = desc_at
        description = _clean(rest) or (_clean(lines[j + 1]) if j + 1 < len(lines) else None)
    elif description is None and kw_at is not None:
        for ln in lines[kw_at[0] + 1:]:
            s = _clean(ln)
            if _sentence_ok(s, 3):
                description = s
                break
    elif description is None:
        description = parse_summary(reply, inputs, max_words)
    if description is not None and (not _sentence_ok(description, 3) or _is_echo(description, inputs)):
        description = None
    return CotResult(keywords, _limit_words(description, max_words) if description else None)


def parse_rewrite(method: str, reply: str, inputs: list[str], prefix: str = KEYWORDS_PREFIX) -> str | None:
    """The new query text for `method`, or None when the reply is junk."""
    if method == "summary":
        return parse_summary(reply, inputs)
    if method == "keywords":
        return keywords_query(parse_keywords(reply), prefix) or None
    if method == "cot":
        r = parse_cot(reply, inputs)
        return r.description or (keywords_query(r.keywords, prefix) or None)
    raise ValueError(f"unknown query-editing method {method!r}")
