"""Study mode of the web app: `python app.py --study STUDY.yaml` serves `build_study_demo(...)`.

Pages, in order: participant id (typed, or generated) -> consent -> for each task: briefing (task n of N,
the target) -> search with the assigned condition within the round budget -> questionnaire -> thanks.
The participant id is kept in the browser (localStorage), so a reload resumes where the participant
was; the runner rebuilds their place from the study log. An admin page at /admin (password from the
environment variable IIR_STUDY_ADMIN_PASSWORD) lists participants and their completion and downloads
the event log.

`StudyPage` holds the page logic as plain functions of (participant id, TabState, values) and `view()`
returns plain values; `build_study_demo` only lays out Gradio components and wires events to it.
"""

# no `from __future__ import annotations`: Gradio reads the `gr.EventData` annotation at run time

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interactive_ir.errors import BadInputError, IIRError, SessionError
from interactive_ir.study.admin_ui import ADMIN_ENV
from interactive_ir.study.config import StudyConfig, load_study
from interactive_ir.study.log import StudyLog, study_log_config
from interactive_ir.study.pages import (
    STYLE,
    TabState,
    admin_rows,
    admin_summary,
    brief_md,
    budget_md,
    header_md,
    question_html,
    reference_html,
    results_html,
    target_html,
)
from interactive_ir.study.runner import Progress, StudyRunner
from interactive_ir.ui.render import esc

log = logging.getLogger(__name__)

SELF_LOGGING = {"describe", "answer", "skip", "feedback", "relative", "search", "submit"}  # the runner logs their errors
CLOCK_JS = "(...args) => { args[args.length - 1] = Date.now() / 1000; return args; }"
WELCOME = ("Welcome, and thank you for taking part. If you were given a participant id, or are coming back, "
           "type it and press **Continue**. Otherwise press **Start as a new participant**.")


@dataclass
class View:
    """Everything the page shows, as plain values."""

    phase: str  # "start" or one of runner.PHASES
    header: str
    status: str
    consent: str = ""
    brief: str = ""
    brief_target: str = ""
    search_target: str = ""
    budget: str = ""
    show_describe: bool = False
    show_conversation: bool = False
    show_feedback: bool = False
    show_composed: bool = False
    show_text: bool = False
    can_search: bool = False
    question: str = ""
    reference: str = ""
    results: str = ""
    give_up_label: str = "Give up"
    done: str = ""


def _clock(value: Any) -> float | None:
    try:
        t = float(value)
    except (TypeError, ValueError):
        return None
    return t if 1e9 < t < 1e11 else None  # a plausible unix time, else not sent


class StudyPage:
    """The study page's logic over a `StudyRunner`, without Gradio."""

    def __init__(self, runner: StudyRunner, setup_notes=()):
        self.runner = runner
        self.study = runner.study
        self.engine = runner.engine
        self.notes = [n for n in setup_notes if n]

    # --- reading -----------------------------------------------------------------------------------
    def progress(self, pid: str) -> Progress | None:
        if not pid:
            return None
        try:
            return self.runner.progress(pid)
        except SessionError:
            return None

    def view(self, pid: str, tab: TabState) -> View:
        p = self.progress(pid)
        tab.sync(p)
        status = tab.notice
        if p is None:
            return View("start", header_md(self.study, None), status or WELCOME)
        v = View(p.phase, header_md(self.study, p), status, consent=self.study.consent)
        if p.phase == "declined":
            v.done = "You did not agree to take part, so no task was started. Thank you for your time."
        elif p.phase == "done":
            v.done = (f"## Thank you!\nYou completed all {p.total} tasks. You can close this page.\n\n"
                      f"Your participant id was `{p.participant}`.")
        elif p.phase in ("briefing", "search", "questionnaire") and p.current is not None:
            cond = self.runner.condition_of(p)
            target = p.current.task.target
            if p.phase == "briefing":
                v.brief = brief_md(self.study, p, cond)
                v.brief_target = target_html(self.engine, target) if self.study.show_target else ""
            elif p.phase == "search":
                v.search_target = target_html(self.engine, target, small=True) if self.study.show_target else ""
                if p.current.task.prompt:
                    v.search_target += f'<div class="iir-study-prompt">{esc(p.current.task.prompt)}</div>'
                v.budget = budget_md(p)
                v.can_search = p.can_search
                v.show_describe = not p.described
                open_ = p.described and p.can_search
                v.show_conversation = open_ and "conversation" in cond.modes
                v.show_feedback = open_ and "feedback" in cond.modes
                v.show_composed = open_ and "composed" in cond.modes
                v.show_text = open_ and "text" in cond.modes
                v.question = question_html(p) if v.show_conversation else ""
                v.reference = reference_html(self.engine, p, tab) if v.show_composed else ""
                v.results = results_html(self.engine, p, cond, tab)
                v.give_up_label = "End task" if p.described and not p.can_search else "Give up"
            else:
                v.status = status or ("Found it, well done!" if p.ended == "found" else
                                      "Task ended.") + " Please rate the system you just used."
        return v

    # --- acting ------------------------------------------------------------------------------------
    def act(self, name: str, pid: str, tab: TabState, *args, client_ts: Any = None) -> tuple[str, TabState]:
        """Run action `name`; errors become the status line (and are logged); returns (pid, tab)."""
        tab.notice = ""
        ts = _clock(client_ts)
        try:
            new_pid = getattr(self, f"_{name}")(pid, tab, *args, ts)  # None: the same participant
            pid = pid if new_pid is None else new_pid
        except IIRError as e:
            tab.notice = f"⚠️ {_sentence(e)}"
            self._log_error(name, pid, str(e), ts)
        except Exception as e:  # a bug or a crashed backend: the participant's state is unchanged
            log.exception("study page action %s failed", name)
            tab.notice = f"⚠️ Something went wrong ({type(e).__name__}). Please try again."
            self._log_error(name, pid, f"{type(e).__name__}: {e}", ts)
        return pid, tab

    def _log_error(self, name: str, pid: str, message: str, ts: float | None) -> None:
        if name in SELF_LOGGING or not pid or self.progress(pid) is None:
            return
        try:
            self.runner.log_error(pid, name, message, ts)
        except IIRError:
            log.exception("could not log an error of participant %s", pid)

    def _resume(self, pid, tab, ts):
        if pid and self.progress(pid) is not None:
            self.runner.enrol(pid, client_ts=ts)  # logs "resume"
            return pid
        return ""

    def _enter(self, pid, tab, typed, ts):
        typed = (typed or "").strip()
        if not typed:
            raise SessionError("type your participant id, or start as a new participant")
        return self.runner.enrol(typed, client_ts=ts).participant

    def _new(self, pid, tab, ts):
        p = self.runner.enrol(None, client_ts=ts)
        tab.notice = f"Your participant id is **{p.participant}**: note it down to come back later."
        return p.participant

    def _leave(self, pid, tab, ts):
        tab.marks.clear()
        tab.reference = ""
        return ""

    def _consent(self, pid, tab, agreed, ts):
        self.runner.consent(pid, bool(agreed), ts)

    def _start(self, pid, tab, ts):
        self.runner.start_task(pid, ts)

    def _describe(self, pid, tab, text, ts):
        self.runner.describe(pid, text, ts)

    def _answer(self, pid, tab, text, ts):
        self.runner.answer(pid, text, ts)

    def _skip(self, pid, tab, ts):
        self.runner.skip(pid, ts)

    def _search(self, pid, tab, text, ts):
        self.runner.search(pid, text, ts)

    def _feedback(self, pid, tab, ts):
        rel, irr = tab.marked()
        if not rel and not irr:
            raise SessionError("mark at least one result as relevant or not relevant first")
        self.runner.feedback(pid, rel, irr, ts)

    def _relative(self, pid, tab, caption, ts):
        self.runner.relative(pid, caption, tab.reference or None, ts)

    def _card(self, pid, tab, action, image_id, ts):
        p = self.runner.progress(pid)
        tab.sync(p)
        if action == "pick":
            if not self.runner.pick(pid, image_id, ts):
                tab.notice = "That is not the image you are looking for: keep searching."
            return
        shown = p.session.last.shown if p.session and p.session.last else []
        if image_id not in shown:
            raise SessionError("that image is not among the results on the page")
        if action in ("relevant", "irrelevant"):
            want = action == "relevant"
            if tab.marks.get(image_id) is want:
                del tab.marks[image_id]
                self.runner.click(pid, image_id, "unmark", ts)
            else:
                tab.marks[image_id] = want
                self.runner.click(pid, image_id, f"mark_{action}", ts)
        elif action == "reference":
            tab.reference = "" if tab.reference == image_id else image_id
            self.runner.click(pid, image_id, "reference" if tab.reference else "unreference", ts)
        else:
            raise SessionError(f"unknown action {action!r}")

    def _give_up(self, pid, tab, ts):
        self.runner.give_up(pid, ts)

    def _submit(self, pid, tab, answers, ts):
        self.runner.submit_questionnaire(pid, answers, ts)

    # --- admin ---------------------------------------------------------------------------------------
    def admin_view(self) -> tuple[str, list[list]]:
        sid = self.study.study_id
        progresses = [self.runner.progress(p["participant"]) for p in self.runner.log.participants(sid)]
        return (admin_summary(self.study, progresses, self.runner.log.count(sid)),
                admin_rows(progresses, self.runner.log.last_activity(sid)))

    def export(self, fmt: str) -> str:
        from interactive_ir.study.export import export_events

        out = Path(tempfile.mkdtemp(prefix="iir-study-")) / f"{self.study.study_id}.events.{fmt}"
        export_events(self.runner.log, out, fmt, self.study.study_id)
        return str(out)


def _sentence(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text[0].upper() + text[1:]


def make_runner(engine, study: StudyConfig | str | Path, log: StudyLog | None = None) -> StudyRunner:
    study = study if isinstance(study, StudyConfig) else load_study(study)
    return StudyRunner(study, engine, log or StudyLog.for_study(study.study_id, study_log_config()))


def build_study_demo(engine, setup_notes=(), study: StudyConfig | str | Path | None = None, *,
                     log: StudyLog | None = None, admin_password: str | None = None):
    """The study page over a shared `engine` (a `gr.Blocks`).

    Called by `app.py --study FILE` as `build_study_demo(engine, notes, study_path)`; the arguments
    `(engine, study, notes)` are accepted too. The log goes to IIR_STUDY_DIR/<study_id>.sqlite unless
    `log` is given; the admin password comes from IIR_STUDY_ADMIN_PASSWORD unless given.
    """
    if isinstance(setup_notes, (StudyConfig, str, Path)):  # called as (engine, study, notes)
        setup_notes, study = (study or ()), setup_notes
    if study is None:
        raise BadInputError("build_study_demo needs a study file or a StudyConfig")
    page = StudyPage(make_runner(engine, study, log), setup_notes or ())
    password = admin_password if admin_password is not None else os.environ.get(ADMIN_ENV, "")
    return _layout(page, password)


def _layout(page: StudyPage, password: str):
    import gradio as gr

    from interactive_ir.ui.layout import ASSETS

    study = page.study
    cards_js = (ASSETS / "cards.js").read_text()
    from interactive_ir.ui.uploads import delete_cache

    with gr.Blocks(title=study.title or "Image search study", delete_cache=delete_cache()) as demo:
        gr.HTML(STYLE, padding=False, js_on_load=None)
        pid_store = gr.BrowserState("", storage_key=f"iir-study-{study.study_id}")
        tab_state = gr.State(TabState())
        clock = gr.Number(value=0, visible=False)
        header = gr.Markdown(header_md(study, None), elem_id="iir-study-header")
        status = gr.Markdown(WELCOME, elem_id="iir-status")

        with gr.Column(visible=True, elem_id="iir-study-start") as pg_start:
            pid_in = gr.Textbox(label="Participant id", placeholder="e.g. P3F9A1", max_lines=1, elem_id="iir-pid")
            with gr.Row():
                enter_btn = gr.Button("Continue", variant="primary", elem_id="iir-enter")
                new_btn = gr.Button("Start as a new participant", elem_id="iir-new-participant")
        with gr.Column(visible=False, elem_id="iir-study-consent") as pg_consent:
            consent_md = gr.Markdown(study.consent)
            with gr.Row():
                agree_btn = gr.Button("I agree", variant="primary", elem_id="iir-agree")
                decline_btn = gr.Button("I do not agree", elem_id="iir-decline")
        with gr.Column(visible=False, elem_id="iir-study-brief") as pg_brief:
            with gr.Row(equal_height=False):
                brief_target = gr.HTML("", js_on_load=None, min_width=220, elem_id="iir-study-brief-target")
                brief = gr.Markdown("", elem_id="iir-study-brief-text")
            start_btn = gr.Button("Start searching", variant="primary", elem_id="iir-start-task")
        with gr.Column(visible=False, elem_id="iir-study-search") as pg_search:
            with gr.Row(equal_height=False):
                with gr.Column(scale=1, min_width=220):
                    search_target = gr.HTML("", js_on_load=None, elem_id="iir-study-target")
                    budget = gr.HTML("", js_on_load=None, elem_id="iir-study-budget")
                    give_up_btn = gr.Button("Give up", variant="stop", elem_id="iir-give-up")
                with gr.Column(scale=3, min_width=320):
                    desc = gr.Textbox(label="Describe the image you are looking for", elem_id="iir-desc",
                                      max_lines=4, submit_btn="Search")
                    with gr.Group(visible=False) as g_conv:
                        question = gr.HTML("", js_on_load=None, elem_id="iir-dialogue")
                        answer_box = gr.Textbox(label="Your answer", elem_id="iir-answer", max_lines=4,
                                                submit_btn="Answer")
                        skip_btn = gr.Button("Skip question", size="sm", elem_id="iir-skip")
                    fb_btn = gr.Button("More like my marks", variant="primary", visible=False, elem_id="iir-feedback")
                    with gr.Group(visible=False) as g_comp:
                        reference = gr.HTML("", js_on_load=None, elem_id="iir-reference")
                        caption_box = gr.Textbox(label="How does your image differ from the reference?",
                                                 elem_id="iir-caption", max_lines=4, submit_btn="Search")
                    query_box = gr.Textbox(label="Search again with new words", visible=False, elem_id="iir-query",
                                           max_lines=4, submit_btn="Search")
            results = gr.HTML("", elem_id="iir-results", js_on_load=cards_js, min_height=120)
        with gr.Column(visible=False, elem_id="iir-study-questionnaire") as pg_quest:
            gr.Markdown("## About the system you just used")
            q_inputs = []
            for q in study.questions:
                if q.type == "likert":
                    q_inputs.append(gr.Radio([(str(i), i) for i in range(1, q.points + 1)], label=q.text,
                                             info=f"1 = {q.low_label}, {q.points} = {q.high_label}",
                                             elem_id=f"iir-q-{q.id}"))
                else:
                    q_inputs.append(gr.Textbox(label=q.text, lines=3, elem_id=f"iir-q-{q.id}"))
            submit_btn = gr.Button("Submit and continue", variant="primary", elem_id="iir-submit")
        with gr.Column(visible=False, elem_id="iir-study-done") as pg_done:
            done_md = gr.Markdown("")
            leave_btn = gr.Button("Next participant", size="sm", elem_id="iir-leave")

        pages = {"start": pg_start, "consent": pg_consent, "briefing": pg_brief, "search": pg_search,
                 "questionnaire": pg_quest, "done": pg_done, "declined": pg_done}
        outputs = [pid_store, tab_state, header, status, pg_start, pg_consent, pg_brief, pg_search, pg_quest, pg_done,
                   consent_md, brief, brief_target, search_target, budget, desc, g_conv, question, answer_box, fb_btn,
                   g_comp, reference, caption_box, query_box, results, give_up_btn, done_md, *q_inputs]

        def render(pid: str, tab: TabState, clear: tuple = ()) -> dict:
            v = page.view(pid, tab)
            if v.status.startswith("⚠️"):
                gr.Warning(v.status[2:].strip())
            out = {pid_store: pid, tab_state: tab, header: v.header, status: v.status,
                   consent_md: v.consent or study.consent, brief: v.brief, brief_target: v.brief_target,
                   search_target: v.search_target, budget: v.budget,
                   desc: gr.update(visible=v.show_describe), g_conv: gr.update(visible=v.show_conversation),
                   question: v.question, fb_btn: gr.update(visible=v.show_feedback),
                   g_comp: gr.update(visible=v.show_composed), reference: v.reference,
                   query_box: gr.update(visible=v.show_text), results: v.results,
                   give_up_btn: gr.update(value=v.give_up_label), done_md: v.done}
            shown = pages[v.phase]
            for pg in set(pages.values()):
                out[pg] = gr.update(visible=pg is shown)
            for box in clear:  # keep any visibility update of the box
                upd = out.get(box)
                out[box] = gr.update(**{**(upd if isinstance(upd, dict) else {}), "value": ""})
            if v.phase != "questionnaire":
                for comp in q_inputs:
                    out[comp] = None
            return out

        def handler(name: str, clear: tuple = (), n_args: int = 0):
            def fn(pid, tab, *rest):
                *args, ts = rest
                pid, tab = page.act(name, pid or "", tab, *args[:n_args], client_ts=ts)
                return render(pid, tab, clear if not tab.notice.startswith("⚠️") else ())

            fn.__name__ = f"on_{name}"
            return fn

        def on_load(pid, tab, ts):
            pid, tab = page.act("resume", pid or "", tab, client_ts=ts)
            return render(pid, tab)

        def on_card(pid, tab, ts, evt: gr.EventData):
            data = getattr(evt, "_data", None) or {}
            pid, tab = page.act("card", pid or "", tab, str(data.get("action", "")), str(data.get("id", "")),
                                client_ts=ts)
            return render(pid, tab)

        def on_submit(pid, tab, *rest):
            *values, ts = rest
            answers = {q.id: v for q, v in zip(study.questions, values)}
            pid, tab = page.act("submit", pid or "", tab, answers, client_ts=ts)
            return render(pid, tab)

        base = [pid_store, tab_state]
        model = {"concurrency_id": "model", "trigger_mode": "once", "show_progress": "minimal", "js": CLOCK_JS}
        quick = {"trigger_mode": "once", "show_progress": "hidden", "js": CLOCK_JS}
        demo.load(on_load, [*base, clock], outputs, js=CLOCK_JS)
        enter_btn.click(handler("enter", n_args=1), [*base, pid_in, clock], outputs, **quick)
        pid_in.submit(handler("enter", n_args=1), [*base, pid_in, clock], outputs, **quick)
        new_btn.click(handler("new"), [*base, clock], outputs, **quick)
        agree_btn.click(lambda pid, tab, ts: render(*page.act("consent", pid or "", tab, True, client_ts=ts)),
                        [*base, clock], outputs, **quick)
        decline_btn.click(lambda pid, tab, ts: render(*page.act("consent", pid or "", tab, False, client_ts=ts)),
                          [*base, clock], outputs, **quick)
        start_btn.click(handler("start"), [*base, clock], outputs, **quick)
        desc.submit(handler("describe", (desc,), 1), [*base, desc, clock], outputs, **model)
        answer_box.submit(handler("answer", (answer_box,), 1), [*base, answer_box, clock], outputs, **model)
        skip_btn.click(handler("skip"), [*base, clock], outputs, **model)
        fb_btn.click(handler("feedback"), [*base, clock], outputs, **model)
        caption_box.submit(handler("relative", (caption_box,), 1), [*base, caption_box, clock], outputs, **model)
        query_box.submit(handler("search", (query_box,), 1), [*base, query_box, clock], outputs, **model)
        results.click(on_card, [*base, clock], outputs, **quick)
        give_up_btn.click(handler("give_up"), [*base, clock], outputs, **quick)
        submit_btn.click(on_submit, [*base, *q_inputs, clock], outputs, **quick)
        leave_btn.click(handler("leave", (pid_in,)), [*base, clock], outputs, **quick)

    from interactive_ir.study.admin_ui import add_admin_page

    add_admin_page(demo, page, password)
    return demo
