"""Study mode of the web app: `python app.py --study STUDY.yaml` serves `build_study_demo(...)`.

Pages, in order: consent (which enrols) -> for each task (a practice task first when the study has one):
briefing (task n of N, the target, a break note between conditions) -> search with the assigned
condition within the round budget and time limit -> the questionnaires due (after the task, after the
condition, at the end) -> the end page with the platform's completion code.

Identity: enrolling gives the participant a secret token (256 random bits) that the browser keeps
(`gr.BrowserState`, localStorage) and sends with every call; the server maps the token's hash to the
participant. Nothing the page sends names a participant, so knowing someone's participant id or
recruitment id (PROLIFIC_PID, workerId) gives no access to their tasks, and no call says whether an id
exists. A reload resumes where the participant was; the runner rebuilds their place from the study log.
The recruitment platform's URL parameters are read on page load and recorded at consent.

An admin page at /admin (password from IIR_STUDY_ADMIN_PASSWORD, refused when weak) lists participants
and their completion and downloads the event log.

`StudyPage` holds the page logic as plain functions of (token, TabState, values) and `view()` returns
plain values; `build_study_demo` only lays out Gradio components and wires events to it.
"""

# no `from __future__ import annotations`: Gradio reads the `gr.EventData` annotation at run time

import logging
import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interactive_ir.errors import BadInputError, IIRError, SessionError
from interactive_ir.study.admin_ui import ADMIN_ENV, check_password_strength
from interactive_ir.study.config import StudyConfig, load_study
from interactive_ir.study.log import AlreadyEnrolled, StudyLog, study_log_config
from interactive_ir.study.pages import (
    STYLE,
    TabState,
    admin_rows,
    admin_summary,
    brief_md,
    budget_md,
    form_title,
    header_md,
    question_html,
    reference_html,
    results_html,
    target_html,
)
from interactive_ir.study.recruitment import LinkError, end_message, read_arrival
from interactive_ir.study.runner import Progress, StudyRunner
from interactive_ir.ui.render import esc

log = logging.getLogger(__name__)

SELF_LOGGING = {"describe", "answer", "skip", "feedback", "relative", "search", "submit"}  # the runner logs their errors
MODEL_ACTIONS = ("describe", "answer", "skip", "feedback", "relative", "search")
CLOCK_JS = "(...args) => { args[args.length - 1] = Date.now() / 1000; return args; }"
WELCOME = "Welcome, and thank you for your interest. Please read the information below."
WORKING = '<span class="iir-working" role="status">Searching: the results will appear here in a moment</span>'
ASSETS = Path(__file__).resolve().parent.parent.parent / "assets" / "study"


@dataclass
class View:
    """Everything the page shows, as plain values."""

    phase: str  # "start" or one of runner.PHASES
    header: str
    status: str
    consent: str = ""
    can_join: bool = False  # the consent buttons work (a valid link, the study open)
    brief: str = ""
    brief_target: str = ""
    search_target: str = ""
    budget: str = ""
    show_describe: bool = False
    show_conversation: bool = False
    show_answer: bool = False  # a question is pending: the answer box shows
    show_feedback: bool = False
    show_composed: bool = False
    show_text: bool = False
    can_search: bool = False
    question: str = ""
    reference: str = ""
    results: str = ""
    give_up_label: str = "Give up"
    confirm_give_up: bool = False
    form: str = ""  # the questionnaire showing: "task", "condition" or "end"
    form_title: str = ""
    done: str = ""
    forms: list = field(default_factory=list)


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

    # --- identity ----------------------------------------------------------------------------------
    def arrive(self, tab: TabState, query: Mapping[str, str]) -> None:
        """Read the recruitment platform's URL parameters (on page load) into the tab."""
        try:
            tab.arrival, tab.link_error = read_arrival(self.study.recruitment, query).to_dict(), ""
        except LinkError as e:
            tab.arrival, tab.link_error = None, str(e)

    def who(self, token: Any, tab: TabState | None = None) -> str | None:
        """The participant holding `token` (None: a new visitor). A browser that comes back with another
        recruitment id than its participant's is a new visitor (e.g. a shared computer)."""
        pid = self.runner.participant_of(token)
        if pid is None or tab is None or not (tab.arrival or {}).get("id"):
            return pid
        p = self.progress(pid)
        if p is not None and p.recruit.get("id") and p.recruit["id"] != tab.arrival["id"]:
            return None
        return pid

    # --- reading -----------------------------------------------------------------------------------
    def progress(self, pid: str | None) -> Progress | None:
        if not pid:
            return None
        try:
            return self.runner.progress(pid)
        except SessionError:
            return None

    def view(self, token: Any, tab: TabState) -> View:
        p = self.progress(self.who(token, tab))
        tab.sync(p)
        status = tab.notice
        if p is None:
            v = View("start", header_md(self.study, None), status or WELCOME, consent=self.study.consent)
            if tab.link_error:
                v.status = f"⚠️ {tab.link_error}"
            elif self.runner.is_closed():
                v.status = "This study has closed and takes no new participants. Thank you for your interest."
            else:
                v.can_join = True
            return v
        v = View(p.phase, header_md(self.study, p), status, consent=self.study.consent)
        rec = self.study.recruitment
        if p.phase == "declined":
            v.done = "\n\n".join(x for x in ("You did not agree to take part, so no task was started. Thank you for "
                                             "your time.", end_message(rec, "no_consent")) if x)
        elif p.phase == "screened_out":
            v.done = "\n\n".join(x for x in ("Thank you: from your answers, this study is not for you, so it ends "
                                             "here. Your answers so far are kept.",
                                             end_message(rec, "screened_out")) if x)
        elif p.phase == "done":
            v.done = "\n\n".join(x for x in (f"## Thank you!\nYou completed all {p.n_tasks} tasks." if p.n_tasks != 1 else
                                             "## Thank you!\nYou completed the task.",
                                             end_message(rec, "completed") or "You can close this page.") if x)
        elif p.phase in ("briefing", "search", "questionnaire") and p.current is not None:
            cond = self.runner.condition_of(p)
            target = p.current.task.target
            if p.phase == "briefing":
                v.brief = brief_md(self.study, p, cond)
                v.brief_target = target_html(self.engine, target) if self.study.show_target else ""
                if self.runner.is_closed():
                    v.status = status or ("⚠️ This study has closed: your answers so far are saved, and no new task "
                                          "can start. Please tell the researcher (on your recruitment platform, if "
                                          "you came from one).")
            elif p.phase == "search":
                v.search_target = target_html(self.engine, target, small=True) if self.study.show_target else ""
                if p.current.task.prompt:
                    v.search_target += f'<div class="iir-study-prompt">{esc(p.current.task.prompt)}</div>'
                v.budget = budget_md(p, self.runner.clock())
                v.can_search = p.can_search
                v.show_describe = not p.described
                open_ = p.described and p.can_search
                v.show_conversation = open_ and "conversation" in cond.modes
                v.show_feedback = open_ and "feedback" in cond.modes
                v.show_composed = open_ and "composed" in cond.modes
                v.show_text = open_ and "text" in cond.modes
                v.question = question_html(p) if v.show_conversation else ""
                v.show_answer = v.show_conversation and bool(p.session.pending_question)
                v.reference = reference_html(self.engine, p, tab) if v.show_composed else ""
                v.results = results_html(self.engine, p, cond, tab)
                v.give_up_label = "End task" if p.described and not p.can_search else "Give up"
                v.confirm_give_up = tab.confirm_give_up
            else:
                v.form = p.form or "task"
                v.form_title = form_title(v.form, cond)
                how = {"found": "Found it, well done!", "timeout": "The time for this task is up."}.get(p.ended,
                                                                                                      "Task ended.")
                ask = {"task": " Please rate the system you just used.",
                       "condition": " Please tell us about the system you used in the last tasks.",
                       "end": " A few last questions, then you are done."}[v.form]
                v.status = status or how + ask
        return v

    # --- acting ------------------------------------------------------------------------------------
    def act(self, name: str, token: Any, tab: TabState, *args, client_ts: Any = None) -> tuple[str, TabState]:
        """Run action `name`; errors become the status line (and are logged); returns (token, tab)."""
        if name != "ask":  # the question step keeps the round's message
            tab.notice = ""
        ts = _clock(client_ts)
        token = token if isinstance(token, str) else ""
        pid = self.who(token, tab) or ""
        if name == "ask" and not pid:
            return token, tab
        try:
            if name not in ("join", "leave") and not pid:
                raise SessionError("this page does not know you yet: please read the information and answer it")
            new_token = getattr(self, f"_{name}")(pid, tab, *args, ts)  # None: the same participant
            token = token if new_token is None else new_token
        except IIRError as e:
            tab.notice = f"⚠️ {_sentence(e)}"
            self._log_error(name, pid, str(e), ts)
        except Exception as e:  # a bug or a crashed backend: the participant's state is unchanged
            log.exception("study page action %s failed", name)
            tab.notice = f"⚠️ Something went wrong ({type(e).__name__}). Please try again."
            self._log_error(name, pid, f"{type(e).__name__}: {e}", ts)
        return token, tab

    def _log_error(self, name: str, pid: str, message: str, ts: float | None) -> None:
        if name in SELF_LOGGING or not pid or self.progress(pid) is None:
            return
        try:
            self.runner.log_error(pid, name, message, ts)
        except IIRError:
            log.exception("could not log an error of participant %s", pid)

    def _resume(self, pid, tab, ts):
        p = self.runner.enrol(pid, client_ts=ts)  # logs "resume"
        if p.phase == "search" and p.session is not None and p.session.turns:  # marks were logged at click time
            tab.marks, tab.reference = self.runner.current_marks(pid)
            tab.round = p.session.round

    def _join(self, pid, tab, agreed, ts):
        if tab.link_error:
            raise LinkError(tab.link_error)
        if pid:  # this browser already takes part
            return None
        if self.study.recruitment.platform != "none" and not (tab.arrival or {}).get("id"):
            raise SessionError("the page has not read your link yet: reload the page, then answer again")
        try:
            p, token = self.runner.join(bool(agreed), tab.arrival, ts)
        except AlreadyEnrolled:
            raise SessionError("this study was already started with your recruitment id, in another browser or "
                               "device: please go on there. If you cannot, message the researcher on your "
                               "recruitment platform") from None
        return token

    def _leave(self, pid, tab, ts):
        tab.marks.clear()
        tab.reference = ""
        return ""

    def _start(self, pid, tab, ts):
        self.runner.start_task(pid, ts)

    def _describe(self, pid, tab, text, ts):
        self.runner.describe(pid, text, ts, ask=False)

    def _answer(self, pid, tab, text, ts):
        self.runner.answer(pid, text, ts, ask=False)

    def _skip(self, pid, tab, ts):
        self.runner.skip(pid, ts, ask=False)

    def _search(self, pid, tab, text, ts):
        self.runner.search(pid, text, ts, ask=False)

    def _feedback(self, pid, tab, ts):
        rel, irr = tab.marked()
        if not rel and not irr:
            raise SessionError("mark at least one result as relevant or not relevant first")
        self.runner.feedback(pid, rel, irr, ts, ask=False)

    def _relative(self, pid, tab, caption, ts):
        self.runner.relative(pid, caption, tab.reference or None, ts, ask=False)

    def _card(self, pid, tab, action, image_id, ts):
        if action == "timeout":
            return self._timeout(pid, tab, ts)
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

    def _ask(self, pid, tab, ts):
        self.runner.ask(pid, ts)

    def _timeout(self, pid, tab, ts):
        if self.runner.timeout(pid, ts).ended == "timeout":
            tab.notice = "The time for this task is up."

    def _give_up(self, pid, tab, ts):
        tab.confirm_give_up = True  # asks first; `give_up_yes` ends the task

    def _give_up_no(self, pid, tab, ts):
        tab.confirm_give_up = False

    def _give_up_yes(self, pid, tab, ts):
        tab.confirm_give_up = False
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


def browser_secret(log: StudyLog) -> str:
    """The key gr.BrowserState encrypts the token with in localStorage: kept in the study database, so
    stored tokens stay readable after a restart (the token's own randomness is what protects it)."""
    secret = log.get_meta("browser_secret")
    if not secret:
        secret = secrets.token_urlsafe(24)
        log.set_meta("browser_secret", secret)
    return secret


def build_study_demo(engine, setup_notes=(), study: StudyConfig | str | Path | None = None, *,
                     log: StudyLog | None = None, admin_password: str | None = None):
    """The study page over a shared `engine` (a `gr.Blocks`).

    Called by `app.py --study FILE` as `build_study_demo(engine, notes, study_path)`; the arguments
    `(engine, study, notes)` are accepted too. The log goes to IIR_STUDY_DIR/<study_id>.sqlite unless
    `log` is given; the admin password comes from IIR_STUDY_ADMIN_PASSWORD unless given, and a weak or
    example password is refused (BadInputError) before anything is served.
    """
    if isinstance(setup_notes, (StudyConfig, str, Path)):  # called as (engine, study, notes)
        setup_notes, study = (study or ()), setup_notes
    if study is None:
        raise BadInputError("build_study_demo needs a study file or a StudyConfig")
    password = admin_password if admin_password is not None else os.environ.get(ADMIN_ENV, "")
    check_password_strength(password)
    page = StudyPage(make_runner(engine, study, log), setup_notes or ())
    return _layout(page, password)


def _form_input(gr, q):
    """The Gradio input of one questionnaire item."""
    eid = f"iir-q-{q.id}"
    if q.type == "likert":
        info = f"1 = {q.low_label}, {q.points} = {q.high_label}"
        return gr.Radio([(str(i), i) for i in range(1, q.points + 1)], label=q.text, info=info, elem_id=eid)
    if q.type == "choice":
        return gr.Radio(list(q.options), label=q.text, elem_id=eid)
    if q.type == "slider":
        return gr.Slider(q.minimum, q.maximum, value=None, step=q.step, label=q.text,
                         info=f"{q.minimum:g} = {q.low_label}, {q.maximum:g} = {q.high_label}", elem_id=eid)
    if q.type == "number":
        return gr.Number(label=q.text, minimum=q.minimum, maximum=q.maximum, value=None, elem_id=eid)
    return gr.Textbox(label=q.text, lines=3, elem_id=eid)


BUSY_JS = ("(...args) => { document.body.classList.add('iir-busy'); args[args.length - 1] = Date.now() / 1000; "
           "return args; }")
IDLE_JS = "() => { document.body.classList.remove('iir-busy'); }"
BUSY_CSS = """<style>
#iir-working { display: none; }
body.iir-busy #iir-working { display: block; }
body.iir-busy #iir-results { opacity: .55; }
</style>"""


def _layout(page: StudyPage, password: str):
    import gradio as gr

    from interactive_ir.ui.layout import ASSETS as UI_ASSETS

    study = page.study
    cards_js = (UI_ASSETS / "cards.js").read_text()
    timer_js = (ASSETS / "timer.js").read_text()
    with gr.Blocks(title=study.title or "Image search study") as demo:
        gr.HTML(STYLE + BUSY_CSS, padding=False, js_on_load=None)
        token_store = gr.BrowserState("", storage_key=f"iir-study-{study.study_id}",
                                      secret=browser_secret(page.runner.log))
        tab_state = gr.State(TabState())
        clock = gr.Number(value=0, visible=False)
        header = gr.Markdown(header_md(study, None), elem_id="iir-study-header")
        status = gr.Markdown(WELCOME, elem_id="iir-status")

        with gr.Column(visible=True, elem_id="iir-study-consent") as pg_start:
            consent_md = gr.Markdown(study.consent)
            with gr.Row(visible=False) as consent_row:  # shown once the page load has read the link
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
                    budget = gr.HTML("", js_on_load=timer_js, elem_id="iir-study-budget")
                    give_up_btn = gr.Button("Give up", variant="stop", elem_id="iir-give-up")
                    with gr.Group(visible=False, elem_id="iir-give-up-confirm") as g_confirm:
                        gr.Markdown("**End this task without finding the image?**")
                        with gr.Row():
                            give_up_yes = gr.Button("Yes, end the task", variant="stop", size="sm",
                                                    elem_id="iir-give-up-yes")
                            give_up_no = gr.Button("Keep searching", size="sm", elem_id="iir-give-up-no")
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
            gr.HTML(WORKING, js_on_load=None, elem_id="iir-working")
            results = gr.HTML("", elem_id="iir-results", js_on_load=cards_js, min_height=120)
        forms: dict[str, tuple] = {}  # form -> (column, title, inputs, submit button)
        for form in ("task", "condition", "end"):
            items = study.form(form)
            if not items:
                continue
            with gr.Column(visible=False, elem_id=f"iir-study-form-{form}") as col:
                title = gr.Markdown(form_title(form, None))
                inputs = [_form_input(gr, q) for q in items]
                btn = gr.Button("Submit and continue", variant="primary",
                                elem_id="iir-submit" if form == "task" else f"iir-submit-{form}")
            forms[form] = (col, title, inputs, btn)
        with gr.Column(visible=False, elem_id="iir-study-done") as pg_done:
            done_md = gr.Markdown("", elem_id="iir-study-end")
            leave_btn = gr.Button("Next participant", size="sm", elem_id="iir-leave",
                                  visible=study.recruitment.platform == "none")

        pages = {"start": pg_start, "briefing": pg_brief, "search": pg_search, "done": pg_done, "declined": pg_done,
                 "screened_out": pg_done}
        form_inputs = [c for f in forms.values() for c in f[2]]
        outputs = [token_store, tab_state, header, status, pg_start, consent_row, pg_brief, pg_search, pg_done,
                   consent_md, brief, brief_target, search_target, budget, desc, g_conv, question, answer_box, fb_btn,
                   g_comp, reference, caption_box, query_box, results, give_up_btn, g_confirm, done_md,
                   *[f[0] for f in forms.values()], *[f[1] for f in forms.values()], *form_inputs]

        def render(token: str, tab: TabState, clear: tuple = ()) -> dict:
            v = page.view(token, tab)
            if v.status.startswith("⚠️"):
                gr.Warning(v.status[2:].strip())
            out = {token_store: token, tab_state: tab, header: v.header, status: v.status,
                   consent_row: gr.update(visible=v.can_join),
                   consent_md: v.consent or study.consent, brief: v.brief, brief_target: v.brief_target,
                   search_target: v.search_target, budget: v.budget,
                   desc: gr.update(visible=v.show_describe), g_conv: gr.update(visible=v.show_conversation),
                   question: v.question, answer_box: gr.update(visible=v.show_answer),
                   fb_btn: gr.update(visible=v.show_feedback),
                   g_comp: gr.update(visible=v.show_composed), reference: v.reference,
                   query_box: gr.update(visible=v.show_text), results: v.results,
                   give_up_btn: gr.update(value=v.give_up_label, visible=not v.confirm_give_up),
                   g_confirm: gr.update(visible=v.confirm_give_up), done_md: v.done}
            shown = pages.get(v.phase)
            for pg in set(pages.values()):
                out[pg] = gr.update(visible=pg is shown)
            for form, (col, title, inputs, _) in forms.items():
                out[col] = gr.update(visible=v.phase == "questionnaire" and v.form == form)
                out[title] = v.form_title if v.form == form else form_title(form, None)
                if not (v.phase == "questionnaire" and v.form == form):
                    for comp in inputs:
                        out[comp] = None
            for box in clear:  # keep any visibility update of the box
                upd = out.get(box)
                out[box] = gr.update(**{**(upd if isinstance(upd, dict) else {}), "value": ""})
            return out

        def handler(name: str, clear: tuple = (), n_args: int = 0):
            def fn(token, tab, *rest):
                *args, ts = rest
                token, tab = page.act(name, token, tab, *args[:n_args], client_ts=ts)
                return render(token, tab, clear if not tab.notice.startswith("⚠️") else ())

            fn.__name__ = f"on_{name}"
            return fn

        def on_load(token, tab, ts, request: gr.Request):
            page.arrive(tab, dict(request.query_params) if request is not None else {})
            if page.who(token, tab):
                token, tab = page.act("resume", token, tab, client_ts=ts)
            return render(token or "", tab)

        def on_ask(token, tab, ts):
            token, tab = page.act("ask", token, tab, client_ts=ts)
            return render(token, tab)

        def on_card(token, tab, ts, evt: gr.EventData):
            data = getattr(evt, "_data", None) or {}
            token, tab = page.act("card", token, tab, str(data.get("action", "")), str(data.get("id", "")),
                                  client_ts=ts)
            return render(token, tab)

        def submitter(form: str):
            items = study.form(form)

            def on_submit(token, tab, *rest):
                *values, ts = rest
                answers = {q.id: v for q, v in zip(items, values)}
                token, tab = page.act("submit", token, tab, answers, client_ts=ts)
                return render(token, tab)

            return on_submit

        base = [token_store, tab_state]
        search = {"concurrency_id": "search", "trigger_mode": "once", "show_progress": "hidden", "js": BUSY_JS}
        quick = {"trigger_mode": "once", "show_progress": "hidden", "js": CLOCK_JS}
        asking = {"concurrency_id": "model", "show_progress": "hidden", "js": CLOCK_JS}

        def with_question(event):  # results first; then the system's question (the slow LLM step)
            event.then(None, None, None, js=IDLE_JS).then(on_ask, [*base, clock], outputs, **asking)

        demo.load(on_load, [*base, clock], outputs, js=CLOCK_JS, show_progress="hidden").then(
            on_ask, [*base, clock], outputs, **asking)
        agree_btn.click(lambda t, tab, ts: render(*page.act("join", t, tab, True, client_ts=ts)),
                        [*base, clock], outputs, **quick)
        decline_btn.click(lambda t, tab, ts: render(*page.act("join", t, tab, False, client_ts=ts)),
                          [*base, clock], outputs, **quick)
        start_btn.click(handler("start"), [*base, clock], outputs, **quick)
        with_question(desc.submit(handler("describe", (desc,), 1), [*base, desc, clock], outputs, **search))
        with_question(answer_box.submit(handler("answer", (answer_box,), 1), [*base, answer_box, clock], outputs,
                                        **search))
        with_question(skip_btn.click(handler("skip"), [*base, clock], outputs, **search))
        with_question(fb_btn.click(handler("feedback"), [*base, clock], outputs, **search))
        with_question(caption_box.submit(handler("relative", (caption_box,), 1), [*base, caption_box, clock], outputs,
                                         **search))
        with_question(query_box.submit(handler("search", (query_box,), 1), [*base, query_box, clock], outputs,
                                       **search))
        results.click(on_card, [*base, clock], outputs, **quick)
        budget.click(on_card, [*base, clock], outputs, **quick)  # the timer reports {action: "timeout"}
        give_up_btn.click(handler("give_up"), [*base, clock], outputs, **quick)
        give_up_yes.click(handler("give_up_yes"), [*base, clock], outputs, **quick)
        give_up_no.click(handler("give_up_no"), [*base, clock], outputs, **quick)
        for form, (_, _, inputs, btn) in forms.items():
            btn.click(submitter(form), [*base, *inputs, clock], outputs, **quick)
        leave_btn.click(handler("leave"), [*base, clock], outputs, **quick)

    from interactive_ir.study.admin_ui import add_admin_page

    add_admin_page(demo, page, password)
    return demo
