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
from interactive_ir.ui import handlers, render, work
from interactive_ir.ui.serving.gpu import gpu
from interactive_ir.ui.handlers import modes
from interactive_ir.ui.state import UIState

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets" / "ui"
TITLE = "Interactive image search"
TICK_S = 1.0  # how often the status line's timer moves while a model step runs
POLL_S = 0.2  # how often a waiting step checks whether its job is done or no longer wanted
DESC_FIRST = "Describe the image you are looking for"
DESC_AGAIN = "Describe it again to start a new search (Enter); to narrow these results, answer, mark or use a reference"
INTRO = ("Describe the image you have in mind. Then narrow it down: answer the system's questions, "
         "mark results as relevant or not, or pick a reference image and say how yours differs. "
         "Press **I found it** on your image to finish.")


def launch_options(engine) -> dict:
    """Keyword arguments for `demo.launch()`: the page's CSS, the image route (indexed images and kept uploads,
    by token: no folder is opened to Gradio's file route) and the upload limits."""
    from starlette.middleware import Middleware

    from interactive_ir.ui.serving.files import media_routes
    from interactive_ir.ui.serving.tabs import MAX_TABS
    from interactive_ir.ui.serving.uploads import UploadGuard, default_store

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


def build_demo(engine, setup_notes=(), *, questions_off_reason: str = "", title: str = TITLE,
               search_concurrency: int = 4, click_concurrency: int = 8, examples=render.EXAMPLES):
    """The Gradio page over a shared, read-only `engine`; per-tab state lives in `gr.State`.

    `search_concurrency`: actions' retrievals running at once (model steps use the queue's default limit).
    `click_concurrency`: marks running at once, in a queue group of their own; other clicks (New search,
    upload, options) the same, in another. Events of one tab still change its state one at a time.
    `examples`: descriptions offered on the empty page (a click runs the search).
    """
    import gradio as gr

    m = modes(engine)
    off = questions_off_reason or ("Questions are off: no LLM is loaded. Marking results and searching with a "
                                   "reference image still work.")
    js = (ASSETS / "cards.js").read_text()

    def act_step(name: str, st: UIState, args: tuple) -> UIState:
        """An action's retrieval (`later`: the models' part is left to `follow_up`)."""
        return getattr(handlers, name)(engine, st, *args, later=True)

    def model_step(job: work.Work):
        return work.run(engine, job)

    # on ZeroGPU both run in a GPU worker (the embedder encodes there too) and answer with copies
    act_step, model_step = gpu(act_step), gpu(model_step)

    from interactive_ir.ui.serving.session_ids import keep_session_ids
    from interactive_ir.ui.serving.tabs import TAB_TTL_S, bound_queue_records, drop_tab, on_tab_closed
    from interactive_ir.ui.serving.uploads import delete_cache

    bound_queue_records()  # before the caller's demo.queue()
    keep_session_ids()  # a tab's record in Gradio stays the size of the page (issue 15)
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
                                       visible=m.feedback, scale=0, min_width=190,
                                       interactive=False)
                results = gr.HTML(render.results_html(engine, UIState(), examples), elem_id="iir-results",
                                  js_on_load=js,
                                  min_height=120)
            with gr.Column(scale=2, min_width=300):
                with gr.Group(elem_id="iir-dialogue-panel"):
                    dialogue = gr.HTML(render.dialogue_html(UIState(), m.questions, off, engine),
                                       elem_id="iir-dialogue", js_on_load=js, padding=True)
                    answer_box = gr.Textbox(label="Your answer", elem_id="iir-answer", lines=1, max_lines=4,
                                            submit_btn="Answer", interactive=False,
                                            placeholder="Questions are off (no LLM)" if not m.questions
                                            else "Describe your image first")
                    skip_btn = gr.Button("Skip question", elem_id="iir-skip", size="sm", interactive=False)
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
                    has_llm = getattr(engine, "llm", None) is not None
                    questioner = gr.Radio(handlers.choices(handlers.QUESTIONER_CHOICES, has_llm), value="",
                                          label="Questions", elem_id="iir-questioner", visible=m.questions)
                    hides = bool(getattr(getattr(engine, "config", None), "hide_seen", False))  # engine's default
                    hide_seen = gr.Checkbox(value=hides, label="Hide images already shown",
                                            info="Off: each round shows the best images, those seen before marked "
                                                 "\"seen\". On: each round shows only new images.",
                                            elem_id="iir-hide-seen")
                    fb_method = gr.Radio(handlers.choices(handlers.FEEDBACK_CHOICES, has_llm), value="",
                                         label="More like my marks: how", elem_id="iir-fb-method",
                                         visible=m.feedback)
                    comp_method = gr.Radio(handlers.choices(handlers.COMPOSED_CHOICES, has_llm), value="",
                                           label="Reference + caption: how", elem_id="iir-comp-method",
                                           visible=m.composed)
        with gr.Accordion("Earlier rounds", open=True, elem_id="iir-strip-panel"):
            strip = gr.HTML(render.strip_html(engine, UIState()), elem_id="iir-strip", js_on_load=js)
        with gr.Row(visible=False):  # the HTTP API's inputs for what the page does with clicks (for scripts)
            api_option = gr.Number(precision=0, label="option")
            api_question = gr.Textbox(label="question")
            api_choose = gr.Button("choose")
            api_action = gr.Textbox(label="card action")
            api_id = gr.Textbox(label="image id")
            api_card = gr.Button("card")

        outputs = [state, status, results, dialogue, strip, reference, desc, answer_box, caption_box, upload, skip_btn,
                   fb_btn]

        def asks(st: UIState) -> bool:
            """A question is waiting for an answer."""
            return m.questions and st.started and not st.ended and bool(st.session.pending_question)

        def answer_hint(st: UIState) -> str:
            if not m.questions:
                return "Questions are off (no LLM)"
            if asks(st):
                return "Answer the question and press Enter"
            return "The system's next question will appear above" if st.started else "Describe your image first"

        def view(st: UIState, clear: tuple[str, ...] = ()) -> dict:
            paused = status_note(engine)  # an LLM's circuit breaker is open (backends.guard)
            out = {state: st, status: render.status_md(st), results: render.results_html(engine, st, examples),
                   dialogue: render.dialogue_html(st, m.questions, off, engine)
                   + (f'<div class="iir-qoff" role="status">{render.esc(paused)}</div>' if paused else ""),
                   strip: render.strip_html(engine, st),
                   reference: render.reference_html(engine, st),
                   desc: gr.Textbox(label=DESC_AGAIN if st.started else DESC_FIRST),  # Enter there starts over
                   # controls that cannot act now are greyed out: Answer and Skip with no question, More like
                   # my marks with no mark; the answer and caption boxes once the search ended
                   answer_box: gr.Textbox(interactive=asks(st), visible=not st.ended,
                                          placeholder=answer_hint(st)),
                   skip_btn: gr.Button(interactive=asks(st), visible=not st.ended),
                   fb_btn: gr.Button(variant="primary" if st.marks else "secondary",
                                     interactive=bool(st.marks) and not st.ended),
                   caption_box: gr.Textbox(visible=not st.ended)}
            boxes = {"desc": desc, "answer": answer_box, "caption": caption_box}
            for name in clear:
                if name == "upload":
                    out[upload] = None
                elif name == "desc":
                    out[desc] = gr.Textbox(value="", label=DESC_FIRST)
                elif name == "answer":
                    out[answer_box] = gr.Textbox(value="", interactive=asks(st), visible=not st.ended,
                                                 placeholder=answer_hint(st))
                elif name == "caption":
                    out[caption_box] = gr.Textbox(value="", visible=not st.ended)
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

        def act_event(name: str, clear: tuple[str, ...] = ()):
            """An action's round from retrieval alone (the "act" queue: never behind model steps). It
            supersedes the tab's pending model work; what the models add follows in `follow_up`."""
            def act(tab: UIState, *args):
                args = tuple("" if a is None else a for a in args)
                with tab.lock:  # rendered under the lock too: the page shows the tab's changes in order
                    try:
                        tab.take(act_step(name, tab, args))
                    except Exception as e:
                        return refused(tab, e)
                    return view(tab, clear)

            act.__name__ = f"on_{name}"
            return act

        def follow_up(tab: UIState):
            """The model steps due for the tab's round ("refine", then "ask"), each shown when it lands.
            A newer action of the tab supersedes them: this event then ends at once (its queue slot is
            free), the step is cancelled (a local model stops generating and frees its lock), and whatever
            it still returns is dropped. The same when the page stops listening (the tab closed)."""
            shown = False
            while (job_work := work.claim(tab)) is not None:
                job = in_background(model_step, job_work)
                try:
                    t0 = time.monotonic()
                    ticks = 0
                    while not futures.wait([job], timeout=POLL_S).done:
                        if not work.current(tab, job_work):
                            work.drop(tab, job_work)
                            if not shown:
                                yield {status: gr.skip()}
                            return
                        if time.monotonic() - t0 >= ticks + TICK_S:
                            ticks = int(time.monotonic() - t0)
                            shown = True
                            yield {status: render.status_md(tab) + f" ({ticks} s)"}
                finally:
                    if not job.done():  # superseded, or the generator was closed: nobody waits for it
                        work.stop(job_work)
                e = job.exception()
                applied = work.settle(engine, tab, job_work, None if e else job.result(), e,
                                      lambda err, step=job_work.step: f"⚠ {failure_note(step, err)}")
                if not applied:  # superseded while it ran
                    break
                shown = True
                yield view(tab)
            if not shown:
                yield {status: gr.skip()}

        def failure_note(step: str, e: BaseException) -> str:
            what = "refine these results" if step == "refine" else "write a question"
            why = message(e) if isinstance(e, IIRError) else f"{e.__class__.__name__}: {e}"
            return f"The model could not {what} ({why}). The results shown stand; you can go on."

        def quick(fn, st: UIState, *args, clear=(), on_error_clear=()):
            """A step without models (the "mark" and "ui" queues): runs at once, even while model work is
            pending. Events of other tabs run beside it; those of the same tab wait for its lock, so each sees
            the state the previous one left (Gradio hands every event of a tab the same `UIState` object) and
            renders it before the next one changes it."""
            with st.lock:
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

        # retrieval ("act") and clicks ("ui") never wait behind model steps ("model", the queue's default limit);
        # every submit counts ("multiple": nothing is dropped), each action's model work follows it (.then)
        act = {"concurrency_id": "act", "concurrency_limit": search_concurrency, "trigger_mode": "multiple",
               "show_progress": "minimal", "show_progress_on": [results]}
        model = {"concurrency_id": "model", "concurrency_limit": "default", "trigger_mode": "multiple",
                 "show_progress": "hidden"}
        # clicks take milliseconds: marks have a queue group of their own, so they never wait behind another
        # tab's New search or upload; the other clicks share "ui". Within a tab, `quick` keeps them in order
        marks = {"concurrency_id": "mark", "concurrency_limit": click_concurrency, "trigger_mode": "multiple",
                 "show_progress": "hidden"}
        cheap = {"concurrency_id": "ui", "concurrency_limit": click_concurrency, "trigger_mode": "multiple",
                 "show_progress": "hidden"}
        for trigger, name, inputs, clear in (
                (desc.submit, "start", [state, desc], ("upload",)),  # a new search drops a pending upload
                (answer_box.submit, "answer", [state, answer_box], ("answer",)),
                (skip_btn.click, "skip", [state], ()),
                (fb_btn.click, "feedback", [state, fb_method], ()),
                (caption_box.submit, "relative", [state, caption_box, comp_method], ("caption", "upload"))):
            trigger(act_event(name, clear), inputs, outputs, api_name=name, **act).then(
                follow_up, [state], outputs, api_name=f"{name}_model", **model)

        choose = act_event("choose")

        def on_choose(st: UIState, evt: gr.EventData):
            """A click on one of the question's options (thumbnails, none of these, yes/no)."""
            data = getattr(evt, "_data", None) or {}
            return choose(st, data.get("index"), str(data.get("question") or ""))

        dialogue.click(on_choose, [state], outputs, api_name="on_choose", **act).then(
            follow_up, [state], outputs, api_name="choose_model", **model)
        # the same through the HTTP API (option number from 0, the question's text as shown): for scripts
        api_choose.click(choose, [state, api_option, api_question], outputs, api_name="choose", **act)
        api_card.click(lambda st, a, i: quick(handlers.card_action, st, a or "", i or ""), [state, api_action, api_id],
                       outputs, api_name="card", **marks)
        results.click(on_card, [state], outputs, **marks)
        strip.click(on_card, [state], outputs, **marks)  # "Found" under an earlier round's thumbnail
        upload.upload(on_upload, [state, upload], outputs, **cheap)
        upload.clear(on_clear_upload, [state], outputs, **cheap)
        clear_ref_btn.click(on_clear_reference, [state], outputs, **cheap)
        new_btn.click(on_new, [state], outputs, **cheap)

        def on_questioner(st: UIState, value):
            return quick(handlers.set_questioner, st, value or "")

        questioner.change(on_questioner, [state, questioner], outputs, **cheap)

        def on_hide_seen(st: UIState, value):
            return quick(handlers.set_hide_seen, st, bool(value))

        hide_seen.input(on_hide_seen, [state, hide_seen], outputs, **cheap)

        def on_close(request: gr.Request):
            on_tab_closed(request)

        demo.unload(on_close)
    return demo
