"""The task state machine of one participant:

briefing -> (start) search -> found / give up / budget exhausted / timeout -> the questionnaires due ->
the next task's briefing, or done (or screened out by an answer).

Search rounds inside a task are `rounds`; this module starts and ends tasks, logs clicks and runs the
questionnaires. Every change is logged before the participant's progress moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interactive_ir.core.options import BELIEF, SessionOptions
from interactive_ir.core.session import Session
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.study.engines import ConditionEngines
from interactive_ir.study.flow.competition import TaskNotOpen
from interactive_ir.study.flow.plan import due_forms
from interactive_ir.study.flow.state import Participants, StudyClosed, copy_session, require
from interactive_ir.study.instruments import score_form
from interactive_ir.study.log import PARADATA_KINDS
from interactive_ir.study.progress import Progress
from interactive_ir.study.questionnaire import attention_results, check_answers, screened_out

TIME_GRACE_S = 2.0  # a client timer firing this early (clock skew, latency) still ends the task
# a click's logged action -> the mode its condition must offer (None: any condition); any other action is refused
CLICK_MODES = {"open": None, "mark_relevant": "feedback", "mark_irrelevant": "feedback", "unmark": "feedback",
               "reference": "composed", "unreference": "composed"}


class TaskTimeout(SessionError):
    """The task's time limit passed: the task ended as "timeout"."""


class TaskFlow:
    """Starts and ends participants' tasks, logs their clicks and takes their questionnaires."""

    def __init__(self, participants: Participants, engines: ConditionEngines):
        self.participants = participants
        self.engines = engines
        self.study = participants.study

    # --- start ------------------------------------------------------------------------------------
    def new_session(self, p: Progress) -> Session:
        """A new search session for `p`'s current task, from its condition's engine."""
        a, c = p.current, self.participants.condition_of(p)
        meta = {"study_id": self.study.study_id, "participant": p.participant, "task": a.position,
                "task_index": a.task.index, "condition": a.condition, "target": a.task.target}
        # `mode: belief`: every round is belief evidence (the engine's generic actions), its questions too
        options = SessionOptions(mode=BELIEF if c.belief else "", ask_questions="conversation" in c.modes,
                                 plugir_method=c.conversation_method or "")
        return self.engines.of(c).new_session(options=options, **meta)

    def start_task(self, participant: str, client_ts: float | None = None) -> Progress:
        """Leave the briefing: the clock of this task starts now."""
        ps = self.participants
        with ps.locked(participant) as p:
            require(p, "briefing")
            if ps.is_closed():
                raise StudyClosed("this study has closed: your answers so far are saved, and no new task can start. "
                                  "Please tell the researcher (on your recruitment platform, if you came from one)")
            a, c = p.current, ps.condition_of(p)
            started = self._opened_at(p)
            session = self.new_session(p)
            e = ps.event(p, "task_start", {"task_index": a.task.index, "total": p.n_tasks, "rounds": a.task.rounds,
                                           "practice": a.task.practice, "time_limit_s": a.task.time_limit_s,
                                           "started_at": started, "expert": p.expert,
                                           "lock_description_s": a.task.lock_description_s,
                                           "show_target": self.study.show_target, "prompt": a.task.prompt,
                                           "modes": list(c.modes), "label": c.label,
                                           "k": self.engines.of(c).config.k, "session_id": session.session_id},
                         client_ts)
            ps.write(p, [e], session)
            p.phase, p.session, p.ended, p.wrong_picks = "search", session, "", 0
            p.started_at = e.payload["started_at"]
            return p

    def _opened_at(self, p: Progress) -> float:
        """When the task's clock starts: now, or in a competition when the organiser opened it (TaskNotOpen while
        it is not open; the practice task is never waited for)."""
        comp = self.participants.competition
        if comp is None or p.practising:
            return self.participants.clock()
        at = comp.opened_at(p.current.task.index)
        if at is None:
            raise TaskNotOpen("this task has not been opened yet: please wait, it starts for everyone at once")
        return at

    def close_open(self, task_index: int) -> list[str]:
        """End every running search of task `task_index` (0-based; the organiser closed it) as "timeout": the
        participants whose task ended."""
        ended = []
        for row in self.participants.log.participants(self.study.study_id):
            with self.participants.locked(row["participant"]) as p:
                a = p.current
                if p.phase == "search" and not p.ended and a is not None and a.task.index == task_index \
                        and not a.task.practice:
                    self._stop(p, "timeout", None, closed=True)
                    ended.append(p.participant)
        return ended

    # --- clicks -----------------------------------------------------------------------------------
    def click(self, participant: str, image_id: str, action: str = "open", client_ts: float | None = None) -> None:
        """Log a click on an image (opening it, selecting it as a reference, marking it, ...); an action of
        CLICK_MODES whose mode the participant's condition does not offer is refused (ActionRefused)."""
        image_id, action = str(image_id)[:500], str(action)[:64]
        ps = self.participants
        with ps.locked(participant) as p:
            require(p, "search")
            rnd = p.session.round if p.session and p.session.turns else None
            mode = CLICK_MODES.get(action, "?")
            if mode is not None and mode not in ps.condition_of(p).modes:
                why = f"not a click this page offers: {action!r}" if mode == "?" else \
                    f"this system does not offer {mode} in this task"
                raise ps.refuse(p, "click", why, client_ts, rnd, click=action, image_id=image_id)
            ps.write(p, [ps.event(p, "click", {"image_id": image_id, "action": action,
                                               "is_target": image_id == p.current.task.target}, client_ts, rnd)])

    def paradata(self, participant: str, items: Any, client_ts: float | None = None) -> int:
        """Log the page's focus, visibility and idle changes: `items` = [{kind, at (browser seconds)}, ...] (at most
        50; unknown kinds and bad times are dropped). The number logged."""
        events = []
        with self.participants.locked(participant) as p:
            in_task = p.phase in ("search", "questionnaire")
            for item in list(items or [])[:50] if isinstance(items, list) else []:
                kind, at = (item.get("kind"), item.get("at")) if isinstance(item, dict) else (None, None)
                try:
                    at = float(at)
                except (TypeError, ValueError):
                    continue
                if kind in PARADATA_KINDS and 1e9 < at < 1e11:  # a plausible unix time
                    events.append(self.participants.event(p, "paradata", {"kind": kind, "sent_at": client_ts}, at,
                                                          task=in_task))
            if events:
                self.participants.write(p, events)
        return len(events)

    def refuse(self, participant: str, action: str, message: str, client_ts: float | None = None,
               **given: Any) -> None:
        """Refuse an action the page never offers (the UI calls this): logged as "refused", ActionRefused raised."""
        ps = self.participants
        with ps.locked(participant) as p:
            rnd = p.session.round if p.session and p.session.turns else None
            raise ps.refuse(p, action, message, client_ts, rnd, **given)

    def log_error(self, participant: str, action: str, message: str, client_ts: float | None = None) -> None:
        """Record an error the participant saw (the UI calls this for errors outside the runner)."""
        ps = self.participants
        with ps.locked(participant) as p:
            rnd = p.session.round if p.session and p.session.turns else None
            ps.write(p, [ps.event(p, "error", {"action": action, "message": message}, client_ts, rnd,
                                  task=p.phase in ("search", "questionnaire"))])

    # --- the end of a task --------------------------------------------------------------------------
    def pick(self, participant: str, image_id: str, client_ts: float | None = None) -> bool:
        """"This is the image": True (task solved) when it is the target, else False (logged, search goes on)."""
        ps = self.participants
        with ps.locked(participant) as p:
            require(p, "search")
            self.check_time(p, client_ts)
            if p.ended:
                raise SessionError("this task has ended")
            if not p.session or image_id not in p.session.shown_ids():
                raise SessionError(f"image {image_id!r} was not shown in this task: pick one of the results")
            rnd = p.session.round
            if image_id != p.current.task.target:
                ps.write(p, [ps.event(p, "wrong_pick", {"image_id": image_id}, client_ts, rnd)])
                p.wrong_picks += 1
                return False
            session = copy_session(p.session)
            found = self.engines.of(ps.condition_of(p)).found(session, image_id)
            payload = {"image_id": image_id, "found_round": found["round"], "position": found["rank"],
                       "rounds_used": p.rounds_used, "time_s": round(ps.clock() - p.started_at, 3),
                       "wrong_picks": p.wrong_picks}
            self._end(p, "found", payload, client_ts, rnd, session)
            return True

    def give_up(self, participant: str, client_ts: float | None = None) -> Progress:
        """End the task without the target ("budget_exhausted" when the budget was used up)."""
        with self.participants.locked(participant) as p:
            require(p, "search")
            self.check_time(p, client_ts)
            if p.ended:
                raise SessionError("this task has ended")
            kind = "budget_exhausted" if p.described and p.rounds_used >= p.budget else "give_up"
            self._stop(p, kind, client_ts)
            return p

    def timeout(self, participant: str, client_ts: float | None = None) -> Progress:
        """The page's timer ran out: end the task as "timeout" if its time is up (else nothing changes)."""
        with self.participants.locked(participant) as p:
            if p.phase == "search" and not p.ended:
                left = p.time_left(self.participants.clock())
                if left is not None and left <= TIME_GRACE_S:
                    self._stop(p, "timeout", client_ts)
            return p

    def check_time(self, p: Progress, client_ts: float | None) -> None:
        """End the task as "timeout" (and say so) when its time limit has passed."""
        left = p.time_left(self.participants.clock())
        if left is not None and left <= 0:
            self._stop(p, "timeout", client_ts)
            raise TaskTimeout(f"the {p.time_limit} s for this task are up, so it has ended")

    def _stop(self, p: Progress, kind: str, client_ts: float | None, closed: bool = False) -> None:
        """End the task without the target: give_up, budget_exhausted or timeout (`closed`: by the organiser)."""
        session = copy_session(p.session)
        session.meta["gave_up" if kind != "timeout" else "timed_out"] = True
        rnd = session.round if session.turns else None
        payload = {"rounds_used": p.rounds_used, "time_s": round(self.participants.clock() - p.started_at, 3),
                   "wrong_picks": p.wrong_picks, **({"closed_by_organiser": True} if closed else {})}
        self._end(p, kind, payload, client_ts, rnd, session)

    def _end(self, p: Progress, kind: str, payload: dict, client_ts: float | None, rnd: int | None,
             session: Session) -> None:
        """Log the end of the task; then its questionnaires, or (none due, e.g. practice) the next task."""
        ps = self.participants
        payload = {**payload, "practice": p.practising}
        ps.write(p, [ps.event(p, kind, payload, client_ts, rnd)], session)
        p.session, p.ended, p.phase = session, kind, "questionnaire"
        p.forms = due_forms(self.study, p)
        if not p.forms:
            _next(p)

    # --- questionnaires ---------------------------------------------------------------------------
    def check_answers(self, answers: Mapping[str, Any], form: str = "task") -> dict[str, Any]:
        return check_answers(self.study.form(form), answers)

    def submit_questionnaire(self, participant: str, answers: Mapping[str, Any],
                             client_ts: float | None = None) -> Progress:
        """Answers of the participant's current form (`Progress.form`), checked, scored and logged."""
        ps = self.participants
        with ps.locked(participant) as p:
            require(p, "questionnaire")
            form = p.form or "task"
            items = self.study.form(form)
            try:
                clean = check_answers(items, answers)
            except BadInputError as e:
                ps.write(p, [ps.event(p, "error", {"action": "questionnaire", "form": form,
                                                   "message": str(e)}, client_ts)])
                raise
            payload = {"form": form, "answers": clean, "scores": score_form(items, clean), "ended": p.ended,
                       "attention": attention_results(items, clean)}
            events = [ps.event(p, "questionnaire", payload, client_ts)]
            out = screened_out(items, clean)
            last = p.index + 1 >= len(p.plan) and len(p.forms) <= 1
            if out:
                events.append(ps.event(p, "screened_out", {"items": out}, None, task=False))
            elif last:
                events.append(ps.event(p, "study_end", {"tasks": p.n_tasks}, None, task=False))
            ps.write(p, events)
            p.forms = p.forms[1:]
            if out:
                p.phase = "screened_out"
            elif not p.forms:
                _next(p)
            return p


def _next(p: Progress) -> None:
    """On to the participant's next task (its briefing), or done."""
    p.index += 1
    p.session, p.ended, p.wrong_picks, p.forms = None, "", 0, []
    p.phase = "done" if p.index >= len(p.plan) else "briefing"
