"""The page: components, their layout, and events wiring them to `handlers`.

Each event reads the tab's `UIState` from `gr.State`, calls one handler, and re-renders the page
from the result. Engine errors (`IIRError`) become warnings; the state stays as it was.
Model steps run in the queue's "model" concurrency group and show what they are doing.
"""


import contextvars
import logging
import threading
import time
from concurrent import futures
from pathlib import Path

from interactive_ir.backends.guard import status_note
from interactive_ir.errors import IIRError
from interactive_ir.ui import handlers, render
from interactive_ir.ui.gpu import gpu
from interactive_ir.ui.handlers import COMPOSED_METHODS, FEEDBACK_METHODS, modes
from interactive_ir.ui.state import UIState

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets" / "ui"
TITLE = "Interactive image search"
TICK_S = 1.0  # how often the status line's timer moves while a model step runs
POLL_S = 0.2  # how often a waiting step checks whether its job is done or no longer wanted
BUSY = "Still working on your last step: wait for it to finish."
DESC_FIRST = "Describe the image you are looking for"
DESC_AGAIN = "Describe it again to start a new search (Enter); to narrow these results, answer, mark or use a reference"
ASKING = "The LLM is writing a question about these results…"
INTRO = ("Describe the image you have in mind. Then narrow it down: answer the system's questions, "
         "mark results as relevant or not, or pick a reference image and say how yours differs. "
         "Press **I found it** on your image to finish.")


def launch_options(engine) -> dict:
    """Keyword arguments for `demo.launch()`: the page's CSS, the image route (indexed images and kept uploads,
    by token: no folder is opened to Gradio's file route) and the upload limits."""
    from starlette.middleware import Middleware

    from interactive_ir.ui.files import media_routes
    from interactive_ir.ui.tabs import MAX_TABS
    from interactive_ir.ui.uploads import UploadGuard, default_store

    store = default_store()
    return {
        "css_paths": [ASSETS / "app.css"],
        "max_file_size": store.policy.max_bytes,
        "state_session_capacity": MAX_TABS,
        "app_kwargs": {"routes": media_routes(engine.index, store), "middleware": [Middleware(UploadGuard)]},
    }


def message(e: BaseException) -> str:
    """An engine error as a sentence for the page."""
    text = str(e).strip() or e.__class__.__name__
    first = text.split(" ", 1)[0]
    if any(c in first for c in "./\\'\"") or not first.isalpha():  # a file name or an id: leave it as it is
        return text
    return text[0].upper() + text[1:]


def notes_markdown(notes) -> str:
    notes = [n for n in notes if n]
    return "**Running on:**\n" + "\n".join(f"- {n}" for n in notes) if notes else ""


def _working(engine) -> dict[str, str]:
    """What the status line says while each model step runs (the question is asked afterwards)."""
    llm = getattr(engine, "llm", None) is not None
    return {
        "start": "Searching…",
        "answer": "Rewriting your description with your answer (LLM)…" if llm else "Searching with your answer…",
        "skip": "Showing more results…",
        "feedback": "Finding unseen results like your marks" + (" (the LLM rewrites the query)" if llm else "") + "…",
        "relative": "Searching with your reference and caption" + (" (the LLM reads the caption: this can take a "
                                                                   "while)" if llm else "") + "…",
    }


def in_background(fn, *args) -> futures.Future:
    """Run `fn(*args)` in a thread (with the caller's context variables), so the page can show a timer."""
    job: futures.Future = futures.Future()
    ctx = contextvars.copy_context()

    def work():
        if job.set_running_or_notify_cancel():
            try:
                job.set_result(ctx.run(fn, *args))
            except BaseException as e:  # handed to the waiting event
                job.set_exception(e)

    threading.Thread(target=work, name="iir-model-step", daemon=True).start()
    return job


def build_demo(engine, setup_notes=(), *, questions_off_reason: str = "", title: str = TITLE):
    """The Gradio page over a shared, read-only `engine`; per-tab state lives in `gr.State`."""
    import gradio as gr

    m = modes(engine)
    off = questions_off_reason or ("Questions are off: no LLM is loaded. Marking results and searching with a "
                                   "reference image still work.")
    working = _working(engine)
    js = (ASSETS / "cards.js").read_text()

    def model_step(name: str, st: UIState, args: tuple, kwargs: dict) -> UIState:
        return getattr(handlers, name)(engine, st, *args, **kwargs)

    model_step = gpu(model_step)

    from interactive_ir.ui.tabs import TAB_TTL_S, bound_queue_records, drop_tab, on_tab_closed
    from interactive_ir.ui.uploads import delete_cache

    bound_queue_records()  # before the caller's demo.queue()
    with gr.Blocks(title=title, delete_cache=delete_cache()) as demo:
        # a closed or idle tab's state is dropped (and its upload deleted) after TAB_TTL_S
        state = gr.State(UIState(), time_to_live=TAB_TTL_S, delete_callback=drop_tab)
        gr.Markdown(f"# {title}\n{INTRO}", elem_id="iir-head")
        with gr.Accordion("Models and data", open=False, elem_id="iir-notes-panel"):
            gr.Markdown(notes_markdown(setup_notes), elem_id="iir-notes")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=320):
                with gr.Row(equal_height=True):
                    desc = gr.Textbox(label=DESC_FIRST, elem_id="iir-desc",
                                      placeholder="e.g. a cartoon cat sleeping on a red sofa", lines=1, max_lines=4,
                                      submit_btn="Search", scale=5, min_width=220)
                    new_btn = gr.Button("New search", elem_id="iir-new", scale=1, min_width=110)
                with gr.Row(equal_height=True, elem_id="iir-status-row"):
                    status = gr.Markdown(render.status_md(UIState()), elem_id="iir-status")
                    fb_btn = gr.Button("More like my marks", variant="secondary", elem_id="iir-feedback", size="md",
                                       visible=m.feedback, scale=0, min_width=190)
                results = gr.HTML(render.results_html(engine, UIState()), elem_id="iir-results", js_on_load=js,
                                  min_height=120)
            with gr.Column(scale=2, min_width=300):
                with gr.Group(elem_id="iir-dialogue-panel"):
                    dialogue = gr.HTML(render.dialogue_html(UIState(), m.questions, off), elem_id="iir-dialogue",
                                       js_on_load=None, padding=True)
                    answer_box = gr.Textbox(label="Your answer", elem_id="iir-answer", lines=1, max_lines=4,
                                            submit_btn="Answer", interactive=m.questions,
                                            placeholder="Answer the question and press Enter" if m.questions
                                            else "Questions are off (no LLM)")
                    skip_btn = gr.Button("Skip question", elem_id="iir-skip", size="sm", interactive=m.questions)
                with gr.Group(elem_id="iir-composed-panel", visible=m.composed):
                    reference = gr.HTML(render.reference_html(engine, UIState()), elem_id="iir-reference",
                                        js_on_load=None, padding=True)
                    upload = gr.File(label="Upload a reference image", file_types=["image"], type="filepath",
                                     elem_id="iir-upload", height=110, visible=m.upload)
                    caption_box = gr.Textbox(label="How does your image differ from the reference?",
                                             elem_id="iir-caption", lines=1, max_lines=4, submit_btn="Search",
                                             placeholder="e.g. the same, but at night with two dogs")
                    clear_ref_btn = gr.Button("Clear reference", elem_id="iir-clear-ref", size="sm")
                with gr.Accordion("Options", open=False, elem_id="iir-options"):
                    fb_method = gr.Dropdown([("engine default", ""), *FEEDBACK_METHODS], value="",
                                            label="Relevance feedback method", elem_id="iir-fb-method",
                                            visible=m.feedback)
                    comp_method = gr.Dropdown([("engine default", ""), *COMPOSED_METHODS], value="",
                                              label="Reference + caption method", elem_id="iir-comp-method",
                                              visible=m.composed)
        with gr.Accordion("Earlier rounds", open=True, elem_id="iir-strip-panel"):
            strip = gr.HTML(render.strip_html(engine, UIState()), elem_id="iir-strip", js_on_load=js)

        outputs = [state, status, results, dialogue, strip, reference, desc, answer_box, caption_box, upload, skip_btn,
                   fb_btn]

        def view(st: UIState, clear: tuple[str, ...] = ()) -> dict:
            paused = status_note(engine)  # an LLM's circuit breaker is open (backends.guard)
            out = {state: st, status: render.status_md(st), results: render.results_html(engine, st),
                   dialogue: render.dialogue_html(st, m.questions, off)
                   + (f'<div class="iir-qoff" role="status">{render.esc(paused)}</div>' if paused else ""),
                   strip: render.strip_html(engine, st),
                   reference: render.reference_html(engine, st),
                   desc: gr.Textbox(label=DESC_AGAIN if st.started else DESC_FIRST),  # Enter there starts over
                   # controls that cannot act now are greyed out: no questions after the search ended,
                   # "More like my marks" stands out only once something is marked
                   answer_box: gr.Textbox(interactive=m.questions and not st.ended),
                   skip_btn: gr.Button(interactive=m.questions and not st.ended),
                   fb_btn: gr.Button(variant="primary" if st.marks else "secondary")}
            boxes = {"desc": desc, "answer": answer_box, "caption": caption_box}
            for name in clear:
                if name == "upload":
                    out[upload] = None
                elif name == "desc":
                    out[desc] = gr.Textbox(value="", label=DESC_FIRST)
                elif name == "answer":
                    out[answer_box] = gr.Textbox(value="", interactive=m.questions and not st.ended)
                else:
                    out[boxes[name]] = ""
            return out

        def refused(st: UIState, e: BaseException, clear=()) -> dict:
            if isinstance(e, IIRError):
                msg = message(e)
            else:
                log.exception("unexpected error in the page")
                msg = f"Something went wrong ({e.__class__.__name__}: {e}). Your search is unchanged: try again."
            st.notice = f"⚠ {msg}"
            gr.Warning(msg, title="Cannot do that" if isinstance(e, IIRError) else "Error")
            return view(st, clear)

        def wait(job, t0: float, say: str, still=lambda: True):
            """Yield status updates with a running timer until `job` is done, or until `still()` turns False
            (the step is abandoned: its job finishes alone and its result is dropped)."""
            shown = 0
            while not futures.wait([job], timeout=POLL_S).done:
                if not still():
                    return
                if time.monotonic() - t0 >= shown + TICK_S:
                    shown = int(time.monotonic() - t0)
                    yield {status: f"**Working:** {say} ({shown} s)"}

        def model_event(name: str, clear: tuple[str, ...] = ()):
            def run(tab: UIState, *args):
                if not tab.try_begin():
                    gr.Warning(ASKING if tab.asking else BUSY)
                    yield {status: gr.skip()}
                    return
                try:
                    # 1. the round's results (a question, when one is due, is asked in step 2)
                    yield {status: f"**Working:** {working[name]}"}
                    args = tuple("" if a is None else a for a in args)
                    job = in_background(model_step, name, tab, args, {"defer_question": True})
                    yield from wait(job, time.monotonic(), working[name])
                    if job.exception() is not None:  # IIRError: bad input; others: a bug or a backend crash
                        yield refused(tab, job.exception())
                        return
                    st = job.result()  # `tab` itself, or its copy back from a spaces.GPU worker
                    if not st.question_due:
                        yield view(st, clear)
                        return
                    # 2. the question about those results, while the user looks at them
                    st.asking = True
                    yield view(st, clear)
                    session = st.session
                    job = in_background(model_step, "ask_question", st, (), {})
                    yield from wait(job, time.monotonic(), ASKING,
                                    still=lambda: st.session is session and not st.ended)
                    st.asking = False
                    if not job.done():  # New search or I found it meanwhile: the question is not needed,
                        yield {status: gr.skip()}  # and this tab (and the queue slot) are free at once
                        return
                    if job.exception() is not None:
                        yield refused(st, job.exception())
                        return
                    back = job.result()
                    same = back.session and st.session and back.session.session_id == st.session.session_id
                    if back is not st and same:
                        st.session = back.session  # a spaces.GPU worker answers with a copy
                    yield view(st)
                finally:
                    tab.asking = False
                    tab.end()

            run.__name__ = f"on_{name}"
            return run

        def quick(fn, st: UIState, *args, clear=(), on_error_clear=()):
            """A step without models; allowed while a question is being written (not while results come)."""
            if st.busy and not st.asking:
                gr.Warning(BUSY)
                return {status: gr.skip()}
            try:
                new = fn(engine, st, *args)
            except Exception as e:
                return refused(st, e, on_error_clear)
            return view(new, clear)

        def on_card(st: UIState, evt: gr.EventData):
            data = getattr(evt, "_data", None) or {}
            return quick(handlers.card_action, st, str(data.get("action", "")), str(data.get("id", "")))

        def on_upload(st: UIState, path, request: gr.Request):
            return quick(handlers.set_upload, st, path, getattr(request, "session_hash", "") or "",
                         on_error_clear=("upload",))

        def on_clear_upload(st: UIState):
            return quick(handlers.set_upload, st, None)

        def on_clear_reference(st: UIState):
            return quick(handlers.clear_reference, st, clear=("upload",))

        def on_new(st: UIState):
            return quick(handlers.new_search, st, clear=("desc", "answer", "caption", "upload"))

        model = {"concurrency_id": "model", "trigger_mode": "once", "show_progress": "full",
                 "show_progress_on": [results, dialogue]}
        # clicks queue up in order ("multiple": a quick second click is never dropped) and run one at a time
        # (each takes milliseconds), so every click sees the state the previous one left and renders it
        cheap = {"concurrency_id": "ui", "concurrency_limit": 1, "trigger_mode": "multiple", "show_progress": "hidden"}
        desc.submit(model_event("start", ("upload",)), [state, desc], outputs, **model)  # a new search drops it
        answer_box.submit(model_event("answer", ("answer",)), [state, answer_box], outputs, **model)
        skip_btn.click(model_event("skip"), [state], outputs, **model)
        fb_btn.click(model_event("feedback"), [state, fb_method], outputs, **model)
        caption_box.submit(model_event("relative", ("caption", "upload")), [state, caption_box, comp_method],
                           outputs, **model)
        results.click(on_card, [state], outputs, **cheap)
        strip.click(on_card, [state], outputs, **cheap)  # "Found" under an earlier round's thumbnail
        upload.upload(on_upload, [state, upload], outputs, **cheap)
        upload.clear(on_clear_upload, [state], outputs, **cheap)
        clear_ref_btn.click(on_clear_reference, [state], outputs, **cheap)
        new_btn.click(on_new, [state], outputs, **cheap)
        def on_close(request: gr.Request):
            on_tab_closed(request)

        demo.unload(on_close)
    return demo
