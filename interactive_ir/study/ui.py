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
from interactive_ir.study.runner import Progress, StaleQuestionError, StudyRunner
from interactive_ir.ui.render import esc

log = logging.getLogger(__name__)

SELF_LOGGING = {"describe", "answer", "choose", "skip", "feedback", "relative", "search", "submit"}  # the runner logs their errors
MODEL_ACTIONS = ("describe", "answer", "choose", "skip", "feedback", "relative", "search")
CLOCK_JS = "(...args) => { args[args.length - 1] = Date.now() / 1000; return args; }"
WELCOME = "Welcome, and thank you for your interest. Please read the information below."
WORKING = '<span class="iir-working" role="status">Searching: the results will appear here in a moment</span>'


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
                v.question = question_html(p, self.engine) if v.show_conversation else ""
                q = p.session.question if p.session else None
                v.show_answer = v.show_conversation and q is not None and not q.options  # options: click one
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

    def _choose(self, pid, tab, index, question, question_round, ts):
        try:
            self.runner.choose(pid, index, str(question or ""), ts, ask=False, question_round=question_round)
        except StaleQuestionError:  # a click on a question a newer action replaced: nothing changes
            tab.notice = "That question is no longer open: answer the one shown now, or search again."

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
    from interactive_ir.study.layout import layout

    return layout(page, password)

