"""A participant's place rebuilt from the study log alone: a participant who reloads the page, or comes
back after a server restart, resumes where they were.

The events are read in order and each moves the participant as it did when it was written (consent,
task start, wrong picks, the end of a task, questionnaires, screening); the session of an unfinished
task is the one stored with its last event. Databases written by earlier versions replay the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from interactive_ir.core.session import Session
from interactive_ir.errors import SessionError
from interactive_ir.study.config import StudyConfig
from interactive_ir.study.flow.plan import StudyPlan, due_forms
from interactive_ir.study.log import TASK_END_TYPES, Event, StudyLog
from interactive_ir.study.progress import Progress


class Replay:
    """Rebuilds participants' progress (and their marks on the current round) from the study log."""

    def __init__(self, study: StudyConfig, log: StudyLog, plan: StudyPlan, new_session: Callable[[Progress], Session]):
        self.study = study
        self.log = log
        self.plan = plan
        self.new_session = new_session  # a fresh session for a task whose start was logged without one

    def progress(self, pid: str) -> Progress:
        sid = self.study.study_id
        info = self.log.participant(sid, pid)
        if info is None:
            raise SessionError(f"unknown participant {pid!r}: enter your participant id, or start as a new "
                               "participant")
        stored = info["meta"].get("plan")
        plan = self.plan.from_rows(stored) if stored else self.plan.for_participant(info["number"], pid)
        p = Progress(participant=pid, number=info["number"], plan=plan, recruit=info["meta"].get("recruitment") or {},
                     expert=info["meta"].get("expert"))
        consent, screened = self._replay(p, self.log.events(sid, pid))
        _settle_phase(p, consent, screened)
        if p.phase in ("search", "questionnaire") and p.current is not None:
            saved = self.log.load_state(sid, pid, p.index + 1)
            p.session = Session.from_json(saved) if saved else self.new_session(p)
        return p

    def _replay(self, p: Progress, events: Iterable[Event]) -> tuple[bool | None, bool]:
        """Move `p` through `events`: (the consent given, or None; whether the participant was screened out)."""
        consent, screened = None, False
        for e in events:
            if e.type == "consent":
                consent = bool(e.payload.get("agreed"))
            elif e.type == "task_start":
                p.index, p.phase, p.ended, p.wrong_picks = e.task - 1, "search", "", 0
                p.started_at = float(e.payload.get("started_at") or e.server_ts)
            elif e.type == "wrong_pick":
                p.wrong_picks += 1
            elif e.type in TASK_END_TYPES:
                p.ended, p.phase = e.type, "questionnaire"
                p.forms = due_forms(self.study, p)
                if not p.forms:
                    p.index, p.ended, p.phase = e.task, "", "briefing"
            elif e.type == "questionnaire":
                form = e.payload.get("form", "task")
                p.forms = [f for f in p.forms if f != form]
                if not p.forms:
                    p.index, p.ended, p.phase = e.task, "", "briefing"
            elif e.type == "screened_out":
                screened = True
        return consent, screened

    def marks(self, participant: str, task: int, rnd: int) -> tuple[dict[str, bool], str]:
        """The marks (image id -> relevant) and the reference the participant clicked on round `rnd` of task
        `task`, from the click events."""
        marks: dict[str, bool] = {}
        ref = ""
        for e in self.log.events(self.study.study_id, participant, types=["click"]):
            if e.task != task or e.round != rnd:
                continue
            image_id, action = e.payload.get("image_id", ""), e.payload.get("action", "")
            if action in ("mark_relevant", "mark_irrelevant"):
                marks[image_id] = action == "mark_relevant"
            elif action == "unmark":
                marks.pop(image_id, None)
            elif action in ("reference", "unreference"):
                ref = image_id if action == "reference" else ""
        return marks, ref


def _settle_phase(p: Progress, consent: bool | None, screened: bool) -> None:
    """The phase after the last event: screening and consent first, then done when no task is left."""
    if screened:
        p.phase = "screened_out"
    elif consent is None:
        p.phase = "consent"
    elif not consent:
        p.phase = "declined"
    elif p.phase == "consent":
        p.phase = "briefing"
    if p.phase == "briefing" and p.index >= len(p.plan):
        p.phase = "done"
