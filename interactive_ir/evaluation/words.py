"""Words for the model-free simulated user: content words, a crude stemmer, and loop cutting."""

from __future__ import annotations

import re

STOP = frozenset(
    "a an the and or of to in on at for with by from into onto over under near next up down out off as is are was "
    "were be been being it its this that these those there here he she they them his her their him who whom whose "
    "what which where when why how do does did can could should would will shall may might must have has had not "
    "through no yes any some each other another than then very just also too while image picture photo "
    "shows showing seen see".split()
)
WORD = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """A crude singular: 'dogs' -> 'dog', 'glasses' -> 'glass', 'grass' stays."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """Lower-case stemmed words that carry content, in order, without repeats."""
    seen: dict[str, None] = {}
    for w in WORD.findall((text or "").lower()):
        if w not in STOP and len(w) > 1:
            seen.setdefault(stem(w), None)
    return list(seen)


def surface_words(text: str) -> dict[str, str]:
    """Stemmed content word -> its first surface form in `text` ('dogs' -> {'dog': 'dogs'})."""
    out: dict[str, str] = {}
    for w in WORD.findall((text or "").lower()):
        if w not in STOP and len(w) > 1:
            out.setdefault(stem(w), w)
    return out


def norm(text: str) -> str:
    return " ".join(WORD.findall((text or "").lower()))


def cut_repetition(text: str, n: int = 4) -> str:
    """Cut a small model's loop: everything from the first repeat of an n-word sequence on."""
    words = text.split()
    seen: set[tuple[str, ...]] = set()
    for i in range(len(words) - n + 1):
        gram = tuple(norm(w) for w in words[i:i + n])
        if gram in seen:
            return " ".join(words[:i]).rstrip(" ,;:-")
        seen.add(gram)
    return text
