"""A competition's scoreboard from the study log: correct and wrong submissions ("This is it"), time and KIS score
per participant (team) and task, as DRES scores Known-Item Search at VBS and LSC (its `KisTaskScorer`):

    score = max(0, at_end + (max_points - at_end) * (1 - t / duration) - penalty * wrong)

for a task solved at `t` seconds after it started, after `wrong` wrong submissions; 0 when it was never solved
(wrong submissions after the correct one do not count). DRES's defaults: max_points 1000, at_end 500, penalty 100.
`duration` is the task's time limit (the study's `time_limit_s`), else `default_duration_s` (VBS: 300 s).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from interactive_ir.study.log import TASK_END_TYPES, StudyLog


@dataclass(frozen=True)
class KisScoring:
    """DRES's KIS scorer's parameters."""

    max_points: float = 1000.0  # points for a correct submission at the task's start
    at_end: float = 500.0  # points for a correct submission at the task's end
    penalty: float = 100.0  # points off per wrong submission before the correct one
    default_duration_s: float = 300.0  # a task's duration when the study sets no time limit


def kis_score(time_s: float | None, wrong: int, duration_s: float, s: KisScoring = KisScoring()) -> float:
    """The KIS score of one task (time_s None: never solved)."""
    if time_s is None:
        return 0.0
    fraction = 1.0 - max(0.0, float(time_s)) / max(float(duration_s), 1e-9)
    return max(0.0, s.at_end + (s.max_points - s.at_end) * fraction - s.penalty * wrong)


@dataclass
class TaskScore:
    """One participant's task on the scoreboard."""

    task: int  # the task's place in the study's list (1-based, the same image for everyone)
    correct: bool = False
    wrong: int = 0  # wrong submissions before the correct one (all of them when never solved)
    time_s: float | None = None  # seconds to the correct submission
    score: float = 0.0
    ended: str = ""  # how the task ended ("" while it runs)


@dataclass
class Team:
    """One participant (team) on the scoreboard."""

    participant: str
    condition: str = ""  # the system they used in their last task (its label when it has one, as they saw it)
    expert: bool | None = None  # an expert (True) or novice (False) session, as enrolled (None: not said)
    tasks: dict[int, TaskScore] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(t.score for t in self.tasks.values())


def scoreboard(log: StudyLog, scoring: KisScoring = KisScoring()) -> list[Team]:
    """Every participant who started a (non-practice) task, best total first."""
    teams: dict[str, Team] = {}
    open_: dict[tuple[str, int], tuple[TaskScore, float]] = {}
    for e in log.events():
        if e.task is None:
            continue
        p = e.payload if isinstance(e.payload, dict) else {}
        key = (e.participant, int(e.task))
        if e.type == "task_start":
            if p.get("practice"):
                continue
            index = p.get("task_index")
            ts = TaskScore(task=int(index) + 1 if isinstance(index, int) else int(e.task))
            team = teams.setdefault(e.participant, Team(e.participant))
            team.condition, team.tasks[ts.task] = str(p.get("label") or e.condition or ""), ts  # what participants see
            team.expert = p.get("expert") if isinstance(p.get("expert"), bool) else team.expert
            open_[key] = (ts, float(p.get("time_limit_s") or scoring.default_duration_s))
            continue
        if key not in open_:
            continue
        ts, duration = open_[key]
        if e.type == "wrong_pick" and not ts.correct:
            ts.wrong += 1
        elif e.type == "found":
            ts.correct, ts.time_s = True, float(p.get("time_s") or 0.0)
            ts.score = kis_score(ts.time_s, ts.wrong, duration, scoring)
        if e.type in TASK_END_TYPES:
            ts.ended = e.type
    return sorted(teams.values(), key=lambda t: (-t.total, t.participant))


GROUPS = ((True, "Expert sessions", "experts"), (False, "Novice sessions", "novices"),
          (None, "Sessions not marked expert or novice", "unmarked"))


def scoreboard_html(teams: list[Team]) -> str:
    """The scoreboard as HTML tables (no script; the page around it refreshes it): one table, or one per group
    of expert and novice sessions when some participant was marked as either."""
    if not teams:
        return ("<p id='iir-scoreboard-empty'>No task has started yet: the scoreboard fills in as participants "
                "submit.</p>")
    if all(t.expert is None for t in teams):
        return _table(teams, "iir-scoreboard") + NOTE
    parts = []
    for flag, title, key in GROUPS:
        group = [t for t in teams if t.expert is flag]
        if group:
            parts.append(f"<h3>{title}</h3>" + _table(group, f"iir-scoreboard-{key}"))
    return "".join(parts) + NOTE


NOTE = ("<p><small>KIS score as DRES computes it: 1000 at the start falling to 500 at the task's end, 100 off per "
        "wrong submission before the correct one; 0 when not found.</small></p>")


def _table(teams: list[Team], table_id: str) -> str:
    tasks = sorted({n for t in teams for n in t.tasks})
    head = "".join(f"<th>task {n}</th>" for n in tasks)
    rows = []
    for rank, t in enumerate(teams, 1):
        cells = "".join(_cell(t.tasks.get(n)) for n in tasks)
        rows.append(f"<tr><td>{rank}</td><td>{html.escape(t.participant)}</td><td>{html.escape(t.condition)}</td>"
                    f"{cells}<td><b>{t.total:.0f}</b></td></tr>")
    return (f"<table id='{table_id}' class='iir-scoreboard'><thead><tr><th>#</th><th>participant</th>"
            f"<th>system</th>{head}<th>total</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _cell(ts: TaskScore | None) -> str:
    if ts is None:
        return "<td></td>"
    if ts.correct:
        return (f"<td title='correct after {ts.wrong} wrong'>✔ {ts.score:.0f}<br><small>{ts.time_s:.0f} s, "
                f"{ts.wrong} wrong</small></td>")
    state = "running" if not ts.ended else ts.ended.replace("_", " ")
    return f"<td>✘ 0<br><small>{ts.wrong} wrong, {html.escape(state)}</small></td>"
