"""What each control on the page does: plain functions of (engine, UIState, plain values) -> UIState.

They call the engine and raise its errors (`IIRError` subclasses); the layout turns those into
messages. Validation happens before anything changes, so a refused action leaves the state as it was.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.ui.state import UIState

log = logging.getLogger(__name__)

FEEDBACK_METHODS = ("summary", "keywords", "cot", "expand", "rocchio")
COMPOSED_METHODS = ("imagescope", "compose")


@dataclass(frozen=True)
class Modes:
    """Which interaction modes this engine offers (a mode module may be absent)."""

    conversation: bool  # start/answer/skip exist
    questions: bool  # ... and an LLM is there to ask questions
    feedback: bool  # relevance feedback
    composed: bool  # reference image + relative caption
    upload: bool = False  # ... with an uploaded reference (a caption index needs a captioner to read one)


def modes(engine) -> Modes:
    conv = all(hasattr(engine, m) for m in ("start", "answer", "skip"))
    composed = hasattr(engine, "relative")
    index = getattr(engine, "index", None)
    upload = composed and (not getattr(index, "caption_only", False) or getattr(engine, "captioner", None) is not None)
    return Modes(conv, conv and bool(getattr(engine, "questions_enabled", False)),
                 hasattr(engine, "feedback"), composed, upload)


def _session(st: UIState):
    if not st.started:
        raise SessionError("there is no search yet: describe the image you are looking for first")
    return st.session


def _open(st: UIState):
    s = _session(st)
    if s.ended:
        raise SessionError("this search has ended: press New search to look for another image")
    return s


def _on_page(st: UIState, image_id: str) -> str:
    image_id = (image_id or "").strip()
    if image_id not in st.current_ids:
        raise SessionError(f"image {image_id!r} is not among the results on the page")
    return image_id


@contextmanager
def _question_later(engine, st: UIState, session, defer: bool):
    """With `defer`, the engine call inside shows its results without asking the round's question
    (`session.meta["ask_questions"] = False` for that call); `ask_question` asks it afterwards."""
    later = defer and modes(engine).questions and session.meta.get("ask_questions") is not False
    if later:
        session.meta["ask_questions"] = False
    try:
        yield
    finally:
        if later:
            session.meta.pop("ask_questions", None)
    st.question_due = later  # reached only when the call succeeded


def ask_question(engine, st: UIState) -> UIState:
    """Ask the question of the last round whose results are already shown (see `defer_question`)."""
    s = st.session
    if not st.question_due or s is None or not s.turns or s.ended:
        st.question_due = False
        return st
    turn = s.last
    t = time.perf_counter()
    try:
        engine.after_turn(s, turn)  # the conversation mode's hook: writes turn.question, session.pending_question
    finally:
        st.question_due = False
        turn.timings["total"] = round(turn.timings.get("total", 0.0) + time.perf_counter() - t, 6)
    return st


# --- starting and resetting --------------------------------------------------------------------
def start(engine, st: UIState, description: str, *, defer_question: bool = False) -> UIState:
    """A new search from a first description (replaces any search in this tab).

    `defer_question` (in every step below): show the results first; `ask_question` then asks.
    """
    text = engine.check_text(description, "description")
    session = engine.new_session(source="web")
    with _question_later(engine, st, session, defer_question):
        if modes(engine).conversation:
            engine.start(session, text)
        else:
            engine.search_text(session, text)
    st.session = session
    st.new_page()
    _drop_upload(st)
    st.notice = ""
    return st


def new_search(engine, st: UIState) -> UIState:
    """Forget this tab's search; the next description starts afresh."""
    _drop_upload(st)
    st.reset()
    return st


# --- conversation ------------------------------------------------------------------------------
def _require_questions(engine) -> None:
    m = modes(engine)
    if not m.conversation:
        raise BadInputError("the question mode is not available in this app")
    if not m.questions:
        raise BadInputError("questions are off because no LLM is loaded: mark results or use a reference instead")


def answer(engine, st: UIState, text: str, *, defer_question: bool = False) -> UIState:
    _require_questions(engine)
    s = _open(st)
    with _question_later(engine, st, s, defer_question):
        engine.answer(s, text)
    st.new_page()
    st.notice = ""
    return st


def skip(engine, st: UIState, *, defer_question: bool = False) -> UIState:
    _require_questions(engine)
    s = _open(st)
    with _question_later(engine, st, s, defer_question):
        engine.skip(s)
    st.new_page()
    st.notice = "Question skipped."
    return st


# --- relevance feedback -------------------------------------------------------------------------
def toggle_mark(engine, st: UIState, image_id: str, relevant: bool) -> UIState:
    """Mark a result on the page relevant (or not); the same click again removes the mark."""
    _open(st)
    image_id = _on_page(st, image_id)
    if st.marks.get(image_id) is relevant:
        del st.marks[image_id]
    else:
        st.marks[image_id] = relevant
    st.notice = ""
    return st


def feedback(engine, st: UIState, method: str | None = None, *, defer_question: bool = False) -> UIState:
    """A new page of unseen results from the marks on this page."""
    if not modes(engine).feedback:
        raise BadInputError("relevance feedback is not available in this app")
    s = _open(st)
    rel, irr = st.marked()
    if not rel and not irr:
        raise BadInputError("mark at least one result as relevant or not relevant first")
    if method and method not in FEEDBACK_METHODS:
        raise BadInputError(f"unknown feedback method {method!r}; choose one of {', '.join(FEEDBACK_METHODS)}")
    with _question_later(engine, st, s, defer_question):
        engine.feedback(s, rel, irr, method=method or None)
    st.new_page()
    st.notice = ""
    return st


# --- composed search ----------------------------------------------------------------------------
def use_reference(engine, st: UIState, image_id: str) -> UIState:
    """Choose a result on the page as the reference (again: unchoose it)."""
    _open(st)
    image_id = _on_page(st, image_id)
    st.reference = "" if st.reference == image_id else image_id
    st.upload = ""
    st.notice = "Now say how your image differs from the reference." if st.reference else ""
    return st


def _drop_upload(st: UIState) -> None:
    """Forget the tab's uploaded reference and delete its file (see `uploads`)."""
    if st.upload:
        from interactive_ir.ui.uploads import default_store

        default_store().release(st.upload)
    st.upload = ""


def set_upload(engine, st: UIState, path: str | None, tab: str = "") -> UIState:
    """Check an uploaded file is a usable image and make it the reference (None clears it).

    The file is kept by the upload store (size and quotas checked first; `tab` names the browser tab)."""
    from interactive_ir.ui.uploads import default_store

    if not path:
        _drop_upload(st)
        return st
    if not modes(engine).upload:
        raise BadInputError("this gallery is searched by its captions and no captioner is loaded to describe an "
                            "uploaded image: use a shown result as the reference instead")
    if st.ended:
        raise SessionError("this search has ended: press New search first")
    store = default_store()
    kept = store.keep(path, tab=tab or str(id(st)), replaces=st.upload or None)
    try:
        check_upload(kept, name=Path(path).name)
    except BadInputError:
        store.release(kept)
        st.upload = ""
        raise
    st.upload = str(kept)
    st.reference = ""
    st.notice = "Uploaded image set as the reference: now say how your image differs from it."
    return st


def check_upload(path, name: str = "") -> None:
    """Raise BadInputError (naming the file, not its temp path) unless `path` is an image we accept."""
    from PIL import Image

    from interactive_ir.imageio import max_pixels, open_image

    name = name or Path(path).name
    try:
        open_image(path)
    except BadInputError as e:
        cause = e.__cause__
        if isinstance(cause, (Image.DecompressionBombWarning, Image.DecompressionBombError)):
            px = re.search(r"\((\d+) pixels\)", str(cause))
            size = f"{int(px.group(1)) / 1e6:.0f} megapixels" if px else "too many pixels"
            raise BadInputError(f"{name} has {size}, over the {max_pixels() / 1e6:.0f} MP limit: "
                                "downscale it first") from cause
        raise BadInputError(str(e).replace(str(path), name)) from cause


def clear_reference(engine, st: UIState) -> UIState:
    st.reference = ""
    _drop_upload(st)
    st.notice = ""
    return st


def relative(engine, st: UIState, caption: str, method: str | None = None, *,
             defer_question: bool = False) -> UIState:
    """Results for a relative caption on the chosen, uploaded, or last top-1 reference image."""
    if not modes(engine).composed:
        raise BadInputError("reference + caption search is not available in this app")
    if method and method not in COMPOSED_METHODS:
        raise BadInputError(f"unknown composed method {method!r}; choose one of {', '.join(COMPOSED_METHODS)}")
    caption = engine.check_text(caption, "relative caption")
    if st.started:
        session, fresh = _open(st), False
    elif st.upload:
        session, fresh = engine.new_session(source="web"), True
    else:
        raise SessionError("choose a reference first: upload an image, or start with a description")
    image = st.upload or None  # the engine opens (and checks) it
    with _question_later(engine, st, session, defer_question):
        engine.relative(session, caption, reference=st.reference or None, image=image, method=method or None)
    if fresh:
        st.session = session
    st.new_page()
    _drop_upload(st)  # the search used it
    st.notice = ""
    return st


# --- the end -------------------------------------------------------------------------------------
def found(engine, st: UIState, image_id: str) -> UIState:
    s = _session(st)
    if s.found:
        raise SessionError(f"this search already ended: you found {s.found['id']}; press New search to start again")
    engine.found(s, (image_id or "").strip())
    st.marks.clear()
    _drop_upload(st)  # the search ended
    st.notice = ""
    return st


CARD_ACTIONS = ("relevant", "irrelevant", "reference", "found")


def card_action(engine, st: UIState, action: str, image_id: str) -> UIState:
    """A button on a result card."""
    if action == "relevant":
        return toggle_mark(engine, st, image_id, True)
    if action == "irrelevant":
        return toggle_mark(engine, st, image_id, False)
    if action == "reference":
        return use_reference(engine, st, image_id)
    if action == "found":
        return found(engine, st, image_id)
    raise BadInputError(f"unknown action {action!r}")
