"""What each control on the page does: plain functions of (engine, UIState, plain values) -> UIState.

They call the engine and raise its errors (`IIRError` subclasses); the layout turns those into
messages. Validation happens before anything changes, so a refused action leaves the state as it was.
"""

from __future__ import annotations

import logging
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.core.options import BELIEF, SessionOptions
from interactive_ir.errors import BadInputError, QueryError, SessionError
from interactive_ir.modes import registry
from interactive_ir.ui.state import Redo, UIState

log = logging.getLogger(__name__)

FEEDBACK = registry.mode("feedback")
COMPOSED = registry.mode("composed")
FEEDBACK_METHODS = FEEDBACK.method_names
COMPOSED_METHODS = COMPOSED.method_names
# the kinds of question a person chooses from: "Automatic" ("", the app's setting) or a questioner of the table
# (the config's "auto" is what "Automatic" means by default, so the page does not offer it twice)
QUESTIONERS = registry.questioner_names()


def _options(automatic: str, entries) -> tuple[tuple[str, str, bool], ...]:
    """An Options table: (plain name: one-line explanation, value, needs an LLM), "Automatic" first."""
    return (("Automatic: " + automatic, "", False), *((m.choice_label, m.name, m.needs_llm) for m in entries))


# the Options panel, from the mode table
FEEDBACK_CHOICES = _options("the best method available here", FEEDBACK.methods)
COMPOSED_CHOICES = _options("the best method available here", COMPOSED.methods)
QUESTIONER_CHOICES = _options("written questions with a capable language model, otherwise the search's own questions",
                              registry.questioners())


def choices(table, has_llm: bool) -> list[tuple[str, str]]:
    """(label, value) pairs of an Options table, without the choices that need an absent LLM."""
    return [(label, value) for label, value, llm in table if has_llm or not llm]


@dataclass(frozen=True)
class Modes:
    """Which interaction modes this engine offers (`registry.offered`), and what its backends allow."""

    conversation: bool  # describe, answer, skip, clicked answers
    questions: bool  # ... and an LLM is there to ask questions
    feedback: bool  # relevance feedback
    composed: bool  # reference image + relative caption
    upload: bool = False  # ... with an uploaded reference (a caption index needs a captioner to read one)


def modes(engine) -> Modes:
    offered = registry.offered(engine)
    conv, composed = "conversation" in offered, "composed" in offered
    index = getattr(engine, "index", None)
    upload = composed and (not getattr(index, "caption_only", False) or getattr(engine, "captioner", None) is not None)
    return Modes(conv, conv and bool(getattr(engine, "questions_enabled", False)), "feedback" in offered, composed,
                 upload)


def _session(st: UIState):
    if not st.started:
        raise SessionError("there is no search yet: describe the image you are looking for first")
    return st.session


def _open(st: UIState):
    s = _session(st)
    if s.ended:
        raise SessionError("this search has ended: press New search to look for another image")
    return s


def regular_file(path) -> bool:
    """`path` (a str or Path) names a regular file: not a device, a folder, a name too long or with a NUL."""
    try:
        return isinstance(path, (str, Path)) and Path(path).is_file()
    except (OSError, ValueError):
        return False


def shown(value, limit: int = 40) -> str:
    """`value` as a message may echo it: its repr, cut to `limit` characters (a megabyte sent is never sent back)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def _on_page(st: UIState, image_id: str) -> str:
    image_id = (image_id or "").strip()
    if image_id not in st.current_ids:
        raise SessionError(f"image {shown(image_id)} is not among the results on the page")
    return image_id


@contextmanager
def _question_later(engine, st: UIState, session, defer: bool):
    """With `defer`, the engine call inside shows its results without asking the round's question
    (`session.options.ask_questions = False` for that call); the "ask" step asks it afterwards."""
    asks = session.options.ask_questions
    later = defer and modes(engine).questions and asks is not False
    if later:
        session.options.ask_questions = False
    try:
        yield
    finally:
        if later:
            session.options.ask_questions = asks
    st.todo = [s for s in st.todo if s != "ask"] + (["ask"] if later else [])  # reached only on success


ENGINE_REFINE = Redo("engine", UIState())  # "refine" by the engine's own step (an answer's rewrite)


def _moved(st: UIState, redo: Redo | None = None) -> None:
    """A new round is on the page: older model work is superseded; `redo` (when given) is refined next."""
    ask = "ask" in st.todo
    release_redo(st)  # the older round's model work is superseded: its upload is no longer needed
    st.supersede()
    st.redo = redo
    st.todo = (["refine"] if redo is not None else []) + (["ask"] if ask else [])


def _new_round(st: UIState, redo: Redo | None = None, notice: str = "") -> UIState:
    """A new round's page: older work superseded (`_moved`), the first page of its results, `notice` shown."""
    _moved(st, redo)
    st.new_page()
    st.notice = notice
    return st


def ask_on(engine, session) -> None:
    """Ask the question of the session's last round (its results are already shown)."""
    engine.ask(session)


def ask_question(engine, st: UIState) -> UIState:
    """Ask the question of the last round whose results are already shown (see `defer_question`)."""
    s = st.session
    due = st.question_due
    st.todo = [x for x in st.todo if x != "ask"]
    if not due or s is None or not s.turns or s.ended:
        return st
    ask_on(engine, s)
    return st


def set_questioner(engine, st: UIState, questioner: str) -> UIState:
    """The user's choice of questions ("" automatic, "grounded", "llm"), for this search and the next ones."""
    questioner = (questioner or "").strip().lower()
    if questioner and questioner not in QUESTIONERS:
        raise BadInputError(f"unknown kind of question {shown(questioner)}; choose one of {', '.join(QUESTIONERS)}")
    if questioner and registry.questioner(questioner).needs_llm and getattr(engine, "llm", None) is None:
        raise BadInputError("written questions need a language model, and this demo has none: it asks picture questions")
    st.questioner = questioner
    if st.session is not None:
        st.session.options.questioner = questioner
    st.notice = "The next question will follow your choice." if st.started and not st.ended else ""
    return st


def set_hide_seen(engine, st: UIState, hide: bool) -> UIState:
    """The user's choice to see only images not shown before in this tab (this search and the next ones);
    it applies from the next round (the engine reads `session.options.hide_seen`)."""
    st.hide_seen = bool(hide)
    if st.session is not None:
        st.session.options.hide_seen = st.hide_seen
    if st.started and not st.ended:
        st.notice = ("The next rounds show only images not shown before." if st.hide_seen
                     else "The next rounds show the best images again, those already shown marked as seen.")
    else:
        st.notice = ""
    return st


def on_belief(engine) -> bool:
    """Whether this app's searches run on the belief over the collection (`BeliefConfig.on_page`)."""
    config = getattr(engine, "belief_config", None)
    return bool(config is not None and config.on_page)


def _new_session(engine, st: UIState):
    """A new search of this tab: its mode (the belief, when the app runs on it: every action is evidence and
    pages come from it) and what it takes from the tab's Options (kind of questions, hide seen)."""
    options = SessionOptions(mode=BELIEF if on_belief(engine) else "", questioner=st.questioner,
                             hide_seen=st.hide_seen)
    return engine.new_session(options=options, source="web")


def _takes_over(engine, session, mode: str) -> bool:
    """Whether the session's mode takes `mode`'s controls (`Mode.takes_over`): then they need not be offered."""
    return mode in registry.mode(session.options.mode).takes_over if session.options.mode else False


# --- starting and resetting --------------------------------------------------------------------
def start(engine, st: UIState, description: str, *, defer_question: bool = False, later: bool = False) -> UIState:
    """A new search from a first description (replaces any search in this tab).

    `defer_question` (in every step below): show the results first; the "ask" step asks afterwards.
    `later`: also leave the LLM's part of the round (answer rewrite, feedback rewrite, imagescope) to the
    "refine" step (`interactive_ir.ui.work`): the round is shown from retrieval alone, then replaced.
    """
    text = engine.check_text(description, "description")
    session = _new_session(engine, st)
    with _question_later(engine, st, session, defer_question or later):
        if modes(engine).conversation:
            engine.describe(session, text)  # on the session's mode: the belief, or the conversation's start
        else:
            engine.search_text(session, text)
    st.session = session
    st.query = " ".join(str(description or "").split())  # as typed: the filter chips edit it
    _moved(st)
    st.new_page()
    _drop_upload(st)
    st.notice = language_note(engine, text)  # "" unless the words look non-English and the embedder is not
    return st


def refines(st: UIState, description: str) -> bool:
    """Whether a description typed in the search box refines this tab's search instead of starting a new one:
    a search on the belief is open and the typed text keeps its filters and NOT terms (a changed scope is a new
    search) and says something besides (a filter chip's edit re-runs the same words: a new search)."""
    from interactive_ir.retrieval.query_language import parse_query

    if not st.started or st.ended or not st.session.on_belief:
        return False
    try:
        q = parse_query(description or "")
    except QueryError:
        return False
    s = st.session
    same_scope = " ".join(f.token for f in q.filters) == (s.filters or "") and list(q.nots) == list(s.not_terms)
    return same_scope and bool(q.text.strip()) and " ".join(str(description).split()) != st.query


def describe(engine, st: UIState, description: str, *, defer_question: bool = False, later: bool = False) -> UIState:
    """The search box: during a search on the belief, what is typed is said about the image in mind
    (`engine.reply`: its evidence and seen images kept, `refines`); otherwise (before a search, after New
    search, a changed filter or NOT term) a new search (`start`)."""
    if not refines(st, description):
        return start(engine, st, description, defer_question=defer_question, later=later)
    from interactive_ir.retrieval.query_language import parse_query

    return add_words(engine, st, parse_query(description).text, defer_question=defer_question, later=later)


def add_words(engine, st: UIState, text: str, *, defer_question: bool = False, later: bool = False) -> UIState:
    """Words typed into the search box during a search on the belief: evidence about the image in mind, its
    evidence and seen images kept, and not an answer to the question on the page (that stays unanswered)."""
    s = _open(st)
    with _question_later(engine, st, s, defer_question or later):
        engine.reply(s, text, refine=not later, answers=False)
    _moved(st)
    st.new_page()
    st.notice = " ".join(filter(None, [language_note(engine, text),
                                       "Added to this search (press New search to start afresh)."]))
    return st


def language_note(engine, text: str) -> str:
    """The note when the words look non-English and the index's embedder reads English only (`language.py`)."""
    from interactive_ir.ui.language import english_only_note

    index = getattr(engine, "index", None)
    return english_only_note(index.embedder_spec, text) if index is not None else ""


def new_search(engine, st: UIState) -> UIState:
    """Forget this tab's search; the next description starts afresh."""
    _drop_upload(st)
    release_redo(st)
    st.reset()
    return st


# --- conversation ------------------------------------------------------------------------------
def _require_questions(engine) -> None:
    m = modes(engine)
    if not m.conversation:
        raise BadInputError("the question mode is not available in this app")
    if not m.questions:
        raise BadInputError("this demo does not ask questions: mark results or use a reference instead")


def answer(engine, st: UIState, text: str, *, defer_question: bool = False, later: bool = False) -> UIState:
    """An answer to the pending question. With `later`, the dialogue as typed is searched at once and the
    LLM's rewrite of it (when the method has one) follows in the "refine" step."""
    s = _open(st)
    if not _takes_over(engine, s, "conversation"):
        _require_questions(engine)
    with _question_later(engine, st, s, defer_question or later):
        turn = engine.reply(s, text, refine=not later)  # later: the dialogue as typed, rewritten by "refine"
    _moved(st, ENGINE_REFINE if turn.extra.get("plugir", {}).get("refine_due") else None)
    st.new_page()
    st.notice = language_note(engine, text)
    return st


def skip(engine, st: UIState, *, defer_question: bool = False, later: bool = False) -> UIState:
    s = _open(st)
    if not _takes_over(engine, s, "conversation"):
        _require_questions(engine)
    with _question_later(engine, st, s, defer_question or later):
        engine.skip(s)
    return _new_round(st, notice="Question skipped.")


def option_index(value) -> int:
    """An option's number as a click or the HTTP API sends it (an int, a whole float, digits); anything else (NaN,
    infinity, a list, a long string) is refused in one line that shows at most 40 characters of it."""
    if isinstance(value, str) and len(value) <= 12 and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise BadInputError(f"not an option: {shown(value)} (an option's number, 0 for the first)")


def choose(engine, st: UIState, index, question: str = "", *, defer_question: bool = False,
           later: bool = False) -> UIState:
    """A click on option `index` (0-based) of the pending question; `question` is the text of the question
    the click was made on (a question a newer action replaced is refused, nothing changes)."""
    s = _open(st)
    if not modes(engine).conversation:
        raise BadInputError("questions with options are not available in this app")
    index = option_index(index)
    with _question_later(engine, st, s, defer_question or later):
        engine.choose(s, index, question or None)  # on the belief, a yes or no to its question is what is said
    return _new_round(st)


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


def feedback(engine, st: UIState, method: str | None = None, *, defer_question: bool = False,
             later: bool = False) -> UIState:
    """A new page of unseen results from the marks on this page. With `later`, an LLM method's rewrite
    follows in the "refine" step (the captions are added to the query at once)."""
    s = _open(st)
    if not _takes_over(engine, s, "feedback") and not modes(engine).feedback:
        raise BadInputError("relevance feedback is not available in this app")
    rel, irr = st.marked()
    if not rel and not irr:
        raise BadInputError("mark at least one result as relevant or not relevant first")
    if method:
        FEEDBACK.method(method)  # UnknownMethodError naming the methods
    plain = later and FEEDBACK.method(engine.resolve_feedback_method(method or None)).needs_llm
    before = st.snapshot() if plain else None
    with _question_later(engine, st, s, defer_question or later):
        turn = engine.mark(s, rel, irr, method=FEEDBACK.plain if plain else method or None)  # on the belief: evidence
    redo = Redo("feedback", before, (method,), feedback) if plain and turn.kind == "feedback" else None  # its LLM rewrite next
    return _new_round(st, redo)


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
        from interactive_ir.ui.serving.uploads import default_store

        default_store().release(st.upload)
    st.upload = ""


def held_upload(st: UIState) -> str:
    """The uploaded reference the round's model work still needs (its `Redo` searches it again), or ""."""
    redo = st.redo
    return getattr(redo.tab, "upload", "") if redo is not None and redo.action == "relative" else ""


def release_redo(st: UIState) -> None:
    """The round's model work is done or superseded: delete the upload it kept (`held_upload`), unless the
    tab still shows it as its reference."""
    held = held_upload(st)
    if held and held != st.upload:
        from interactive_ir.ui.serving.uploads import default_store

        default_store().release(held)


def set_upload(engine, st: UIState, path: str | None, tab: str = "") -> UIState:
    """Check an uploaded file is a usable image and make it the reference (None clears it).

    The file is kept by the upload store (size and quotas checked first; `tab` names the browser tab)."""
    from interactive_ir.ui.serving.uploads import default_store

    if not path:
        _drop_upload(st)
        return st
    if not modes(engine).upload:
        raise BadInputError("this gallery is searched by its captions and no captioner is loaded to describe an "
                            "uploaded image: use a shown result as the reference instead")
    if st.ended:
        raise SessionError("this search has ended: press New search first")
    if not regular_file(path):  # a device or a folder is never read
        raise BadInputError("the upload is not an image file: choose a JPEG, PNG, GIF, WebP or BMP image")
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

    from interactive_ir.index.imageio import max_pixels, open_image

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
             defer_question: bool = False, later: bool = False, held_by_caller: bool = False) -> UIState:
    """Results for a relative caption on the chosen, uploaded, or last top-1 reference image. With `later`,
    the composed vector is searched at once and imagescope (LLM) follows in the "refine" step: the upload is
    then kept for that step (`release_redo` deletes it). `held_by_caller`: the caller (that step, on a copy
    of the tab) releases the upload itself."""
    if not modes(engine).composed:
        raise BadInputError("reference + caption search is not available in this app")
    if method:
        COMPOSED.method(method)  # UnknownMethodError naming the methods
    caption = engine.check_text(caption, "relative caption")
    if st.started:
        session, fresh = _open(st), False
    elif st.upload:
        session, fresh = _new_session(engine, st), True
    else:
        raise SessionError("choose a reference first: upload an image, or start with a description")
    image = st.upload or None  # the engine opens (and checks) it
    plain = later and COMPOSED.method(engine.resolve_method(method or None)).needs_llm
    before = st.snapshot() if plain else None
    # a shown image picked as the reference goes to the session's mode (on the belief: "like this, but ...", a
    # closest click with what differs); an upload, or no pick (the top result), to the composed search
    act = engine.reference if st.reference else engine.relative
    with _question_later(engine, st, session, defer_question or later):
        turn = act(session, caption, reference=st.reference or None, image=image,
                   method=COMPOSED.plain if plain else method or None)
    redo = Redo("relative", before, (caption, method), relative) if plain and turn.kind == "relative" else None
    if fresh:
        st.session = session
    _moved(st, redo)
    st.new_page()
    if redo is not None and st.upload:
        st.upload = ""  # the search used it, and the model step searches it again: the file is kept until that
        #                 step is done or superseded (`release_redo`), the page no longer shows it as the reference
    elif not held_by_caller:
        _drop_upload(st)  # the search used it
    st.notice = ""
    return st


# --- the belief: "closest" ------------------------------------------------------------------------
def closest(engine, st: UIState, image_id: str, text: str = "", *, defer_question: bool = False,
            later: bool = False) -> UIState:
    """This result is the closest to the image in mind ("" : none of these is), maybe with how the image in
    mind differs (`text`): the next page comes from the belief over the collection."""
    s = _open(st)
    image_id = _on_page(st, image_id) if image_id else None
    with _question_later(engine, st, s, defer_question or later):
        engine.closest(s, image_id, text or None)
    _moved(st)
    st.new_page()
    st.reference = ""
    st.notice = ""
    return st


def unpin(engine, st: UIState, image_id: str) -> UIState:
    """Take an image out of the pinned strip (what the person marked relevant, chose as closest or used as the
    reference stays in view across rounds until then: `render.pinned_ids`); the evidence it gave stays."""
    _session(st)
    st.unpinned = set(st.unpinned) | {str(image_id)}
    st.notice = ""
    return st


# --- the end -------------------------------------------------------------------------------------
def found(engine, st: UIState, image_id: str) -> UIState:
    s = _session(st)
    if s.found:
        raise SessionError(f"this search already ended: you found your image in round {s.found['round'] + 1}; "
                           "press New search to start again")
    engine.found(s, (image_id or "").strip())
    release_redo(st)
    st.supersede()  # no question or refinement is wanted any more
    st.marks.clear()
    _drop_upload(st)  # the search ended
    st.notice = ""
    return st


# --- more like this ------------------------------------------------------------------------------
def more_like(engine, st: UIState, image_id: str, *, defer_question: bool = False, later: bool = False) -> UIState:
    """"More like this" on a result on the page: a new round of this search ranked by that image (its own
    vector: `Engine.more_like`; on the belief a click on it as the closest, every earlier action still
    counting); the search's filters stay, the marks of the page before are dropped."""
    s = _open(st)
    image_id = _on_page(st, image_id)
    with _question_later(engine, st, s, defer_question or later):
        engine.more_like(s, image_id)
    return _new_round(st)


# --- sharing a search: its link, and the session saved as JSON (the CLI's `chat --save` format) --------
MAX_SAVED_BYTES = 2 * 1024 * 1024  # a saved search larger than this is refused


def save_search(st: UIState, folder) -> Path | None:
    """This tab's search written as JSON (`Session.to_json`) in `folder`; None before a search."""
    if not st.started:
        return None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"search-{re.sub(r'[^A-Za-z0-9_-]', '', st.session.session_id) or 'saved'}.json"
    path.write_text(st.session.to_json(), encoding="utf-8")
    return path


def open_search(engine, st: UIState, path) -> UIState:
    """Reopen a search saved as JSON (by the page or `chat --save`): its rounds, the last one's results shown.
    Refused (nothing changes) unless it is a session of this index, under `MAX_SAVED_BYTES`."""
    import json

    from interactive_ir.core.session import Session

    if not path:
        raise BadInputError("choose a saved search (a .json file) to open")
    name = Path(str(path)).name
    if not regular_file(path):
        raise BadInputError(f"{name[:80]} is not a saved search (a file from Save search or `chat --save`)")
    if Path(path).stat().st_size > MAX_SAVED_BYTES:
        raise BadInputError(f"{name} is over {MAX_SAVED_BYTES // (1024 * 1024)} MB: it is not a saved search")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("turns"), list) or not data["turns"]:
            raise ValueError("no rounds")
        session = Session.from_dict(data)
        if not all(isinstance(t.shown, list) and t.shown for t in session.turns) or not isinstance(session.meta, dict):
            raise ValueError("a round without results")
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError, RecursionError) as e:  # nested
        raise BadInputError(f"{name[:80]} is not a saved search (a file from Save search or `chat --save`)") from e
    row_of = engine.index.row_of
    missing = [i for t in session.turns for i in t.shown if not isinstance(i, str) or i not in row_of]
    if missing:
        raise BadInputError(f"{name} is a search of another gallery: {len(missing)} of its images are not in this one")
    release_redo(st)
    _drop_upload(st)
    st.reset()
    st.session = session
    if session.options.questioner in QUESTIONERS:
        st.questioner = session.options.questioner
    if session.options.hide_seen is not None:
        st.hide_seen = session.options.hide_seen
    st.notice = f"Opened a saved search: {len(session.turns)} round{'s' if len(session.turns) != 1 else ''}."
    return st
