"""The participant state machine, independent of any UI: `StudyRunner` puts its named parts together.

consent -> for each task of the participant's plan: briefing (the target, when shown) -> search with the
assigned condition within the round budget -> found / give up / budget exhausted -> questionnaire ->
next task -> done.

Every action is logged before it is acknowledged (see `interactive_ir.study.log`), together with the
search session it produced, so `progress(participant)` can rebuild a participant's place from the
database alone: a participant who reloads the page, or comes back after a server restart, resumes where
they were. The web page (`interactive_ir.study.ui`), a terminal, or a test script drive a `StudyRunner`
with the same calls. The parts (in `interactive_ir.study.flow`): `enrolment` (participants, tokens,
consent, their plans), `tasks` (the task state machine), `rounds` (search rounds through the engine's
actions, and the question), `replay` (a participant's place from the log).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from interactive_ir.core.session import Turn
from interactive_ir.errors import IIRError
from interactive_ir.study.assign import Assignment
from interactive_ir.study.config import Condition, StudyConfig, Task, resolve_practice, resolve_tasks
from interactive_ir.study.engines import ConditionEngines
from interactive_ir.study.flow.competition import Competition, CompetitionState, TaskNotOpen
from interactive_ir.study.flow.enrolment import TOKEN_BYTES, Enrolment, token_hash
from interactive_ir.study.flow.plan import StudyPlan, due_forms
from interactive_ir.study.flow.replay import Replay
from interactive_ir.study.flow.rounds import DescriptionLocked, Rounds, StaleQuestionError
from interactive_ir.study.flow.state import ActionRefused, Participants, StudyClosed
from interactive_ir.study.flow.tasks import TIME_GRACE_S, TaskFlow, TaskTimeout
from interactive_ir.study.log import StudyLog
from interactive_ir.study.progress import Progress

__all__ = ["TIME_GRACE_S", "TOKEN_BYTES", "ActionRefused", "DescriptionLocked", "Progress", "TaskNotOpen", "StaleQuestionError", "StudyClosed", "StudyRunner",
           "TaskTimeout", "token_hash"]


class StudyRunner:
    """Runs one study for many participants over one engine (thread-safe; one lock per participant)."""

    def __init__(self, study: StudyConfig, engine, log: StudyLog, tasks: Sequence[Task] | None = None,
                 engine_for: Callable[[Condition], Any] | None = None, clock: Callable[[], float] = time.time):
        self.study = study
        self.engine = engine
        self.log = log
        ids = engine.retriever.index.ids
        caption = self._caption
        self.plan = StudyPlan(study, tasks if tasks is not None else resolve_tasks(study, ids, caption),
                              resolve_practice(study, ids, caption))
        self.engines = ConditionEngines(engine, study, engine_for)
        for c in study.conditions:
            self.engines.check(c)
        self.participants = Participants(study, log, clock, rebuild=lambda pid: self.replay.progress(pid))
        self.task_flow = TaskFlow(self.participants, self.engines)
        self.replay = Replay(study, log, self.plan, self.task_flow.new_session)
        self.enrolment = Enrolment(self.participants, self.plan)
        self.rounds = Rounds(self.participants, self.engines, self.task_flow)
        if study.competition:
            self.participants.competition = Competition(log, study.study_id, len(self.tasks),
                                                        lambda: self.participants.clock())
        self.dres = None  # the live DRES link, when the study file has `dres:`
        if study.dres is not None:
            from interactive_ir.study.dres_link import DresLink

            self.dres = DresLink(study.dres, log)
            self.participants.listeners.append(self.dres.on_events)
        _record_run(log, study, engine, self.tasks, clock())

    def _caption(self, image_id: str) -> str:
        try:
            return self.engine.caption_of(image_id)
        except IIRError:
            return ""

    # --- the parts' shared state ----------------------------------------------------------------------
    @property
    def clock(self) -> Callable[[], float]:
        return self.participants.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.participants.clock = clock

    @property
    def tasks(self) -> list[Task]:
        return self.plan.tasks

    @property
    def practice(self) -> Task | None:
        return self.plan.practice

    def engine_of(self, condition: Condition):
        """The engine serving `condition`: the shared one's backends with the condition's k and settings."""
        return self.engines.of(condition)

    def check_condition(self, c: Condition) -> None:
        """Raise StudyConfigError when this engine cannot run condition `c` (missing mode or LLM)."""
        self.engines.check(c)

    def condition_of(self, p: Progress) -> Condition:
        return self.participants.condition_of(p)

    def is_closed(self) -> bool:
        return self.participants.is_closed()

    def plan_for(self, number: int, participant: str) -> list[Assignment]:
        return self.plan.for_participant(number, participant)

    def due_forms(self, p: Progress) -> list[str]:
        return due_forms(self.study, p)

    # --- participants (enrolment, replay) ---------------------------------------------------------------
    def new_participant_id(self) -> str:
        return self.enrolment.new_participant_id()

    def join(self, agreed: bool, recruit: Mapping[str, Any] | None = None,
             client_ts: float | None = None, expert: bool | None = None) -> tuple[Progress, str]:
        return self.enrolment.join(agreed, recruit, client_ts, expert)

    def participant_of(self, token: Any) -> str | None:
        return self.enrolment.participant_of(token)

    def enrol(self, participant: str | None = None, client_ts: float | None = None,
              meta: Mapping[str, Any] | None = None, token: str | None = None,
              recruit: Mapping[str, Any] | None = None) -> Progress:
        return self.enrolment.enrol(participant, client_ts, meta, token, recruit)

    def consent(self, participant: str, agreed: bool, client_ts: float | None = None) -> Progress:
        return self.enrolment.consent(participant, agreed, client_ts)

    def progress(self, participant: str) -> Progress:
        with self.participants.locked(participant) as p:
            return p

    def current_marks(self, participant: str) -> tuple[dict[str, bool], str]:
        """The marks (image id -> relevant) and reference the participant clicked on the current round's
        results, rebuilt from the click events (a reloaded page or a restarted server loses none)."""
        with self.participants.locked(participant) as p:
            if p.phase != "search" or not p.session or not p.session.turns:
                return {}, ""
            rnd, task = p.session.round, p.current.position
        return self.replay.marks(participant, task, rnd)

    # --- tasks ------------------------------------------------------------------------------------------
    def start_task(self, participant: str, client_ts: float | None = None, ask: bool = True) -> Progress:
        """Start the participant's task; with a description lock, its prompt (the organiser's description) runs
        as the first round at once (`ask`: with the system's question, as the round methods)."""
        p = self.task_flow.start_task(participant, client_ts)
        task = p.current.task
        if task.lock_description_s and task.prompt:
            self.rounds.describe(participant, task.prompt, client_ts, ask, organiser=True)
        return self.progress(participant)

    # --- a competition: the organiser's open task ---------------------------------------------------------
    def competition_state(self) -> CompetitionState | None:
        """The open task of a competition study (None: not a competition)."""
        comp = self.participants.competition
        return comp.state() if comp is not None else None

    def open_task(self, n: int) -> CompetitionState:
        """Open task `n` (1-based in the study's list) for everyone waiting for it, now."""
        return self._competition().open_task(n)

    def close_task(self) -> tuple[int, list[str]]:
        """Close the open task: (its number, the participants whose running search it ended)."""
        n = self._competition().close_task()
        return n, self.task_flow.close_open(n - 1)

    def _competition(self) -> Competition:
        if self.participants.competition is None:
            from interactive_ir.study.flow.competition import CompetitionError

            raise CompetitionError("this study is not a competition: set competition: true in the study file")
        return self.participants.competition

    def click(self, participant: str, image_id: str, action: str = "open", client_ts: float | None = None) -> None:
        self.task_flow.click(participant, image_id, action, client_ts)

    def pick(self, participant: str, image_id: str, client_ts: float | None = None) -> bool:
        return self.task_flow.pick(participant, image_id, client_ts)

    def give_up(self, participant: str, client_ts: float | None = None) -> Progress:
        return self.task_flow.give_up(participant, client_ts)

    def timeout(self, participant: str, client_ts: float | None = None) -> Progress:
        return self.task_flow.timeout(participant, client_ts)

    def check_answers(self, answers: Mapping[str, Any], form: str = "task") -> dict[str, Any]:
        return self.task_flow.check_answers(answers, form)

    def submit_questionnaire(self, participant: str, answers: Mapping[str, Any],
                             client_ts: float | None = None) -> Progress:
        return self.task_flow.submit_questionnaire(participant, answers, client_ts)

    def paradata(self, participant: str, items: Any, client_ts: float | None = None) -> int:
        return self.task_flow.paradata(participant, items, client_ts)

    def log_error(self, participant: str, action: str, message: str, client_ts: float | None = None) -> None:
        self.task_flow.log_error(participant, action, message, client_ts)

    def refuse(self, participant: str, action: str, message: str, client_ts: float | None = None, **given) -> None:
        """Log a refusal of an action the page never offers and raise ActionRefused (one line)."""
        self.task_flow.refuse(participant, action, message, client_ts, **given)

    # --- search rounds ----------------------------------------------------------------------------------
    def describe(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        return self.rounds.describe(participant, text, client_ts, ask)

    def answer(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        return self.rounds.answer(participant, text, client_ts, ask)

    def choose(self, participant: str, index: Any, question_text: str, client_ts: float | None = None,
               ask: bool = True, question_round: Any = None) -> Turn:
        return self.rounds.choose(participant, index, question_text, client_ts, ask, question_round)

    def skip(self, participant: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        return self.rounds.skip(participant, client_ts, ask)

    def feedback(self, participant: str, relevant: Sequence[str], irrelevant: Sequence[str] = (),
                 client_ts: float | None = None, ask: bool = True) -> Turn:
        return self.rounds.feedback(participant, relevant, irrelevant, client_ts, ask)

    def relative(self, participant: str, caption: str, reference: str | None = None,
                 client_ts: float | None = None, ask: bool = True) -> Turn:
        return self.rounds.relative(participant, caption, reference, client_ts, ask)

    def search(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        return self.rounds.search(participant, text, client_ts, ask)

    def ask(self, participant: str, client_ts: float | None = None) -> Turn | None:
        return self.rounds.ask(participant, client_ts)

    def check_offered(self, participant: str, action: str, client_ts: float | None = None) -> None:
        """ActionRefused (logged) when the participant's condition does not offer round `action`."""
        self.rounds.check_offered(participant, action, client_ts)


def _record_run(log: StudyLog, study: StudyConfig, engine, tasks: Sequence[Task], now: float) -> None:
    """What this run serves, kept in the study database (the report reads it)."""
    index = engine.retriever.index
    log.set_meta("study", study.to_dict())
    log.set_meta("run", {"n_images": len(index.ids), "index": str(getattr(index, "path", "")),
                         "embedder": getattr(index, "embedder_spec", ""),
                         "llm": getattr(engine.llm, "spec", None) if engine.llm is not None else None,
                         "tasks": [dataclasses.asdict(t) for t in tasks], "started_at": now})
