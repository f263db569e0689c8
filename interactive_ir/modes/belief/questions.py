"""The belief's own questions, with no LLM: open ones first, each only where its answer can move the belief
(the probable images' captions differ in what it asks about: no "Where was the picture taken?" when no
caption names a place), then yes/no on the caption word whose answer is expected to tell most about the
target (`retrieval.belief.word_information`, under the answer model with its error term), realised in good
English (`phrasing.yes_no_question`). No question is asked twice, and none whose expected information is
below `BeliefConfig.min_information`. A yes or no is that word, or "no" and the word (`BeliefMode.tell`),
and evidence by the captions that name it; the word asked is kept in `Turn.extra["asked"]`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from interactive_ir.core.session import Session
from interactive_ir.core.steps import QuestionStep
from interactive_ir.modes.belief.phrasing import QUALITIES, VERBS, is_verb, yes_no_question
from interactive_ir.retrieval.belief import BeliefConfig, word_information
from interactive_ir.retrieval.words import STEERING, content_words, surface_words
from interactive_ir.types import Option, Question

PLACES = frozenset(
    "beach street park field water snow grass mountain city road pool river lake ocean sea room building forest "
    "wood sidewalk stage track court yard garden desert hill rock shore wave fountain bridge market store shop "
    "restaurant kitchen house home church playground trail path dirt sand stadium arena ring rink slope "
    "alley crowd town village farm barn courtyard patio lawn porch plaza square backyard gym hallway bathroom "
    "bedroom office classroom stairs subway station airport dock pier".split()
)
PERSONS = frozenset("man woman boy girl child kid baby people person men women children player team crowd "
                    "couple family adult teenager biker rider skier surfer climber dancer worker".split())
COLOURS = frozenset("red orange yellow green blue purple pink brown black white grey gray tan golden silver".split())
ACTIONS = VERBS

# the belief's open questions, in the order asked, each with the caption words its answer is about (None: any);
# an answer's words that were not said before are evidence
OPEN_QUESTIONS: tuple[tuple[str, frozenset | None], ...] = (
    ("What is happening in the picture?", ACTIONS),
    ("Where was the picture taken?", PLACES),
    ("What colours stand out?", COLOURS),
    ("Who is in the picture?", PERSONS),
    ("What else is in the picture?", None),
)
YES = frozenset("yes y yeah yep sure true correct right".split())  # a yes to a yes/no question
NO = frozenset("no n nope not false wrong".split())  # a no
WORD = "belief_word"  # the `QuestionStep.extra` key of the word a yes/no question asks about ("": an open one)
OPEN_SPREAD = 0.05  # an open question is asked when at least two unsaid words it is about each hold this share


@dataclass(frozen=True)
class QuestionContext:
    """What the belief's questions are chosen from: the most probable images' captions and probabilities."""

    captions: Sequence[str]  # the `question_depth` most probable images' captions, most probable first
    p: np.ndarray  # their probabilities, renormalised among them
    said: frozenset = field(default_factory=frozenset)  # content-word stems the user has said
    config: BeliefConfig = field(default_factory=BeliefConfig)


def _said_about(said: frozenset, about: frozenset | None) -> bool:
    """Whether the user already named what an open question asks about (a place, an action, a colour, a
    person): its answer would mostly repeat it ("Where was the picture taken?" after "... on a beach")."""
    if about is None:
        return False
    if about is ACTIONS:
        return any(is_verb(w) for w in said)
    return bool(said & about)


def _open_informs(ctx: QuestionContext, about: frozenset | None) -> bool:
    """Whether an open question's answer can move the belief: the user has not named what it asks about yet,
    and at least two words it is about, not said yet, are each in captions holding `OPEN_SPREAD` of the
    probability (the answer then tells them apart)."""
    if _said_about(ctx.said, about):
        return False
    mass: dict[str, float] = {}
    for weight, caption in zip(ctx.p, ctx.captions):
        for w in content_words(caption or ""):
            if w not in ctx.said and w not in STEERING and (about is None or w in about):
                mass[w] = mass.get(w, 0.0) + float(weight)
    return sum(m >= OPEN_SPREAD for m in mass.values()) >= 2


ELSE_QUESTION = "What else is in the picture"  # the open question asked again, naming what its answers named
ELSE_AGAIN = 2  # ... at most this many times more
_NOTHING = NO | frozenset("sure know don nothing none idea".split())  # the words of "not sure", "I don't know", "nothing"


def _else_again(session: Session, ctx: QuestionContext) -> str | None:
    """"What else is in the picture, besides a rope?": asked again while each answer to it named something new
    (a person then names another thing: more new words than a yes or no tells), at most `ELSE_AGAIN` times;
    only after plain answers (a Tell round: not a click with words said beside it) and while the question
    can still move the belief (`_open_informs`)."""
    answers = [t for t in session.turns if t.answered_question.startswith(ELSE_QUESTION)]
    if not answers or len(answers) > ELSE_AGAIN or not _open_informs(ctx, None):
        return None
    if answers[-1].kind != "tell":  # the belief's Tell round (`mode.TELL`)
        return None
    named = [" ".join(t.user_text.split()).strip(" .,;!?") for t in answers]
    if not all(content_words(n) and not set(content_words(n)) <= _NOTHING for n in named):
        return None  # "not sure", "nothing", "I don't know"
    return f"{ELSE_QUESTION}, besides {_listed(named)}?"


def _listed(items: Sequence[str]) -> str:
    """"a rope", "a rope and sunglasses", "a rope, sunglasses and a dog"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# words a caption uses for where or how things are placed: a yes/no question is never about one ("an along")
PLACING = frozenset("along across around behind beside between against toward towards past beyond inside outside "
                    "together top front back side middle".split())
MAX_WORD = 30  # a longer caption "word" (a flood of letters planted in a caption) is never asked about


def best_word(ctx: QuestionContext, asked: set[str]) -> tuple[str, str, float] | None:
    """(stem, surface form, expected information in nats) of the caption word whose yes or no tells most about
    the target among the probable images; None when none tells `min_information` (bits) or more."""
    surfaces: dict[str, str] = {}
    rows: list[set[str]] = []
    for caption in ctx.captions:
        forms = surface_words(caption or "")
        rows.append(set(forms))
        for w, form in forms.items():
            if (w not in ctx.said and w not in asked and form not in asked and w not in STEERING and w not in PLACING
                    and len(w) <= MAX_WORD):
                surfaces.setdefault(w, form)
    if not surfaces:
        return None
    words = list(surfaces)
    has = np.array([[w in r for w in words] for r in rows], dtype=bool)
    info = word_information(np.asarray(ctx.p, np.float64), has, ctx.config.word_yes, ctx.config.word_yes_absent)
    j = int(np.argmax(info))  # ties go to the word seen first (the likelier images')
    if info[j] / np.log(2) < ctx.config.min_information:
        return None
    return words[j], surfaces[words[j]], float(info[j])


PICTURE_QUESTION = "Which of these is most like the picture you have in mind?"  # the belief's picture question
NONE_OPTION = "none of these"  # a picture question's last option


def picture_question(round_: int, options: Sequence[tuple[str, str]]) -> QuestionStep:
    """The belief's picture question (Options: Picture questions): "which of these is most like it?" over
    `options` ((image id, caption) of images chosen so that the click tells most: `BeliefMode.picture_options`),
    then "none of these"; its answer is a Closest click among those images (`BeliefMode.choose`). No question
    when fewer than two images are left to choose from."""
    if len(options) < 2:
        return QuestionStep(round_, None)
    opts = tuple(Option(caption or image_id, image_id) for image_id, caption in options) + (Option(NONE_OPTION),)
    return QuestionStep(round_, Question(PICTURE_QUESTION, "choice", opts, round_), {WORD: ""})


Writer = Callable[[str, Sequence[str], Sequence[str]], "str | None"]  # (word, captions with it, without) -> question


def next_question(session: Session, context: Callable[[Session], QuestionContext | None],
                  write: Writer | None = None) -> QuestionStep:
    """The belief's next question about the last round: the first of `OPEN_QUESTIONS` not asked yet whose
    answer can move the belief, then yes/no on the most informative word (none when no word informs), in the
    realiser's words or, with `write` (an LLM: `llm_questions.written_question`), in the writer's about the
    probable images that name the word and those that do not (the rule's words when it gives None)."""
    last = session.last
    if last is None:
        return QuestionStep(-1, None)
    ctx = context(session)
    if ctx is None:
        return QuestionStep(last.round, None)
    asked_questions = {t.question for t in session.turns}
    for text, about in OPEN_QUESTIONS:
        if text not in asked_questions and _open_informs(ctx, about):
            return QuestionStep(last.round, Question(text, "open", (), last.round), {WORD: ""})
    again = _else_again(session, ctx)
    if again and again not in asked_questions:
        return QuestionStep(last.round, Question(again, "open", (), last.round), {WORD: ""})
    asked = {str(t.extra.get("asked")) for t in session.turns if t.extra.get("asked")}
    best = best_word(ctx, asked | {content_words(a)[0] for a in asked if content_words(a)})
    if best is None:
        return QuestionStep(last.round, None)
    stem_form, surface, _ = best
    text = None
    if write is not None:
        has = [stem_form in content_words(c or "") for c in ctx.captions]
        text = write(surface, [c for c, h in zip(ctx.captions, has) if h], [c for c, h in zip(ctx.captions, has) if not h])
    text = text or yes_no_question(surface, stem_form)
    if text in asked_questions:
        return QuestionStep(last.round, None)
    question = Question(text, "yesno", (Option("yes"), Option("no")), last.round)
    return QuestionStep(last.round, question, {WORD: surface})


def asked_word(step: QuestionStep) -> str | None:
    """The word a belief question asks about ("" for an open one); None: the step is not the belief's."""
    return step.extra.get(WORD)


__all__ = ["COLOURS", "NO", "NONE_OPTION", "OPEN_QUESTIONS", "PICTURE_QUESTION", "QUALITIES", "QuestionContext", "YES",
           "asked_word", "best_word", "next_question", "picture_question"]
