"""Each participant's `Progress` behind its own lock, and the events written for it.

A participant's progress is rebuilt from the study log the first time it is needed (`rebuild`, see
`replay`), then kept in memory and changed in step with the events written: every change is logged
before it is acknowledged. Another process may write to the same log (replicas behind a proxy,
deploy/nginx.conf): the progress is rebuilt whenever the participant's last logged event is not the
last one this process wrote or read, so a participant who moved to another replica and back is never
served a stale state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from interactive_ir.core.session import Session
from interactive_ir.errors import SessionError
from interactive_ir.study.config import Condition, StudyConfig
from interactive_ir.study.log import Event, StudyLog
from interactive_ir.study.progress import Progress


class StudyClosed(SessionError):
    """The study closed (`closes_at`): nobody new may start a task."""


class ActionRefused(SessionError):
    """An action the participant's condition does not offer (sent through the API, say): refused and logged as a
    "refused" event, never as the action's own event; nothing else changed."""


REFUSED_TEXT = 500  # characters of each string a refusal keeps of what was sent


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    progress: Progress | None = None
    last_event: int = -1  # the participant's last event id in the log when `progress` was built or written


def copy_session(session: Session) -> Session:
    """A deep copy to change: the participant's session changes only once the round is logged."""
    return Session.from_dict(session.to_dict())


def require(p: Progress, phase: str) -> None:
    if p.phase != phase:
        raise SessionError(f"this step is not available now (the participant is at {p.phase!r}, not {phase!r})")


class Participants:
    """The study's participants (thread-safe; one lock per participant) and the log their events go to."""

    def __init__(self, study: StudyConfig, log: StudyLog, clock: Callable[[], float],
                 rebuild: Callable[[str], Progress]):
        self.study = study
        self.log = log
        self.clock = clock
        self._rebuild = rebuild
        self._slots: dict[str, _Slot] = {}
        self._slots_lock = threading.Lock()
        self.listeners: list[Callable[[list[Event]], None]] = []  # told of every committed write (the DRES link)
        self.competition = None  # the organiser's open task (flow.competition.Competition) in a competition study

    def is_closed(self) -> bool:
        """The study closed (`closes_at`): nobody new may start a task."""
        return self.study.closes_at is not None and self.clock() >= self.study.closes_at

    def condition_of(self, p: Progress) -> Condition:
        if p.current is None:
            raise SessionError("all tasks are done")
        return self.study.condition(p.current.condition)

    def _slot(self, pid: str) -> _Slot:
        with self._slots_lock:
            return self._slots.setdefault(pid, _Slot())

    @contextmanager
    def locked(self, pid: str) -> Iterator[Progress]:
        """The participant's progress, theirs alone while the block runs (rebuilt from the log on first use)."""
        slot = self._slot(pid)
        with slot.lock:
            last = self.log.last_event_id(self.study.study_id, pid)
            if slot.progress is None or last != slot.last_event:
                slot.progress = self._rebuild(pid)
                slot.last_event = last
            yield slot.progress

    def event(self, p: Progress, type_: str, payload: Mapping[str, Any] | None = None,
              client_ts: float | None = None, round_: int | None = None, task: bool = True) -> Event:
        """An event of participant `p` (about their current task unless `task` is False)."""
        a = p.current if task else None
        return Event(type=type_, participant=p.participant, study_id=self.study.study_id,
                     task=a.position if a else None, target=a.task.target if a else None,
                     condition=a.condition if a else None, round=round_, payload=dict(payload or {}),
                     client_ts=client_ts)

    def refuse(self, p: Progress, action: str, message: str, client_ts: float | None = None,
               round_: int | None = None, **given: Any) -> ActionRefused:
        """Log a refusal of `action` (what was sent cut to REFUSED_TEXT characters) and return the exception to
        raise: one line for the participant."""
        sent = {k: v[:REFUSED_TEXT] if isinstance(v, str) else v for k, v in given.items()}
        self.write(p, [self.event(p, "refused", {"action": action, "message": message, **sent}, client_ts, round_,
                                  task=p.current is not None)])
        logging.getLogger(__name__).info("study: refused %s of participant %s: %s", action, p.participant, message)
        return ActionRefused(message)

    def write(self, p: Progress, events: list[Event], session: Session | None = None) -> list[int]:
        """Log `events` and, when given, the current task's session, in one transaction."""
        state = None
        if session is not None and p.current is not None:
            state = (p.participant, p.current.position, session.to_json())
        ids = self.log.append_many(events, state, study_id=self.study.study_id)
        if ids:
            self._slot(p.participant).last_event = ids[-1]
        for listener in self.listeners:
            try:
                listener(events)
            except Exception as e:  # a listener (the DRES link) never fails the study's own step
                logging.getLogger(__name__).warning("study event listener failed: %s", e)
        return ids
