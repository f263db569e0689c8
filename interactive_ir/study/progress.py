"""Where one participant is in a study (`Progress`), rebuilt by the runner from the study log."""

from __future__ import annotations

from dataclasses import dataclass, field

from interactive_ir.core.session import Session
from interactive_ir.study.assign import Assignment

PHASES = ("consent", "declined", "briefing", "search", "questionnaire", "done", "screened_out")


@dataclass
class Progress:
    """Where one participant is. Rebuilt from the log; the UI renders it."""

    participant: str
    number: int  # enrolment number (the Latin-square row)
    plan: list[Assignment]
    phase: str = "consent"  # one of PHASES
    index: int = 0  # 0-based index of the current task in `plan` (len(plan) when done)
    session: Session | None = None  # the current task's search
    ended: str = ""  # how the current task ended: "", "found", "give_up", "budget_exhausted"
    started_at: float = 0.0  # server time the current task's search started
    wrong_picks: int = 0  # images picked as the target that were not it, in the current task
    forms: list[str] = field(default_factory=list)  # questionnaires still due after the current task
    #                                                  ("task", "condition", "end"), in order
    recruit: dict = field(default_factory=dict)  # recruitment platform and URL parameters (data only)
    expert: bool | None = None  # an expert (True) or novice (False) session, as enrolled (None: not said)

    @property
    def total(self) -> int:
        return len(self.plan)

    @property
    def current(self) -> Assignment | None:
        return self.plan[self.index] if 0 <= self.index < len(self.plan) else None

    @property
    def practising(self) -> bool:
        return bool(self.current and self.current.task.practice)

    @property
    def n_tasks(self) -> int:
        """Tasks that count (the practice task left out)."""
        return sum(not a.task.practice for a in self.plan)

    @property
    def task_number(self) -> int:
        """1-based number of the current task among those that count (0 for the practice task)."""
        if self.current is None or self.current.task.practice:
            return 0
        return sum(not a.task.practice for a in self.plan[: self.index + 1])

    @property
    def form(self) -> str:
        return self.forms[0] if self.forms else ""

    @property
    def time_limit(self) -> int | None:
        return self.current.task.time_limit_s if self.current else None

    def time_left(self, now: float) -> float | None:
        """Seconds left in the current task (None without a limit or outside a search)."""
        if self.phase != "search" or self.ended or not self.time_limit:
            return None
        return max(0.0, self.started_at + self.time_limit - now)

    def lock_left(self, now: float) -> float:
        """Seconds the organiser's description stays the only query (0: the participant may type)."""
        lock = self.current.task.lock_description_s if self.current else 0
        if self.phase != "search" or self.ended or not lock:
            return 0.0
        return max(0.0, self.started_at + lock - now)

    @property
    def budget(self) -> int:
        return self.current.task.rounds if self.current else 0

    @property
    def rounds_used(self) -> int:
        """Search rounds after the first description."""
        return max(0, len(self.session.turns) - 1) if self.session else 0

    @property
    def rounds_left(self) -> int:
        return max(0, self.budget - self.rounds_used)

    @property
    def described(self) -> bool:
        return bool(self.session and self.session.turns)

    @property
    def can_search(self) -> bool:
        """True while the participant may run another search round."""
        return self.phase == "search" and not self.ended and (not self.described or self.rounds_used < self.budget)
