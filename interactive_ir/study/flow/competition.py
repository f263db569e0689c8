"""A competition's live state: which task the organiser has opened for everyone, and since when.

In a competition study (`competition: true`) a participant's task starts only while the organiser has it
open (`open_task` on /admin); everyone waiting then gets it at once, and its clock (the countdown, the KIS
score's time) runs from the moment it was opened, not from when each page noticed. `close_task` ends it.
The state is kept in the study database (meta "competition.<study_id>"), so a restarted server keeps the open task.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.study.log import StudyLog


class CompetitionError(BadInputError):
    """The organiser asked for something the competition's state does not allow (no such task, one open)."""


class TaskNotOpen(SessionError):
    """A participant tried to start a task the organiser has not opened (or has closed)."""


@dataclass(frozen=True)
class CompetitionState:
    """The open task (1-based in the study's task list; None: none open) and when it opened."""

    open_task: int | None = None
    opened_at: float | None = None  # server time the open task was opened
    closed: tuple[int, ...] = field(default_factory=tuple)  # tasks opened and closed so far, in order


class Competition:
    """The organiser's open and close of tasks over a study log (thread-safe)."""

    def __init__(self, log: StudyLog, study_id: str, n_tasks: int, clock: Callable[[], float]):
        self.log = log
        self.key = f"competition.{study_id}"  # its meta key in the study database
        self.n_tasks = n_tasks
        self.clock = clock
        self._lock = threading.Lock()

    def state(self) -> CompetitionState:
        raw = self.log.get_meta(self.key) or {}
        n, at = raw.get("open_task"), raw.get("opened_at")
        return CompetitionState(open_task=int(n) if isinstance(n, int) else None,
                                opened_at=float(at) if isinstance(at, (int, float)) else None,
                                closed=tuple(int(x) for x in raw.get("closed", []) if isinstance(x, int)))

    def open_task(self, n: int) -> CompetitionState:
        """Open task `n` (1-based) for everyone now; CompetitionError while another is open."""
        try:
            n = int(n)
        except (TypeError, ValueError):
            raise CompetitionError(f"give a task number from 1 to {self.n_tasks}, got {n!r}") from None
        if not 1 <= n <= self.n_tasks:
            raise CompetitionError(f"there is no task {n}: give a number from 1 to {self.n_tasks}")
        with self._lock:
            s = self.state()
            if s.open_task is not None:
                raise CompetitionError(f"task {s.open_task} is still open: close it first")
            new = CompetitionState(n, self.clock(), s.closed)
            self._save(new)
            return new

    def close_task(self) -> int:
        """Close the open task (its running searches are ended by the caller): its number; CompetitionError when
        none is open."""
        with self._lock:
            s = self.state()
            if s.open_task is None:
                raise CompetitionError("no task is open")
            self._save(CompetitionState(None, None, (*s.closed, s.open_task)))
            return s.open_task

    def opened_at(self, task_index: int) -> float | None:
        """When task `task_index` (0-based) was opened, while it is open; None when it is not open."""
        s = self.state()
        return s.opened_at if s.open_task == task_index + 1 else None

    def _save(self, s: CompetitionState) -> None:
        self.log.set_meta(self.key, {"open_task": s.open_task, "opened_at": s.opened_at, "closed": list(s.closed)})
