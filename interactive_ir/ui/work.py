"""Model work that follows a round shown on the page: "refine" (the round made again with the LLM,
replacing the plain results) and "ask" (the next question about the results on the page).

A handler called with `later=True` shows its round from retrieval alone and leaves in `UIState.todo`
what the models still have to do. The page then, for each step:
1. `claim(st)` (under the tab's lock): the next step and a copy of what it works on;
2. `run(engine, work)` (off the lock, in a thread or a spaces.GPU worker): a new `Session`;
3. `adopt(engine, st, work, result)` (under the lock): applied only when no newer action of the tab came
   meanwhile (`st.epoch` unchanged); otherwise dropped, and the tab already shows the newer round.
A step a newer action superseded is also stopped: `drop` (or `stop`, when the page stops waiting) sets the
work's `cancel` token, which `run` hands to the LLM's every call, so a local model stops generating within
a token and frees its lock for the newer action's steps; the step then ends with `Cancelled`, which is
never shown as a failure (`settle`).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

from interactive_ir.assembly.step_llm import cancellable
from interactive_ir.backends.cancel import CancelToken
from interactive_ir.core.session import Session
from interactive_ir.errors import Cancelled, IIRError
from interactive_ir.ui.state import Redo, UIState

log = logging.getLogger(__name__)

STEPS = ("refine", "ask")


@dataclass
class Work:
    """One claimed model step of a tab."""

    epoch: int  # the tab's epoch when claimed: adopted only if it is still the same
    step: str  # "refine" or "ask"
    session: Session | None  # "ask": a copy of the session as shown ("refine" works on a copy of `redo.tab`)
    redo: Redo | None = None  # for "refine": the handler call to make again with the LLM
    cancel: CancelToken = field(default_factory=CancelToken)  # set when nobody wants the result any more


def claim(st: UIState) -> Work | None:
    """The next model step due for the tab's round (removed from `st.todo`), or None."""
    with st.lock:
        while st.todo:
            step = st.todo.pop(0)
            if st.session is None or st.ended:
                st.todo.clear()
                return None
            if step == "refine" and st.redo is not None:
                st.working = step
                engine_step = st.redo.action == "engine"
                return Work(st.epoch, step, copy.deepcopy(st.session) if engine_step else None, st.redo)
            if step == "ask":
                st.working = step
                return Work(st.epoch, step, copy.deepcopy(st.session))
        return None


def run(engine, work: Work):
    """Do the step on copies (the tab is not touched): a `QuestionStep` ("ask"), a `Refinement` (an
    answer's rewrite, by the engine), or a new `Session` (a round made again with its LLM method). The
    engine's LLM calls carry `work.cancel`: once it is set they stop and this raises `Cancelled`."""
    if engine.llm is not None:
        engine = engine.with_llm(cancellable(engine.llm, work.cancel))
    if work.step == "ask":
        return engine.prepare_question(work.session)
    if work.redo.action == "engine":
        return engine.prepare_refine(work.session)
    tab = copy.deepcopy(work.redo.tab)
    held = {"held_by_caller": True} if work.redo.action == "relative" else {}  # the tab releases its upload
    work.redo.handler(engine, tab, *work.redo.args, defer_question=True, **held)
    return tab.session


def run_as(engine, work: Work, access=None, budget=None):
    """`run` with the LLM this step's visitor may use (`assembly.step_llm.visitor_llm`: `access` None is the
    engine's own). When their token is refused or the anonymous budget is spent, a question is made again
    without the LLM (a picture question), saying why; a refinement keeps the results as typed, saying why."""
    from dataclasses import replace

    from interactive_ir.assembly.step_llm import visitor_llm
    from interactive_ir.core.steps import QuestionStep

    llm = visitor_llm(engine.llm, access, budget)
    if llm is engine.llm:
        return run(engine, work)
    try:
        result = run(engine.with_llm(llm), work)
    finally:
        close = getattr(llm, "close", None)
        if close is not None:
            close()  # the visitor's own client: its connections (and its token) go with the step
    refusal = getattr(llm, "refusal", None)
    if refusal is not None and isinstance(result, QuestionStep):
        if result.question is None or result.question.kind == "fallback":  # a picture question instead
            result = run(engine.with_llm(None), work)
        result = replace(result, error=f"{refusal}. Until then the search goes on without the language model")
    return result


def current(st: UIState, work: Work) -> bool:
    """Is the work still wanted (no newer action of the tab)?"""
    return st.epoch == work.epoch and st.session is not None and not st.ended


def adopt(engine, st: UIState, work: Work, result) -> bool:
    """Apply a finished step to the tab unless a newer action superseded it. Returns whether it was applied."""
    from interactive_ir.backends.redact import public_text, whole_sentences
    from interactive_ir.core.steps import QuestionStep, Refinement
    from interactive_ir.errors import SessionError
    from interactive_ir.ui.render import no_paths

    def said(error: str) -> str:  # a model's note as a visitor reads it: no server, no secret, whole words
        return whole_sentences(no_paths(public_text(error))).rstrip(".").rstrip("…")

    with st.lock:
        if not current(st, work):
            return False
        try:
            if isinstance(result, QuestionStep):
                engine.apply_question(st.session, result)
                if result.error:
                    st.notice = f"⚠ The question step had a problem: {said(result.error)}."
            elif work.step == "refine" and st.acted and _moves(st, result):
                st.offer = result  # the person acts on the quick results: offered, not swapped under the cursor
            elif isinstance(result, Refinement):
                engine.apply_refine(st.session, result)
                st.refined = result.reformulated
                if result.error:
                    st.notice = (f"⚠ The model could not rewrite the dialogue: {said(result.error)}. These are "
                                 "the results of your words as typed.")
            elif result is not None:  # a round made again with its LLM method
                last = result.last
                st.refined = bool(last is not None and last.llm_calls)
                st.session = result
        except SessionError:  # the session moved past the step's round
            return False
        st.working = ""
        if work.step == "refine":
            _release(st)
            st.redo = None
            st.keep_marks_on_page()
        return True


def _moves(st: UIState, result) -> bool:
    """Would the refined round change the results on the page?"""
    from interactive_ir.core.steps import Refinement

    now = st.current_ids
    if isinstance(result, Refinement):
        new = [h.id for h in result.hits][:len(now)]
    else:
        last = getattr(result, "last", None)
        new = list(last.shown) if last is not None else now
    return new != now


def show_offer(engine, st: UIState) -> UIState:
    """"Refined results ready: show": the held refined round replaces the quick one (a question asked about
    the quick results meanwhile stays pending); marks and the reference stay on images still shown."""
    from interactive_ir.core.steps import Refinement
    from interactive_ir.errors import SessionError

    with st.lock:
        result, st.offer = st.offer, None
        if result is None or st.session is None or st.ended:
            raise SessionError("there are no refined results to show for this round")
        if isinstance(result, Refinement):
            engine.apply_refine(st.session, result)
            st.refined = result.reformulated
        else:
            question = st.session.question
            st.session = result
            if question is not None and not result.pending_question:
                result.set_question(question)
            st.refined = bool(result.last is not None and result.last.llm_calls)
        st.keep_marks_on_page()
        return st


def failed(st: UIState, work: Work, note: str) -> bool:
    """A step failed: say so (when still current) and go on with the next one. Returns whether it was current."""
    with st.lock:
        if not current(st, work):
            return False
        st.working = ""
        st.notice = note
        if work.step == "refine":
            _release(st)
            st.redo = None
        return True


def _release(st: UIState) -> None:
    """The round's refinement is done: the upload it searched again can go (`handlers.release_redo`)."""
    from interactive_ir.ui import handlers

    handlers.release_redo(st)


def drop(st: UIState, work: Work) -> None:
    """A newer action superseded this step: stop it, and clear its mark if it is still the tab's."""
    stop(work)
    with st.lock:
        if st.epoch == work.epoch:
            st.working = ""


def stop(work: Work) -> None:
    """Nobody waits for this step any more (superseded, or the page went away): its model calls stop at the
    next token, chunk or request, and its slot on the model is free."""
    if not work.cancel.cancelled:
        log.info("model step %s superseded: cancelling it", work.step)
    work.cancel.cancel()


def settle(engine, st: UIState, work: Work, result=None, error: BaseException | None = None,
           note=lambda e: f"⚠ {e}") -> bool:
    """Land a finished step: adopt its `result`, or say its `error` (`note(error)`: the sentence shown) when it
    is still current. A `Cancelled` step was superseded: dropped silently, never a failure. Returns whether
    the tab changed (False: superseded, go no further)."""
    if error is None:
        return adopt(engine, st, work, result)
    if isinstance(error, Cancelled):
        drop(st, work)
        return False
    if not isinstance(error, IIRError):
        log.error("model step %s failed", work.step, exc_info=error)
    return failed(st, work, note(error))
