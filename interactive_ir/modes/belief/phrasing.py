"""A small rule-based realiser for the belief's yes/no questions about one caption word, in good English:
number agreement ("Is there a dog ...?", "Are there people ...?"), articles ("an umbrella", "a uniform"),
mass nouns without one ("Is there water ...?"), actions as what someone does ("Is someone running ...?")
and qualities as what something is ("Is there something red ...?"). No model; the word is taken as the
captions write it (`surface`), so "dogs" stays plural and "runs" becomes "running"."""

from __future__ import annotations

PLACE = "in the picture"  # where every question looks

PLURALS = frozenset("people men women children kids persons teenagers adults police cattle sheep fish deer".split())
MASS = frozenset(
    "water grass snow sand mud dirt rain air smoke fire ice traffic food paint sunlight foliage equipment "
    "clothing hair graffiti gravel hay dust foam spray surf sunshine darkness light shade laundry luggage "
    "furniture music money bread meat fruit".split()
)
QUALITIES = frozenset(
    "red orange yellow green blue purple pink brown black white grey gray tan golden silver colorful colourful "
    "striped dark bright big small large little young old tall short long wet dry snowy sunny grassy sandy "
    "rocky muddy busy empty crowded shirtless smiling happy asleep wooden plastic metal outdoor indoor".split()
)
# verbs a caption uses for what someone does, as the stem `retrieval.words.stem` gives ("runs" -> "run")
VERBS = frozenset(
    "run jump play sit stand walk ride climb swim hold wear smile throw catch carry dance fall fly lay lie pose "
    "splash surf skate ski slide swing kick race chase eat drink wait watch work lean perform cross bike dive "
    "hike paddle push pull read sing sleep talk wade roll crawl skateboard snowboard hug kiss laugh".split()
)
NOT_VERBS = frozenset("building clothing ceiling painting swing ring king wing thing spring string evening morning "
                      "ceiling railing awning sibling stuffing icing wedding".split())  # nouns that end in -ing
_DOUBLE = frozenset("run swim sit skip hop jog dig get put cut shop stop spin grin chat nap clap drum".split())
_A_BEFORE_VOWEL = ("uni", "use", "usu", "eu", "one", "once", "ewe")  # "a uniform", "a one-way sign"
_AN_BEFORE_CONSONANT = ("hour", "honest", "honour", "honor", "heir")  # "an hour"


def article(noun: str) -> str:
    """"a" or "an" before `noun` (by its sound, with the common exceptions)."""
    w = noun.lower()
    if w.startswith(_AN_BEFORE_CONSONANT):
        return "an"
    if w.startswith(_A_BEFORE_VOWEL):
        return "a"
    return "an" if w[:1] in set("aeiou") else "a"


def gerund(verb: str) -> str:
    """The -ing form of a verb's stem: run -> running, ride -> riding, lie -> lying, play -> playing."""
    v = verb.lower()
    if v.endswith("ing"):
        return v
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v in _DOUBLE:
        return v + v[-1] + "ing"
    if v.endswith("e") and not v.endswith(("ee", "ye", "oe")):
        return v[:-1] + "ing"
    return v + "ing"


def is_plural(word: str) -> bool:
    """A plural noun as captions write it: an irregular plural ("people") or one ending in -s ("dogs")."""
    w = word.lower()
    return w in PLURALS or (len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "ous")))


def is_verb(word: str, stem_form: str | None = None) -> bool:
    """Does `word` (as written; `stem_form` its stem: "runs" -> "run") say what someone does: a verb captions use
    or an -ing form, not a noun that ends in -ing ("building") or a mass noun?"""
    w = word.lower()
    return ((stem_form or w).lower() in VERBS or w.endswith("ing")) and w not in NOT_VERBS and w not in MASS


def yes_no_question(surface: str, stem_form: str | None = None) -> str:
    """The yes/no question asking whether the image in mind shows `surface` (a caption word, as written;
    `stem_form` its stem, for recognising verbs: "runs" -> "run")."""
    w = " ".join(surface.lower().split())
    base = (stem_form or w).lower()
    if not w:
        raise ValueError("a word is needed to ask about")
    if w in QUALITIES:
        return f"Is there something {w} {PLACE}?"
    if is_verb(w, base):
        return f"Is someone {gerund(base if base in VERBS else w)} {PLACE}?"
    if is_plural(w):
        return f"Are there {w} {PLACE}?"
    if w in MASS:
        return f"Is there {w} {PLACE}?"
    return f"Is there {article(w)} {w} {PLACE}?"
