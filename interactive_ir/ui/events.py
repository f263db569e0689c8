"""What the page's events do: plain functions, wired to the page's components by `listeners`.

Each event takes the page's context (`PageContext`, bound by `listeners`), the tab's `UIState` (from
`gr.State`) and the values of its inputs; it calls one handler and returns the page's new outputs: a
tuple in `OUTPUTS` order (`view`), where `gr.skip()` leaves an output as it is. Engine errors
(`IIRError`) become warnings; the state stays as it was. Model steps run in the queue's "model"
concurrency group and show what they are doing.
"""

# no `from __future__ import annotations`: Gradio reads the `gr.EventData` and `gr.Request` annotations at run time

import contextvars
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field

import gradio as gr

from interactive_ir.backends.guard import pause_mark, status_note
from interactive_ir.backends.redact import public_reason
from interactive_ir.errors import BackendError, BadInputError, IIRError
from interactive_ir.ui import card_actions, handlers, render, share, signin, work
from interactive_ir.ui.handlers import Modes, modes
from interactive_ir.ui.serving.tabs import on_tab_closed
from interactive_ir.ui.state import UIState
from interactive_ir.ui.step_threads import StepThreads

log = logging.getLogger(__name__)

TICK_S = 1.0  # how often the status line's timer moves while a model step runs
POLL_S = 0.2  # how often a waiting step checks whether its job is done or no longer wanted
STEP_THREADS = StepThreads(idle_s=120.0)  # the threads model steps run on, reused (ui/step_threads.py)
DESC_FIRST = "Describe the image you are looking for"
DESC_AGAIN = "A new description starts a new search"  # short: narrowing the results is said by the status line
DESC_REFINE = "Add words to this search (New search starts afresh)"  # on the belief: typing refines (`describe`)


def desc_label(st: UIState) -> str:
    """The search box's label: what Enter there does now (`handlers.describe`)."""
    if not st.started:
        return DESC_FIRST
    return DESC_REFINE if st.session.on_belief and not st.ended else DESC_AGAIN
QUESTIONS_OFF = ("The system does not ask questions in this demo. Mark results you like, or pick one as a "
                 "reference and say how your image differs.")
# what every event returns, in this order (`listeners` passes the page's components in the same order)
OUTPUTS = ("state", "status", "results", "dialogue", "strip", "reference", "desc", "answer_box", "caption_box",
           "upload", "skip_btn", "fb_btn")


@dataclass(frozen=True)
class PageContext:
    """What the events of one page read: the shared, read-only engine and how the page shows it."""

    engine: object
    modes: Modes  # which modes the engine offers (`handlers.modes`)
    questions_off: str  # the dialogue panel's text when questions are off
    examples: Sequence[str]  # descriptions offered on the empty page
    act_step: Callable  # an action's retrieval: (handler, UIState, args) -> UIState
    model_step: Callable  # a model step: (work.Work, its visitor's LLMAccess or None) -> its result
    sign_in: object = None  # `signin.SignIn` when visitors may sign in with Hugging Face (None: off)
    photo_note: object = None  # `photos.note.PhotoNote` where the photo demo is on (None: off)
    facets: Mapping = field(default_factory=dict)  # the collection's `Engine.facets` (the filter row's choices)


@dataclass(frozen=True)
class Action:
    """An action's event: the handler it calls (a function of `handlers`, or `filter_handlers`) and the boxes it
    clears once done."""

    ctx: PageContext
    handler: Callable  # (engine, UIState, *the inputs' values) -> UIState
    clear: tuple[str, ...] = ()


def _engine_steps(engine, sign_in=None) -> tuple[Callable, Callable]:
    """The engine's two kinds of work for the page. Neither takes a ZeroGPU slot as a whole: a search runs
    on the CPU there, and a model step's LLM, captioner and VLM calls each take their own
    (`serving.gpu.gpu_slots`). A model step uses the LLM its visitor may use (`signin.access_for`)."""

    def act_step(handler: Callable, st: UIState, args: tuple) -> UIState:
        """An action's retrieval (`later`: the models' part is left to `follow_up`)."""
        return handler(engine, st, *args, later=True)

    def model_step(job: work.Work, access=None):
        return work.run_as(engine, job, access, sign_in.budget if sign_in is not None else None)

    return act_step, model_step


_JARGON = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|--\w|\bpip install\b|\b\w+:\S*\w")  # env vars, flags, specs


def plain_reason(reason: str) -> str:
    """What the dialogue says with questions off: `reason` when it is in plain words; a plain sentence when it
    names settings or model specs (those stay in the page's notes on the models)."""
    return reason if reason and not _JARGON.search(reason) else QUESTIONS_OFF


def page_context(engine, questions_off_reason: str = "", examples: Sequence[str] = render.EXAMPLES,
                 sign_in_config=None, photo_note=None) -> PageContext:
    """The context of a page over `engine` (`questions_off_reason`: what the dialogue says with questions off,
    in plain words: `plain_reason`; `sign_in_config`: sign in with Hugging Face, None: from the environment;
    `photo_note`: the photo demo's progress note, `photos.note.PhotoNote`, None: off)."""
    sign_in = signin.sign_in_for(engine, sign_in_config)
    act_step, model_step = _engine_steps(engine, sign_in)
    return PageContext(engine, modes(engine), plain_reason(questions_off_reason), examples, act_step, model_step,
                       sign_in, photo_note, getattr(engine, "facets", dict)())


# --- the page's outputs --------------------------------------------------------------------------------
MAX_MESSAGE = 300  # characters of a refusal shown on the page
LONG_WORD = re.compile(r"\S{81,}")  # a run of 81 or more characters without a space: an echoed value, cut


def message(e: BaseException) -> str:
    """An engine error as a sentence for the page (never a server path: `render.no_paths`; a model's failure
    never names its server or a secret: `redact.public_reason`; a value it echoes cut to 80 characters, the
    whole to `MAX_MESSAGE`)."""
    if isinstance(e, BackendError):
        text = render.no_paths(public_reason(e))
        return text[0].upper() + text[1:] if text else e.__class__.__name__
    text = LONG_WORD.sub(lambda m: m.group(0)[:40] + "...", render.no_paths(str(e).strip())) or e.__class__.__name__
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "..."
    first = text.split(" ", 1)[0]
    if any(c in first for c in "./\\'\"") or not first.isalpha():  # a file name or an id: leave it as it is
        return text
    return text[0].upper() + text[1:]


def _outputs(values: dict) -> tuple:
    """`values` (by output name) in `OUTPUTS` order; an output not named is left as it is."""
    return tuple(values[name] if name in values else gr.skip() for name in OUTPUTS)


def asks(ctx: PageContext, st: UIState) -> bool:
    """A question is waiting for an answer."""
    return ctx.modes.questions and st.started and not st.ended and bool(st.session.pending_question)


def answer_hint(ctx: PageContext, st: UIState) -> str:
    if not ctx.modes.questions:
        return "No questions in this demo"
    if asks(ctx, st):
        return "Your answer"
    if not st.started:
        return "Describe your image first"
    if st.session.on_belief and not st.question_due and st.working != "ask":  # asked, and nothing worth asking
        return "No question this round"
    return "A question is on its way"


def _cleared(ctx: PageContext, st: UIState, clear: tuple[str, ...]) -> dict:
    """The boxes (and the upload) an event empties once it is done."""
    out = {}
    for name in clear:
        if name == "upload":
            out["upload"] = None
        elif name == "desc":
            out["desc"] = gr.Textbox(value="", label=DESC_FIRST)
        elif name == "answer":
            out["answer_box"] = gr.Textbox(value="", interactive=asks(ctx, st), visible=not st.ended,
                                           placeholder=answer_hint(ctx, st))
        elif name == "caption":
            out["caption_box"] = gr.Textbox(value="", visible=not st.ended)
        else:
            raise KeyError(name)
    return out


def view(ctx: PageContext, st: UIState, clear: tuple[str, ...] = ()) -> tuple:
    """The whole page for the tab's state; `clear` names the boxes to empty ("desc", "answer", "caption",
    "upload")."""
    engine = ctx.engine
    paused = status_note(engine)  # an LLM's circuit breaker is open (backends.guard): said on one turn, not on each
    if paused:
        mark = pause_mark(engine)
        if not st.paused_seen or st.paused_seen[0] != mark:
            st.paused_seen = (mark, st.epoch)
        elif st.paused_seen[1] != st.epoch:
            paused = ""
    dialogue = render.dialogue_html(st, ctx.modes.questions, ctx.questions_off, engine)
    out = {"state": st, "status": render.status_md(st), "results": render.results_html(engine, st, ctx.examples),
           "dialogue": dialogue + (f'<div class="iir-qoff" role="status">{render.esc(paused)}</div>' if paused else ""),
           "strip": render.strip_html(engine, st),
           "reference": render.reference_html(engine, st),
           "desc": gr.Textbox(label=desc_label(st)),  # what Enter there does now
           # controls that cannot act now are greyed out: Answer and Skip with no question, More like
           # my marks with no mark; the answer and caption boxes once the search ended
           "answer_box": gr.Textbox(interactive=asks(ctx, st), visible=not st.ended,
                                    placeholder=answer_hint(ctx, st)),
           "skip_btn": gr.Button(interactive=asks(ctx, st), visible=not st.ended),
           "fb_btn": gr.Button(variant="primary" if st.marks else "secondary",
                               interactive=bool(st.marks) and not st.ended),
           "caption_box": gr.Textbox(visible=not st.ended)}
    if st.box is not None:  # the filter row or a chip edited the query: the box shows it as the parser reads it
        out["desc"] = gr.Textbox(value=st.box, label=desc_label(st))
        st.box = None
    return _outputs(out | _cleared(ctx, st, clear))


def refused(ctx: PageContext, st: UIState, e: BaseException, clear: tuple[str, ...] = ()) -> tuple:
    """The page after a refused (or failed) step: the state as it was, the reason as a warning."""
    if isinstance(e, IIRError):
        msg = message(e)
    else:
        log.exception("unexpected error in the page")
        reason = LONG_WORD.sub(lambda m: m.group(0)[:40] + "...", render.no_paths(public_reason(e)))[:200]
        msg = f"Something went wrong ({e.__class__.__name__}: {reason}). Your search is unchanged: try again."
    st.notice = f"⚠ {msg}"
    gr.Warning(msg, title="Cannot do that" if isinstance(e, IIRError) else "Error")
    return view(ctx, st, clear)


# --- actions and their model steps ---------------------------------------------------------------------
# An action's round from retrieval alone (the "act" queue: never behind model steps). It supersedes the tab's
# pending model work; what the models add follows in `follow_up`. (Comments, not docstrings, where Gradio would
# show a docstring in the HTTP API's description of an endpoint that had none.)
def act(action: Action, tab: UIState, *args):
    args = tuple("" if a is None else a for a in args)
    with tab.lock:  # rendered under the lock too: the page shows the tab's changes in order
        try:
            tab.take(action.ctx.act_step(action.handler, tab, args))
        except Exception as e:
            return refused(action.ctx, tab, e)
        return view(action.ctx, tab, action.clear)


def event_data(evt, example: str) -> dict:
    """A custom event's data (`evt._data`): an object, or BadInputError in one line (`example`: what it holds)."""
    data = getattr(evt, "_data", None)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadInputError(f"an event's data must be an object such as {example}, not a {type(data).__name__}")
    return data


def refuse(ctx: PageContext, st: UIState, e: BaseException) -> tuple:
    """`refused`, under the tab's lock (an event refused before its handler ran)."""
    with st.lock:
        return refused(ctx, st, e)


def on_choose(ctx: PageContext, st: UIState, evt: gr.EventData):
    """A click on one of the question's options (thumbnails, none of these, yes/no)."""
    try:
        data = event_data(evt, '{"index": 0}')
    except BadInputError as e:
        return refuse(ctx, st, e)
    return act(Action(ctx, handlers.choose), st, data.get("index"), str(data.get("question") or "")[:2000])


def in_background(fn, *args) -> futures.Future:
    """Run `fn(*args)` on a thread of `STEP_THREADS` (with the caller's context variables), so the page can show
    a timer."""
    job: futures.Future = futures.Future()
    ctx = contextvars.copy_context()

    def run():
        if job.set_running_or_notify_cancel():
            try:
                job.set_result(ctx.run(fn, *args))
            except BaseException as e:  # handed to the waiting event
                job.set_exception(e)

    STEP_THREADS.submit(run)
    return job


def failure_note(step: str, e: BaseException) -> str:
    what = "refine these results" if step == "refine" else "write a question"
    if isinstance(e, BackendError):
        why = render.no_paths(public_reason(e))
    else:
        why = message(e) if isinstance(e, IIRError) else f"{e.__class__.__name__}: {render.no_paths(public_reason(e))}"
    return f"The model could not {what}: {why.rstrip('.')}. The results shown stand; you can go on."


def _wait(tab: UIState, job_work: work.Work, job: futures.Future):
    """Yield the status line's timer until `job` is done. Returns (still wanted, a tick was shown): not
    wanted when a newer action of the tab superseded the step (it is dropped then)."""
    t0 = time.monotonic()
    ticks = 0
    ticked = False
    while not futures.wait([job], timeout=POLL_S).done:
        if not work.current(tab, job_work):
            work.drop(tab, job_work)
            return False, ticked
        if time.monotonic() - t0 >= ticks + TICK_S:
            ticks = int(time.monotonic() - t0)
            ticked = True
            yield _outputs({"status": render.status_md(tab) + f" ({ticks} s)"})
    return True, ticked


def follow_up(ctx: PageContext, tab: UIState, request: gr.Request = None):
    """The model steps due for the tab's round ("refine", then "ask"), each shown when it lands.
    A newer action of the tab supersedes them: this event then ends at once (its queue slot is
    free), the step is cancelled (a local model stops generating and frees its lock), and whatever
    it still returns is dropped. The same when the page stops listening (the tab closed).
    With sign-in on, the steps use the LLM this visitor may use (their token, from Gradio's sign-in session: read
    from `request`, `signin.visitor_of`, which also tells an expired sign-in, said on the status line)."""
    shown = False
    visitor = signin.visitor_of(request)
    access = signin.access_for(ctx.sign_in, visitor, request)
    signin.tell_expired(ctx.sign_in, visitor, tab)
    while (job_work := work.claim(tab)) is not None:
        job = in_background(ctx.model_step, job_work, access)
        try:
            wanted, ticked = yield from _wait(tab, job_work, job)
            shown = shown or ticked
            if not wanted:
                if not shown:
                    yield _outputs({"status": gr.skip()})
                return
        finally:
            if not job.done():  # superseded, or the generator was closed: nobody waits for it
                work.stop(job_work)
        e = job.exception()
        applied = work.settle(ctx.engine, tab, job_work, None if e else job.result(), e,
                              lambda err, step=job_work.step: f"⚠ {failure_note(step, err)}")
        if not applied:  # superseded while it ran
            break
        shown = True
        yield view(ctx, tab)
    if not shown:
        yield _outputs({"status": gr.skip()})


# --- clicks without models (the "mark" and "ui" queues) -------------------------------------------------
def quick(ctx: PageContext, fn, st: UIState, *args, clear=(), on_error_clear=()):
    """A step without models: runs at once, even while model work is pending. Events of other tabs run
    beside it; those of the same tab wait for its lock, so each sees the state the previous one left
    (Gradio hands every event of a tab the same `UIState` object) and renders it before the next one
    changes it."""
    with st.lock:
        try:
            new = fn(ctx.engine, st, *args)
        except Exception as e:
            return refused(ctx, st, e, on_error_clear)
        return view(ctx, new, clear)


# An action without models (the filter row's parts: `filter_handlers`): its handler runs at once, as `quick`.
def quick_act(action: Action, st: UIState, *args):
    return quick(action.ctx, action.handler, st, *args, clear=action.clear)


# A button on a result card, through the HTTP API (for scripts): its parameters are named `a` (the action) and
# `i` (the image id) there.
def card(ctx: PageContext, st: UIState, a, i):
    return quick(ctx, card_actions.run, st, a or "", i or "")


# A button on a result card, or "Found" under an earlier round's thumbnail.
def on_card(ctx: PageContext, st: UIState, evt: gr.EventData):
    try:
        data = event_data(evt, '{"action": "like", "id": "img1.jpg"}')
    except BadInputError as e:
        return refuse(ctx, st, e)
    return quick(ctx, card_actions.run, st, str(data.get("action", "")), str(data.get("id", "")))


def on_upload(ctx: PageContext, st: UIState, path, request: gr.Request):
    return quick(ctx, handlers.set_upload, st, path, getattr(request, "session_hash", "") or "",
                 on_error_clear=("upload",))


def on_clear_upload(ctx: PageContext, st: UIState):
    return quick(ctx, handlers.set_upload, st, None)


def on_clear_reference(ctx: PageContext, st: UIState):
    return quick(ctx, handlers.clear_reference, st, clear=("upload",))


def on_new(ctx: PageContext, st: UIState):
    return quick(ctx, handlers.new_search, st, clear=("desc", "answer", "caption", "upload"))


def on_questioner(ctx: PageContext, st: UIState, value):
    return quick(ctx, handlers.set_questioner, st, value or "")


def on_hide_seen(ctx: PageContext, st: UIState, value):
    return quick(ctx, handlers.set_hide_seen, st, bool(value))


# What the page says about whose model this visitor uses (on load, and after signing in or out).
# (A gr.Request, not a gr.OAuthProfile: Gradio injects no profile for an expired sign-in; `signin.visitor_of`.)
def on_sign_in_note(ctx: PageContext, request: gr.Request = None):
    if ctx.sign_in is None:
        return ""
    visitor = signin.visitor_of(request)
    return signin.note(ctx.sign_in, "" if visitor.expired else visitor.user, visitor.expired)


def on_close(ctx: PageContext, request: gr.Request):
    """The tab closed: its state and Gradio's record of it go now (`tabs.on_tab_closed`)."""
    on_tab_closed(request)


# --- Export (results and marks as CSV/JSON, the page's images as a zip) ---------------------------------
DOWNLOAD_JS = """(f) => { if (f && f.url) { const a = document.createElement('a'); a.href = f.url;
  a.download = f.orig_name || ''; document.body.appendChild(a); a.click(); a.remove(); } return []; }"""


def export_file(ctx: PageContext, st: UIState, kind: str, ids=None):
    """The file of the export `kind` (`export.FILES`) for the page's hidden file component, which
    `DOWNLOAD_JS` then downloads; None and a warning when there is nothing (or too much) to export.
    `ids`: only those images (the selection on the page)."""
    from interactive_ir.ui import export

    with st.lock:
        try:
            return str(export.write_file(ctx.engine, st, kind, export.fresh_folder(), ids))
        except IIRError as e:
            gr.Warning(message(e), title="Nothing to download")
            return None
def on_export_csv(ctx: PageContext, st: UIState):
    return export_file(ctx, st, "csv")


def on_export_json(ctx: PageContext, st: UIState):
    return export_file(ctx, st, "json")


def on_export_zip(ctx: PageContext, st: UIState):
    return export_file(ctx, st, "zip")


# the page's load events have run (a shared link's search, the options' sync): `body[data-iir-loaded]`, a state
# that scripts and the browser tests wait for instead of a fixed sleep
LOADED_JS = "() => { document.body.dataset.iirLoaded = '1'; return []; }"
SELECTED_JS = "() => (window.iirSelectedIds ? window.iirSelectedIds() : '[]')"  # the page's selection, as JSON


def export_selection(ctx: PageContext, st: UIState, kind: str, selection: str):
    """`export_file` of the images selected on the page (`selection`: their ids as a JSON list, from cards.js);
    a warning and no file when none is selected."""
    from interactive_ir.ui import export

    ids = export.selected_ids(selection)
    if not ids:
        gr.Warning("select one or more results first (the ☐ on a card, or Select all)", title="Nothing selected")
        return None
    return export_file(ctx, st, kind, ids)


def on_export_selected_zip(ctx: PageContext, st: UIState, selection: str):
    return export_selection(ctx, st, "zip", selection)


def on_export_selected_csv(ctx: PageContext, st: UIState, selection: str):
    return export_selection(ctx, st, "csv", selection)


# --- sharing a search (issue 25): its link in the address bar, Copy link, Save search / Open saved search ---
def share_html(st: UIState) -> str:
    """The Copy link button; `data-share` holds the search's query string (page.js puts it in the address
    bar)."""
    q = share.share_query(st)
    off = "" if q else " disabled"
    return (f'<div class="iir-share" data-share="{render.esc(q)}">'
            f'<button type="button" id="iir-copy-link" class="iir-copy-link"{off}>Copy link</button>'
            '<span class="iir-copied" role="status" aria-live="polite"></span></div>')


def saved_folder() -> str:
    """Where Save search writes its files (a temporary folder Gradio may serve)."""
    import tempfile
    import time
    from pathlib import Path

    folder = Path(tempfile.gettempdir()) / "iir-saved-searches"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):  # a tab's file is rewritten at each round; idle ones go after an hour
        try:
            if time.time() - old.stat().st_mtime > 3600:
                old.unlink()
        except OSError:
            pass
    return str(folder)


# The page's results changed: the link and the saved search follow.
def on_share_refresh(ctx: PageContext, st: UIState):
    with st.lock:
        path = handlers.save_search(st, saved_folder())
        return share_html(st), gr.DownloadButton(value=str(path) if path else None, interactive=path is not None)


# A page opened with `?q=...` (a shared link) runs that search at once, with the link's settings and rounds.
def on_shared_link(ctx: PageContext, st: UIState, request: gr.Request):
    params = dict(getattr(request, "query_params", None) or {})
    if not str(params.get("q", "")).strip():
        return _outputs({})
    with st.lock:
        q = share.shared_settings(ctx.engine, st, params)
    out = list(act(Action(ctx, share.replay), st, q, str(params.get("rounds", "") or "")))
    out[OUTPUTS.index("desc")] = gr.Textbox(value=q[:2000], label=desc_label(st))
    return tuple(out)


# The Options panel shows the tab's settings (after a shared link or a saved search set them).
def on_sync_options(ctx: PageContext, st: UIState):
    hides = st.hide_seen if st.hide_seen is not None else bool(getattr(getattr(ctx.engine, "config", None),
                                                                       "hide_seen", False))
    return gr.Radio(value=st.questioner or ""), gr.Checkbox(value=hides)


def on_open_saved(ctx: PageContext, st: UIState, path):
    return quick(ctx, handlers.open_search, st, path, clear=("answer", "caption", "upload"))
