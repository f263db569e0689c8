"""Paradata: did the participant stay on the page? Per task, from the page's focus, visibility and idle events.

The study page logs `paradata` events (payload `kind`: blur, focus, hidden, visible, idle, active; `sent_at`:
the browser's clock when sent; the event's client_ts: the browser's clock when it happened). The browser's clock
may differ from the server's: each participant's offset is the median of (server time - browser time) over their
events that carry both, and every browser time is moved by it before it is set against a task's start and end
(server times). A participant is *away* while the page is blurred or hidden; a *defocus* is a step from present
to away. Idle periods are the stretches without a key, pointer or scroll (the page reports them after `idle_s`).
A task is flagged when its time away or its defocus count passes the thresholds (StudyLogConfig).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from interactive_ir.study.log import PARADATA_KINDS as KINDS
from interactive_ir.study.log import TASK_END_TYPES


@dataclass
class TaskParadata:
    """One task's time on the page."""

    participant: str
    task: int
    condition: str
    defocus_count: int = 0  # times the participant left the page (blur or hidden) during the task
    time_away_s: float = 0.0  # seconds blurred or hidden during the task
    idle_count: int = 0  # idle periods (no input for the page's idle threshold) during the task
    idle_s: float = 0.0  # seconds idle during the task
    clock_offset_s: float = 0.0  # server minus browser clock, as estimated for the participant
    flagged: bool = False  # above a threshold: left out when the analysis leaves such tasks out

    @property
    def key(self) -> str:
        return f"{self.participant}#{self.task}"

    def to_dict(self) -> dict:
        return {**asdict(self), "key": self.key}


def clock_offsets(events: Iterable) -> dict[str, float]:
    """Participant -> median (server - browser) seconds over their events with a browser time."""
    gaps: dict[str, list[float]] = {}
    for e in events:
        sent = e.payload.get("sent_at") if e.type == "paradata" and isinstance(e.payload, dict) else e.client_ts
        try:
            gaps.setdefault(e.participant, []).append(float(e.server_ts) - float(sent))
        except (TypeError, ValueError):
            continue
    return {p: statistics.median(g) for p, g in gaps.items() if g}


def _windows(events: Sequence) -> dict[tuple[str, int], tuple[float, float, str]]:
    """(participant, task) -> (start, end, condition) in server time; an unfinished task ends at its last event."""
    out: dict[tuple[str, int], list] = {}
    for e in events:
        if e.task is None:
            continue
        key = (e.participant, int(e.task))
        if e.type == "task_start":
            out[key] = [e.server_ts, e.server_ts, e.condition or "", False]
        elif key in out and not out[key][3]:  # an unfinished task lasts until its last event, paradata too
            out[key][1] = e.server_ts
            out[key][3] = e.type in TASK_END_TYPES
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def task_paradata(events: Sequence, max_away_s: float = 0.0, max_defocus: int = 0) -> list[TaskParadata]:
    """Each task's paradata from the log's events (in order); flagged above `max_away_s` seconds away or
    `max_defocus` defocus events (0: that threshold is off)."""
    offsets = clock_offsets(events)
    marks: dict[str, list[tuple[float, str]]] = {}
    for e in events:
        kind = e.payload.get("kind") if e.type == "paradata" and isinstance(e.payload, dict) else None
        if kind in KINDS and e.client_ts is not None:
            marks.setdefault(e.participant, []).append((float(e.client_ts) + offsets.get(e.participant, 0.0), kind))
    out = []
    for (pid, task), (start, end, condition) in _windows(events).items():
        tp = TaskParadata(pid, task, condition, clock_offset_s=round(offsets.get(pid, 0.0), 3))
        _fill(tp, sorted(marks.get(pid, [])), start, end)
        tp.flagged = bool((max_away_s and tp.time_away_s > max_away_s) or (max_defocus and tp.defocus_count > max_defocus))
        out.append(tp)
    return out


def _fill(tp: TaskParadata, marks: list[tuple[float, str]], start: float, end: float) -> None:
    """Walk one participant's page events (server time) and add up what falls in the task's [start, end]."""
    blurred = hidden = idle = False
    away_since = idle_since = None
    for t, kind in marks:
        was_away = blurred or hidden
        if kind in ("blur", "focus"):
            blurred = kind == "blur"
        elif kind in ("hidden", "visible"):
            hidden = kind == "hidden"
        elif kind == "idle" and not idle:
            idle, idle_since = True, t
            tp.idle_count += start <= t <= end
        elif kind == "active" and idle:
            idle = False
            tp.idle_s += _overlap(idle_since, t, start, end)
        away = blurred or hidden
        if away and not was_away:
            away_since = t
            tp.defocus_count += start <= t <= end
        elif was_away and not away:
            tp.time_away_s += _overlap(away_since, t, start, end)
    if blurred or hidden:  # still away when the log ends: away until the task's end
        tp.time_away_s += _overlap(away_since, end, start, end)
    if idle:
        tp.idle_s += _overlap(idle_since, end, start, end)
    tp.time_away_s, tp.idle_s = round(tp.time_away_s, 3), round(tp.idle_s, 3)


def paradata_summary(rows: Sequence[TaskParadata], max_away_s: float, max_defocus: int) -> dict:
    """The report's paradata section."""
    logged = [r for r in rows if r.defocus_count or r.idle_count or r.time_away_s]
    return {"thresholds": {"max_away_s": max_away_s, "max_defocus": max_defocus},
            "n_tasks": len(rows), "n_tasks_with_events": len(logged),
            "flagged": [r.key for r in rows if r.flagged], "tasks": [r.to_dict() for r in rows]}
