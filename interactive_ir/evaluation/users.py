"""What the three simulated users of the default page decide, with their errors (issue 38).

- **click-only** (`user:click`): each round only a click on the shown image most like the target, or "none
  of these" when none is alike (`SimConfig.choice_threshold`);
- **question-only** (`user:question`): each round only the answer to the page's own question (the belief's
  yes/no, picture or open question), by a click on an option or the few words an open question asks for;
- **typing** (`user:typing`): the default page's user: the click, the answer and how the target differs from
  the most alike image, said together (the `belief` protocol, with errors).

**Errors.** With probability `SimulatedUser.noise` (`--user-noise`) a click goes to a random shown image and
an answer to a random option; an open question is then answered as if the target were a random shown image
(the answer a person who confused the two would give). The draws are seeded by (the user's seed, the
target's key, the round, what is decided), so a run is reproducible and a query's errors do not depend on
which queries ran before it.

**What the user sees.** Only the shown images' captions (what a person sees of them, in caption space), the
options of the question, and its own `TargetKnowledge`: never the target's id, rank or index caption. These
functions decide; `protocols` makes the engine calls.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from interactive_ir.evaluation.answers import rule_answer
from interactive_ir.evaluation.knowledge import TargetKnowledge
from interactive_ir.types import NONE_OF_THESE


def error_rng(user, k: TargetKnowledge, round_: int, what: str) -> random.Random:
    """The generator of one decision's error (seeded: user seed, target key, round, decision)."""
    return random.Random(f"user-error:{getattr(user, 'seed', 0)}:{k.key}:{round_}:{what}")


def erred(user, k: TargetKnowledge, round_: int, what: str) -> random.Random | None:
    """The error's generator when this decision is made at random (probability `user.noise`), else None."""
    noise = float(getattr(user, "noise", 0.0) or 0.0)
    if noise <= 0.0:
        return None
    rng = error_rng(user, k, round_, what)
    return rng if rng.random() < noise else None


@dataclass(frozen=True)
class Click:
    """A Closest click on the page."""

    image_id: str | None  # the clicked shown image; None: "none of these"
    best: str  # the shown image the user judges most like the target (what a relative caption is about)
    scores: tuple[float, ...]  # how alike each shown image looks to the target
    random: bool = False  # the click is an error (a random shown image)

    def to_dict(self) -> dict:
        out = {"scores": [round(x, 4) for x in self.scores], "none": self.image_id is None}
        if self.random:
            out["random_click"] = True
        return out


def click(user, k: TargetKnowledge, shown: Sequence[str], captions: Sequence[str], round_: int) -> Click:
    """The click on `shown` (their captions as read: `captions`): the most alike, or none of these; with
    probability `user.noise` a random shown image instead."""
    choice = user.answerer.choose(k, list(captions))
    scores = tuple(choice.scores) + (0.0,) * (len(shown) - len(choice.scores))
    best = shown[max(range(len(shown)), key=lambda i: (scores[i], -i))]
    rng = erred(user, k, round_, "click")
    if rng is not None:
        return Click(shown[rng.randrange(len(shown))], best, scores, True)
    return Click(shown[choice.index] if choice.index is not None else None, best, scores)


@dataclass(frozen=True)
class Answer:
    """The user's answer to a question: an option clicked, or words said."""

    option: int | None  # the option clicked (a question with options); None: words (`text`)
    text: str  # what is said ("" with an option); an answer the knowledge cannot give is "not sure"
    uncertain: bool = False  # the knowledge does not answer it (say nothing)
    random: bool = False  # the answer is an error

    def to_dict(self) -> dict:
        out: dict = {"option": self.option} if self.option is not None else {"answer": self.text}
        if self.uncertain:
            out["uncertain"] = True
        if self.random:
            out["random_answer"] = True
        return out


def _option_answer(user, k: TargetKnowledge, question, option_captions: Sequence[str]) -> int:
    """The option of a question with options: yes/no by the knowledge, a picture by the most alike
    option (its caption), "none of these" when none is alike."""
    labels = [o.label.strip().lower() for o in question.options]
    if question.kind == "yesno" or set(labels) == {"yes", "no"}:
        reply = user.answerer.answer(k, question.text)
        said = "yes" if reply.text.lower().startswith("yes") else "no"
        return labels.index(said) if said in labels else 0
    real = [i for i, o in enumerate(question.options) if getattr(o, "image_id", None)]
    if not real:  # options in words: the most alike label
        choice = user.answerer.choose(k, [o.label for o in question.options])
        return choice.index if choice.index is not None else len(labels) - 1
    seen = [option_captions[i] or question.options[i].label for i in real]
    choice = user.answerer.choose(k, seen)
    if choice.index is not None:
        return real[choice.index]
    return labels.index(NONE_OF_THESE) if NONE_OF_THESE in labels else real[0]


def answer(user, k: TargetKnowledge, question, option_captions: Sequence[str], shown_captions: Sequence[str],
           round_: int) -> Answer:
    """The answer to `question` (a `types.Question`): an option of one with options (`option_captions`: each
    option's image caption, "" for a word option), else the few words it asks for. With probability
    `user.noise` a random option, or the answer for a random shown image (`shown_captions`)."""
    rng = erred(user, k, round_, "answer")
    if question.options:
        if rng is not None:
            return Answer(rng.randrange(len(question.options)), "", random=True)
        return Answer(_option_answer(user, k, question, option_captions), "")
    if rng is not None and shown_captions:
        other = shown_captions[rng.randrange(len(shown_captions))]
        text, unc = rule_answer([other], question.text)
        return Answer(None, text, unc, True)
    reply = user.answerer.answer(k, question.text)
    return Answer(None, reply.text, bool(reply.uncertain))
