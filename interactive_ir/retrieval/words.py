"""Words of a text: content words (stop words out) and a crude stemmer, shared by the engine (what a user
has said already) and the model-free simulated user (`evaluation.words`)."""

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


# what a user says to steer a search but that names nothing in the image ("like this one, but more ...")
STEERING = frozenset("like one similar same but make change instead rather more less bit lot much kind sort "
                     "please want looking look find show different sure unsure know remember idea maybe".split())
NEGATION = re.compile(r"\b(?:instead of|rather than|without|not|no|isn't|aren't|doesn't|don't|never|minus)\b|(?<!\w)-(?=\w)")
_END_NEGATION = re.compile(r"[,;.]|\b(?:but|and|with|instead|plus)\b")


def split_statement(text: str) -> tuple[str, str]:
    """(what the target shows, what it does not) in a user's statement: "black dog on a lake instead of
    brown grass, not at night" -> ("black dog on a lake", "brown grass at night"). A negation ("not",
    "no", "without", "instead of", "rather than", a leading "-") runs to the next comma, "but", "and" or
    "with"; a "-" before a word negates that word only ("dogs -leash")."""
    text = text or ""
    pos: list[str] = []
    neg: list[str] = []
    at = 0
    for m in NEGATION.finditer(text):
        if m.start() < at:
            continue
        pos.append(text[at:m.start()])
        if m.group() == "-":  # "-leash": the one word
            word = re.match(r"\w+", text[m.end():])
            stop = m.end() + (word.end() if word else 0)
        else:
            end = _END_NEGATION.search(text, m.end())
            stop = end.start() if end else len(text)
        neg.append(text[m.end():stop])
        at = stop
    pos.append(text[at:])
    clean = lambda parts: " ".join(" ".join(parts).split())  # noqa: E731
    return clean(pos), clean(neg)


def new_words(text: str, said: set[str]) -> list[str]:
    """The surface forms of `text`'s content words that are not in `said` (stems) and name something (not
    "like", "same", "more"...), in order."""
    return [form for w, form in surface_words(text).items() if w not in said and form not in STEERING and w not in STEERING]
