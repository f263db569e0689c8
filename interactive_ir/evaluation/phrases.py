"""Phrases for the model-free answerer (`answers.rule_answer`): the user's knowledge as words, and one
extractor per kind of open question, each returning the few words of the knowledge that answer it, or
None when the knowledge says nothing on it. The word lists are in `evaluation.words`."""

from __future__ import annotations

from collections.abc import Sequence

from interactive_ir.evaluation.words import (
    AGES,
    CATEGORIES,
    COLOURS,
    GROUPS,
    INDOOR,
    NOT_VERBS,
    NUMBERS,
    OUTDOOR,
    PEOPLE,
    PLACE_PREPS,
    PLACES,
    QUESTION_FILLER,
    RELATIONS,
    STOP,
    STOP_PHRASE,
    root,
    tokens,
)

SHORT_WORDS = 5  # an open answer has at most this many words
_ARTICLES = frozenset({"a", "an", "the"})
PUNCT = frozenset(",;.!?")
_CONCEPTS = {"outdoor": OUTDOOR, "outdoors": OUTDOOR, "outside": OUTDOOR, "indoor": INDOOR, "indoors": INDOOR,
             "inside": INDOOR, "animal": CATEGORIES["animal"], "person": PEOPLE, "people": PEOPLE,
             "vehicle": CATEGORIES["vehicle"]}  # a question word met by any word of its list


# --- the knowledge as words ---------------------------------------------------------------------------------


class Text:
    """The knowledge, tokenised once: each caption's tokens and their matching keys (`words.root`)."""

    def __init__(self, context: Sequence[str]):
        self.captions = [c for c in context if isinstance(c, str) and c.strip()]
        self.toks = [tokens(c) for c in self.captions]
        self.roots = [[root(t) for t in ts] for ts in self.toks]
        self.known = {r for rs in self.roots for r in rs}

    def has(self, word: str) -> bool:
        concept = _CONCEPTS.get(word)
        if concept is not None and any(root(w) in self.known for w in concept):
            return True
        return root(word) in self.known

    def occurrences(self, subject: set[str], order: Sequence[int] | None = None) -> list[tuple[int, int]]:
        """(caption, position) of every token whose key is in `subject`, captions in `order`."""
        order = range(len(self.toks)) if order is None else order
        return [(ci, p) for ci in order for p, r in enumerate(self.roots[ci]) if r in subject]


def subject_of(question: str) -> set[str]:
    """The matching keys of what the question names (its content words less the words that ask); a category
    word ("animal") stands for its members."""
    out: set[str] = set()
    for w in tokens(question):
        if w in PUNCT or w in STOP or w in QUESTION_FILLER or w in COLOURS or len(w) < 2:
            continue
        members = CATEGORIES.get(w) or (PEOPLE if w in ("people", "persons") else None)
        out |= {root(m) for m in members} if members else {root(w)}
    return out


def _is_verb(tok: str) -> bool:
    return len(tok) > 4 and tok.endswith("ing") and tok not in NOT_VERBS


def short_phrase(toks: Sequence[str], stop_at_prep: bool = True) -> str:
    """A short phrase from `toks`: cut at the first phrase end (and at a preposition after a content word
    when `stop_at_prep`), at most SHORT_WORDS words, without leading or trailing function words (a leading
    article stays)."""
    out: list[str] = []
    seen_content = False
    for t in toks:
        if t in STOP_PHRASE and (seen_content or t in PUNCT):
            break
        if stop_at_prep and seen_content and (t in PLACE_PREPS or t in ("of", "with") or _is_verb(t)):
            break
        if not out and t in STOP and t not in _ARTICLES and t not in _POSSESSIVE:
            continue  # leading "in", "is", "with"
        out.append(t)
        seen_content = seen_content or t not in STOP
        if len(out) >= SHORT_WORDS:
            break
    while out and out[-1] in STOP:
        out.pop()
    return " ".join(out) if any(t not in STOP for t in out) else ""


_POSSESSIVE = frozenset("his her its their my your".split())
_NOT_MODIFIER = frozenset(NUMBERS) | GROUPS


def _modifier(t: str) -> bool:
    """Could `t` qualify the noun after it? Not a verb, another person or animal, or a plural noun."""
    return not (_is_verb(t) or root(t) in _RELATION_KEYS or t in _ACTORS or (t.endswith("s") and root(t) != t))


def _noun_phrase(toks: Sequence[str], p: int) -> str:
    """The noun at `p` with up to two modifiers before it and its article ("a young boy", "a brown and white
    dog"); counts are not modifiers."""
    i = p
    while i > 0 and p - i < 3:
        t = toks[i - 1]
        if t == "and" and i >= 2 and toks[i - 2] in COLOURS and toks[i] in COLOURS:
            i -= 1
            continue
        if t in STOP or t in PUNCT or t in _NOT_MODIFIER or t.isdigit() or not _modifier(t):
            break
        i -= 1
    if i > 0 and (toks[i - 1] in _ARTICLES or toks[i - 1] in _POSSESSIVE):
        i -= 1
    return " ".join(toks[i:p + 1]) if not _is_verb(toks[p]) else toks[p]


# --- one extractor per kind of question (None: the knowledge says nothing on it) ------------------------------


def colour_phrase(text: Text, subject: set[str]) -> str | None:
    if not subject:
        spots = [(ci, p) for ci, ts in enumerate(text.toks) for p, t in enumerate(ts) if t in COLOURS][:1]
        return _colour_at(text.toks[spots[0][0]], spots[0][1]) if spots else None
    best = None
    for ci, p in text.occurrences(subject):
        ts = text.toks[ci]
        for j in range(max(0, p - 3), min(len(ts), p + 4)):
            if ts[j] in COLOURS and (best is None or abs(j - p) < best[0]):
                best = (abs(j - p), ci, j)
        if best is None:  # "the dog in the picture is black": the colour the clause says it is
            for j in range(p + 1, min(len(ts), p + 9)):
                if ts[j] in PUNCT or ts[j] in STOP_PHRASE:
                    break
                if ts[j] in COLOURS and ts[j - 1] in ("is", "are", "was", "were"):
                    best = (j - p, ci, j)
                    break
    return _colour_at(text.toks[best[1]], best[2]) if best else None


def _colour_at(ts: Sequence[str], j: int) -> str:
    if j + 2 < len(ts) and ts[j + 1] == "and" and ts[j + 2] in COLOURS:
        return f"{ts[j]} and {ts[j + 2]}"
    if j >= 2 and ts[j - 1] == "and" and ts[j - 2] in COLOURS:
        return f"{ts[j - 2]} and {ts[j]}"
    return ts[j]


def count_phrase(text: Text, subject: set[str]) -> str | None:
    found: dict[str, str] = {}  # strength -> answer: "number", "group", "one", "plural"
    for ci, p in text.occurrences(subject):
        ts = text.toks[ci]
        for t in reversed(ts[max(0, p - 3):p]):
            if t in PUNCT or (t in PLACE_PREPS and t != "of"):
                break
            if t.isdigit() or (t in NUMBERS and t not in ("a", "an")):
                found.setdefault("number", t if t.isdigit() else NUMBERS[t])
                break
            if t in GROUPS:
                found.setdefault("group", "several")
                break
            if t in ("a", "an"):
                found.setdefault("one", "one")
                break
        if (ts[p] != root(ts[p]) and ts[p].endswith("s")) or ts[p] in ("people", "men", "women", "children"):
            found.setdefault("plural", "more than one")
    return next((found[s] for s in ("number", "group", "one", "plural") if s in found), None)


def age_phrase(text: Text, subject: set[str]) -> str | None:
    """"How old is the boy?" -> "young", when a caption says an age word of him."""
    for ci, p in text.occurrences(subject):
        near = [t for t in text.toks[ci][max(0, p - 3):p] if t in AGES]
        if near:
            return near[-1]
    return None


def place_phrase(text: Text, subject: set[str], order: list[int]) -> str | None:
    spots = text.occurrences(subject, order) if subject else [(ci, -1) for ci in order]
    if subject and not spots:
        return None
    for ci, p in spots:  # a preposition then a place noun within four words ("in front of a building")
        ts = text.toks[ci]
        for i in range(p + 1, len(ts)):
            if ts[i] not in PLACE_PREPS:
                continue
            for j in range(i + 1, min(len(ts), i + 5)):
                if ts[j] in PUNCT or ts[j] in STOP_PHRASE:
                    break
                if ts[j] in PLACES:
                    return " ".join(ts[i:j + 1])
    if not subject:
        return None  # "where was this taken?" and no place named
    for ci, p in spots:  # any preposition phrase after the subject ("on a blue mat")
        ts = text.toks[ci]
        for i in range(p + 1, min(len(ts), p + 4)):
            if ts[i] in PUNCT:
                break
            if ts[i] in PLACE_PREPS and ts[i] not in ("up", "down"):
                rest = short_phrase(ts[i + 1:])
                if rest:
                    return f"{ts[i]} {rest}"
    return None


_ACTORS = PEOPLE | CATEGORIES["animal"]
_SKIP_PREPS = PLACE_PREPS | {"with", "of"}


def _verb_after(ts: Sequence[str], p: int) -> int | None:
    """Where the action said of the noun at `p` starts: an -ing word within eight words, else the first word
    that is not a function word, a colour, a count, another actor or part of a preposition phrase
    ("a man and a boy sit" -> "sit"; "two men in red shirts play" -> "play")."""
    for i in range(p + 1, min(len(ts), p + 9)):
        if ts[i] in PUNCT:
            break
        if _is_verb(ts[i]):
            return i
    i, in_prep = p + 1, False
    while i < min(len(ts), p + 9):
        t = ts[i]
        if t in PUNCT or (t in STOP_PHRASE and t != "and"):
            return None
        if t in _SKIP_PREPS:
            in_prep = True
        elif t in STOP or t in COLOURS or t in NUMBERS or t.isdigit() or t in _ACTORS:
            pass
        elif in_prep:
            in_prep = False  # the preposition's noun: "in red shirts"
        elif t not in PLACES:
            return i
        i += 1
    return None


def action_phrase(text: Text, subject: set[str], order: list[int]) -> str | None:
    spots = text.occurrences(subject, order) if subject else []
    if subject and not spots:
        return None
    if not spots:  # "what is happening?": after the first person or animal of the description, else anywhere
        spots = text.occurrences({root(w) for w in _ACTORS}, order)[:1] or [(ci, -1) for ci in order]
    for ci, p in spots:
        i = _verb_after(text.toks[ci], p)
        if i is not None:
            phrase = short_phrase(text.toks[ci][i:], stop_at_prep=False)
            if phrase:
                return phrase
    return None


def person_phrase(text: Text, subject: set[str], order: list[int]) -> str | None:
    where = [ci for ci in order if subject & set(text.roots[ci])] if subject else order
    for group in (PEOPLE, CATEGORIES["animal"]):  # "who is in the picture?" -> "a young boy", else "a black dog"
        spots = text.occurrences({root(w) for w in group}, where)
        if spots:
            return _noun_phrase(text.toks[spots[0][0]], spots[0][1])
        if subject:
            break
    return None


def kind_phrase(text: Text, subject: set[str]) -> str | None:
    for ci, p in text.occurrences(subject):
        phrase = [t for t in _noun_phrase(text.toks[ci], p).split() if t not in _ARTICLES and t not in _POSSESSIVE]
        if len(phrase) > 1:
            return " ".join(phrase)
    return None


_ALLOWED_PREPS = {"wear": {"in", "with"}, "hold": {"with"}, "carry": {"with"}, "have": {"with"}}  # by the
# relation's key: "a man in a red shirt" says what he wears


def _relation(text: Text, q: list[str], subject: set[str], order: list[int]) -> str | None:
    """"What is the dog holding?": the noun phrase the verb takes; after the verb when a caption says it, else
    after the subject, over its own verb ("the dog catches a red stick" -> "a red stick")."""
    verb = next(w for w in reversed(q) if w not in STOP and (w in RELATIONS or _is_verb(w)))
    key = root(verb)
    allowed = next((v for k, v in _ALLOWED_PREPS.items() if root(k) == key), set())
    nouns = subject - {key}
    for ci in order:  # a caption with the verb itself (and the subject, when the question names one)
        ts, rs = text.toks[ci], text.roots[ci]
        if key in rs and (not nouns or nouns & set(rs)):
            after = ts[rs.index(key) + 1:]
            phrase = short_phrase(after) if after and after[0] not in PLACE_PREPS else ""
            if phrase:  # "plays soccer on a field" -> "soccer"; "playing on the beach" says no object
                return phrase
    for ci, p in text.occurrences(nouns, order):  # after the subject, over its own verb
        ts = text.toks[ci]
        i = p + 1
        while i < len(ts) and ts[i] in ("is", "are"):
            i += 1
        if i < len(ts) and (_is_verb(ts[i]) or (i == p + 1 and ts[i] not in STOP and ts[i] not in PUNCT)):
            if root(ts[i]) in _RELATION_KEYS and root(ts[i]) != key:
                continue  # "a boy wearing a hat" does not say what he holds
            i += 1
        while i < len(ts) and ts[i] in allowed:
            i += 1
        if i < len(ts) and ts[i] not in STOP_PHRASE and ts[i] not in PLACE_PREPS and ts[i] not in PUNCT \
                and ts[i] not in ("with", "of"):
            phrase = short_phrase(ts[i:])
            if phrase:
                return phrase
    return None


_RELATION_KEYS = {root(w) for w in RELATIONS}
_LOOKS = frozenset("picture image photo scene there it this".split())  # "what is in the picture?"


def _before_prep(text: Text, q: list[str], subject: set[str], order: list[int]) -> str | None:
    """"What is on the table?", "what is in the dog's mouth?": the noun phrase before the preposition that
    precedes the question's object, in a caption naming the whole object."""
    qi = next(i for i, w in enumerate(q) if w in PLACE_PREPS)
    words = [root(w) for w in q[qi + 1:] if w not in STOP and w not in QUESTION_FILLER]
    obj = set(words) or subject
    for ci in order:
        ts, rs = text.toks[ci], text.roots[ci]
        if not obj or not obj <= set(rs):
            continue
        at = rs.index(words[-1]) if words else min(i for i, r in enumerate(rs) if r in obj)  # the head noun
        prep = next((i for i in range(at - 1, max(-1, at - 4), -1) if ts[i] in PLACE_PREPS), None)
        if prep is None or prep == 0:
            continue
        j = prep - 1
        while j >= 0 and ts[j] in STOP and ts[j] not in _ARTICLES:
            j -= 1
        if j >= 0 and ts[j] not in STOP:
            return _noun_phrase(ts, j)
    return None


def _else_phrase(text: Text, order: list[int], besides: set[str] = frozenset()) -> str | None:
    """What a person adds to "what else is in the picture?": a person, animal or vehicle the knowledge names
    other than the first one it names, else the first thing the description (the first caption: what the user
    said) leaves out ("a rope", "plastic shovels"); never one of `besides` (the keys of what the question
    names: "what else, besides a rope?"); None when the knowledge names nothing more."""
    keys = {root(w) for w in _ACTORS | CATEGORIES["vehicle"]}
    spots = text.occurrences(keys, order)
    if spots:
        first = text.roots[spots[0][0]][spots[0][1]]
        other = [(ci, p) for ci, p in spots if text.roots[ci][p] != first and not _same_kind(text.roots[ci][p], first)
                 and text.roots[ci][p] not in besides]
        if other:
            return _noun_phrase(text.toks[other[0][0]], other[0][1])
    return _unsaid_thing(text, order, besides)


_BODY = frozenset("head hand hands face arm arms leg legs foot feet mouth eye eyes back knee knees finger fingers "
                  "tongue nose ear ears shoulder shoulders".split())  # not what a person names as "else" in a picture
_BEFORE_THING = _ARTICLES | _POSSESSIVE | frozenset(NUMBERS) | frozenset({"with", "some"})


def _unsaid_thing(text: Text, order: list[int], besides: set[str] = frozenset()) -> str | None:
    """The first thing a caption after the first names that the first caption does not: a noun (not a verb,
    colour, place word or function word) after an article, a possessive, a number, "with" or a modifier, at
    the end of its phrase ("a rope", "sunglasses", "winter coats")."""
    said = (set(text.roots[0]) if text.roots else set()) | set(besides)
    for ci in order:
        if ci == 0:
            continue
        ts, rs = text.toks[ci], text.roots[ci]
        for p, t in enumerate(ts):
            if (t in STOP or t in PUNCT or t in COLOURS or _is_verb(t) or rs[p] in said or len(t) < 3
                    or not t.isalpha() or t in PLACES or t in _LOOKS or t in PLACE_PREPS or rs[p] in _RELATION_KEYS
                    or t.endswith(("ed", "ly")) or t in NUMBERS or t in _BODY):
                continue
            before = ts[p - 1] if p else ""
            after = ts[p + 1] if p + 1 < len(ts) else "."
            two_before = ts[p - 2] if p > 1 else ""
            opens = before in _BEFORE_THING or (_modifier(before) and two_before in _BEFORE_THING)
            if opens and before not in PUNCT and (after in STOP or after in PUNCT):
                return _noun_phrase(ts, p)
    return None


def _same_kind(a: str, b: str) -> bool:
    """Both words name people (a boy, the children ...): one answer, not two things."""
    people = {root(w) for w in PEOPLE}
    return a in people and b in people


def thing_phrase(text: Text, question: str, subject: set[str], order: list[int]) -> str | None:
    q = [t for t in tokens(question) if t not in PUNCT]
    if "else" in q and any(w in _LOOKS for w in q) and ("besides" in q or not subject):
        return _else_phrase(text, order, subject)  # "what else is in the picture (besides a rope)?"
    if not subject:  # "what is in the picture?": the description's first person, animal or thing
        if not any(w in _LOOKS for w in q):
            return None
        spots = text.occurrences({root(w) for w in _ACTORS | CATEGORIES["vehicle"]}, order)[:1]
        return _noun_phrase(text.toks[spots[0][0]], spots[0][1]) if spots else None
    category = [w for w in q if w in CATEGORIES and root(w) not in text.known]
    if category:  # "what animal ...": the member the knowledge names
        spots = text.occurrences({root(m) for m in CATEGORIES[category[0]]}, order)[:1]
        return _noun_phrase(text.toks[spots[0][0]], spots[0][1]) if spots else None
    if len(q) > 2 and q[0] in ("what", "who", "which") and q[1] in ("is", "are") and q[2] in PLACE_PREPS:
        return _before_prep(text, q, subject, order)
    if any(w in RELATIONS or _is_verb(w) for w in q if w not in STOP):
        return _relation(text, q, subject, order)
    ts, rs = text.toks[order[0]], text.roots[order[0]]
    matched = [p for p, r in enumerate(rs) if r in subject]
    if not matched:
        return None
    between = short_phrase(ts[matched[0] + 1:matched[-1]]) if len(matched) > 1 else ""
    return between or short_phrase(ts[matched[-1] + 1:]) or None


def alternative_named(text: Text, question: str) -> str:
    """"Is it red or blue?" -> the alternative the knowledge names (the first when both are); "" when neither."""
    toks = [t for t in tokens(question) if t not in PUNCT]
    i = len(toks) - 1 - toks[::-1].index("or")
    left = next((t for t in reversed(toks[:i]) if t not in STOP), None)
    right = next((t for t in toks[i + 1:] if t not in STOP), None)
    return next((w for w in (left, right) if w and text.has(w)), "")
