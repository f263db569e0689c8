"""The belief's own questions, with no LLM: the open ones first (an answer's words not said before are
evidence), then yes/no on the word that best splits the probability of the most probable unseen images
(`BeliefMode.splitting_word`). A yes or no to such a question is that word, or "no" and the word
(`BeliefMode.tell`); the word asked is kept in the round's `Turn.extra["asked"]` (`apply_word`)."""

from __future__ import annotations

from collections.abc import Callable

from interactive_ir.core.session import Session
from interactive_ir.core.steps import QuestionStep
from interactive_ir.modes.conversation.plugir.questioner import question_about
from interactive_ir.types import Option, Question

# the belief's open questions, in the order asked (then yes/no questions on a word): an answer's words that
# were not said before are evidence; chosen on the Flickr8k dev split (docs: "A belief over the collection")
OPEN_QUESTIONS = ("What is happening in the picture?", "Where was the picture taken?", "What colours stand out?",
                  "Who is in the picture?", "What else is in the picture?")
YES = frozenset("yes y yeah yep sure true correct right".split())  # a yes to a yes/no question
NO = frozenset("no n nope not false wrong".split())  # a no
WORD = "belief_word"  # the `QuestionStep.extra` key of the word a yes/no question asks about ("": an open one)


def next_question(session: Session, splitting_word: Callable[[Session], str | None]) -> QuestionStep:
    """The belief's next question about the last round: the first of `OPEN_QUESTIONS` not asked yet, then
    yes/no on `splitting_word(session)` (no question when no word splits the probable images)."""
    last = session.last
    if last is None:
        return QuestionStep(-1, None)
    asked = {t.question for t in session.turns}
    open_q = next((q for q in OPEN_QUESTIONS if q not in asked), None)
    if open_q is not None:
        return QuestionStep(last.round, Question(open_q, "open", (), last.round), {WORD: ""})
    word = splitting_word(session)
    if word is None:
        return QuestionStep(last.round, None)
    question = Question(question_about(word), "yesno", (Option("yes"), Option("no")), last.round)
    return QuestionStep(last.round, question, {WORD: word})


def asked_word(step: QuestionStep) -> str | None:
    """The word a belief question asks about ("" for an open one); None: the step is not the belief's."""
    return step.extra.get(WORD)
