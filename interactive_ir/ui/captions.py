"""Captions in plain words for the page: `plain_caption(text, max_chars)`.

Index captions are often metadata: the demo gallery's are "clipart of Bulldog Puppy; keywords: mammal, dog,
...", other collections carry file names ("IMG_0042.jpg", "help-books-aj.svg"), web addresses, or the
tokenised text of COCO and Flickr ("a dog runs across the grass ."). What a person reads on a result card or
a picture question's option is the description alone, in sentence case, cut at a word boundary. A long
description (DOCCI's paragraphs, 136 words on average) gives a card its first sentence, and every short
line drops the camera's framing ("A close-up, eye-level view of a red mug ..." -> "A red mug ...").

Display only: the index, the retrieval and the evaluation keep the captions as they are.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
LONG_CHARS = 160  # a text longer than this with several sentences is a paragraph (DOCCI): a card shows its lead
_KEYWORDS = re.compile(r"[;,.\s]*\b(?:key\s?words?|tags)\s*:.*$", re.IGNORECASE | re.DOTALL)
_PREFIX = re.compile(r"^\s*(?:an?\s+)?(?:clip\s?-?art|clip-art|illustration|drawing|picture|image|photo)\s+of\s+",
                     re.IGNORECASE)
_URL = re.compile(r"\[?\s*(?:https?://|www\.)\S+?\s*\]?(?=\s|$|[;,)])", re.IGNORECASE)
_FILE_EXT = re.compile(r"\.(?:jpe?g|png|gif|svg|webp|bmp|tiff?)\b", re.IGNORECASE)
_CAMERA = re.compile(r"\b(?:IMG|DSC[NF]?|DCIM|PXL|P|SAM|GOPR|MVIMG)[_-]?\d{3,}\w*\b", re.IGNORECASE)
_SPACE_BEFORE = re.compile(r"\s+([.,;:!?'’)\]]|n't\b|'s\b)")
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\[\s*\]")
_SPACES = re.compile(r"\s+")
# the end of a sentence: . ! or ? after a word, a number or a closing quote, before the next sentence's capital
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\"'’])[.!?](?=\s+[\"'“‘(]?[A-Z])")
# a photo description's framing: "A close-up view of", "An outdoor, eye-level, medium shot of", "A photo of"
_FRAMING = re.compile(r"^(?:an?|the)\s+(?:[\w-]+,?\s+){0,5}?(?:view|shot|photo(?:graph)?|picture|image|close[- ]?up)"
                      r"\s+of\s+(?=\S+\s+\S)", re.IGNORECASE)


def _file_name_words(text: str) -> str:
    """'help-books-aj.svg' -> 'help books aj': a caption that is one file-name-like token becomes its words."""
    text = _FILE_EXT.sub("", text)
    if " " not in text.strip() and re.search(r"[_-]", text):
        text = re.sub(r"[_-]+", " ", text)
    return re.sub(r"_+", " ", text)


def _title_like(words: list[str]) -> bool:
    """Most words Capitalised ("Bulldog Puppy", "Stack of Books"): a title, not a sentence."""
    alpha = [w for w in words if w[:1].isalpha() and len(w) > 3 or (w[:1].isupper() and len(w) > 1)]
    caps = [w for w in alpha if w[:1].isupper()]
    return len(alpha) >= 2 and len(caps) >= 0.6 * len(alpha)


def _lower_title_words(text: str, keep_first: bool) -> str:
    """Capitalised words lower-cased (not ALL-CAPS ones like "US", nor mixed ones like "iPhone")."""
    out = []
    for n, w in enumerate(text.split(" ")):
        if (n or not keep_first) and w != "I" and re.fullmatch(r"[A-Z](?:[a-z'’-]*[a-z])?[.,;:!?)]*", w):
            w = w[0].lower() + w[1:]
        out.append(w)
    return " ".join(out)


def sentence_case(text: str) -> str:
    """First letter up; a title's other Capitalised words down ("Stack of Books" -> "Stack of books")."""
    parts = re.split(r"(:\s+)", text, maxsplit=1)
    fixed = []
    for n, part in enumerate(parts):
        if n % 2 or not part:
            fixed.append(part)
            continue
        if _title_like(part.split()):
            part = _lower_title_words(part, keep_first=n == 0)
        elif n:  # after "Title: ": the description goes on in lower case ("Shield: a simple shield")
            part = _lower_title_words(part.split(" ", 1)[0], keep_first=False) + (
                " " + part.split(" ", 1)[1] if " " in part else "")
        fixed.append(part)
    text = "".join(fixed)
    return text[:1].upper() + text[1:]


def _title_and_description(text: str) -> str:
    """"Shield: A simple shield" -> "A simple shield": a description that repeats its title stands alone."""
    title, sep, desc = text.partition(": ")
    if sep and desc and title.strip().lower() in desc.lower():
        return desc
    return text


def cut(text: str, max_chars: int) -> str:
    """`text` cut at the last word boundary within `max_chars` (ellipsis included), with "…"."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    head = text[:max_chars - len(ELLIPSIS) + 1]
    space = head.rfind(" ")
    head = head[:space] if space > max_chars // 3 else head[:max_chars - len(ELLIPSIS)]
    return head.rstrip(" ,;:.-–—(") + ELLIPSIS


def plain_caption(text: str | None, max_chars: int = 0) -> str:
    """`text` in plain words: no "keywords: ..." list, no "clipart of", no file names or web addresses,
    single spaces, no space before punctuation, sentence case; cut at a word boundary with "…" when longer
    than `max_chars` (0: never cut). "" for an empty caption (the caller shows something else then)."""
    text = _SPACES.sub(" ", str(text or "")).strip()
    if not text:
        return ""
    text = _KEYWORDS.sub("", text)
    text = _PREFIX.sub("", text)
    text = _URL.sub("", text)
    text = _CAMERA.sub("", text)
    text = _file_name_words(text)
    text = _EMPTY_BRACKETS.sub("", text)
    text = _SPACES.sub(" ", text).strip()
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = re.sub(r"([.!?])\1{3,}", r"\1\1\1", text)  # "!!!!!" -> "!!!"
    text = text.strip(" ;,:-–—")
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()  # a caption is a label, not a sentence: no full stop ("... the grass .")
    lead = _lead(text, max_chars)
    if lead:  # a sentence, as written (its proper nouns kept): only its first letter up
        return cut(lead[:1].upper() + lead[1:], max_chars)
    if max_chars > 0 and _FRAMING.match(text):  # a short line: the camera's framing is not what tells photos apart
        text = _FRAMING.sub("", text)
        return cut(text[:1].upper() + text[1:], max_chars)
    text = _title_and_description(text)
    if not text:
        return ""
    return cut(sentence_case(_shorter(text, max_chars)), max_chars)


def _lead(text: str, max_chars: int) -> str:
    """A paragraph too long to show (several sentences, over `LONG_CHARS`): its first sentence without the
    camera's framing, which is what tells one photo from the next on a card (the whole text stays the
    tooltip and is what search reads). "" for anything shorter: a caption or a title is cleaned as it is."""
    if max_chars <= 0 or len(text) <= max(max_chars, LONG_CHARS):
        return ""
    end = _SENTENCE_END.search(text)
    if end is None:
        return ""
    first = text[:end.start()].strip()
    return _FRAMING.sub("", first) or first


def _shorter(text: str, max_chars: int) -> str:
    """A "Title: description" too long to show whole: the description alone when it fits, else the title
    when it fits, else the whole (then cut)."""
    title, sep, desc = text.partition(": ")
    if max_chars <= 0 or len(text) <= max_chars or not sep:
        return text
    for part in (desc, title):
        if 2 < len(part) <= max_chars:
            return part
    return text
