"""Words for the model-free simulated user: content words, a crude stemmer, and loop cutting."""

from __future__ import annotations

import re

from interactive_ir.retrieval.words import STOP, WORD, content_words, stem, surface_words  # noqa: F401


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


# --- word lists for the model-free answerer (simulators.rule_answer) -------------------------------------
# Small on purpose: they name what Flickr8k-like captions say, so an open question gets the part of the
# user's knowledge that answers it (a colour, a count, a place, an action), never a whole caption.

COLOURS = frozenset(
    "black white brown red blue green yellow orange pink purple grey gray tan gold golden silver blond blonde "
    "beige maroon teal turquoise navy dark light multicolored colorful".split()
)  # "what colour is the dog?" -> "black"

NUMBERS = {
    "one": "one", "two": "two", "three": "three", "four": "four", "five": "five", "six": "six", "seven": "seven",
    "eight": "eight", "nine": "nine", "ten": "ten", "eleven": "eleven", "twelve": "twelve", "dozen": "twelve",
    "couple": "two", "pair": "two", "both": "two", "a": "one", "an": "one", "single": "one", "lone": "one",
}  # a word right before the counted noun ("two dogs", "a dog") -> the count said
GROUPS = frozenset("group crowd team many several lots bunch few some herd flock pack line".split())
# "a group of children" -> "several"

PLACE_PREPS = frozenset(
    "in on at near by beside under inside outside along across through behind into onto over around down up "
    "past toward towards against underneath".split()
)  # a place phrase starts with one of these ("in the snow")
PLACES = frozenset(
    "beach park street road field grass snow water lake river ocean sea pool mountain mountains hill forest woods "
    "wood yard backyard garden room kitchen city sidewalk stage track court sand desert building house store shop "
    "market bridge trail path dirt mud rock rocks playground fountain wave waves shore stadium arena ice rink "
    "restaurant bar table bed couch floor wall window door fence lawn meadow pond stream creek waterfall cliff "
    "hillside slope ramp skatepark parking lot alley town crowd ground air tree trees bush bushes countryside "
    "surf sky leaves trampoline pavement area outdoors indoors station subway train bus car boat church office "
    "classroom school gym".split()
)  # nouns a place phrase ends on
OUTDOOR = frozenset(
    "beach park street road field grass snow lake river ocean sea mountain hill forest woods yard backyard garden "
    "sidewalk trail dirt mud rock rocks playground shore lawn meadow pond stream creek waterfall cliff hillside "
    "sky surf wave waves sand desert outside outdoors alley pavement countryside".split()
)  # "is it indoors or outdoors?" -> "outdoors" when the captions name one of these
INDOOR = frozenset("room kitchen indoors inside restaurant bar bed couch floor office classroom gym store shop "
                   "church living bathroom bedroom hallway".split())

PEOPLE = frozenset(
    "man men woman women boy boys girl girls child children kid kids person people baby toddler player players "
    "lady ladies guy guys crowd family couple adult adults teenager teen biker cyclist rider skier surfer "
    "skateboarder snowboarder climber runner swimmer dancer worker athlete".split()
)  # "who ..." -> the noun phrase of one of these
ANIMALS = frozenset("dog dogs puppy puppies cat cats horse horses bird birds cow cows sheep goat goats duck ducks "
                    "animal animals pony camel elephant bull".split())
VEHICLES = frozenset("car cars bike bikes bicycle bicycles motorcycle truck bus boat train skateboard scooter "
                     "jeep van kayak canoe".split())
SPORTS = frozenset("soccer football basketball baseball tennis volleyball hockey rugby golf frisbee lacrosse "
                   "cricket softball polo surfing skiing snowboarding skateboarding swimming climbing".split())
CATEGORIES = {"animal": ANIMALS, "person": PEOPLE, "vehicle": VEHICLES, "sport": SPORTS}  # "what animal ..." -> one of these

AGES = frozenset("young little old elderly older younger teenage small baby toddler adult".split())
# "how old is the boy?" -> "young", when a caption says so

UNKNOWABLE = frozenset("name named called age breed brand model price cost year date time weather temperature "
                       "title owner gender species country".split())
# what captions rarely say: asked for and absent from the knowledge -> "not sure"

QUESTION_FILLER = frozenset(
    "you see show shown appear appears visible present there thing things something anything someone anyone "
    "anybody somebody photo image picture scene kind type sort color colour many much doing happening "
    "taken happen going look looks looking contain contains include includes feature features wear wearing "
    "wears worn hold holding holds have having has get getting located place where what who which else stand stands "
    "out colors colours".split()
)  # words of a question that ask rather than describe: ignored when matching it against the knowledge
RELATIONS = frozenset("wear wearing wears worn hold holding holds carry carrying carries have having "
                      "eat eating eats play playing plays played ride riding rides".split())
# verbs of a "what is X <verb>?" question: the answer is what follows them in a caption

NOT_VERBS = frozenset("clothing building ceiling something anything nothing everything wedding evening morning "
                      "string swing ring king thing spring during sibling railing awning".split())
# -ing words that are not actions
STOP_PHRASE = frozenset("and while as , . ; ! ? but or which who that".split())  # a short phrase ends here


def root(word: str) -> str:
    """A matching key that joins verb forms as well as plurals: 'running', 'runs' -> 'run'; 'rides',
    'riding' -> 'rid' (a key, not a word)."""
    w = stem(word.lower())
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
        if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
            w = w[:-1]  # running -> run, swimming -> swim
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 4 and w.endswith("es") and w[-3] in "hsxz":
        w = w[:-2]  # catches -> catch
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # ride -> rid, as riding
    return w


TOKEN = re.compile(r"[a-z0-9]+|[,;.!?]")


def tokens(text: str) -> list[str]:
    """Lower-case words and the punctuation that ends a phrase, in order (with repeats): what the phrase
    extractors walk over."""
    return TOKEN.findall((text or "").lower().replace("'s", ""))
