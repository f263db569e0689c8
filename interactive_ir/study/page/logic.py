"""The study page's logic, without Gradio: `StudyPage` holds the page's actions as plain functions of
(token, TabState, values) and `view()` returns plain values (`View`); `layout` lays out Gradio components
and wires events to it.

Identity: the participant's secret token (see `interactive_ir.study.flow.enrolment`) is kept by the
browser and sent with every call; `who` maps it to the participant. A browser that arrives with another
recruitment id than its participant's is treated as a new visitor.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from interactive_ir.errors import IIRError, SessionError
from interactive_ir.study.config import Condition
from interactive_ir.study.config_types import Recruitment
from interactive_ir.study.log import TASK_END_TYPES, AlreadyEnrolled, StudyLog
from interactive_ir.study.page.admin_actions import AdminActions
from interactive_ir.study.page.guard import StudyGuard, study_guard
from interactive_ir.study.page.render import (
    CARD_ACTIONS,
    Outcomes,
    TabState,
    brief_md,
    budget_md,
    form_title,
    header_md,
    question_html,
    reference_html,
    results_html,
    target_html,
)
from interactive_ir.study.progress import Progress
from interactive_ir.study.recruitment import LinkError, end_message, read_arrival
from interactive_ir.study.runner import ActionRefused, StaleQuestionError, StudyRunner
from interactive_ir.ui.render import esc
from interactive_ir.ui.serving.limits import WindowCounter

log = logging.getLogger(__name__)

SELF_LOGGING = {"describe", "answer", "choose", "skip", "feedback", "relative", "search", "submit"}  # the runner logs their errors
MODEL_ACTIONS = ("describe", "answer", "choose", "skip", "feedback", "relative", "search")
WELCOME = "Welcome, and thank you for your interest. Please read the information below."


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
    waiting: bool = False  # a competition's task the organiser has not opened: the page waits for it
    locked_s: int = 0  # seconds the organiser's description stays the only query (the text boxes are locked)
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


class StudyPage(AdminActions):
    """The study page's logic over a `StudyRunner`, without Gradio (the admin page's actions in `AdminActions`)."""

    def __init__(self, runner: StudyRunner, setup_notes=(), guard: StudyGuard | None = None):
        self.runner = runner
        self.study = runner.study
        self.engine = runner.engine
        self.notes = [n for n in setup_notes if n]
        self.guard = guard or study_guard()
        self.joins = WindowCounter(self.guard.join_window_s)  # enrolments per client address

    # --- identity ----------------------------------------------------------------------------------
    def arrive(self, tab: TabState, query: Mapping[str, str], hf_user: str = "") -> None:
        """Read the recruitment platform's URL parameters (on page load) into the tab (`hf_user`: the visitor's
        Hugging Face user name when signed in, for a study recruiting on Hugging Face)."""
        try:
            tab.arrival, tab.link_error = read_arrival(self.study.recruitment, query, hf_user).to_dict(), ""
        except LinkError as e:
            tab.arrival, tab.link_error = None, str(e)
        tab.expert = _expert(query.get("expert"))

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

    def fresh(self, pid: str | None, tab: TabState) -> None:
        """The tab's marks and reference as the log holds them: reloaded whenever the participant's last event in
        the log is not the one the tab last saw (another process, or another tab, acted meanwhile)."""
        if not pid:
            return
        last = self.runner.log.last_event_id(self.study.study_id, pid)
        if last == tab.seen:
            return
        p = self.progress(pid)
        tab.sync(p)
        if p is not None and p.phase == "search" and p.session is not None and p.session.turns:
            tab.marks, tab.reference = self.runner.current_marks(pid)
        tab.seen = last

    def view(self, token: Any, tab: TabState) -> View:
        pid = self.who(token, tab)
        self.fresh(pid, tab)
        p = self.progress(pid)
        tab.sync(p)
        status = tab.notice
        if p is None:
            return self._start_view(tab, status)
        v = View(p.phase, header_md(self.study, p), status, consent=self.study.consent)
        if p.phase in ("declined", "screened_out", "done"):
            v.done = _end_text(p, self.study.recruitment, self.outcomes(p.participant).get(p.participant))
        elif p.phase in ("briefing", "search", "questionnaire") and p.current is not None:
            fill = {"briefing": self._brief_view, "search": self._search_view, "questionnaire": self._form_view}
            fill[p.phase](v, p, self.runner.condition_of(p), tab)
        return v

    def _start_view(self, tab: TabState, status: str) -> View:
        """A visitor who has not joined: the consent page."""
        v = View("start", header_md(self.study, None), status or WELCOME, consent=self.study.consent)
        if tab.link_error:
            v.status = f"⚠️ {tab.link_error}"
        elif self.runner.is_closed():
            v.status = "This study has closed and takes no new participants. Thank you for your interest."
        else:
            v.can_join = True
        return v

    def waiting(self, p: Progress) -> bool:
        """The participant's task is a competition's that the organiser has not opened."""
        comp = self.runner.participants.competition
        return (comp is not None and p.phase == "briefing" and p.current is not None and not p.practising
                and comp.opened_at(p.current.task.index) is None)

    def _brief_view(self, v: View, p: Progress, cond: Condition, tab: TabState) -> None:
        v.brief = brief_md(self.study, p, cond)
        if self.waiting(p):
            v.waiting = True
            v.brief = (f'<div class="iir-study-prompt" id="iir-waiting">Waiting for the next task: the organiser '
                       f"opens it for everyone at once, and it starts here by itself.</div>\n\n{v.brief}")
            v.status = v.status or "Waiting for the organiser to open the next task."
        v.brief_target = target_html(self.engine, p.current.task.target) if self.study.show_target else ""
        if self.runner.is_closed():
            v.status = v.status or ("⚠️ This study has closed: your answers so far are saved, and no new task "
                                    "can start. Please tell the researcher (on your recruitment platform, if "
                                    "you came from one).")

    def _search_view(self, v: View, p: Progress, cond: Condition, tab: TabState) -> None:
        target = p.current.task.target
        v.search_target = target_html(self.engine, target, small=True) if self.study.show_target else ""
        if p.current.task.prompt:
            v.search_target += f'<div class="iir-study-prompt">{esc(p.current.task.prompt)}</div>'
        now = self.runner.clock()
        v.budget = budget_md(p, now)
        v.can_search = p.can_search
        v.locked_s = int(-(-p.lock_left(now) // 1))  # rounded up: 0 only once the lock has ended
        if v.locked_s and not v.status:
            v.status = (f"🔒 The organiser's description is the only query for {v.locked_s} more second(s): look "
                        "through its results, mark them or pick the image; then you can type your own words.")
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

    def _form_view(self, v: View, p: Progress, cond: Condition, tab: TabState) -> None:
        v.form = p.form or "task"
        v.form_title = form_title(v.form, cond)
        how = {"found": "Found it, well done!", "timeout": "The time for this task is up."}.get(p.ended, "Task ended.")
        ask = {"task": " Please rate the system you just used.",
               "condition": " Please tell us about the system you used in the last tasks.",
               "end": " A few last questions, then you are done."}[v.form]
        v.status = v.status or how + ask

    # --- acting ------------------------------------------------------------------------------------
    def act(self, name: str, token: Any, tab: TabState, *args, client_ts: Any = None) -> tuple[str, TabState]:
        """Run action `name`; errors become the status line (and are logged); returns (token, tab)."""
        if name != "ask":  # the question step keeps the round's message
            tab.notice = ""
        ts = _clock(client_ts)
        token = token if isinstance(token, str) else ""
        args = tuple(_unicode(a) for a in args)  # a lone surrogate (U+D800) cannot be stored: it becomes U+FFFD
        pid = self.who(token, tab) or ""
        if name == "ask" and not pid:
            return token, tab
        try:
            if name not in ("join", "leave") and not pid:
                raise SessionError("this page does not know you yet: please read the information and answer it")
            self.fresh(pid, tab)  # act on what the log holds, whichever process served the last action
            new_token = getattr(self, f"_{name}")(pid, tab, *args, ts)  # None: the same participant
            token = token if new_token is None else new_token
        except IIRError as e:
            tab.notice = f"⚠️ {_sentence(e)}"
            if not isinstance(e, ActionRefused):  # a refusal is logged as one already
                self._log_error(name, pid, str(e), ts)
        except Exception as e:  # a bug or a crashed backend: the participant's state is unchanged
            log.exception("study page action %s failed", name)
            tab.notice = f"⚠️ Something went wrong ({type(e).__name__}). Please try again."
            self._log_error(name, pid, f"{type(e).__name__}: {e}", ts)
        if not pid or self.runner.log.last_event_id(self.study.study_id, pid) != tab.seen:
            tab.seen = -1  # the log moved on: the next view reads the marks back from it
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
        who, limit = tab.client or "?", self.guard.joins_per_client
        if limit > 0 and not self.joins.take(who, 1, limit):
            minutes = max(1, int(self.joins.wait_s(who) / 60 + 0.99))
            log.warning("enrolment refused: %d participants joined from %s within %.0f s", limit, who,
                        self.guard.join_window_s)
            raise SessionError(f"many people have just joined from your network: please try again in {minutes} "
                               "min, or message the researcher")
        try:
            p, token = self.runner.join(bool(agreed), tab.arrival, ts, expert=tab.expert)
        except AlreadyEnrolled:  # a signed-in account (verified, not a URL's id) that took part already
            self.joins.add(who, -1)
            raise SessionError("this study was already started with your account, in another browser or device: "
                               "please go on there. If you cannot, message the researcher") from None
        except BaseException:
            self.joins.add(who, -1)  # not enrolled: not counted
            raise
        return token

    def _leave(self, pid, tab, ts):
        tab.marks.clear()
        tab.reference = ""
        return ""

    def _start(self, pid, tab, ts):
        self.runner.start_task(pid, ts, ask=False)

    def _poll(self, pid, tab, ts):
        """A competition page's tick: start the task the organiser has just opened (nothing else changes)."""
        p = self.runner.progress(pid)
        if p.phase == "briefing" and self.runner.participants.competition is not None and not self.waiting(p) \
                and not p.practising:
            self.runner.start_task(pid, ts, ask=False)

    def poll(self, token: Any, tab: TabState, client_ts: Any = None) -> tuple[str, TabState, str]:
        """A competition page's tick: (token, tab, what to draw again: "all" when the task opened, closed or
        ended, "lock" while the description lock counts down, "" for nothing)."""
        pid = self.who(token, tab)
        if not pid:
            return token, tab, ""
        notice = tab.notice
        token, tab = self.act("poll", token, tab, client_ts=client_ts)
        if not tab.notice:
            tab.notice = notice  # a tick keeps the message on the page
        p = self.progress(pid)
        lock = int(-(-p.lock_left(self.runner.clock()) // 1)) if p is not None else 0
        drawn = f"{p.phase}:{p.index}:{p.ended}:{self.waiting(p)}" if p is not None else ""
        old, tab.drawn = tab.drawn, f"{drawn}:{lock}"
        if old.rpartition(":")[0] != drawn:
            return token, tab, "all"
        return token, tab, "lock" if old != tab.drawn else ""

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
            self.runner.check_offered(pid, "feedback", ts)  # a condition without marks: refused, not "mark one"
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
        if action not in CARD_ACTIONS:
            self.runner.refuse(pid, "card", f"not a card button: {str(action)[:64]!r}", ts,
                               card=str(action), image_id=str(image_id))
        shown = p.session.last.shown if p.session and p.session.last else []
        if image_id not in shown:
            raise SessionError("that image is not among the results on the page")
        before = dict(tab.marks), tab.reference
        try:
            self.runner.click(pid, image_id, _toggle(tab, action, image_id), ts)
        except Exception:  # refused or not logged: the tab's marks stay as the log has them
            tab.marks, tab.reference = before
            raise

    def _paradata(self, pid, tab, items, ts):
        """The page's focus, visibility and idle changes (logged only; the page is not redrawn)."""
        self.runner.paradata(pid, items, ts)

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

    def outcomes(self, participant: str | None = None) -> dict[str, Outcomes]:
        """Participant -> how their tasks that count ended (practice left out), from the log's task-end events."""
        ends: dict[tuple[str, int], str] = {}
        for e in self.runner.log.events(self.study.study_id, participant, types=TASK_END_TYPES):
            if not e.payload.get("practice"):
                ends[(e.participant, e.task)] = e.type  # one end per task (the last, should a task end twice)
        out: dict[str, Outcomes] = {}
        for (pid, _), kind in ends.items():
            out.setdefault(pid, Outcomes()).add(kind)
        return out


def _toggle(tab: TabState, action: str, image_id: str) -> str:
    """A card's mark or reference button pressed on `image_id`: the tab's marks or reference toggled; the click
    logged for it ("mark_relevant", "unmark", "reference", ...)."""
    if action in ("relevant", "irrelevant"):
        want = action == "relevant"
        if tab.marks.get(image_id) is want:
            del tab.marks[image_id]
            return "unmark"
        tab.marks[image_id] = want
        return f"mark_{action}"
    if action == "reference":
        tab.reference = "" if tab.reference == image_id else image_id
        return "reference" if tab.reference else "unreference"
    raise SessionError(f"unknown action {action!r}")


def _expert(value: Any) -> bool | None:
    """The URL's expert parameter: True (1, true, yes, expert), False (0, false, no, novice), else None."""
    v = str(value or "").strip().lower()
    return True if v in ("1", "true", "yes", "expert") else False if v in ("0", "false", "no", "novice") else None


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _unicode(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (also inside lists and dicts) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, (list, tuple)):
        return type(value)(_unicode(v) for v in value)
    if isinstance(value, dict):
        return {_unicode(k): _unicode(v) for k, v in value.items()}
    return value


def _sentence(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text[0].upper() + text[1:]


def _end_text(p: Progress, rec: Recruitment, outcomes: Outcomes | None = None) -> str:
    """The end page of a participant who declined, was screened out, or is done (`outcomes`: how their tasks
    ended); with the platform's code."""
    if p.phase == "declined":
        parts = ("You did not agree to take part, so no task was started. Thank you for your time.",
                 end_message(rec, "no_consent"))
    elif p.phase == "screened_out":
        parts = ("Thank you: from your answers, this study is not for you, so it ends here. Your answers so far "
                 "are kept.", end_message(rec, "screened_out"))
    else:
        parts = ("## Thank you!\nYou have reached the end of the study. " + (outcomes or Outcomes()).sentence(p.n_tasks),
                 end_message(rec, "completed") or "You can close this page.")
    return "\n\n".join(x for x in parts if x)


def browser_secret(log: StudyLog) -> str:
    """The key gr.BrowserState encrypts the token with in localStorage: kept in the study database, so
    stored tokens stay readable after a restart (the token's own randomness is what protects it)."""
    secret = log.get_meta("browser_secret")
    if not secret:
        secret = secrets.token_urlsafe(24)
        log.set_meta("browser_secret", secret)
    return secret
