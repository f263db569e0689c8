"""Timelines for replay: each task of a study log (people or `study simulate`) or each search of an `eval` run,
step by step (what was typed or clicked, the question and its options, the shown images with their marks, the
target's rank) with the time of each step since the task started.

Times come from the server's clock (one clock for all events); a step whose payload carries the task's own
elapsed time (`elapsed_s`, `time_s`: the study's clock, simulated in a dry run) uses that, and the steps in between
add the server's gaps. A task that ended mid-way (a closed tab, a crash) is replayed up to its last event and
marked "unfinished"; fields missing from logs of older versions are left empty.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from interactive_ir.errors import BadInputError

END_TYPES = ("found", "give_up", "budget_exhausted", "timeout")
UNFINISHED = "unfinished"
# event types that carry no step of their own in a replay
_SKIPPED = ("questionnaire", "study_end", "enrol", "consent", "resume", "dres")


@dataclass
class Step:
    """One event of a task, as the replay shows it."""

    t: float  # seconds since the task started
    dt: float  # seconds since the previous step
    type: str  # the event type (description, answer, results, question_shown, feedback, click, found, ...)
    round: int | None = None  # the search round (None outside rounds)
    text: str = ""  # what was typed, the question, a clicked option's label, an error message
    shown: list[str] = field(default_factory=list)  # results: the shown image ids, best first
    marks: dict[str, bool] = field(default_factory=dict)  # results: image id -> marked relevant (False: not)
    target_rank: int | None = None  # results: the target's rank in the index (None: not logged)
    target_position: int | None = None  # results: the target's place among the shown images (None: not shown)
    options: list[str] = field(default_factory=list)  # question_shown: the clickable options' labels
    detail: str = ""  # anything else worth a line (the method, the picked image, ...)


@dataclass
class TaskTimeline:
    """One task of one participant (or one search of an eval run)."""

    participant: str  # participant id (eval: the protocol)
    task: int  # 1-based position in the participant's plan (eval: the search's number)
    target: str  # the target image id
    condition: str  # the condition (eval: the protocol)
    status: str  # the event that ended the task (found, give_up, ...) or "unfinished"
    steps: list[Step] = field(default_factory=list)
    paradata: dict = field(default_factory=dict)  # defocus count and time away, when logged

    @property
    def duration_s(self) -> float:
        return self.steps[-1].t if self.steps else 0.0


@dataclass
class Replay:
    """Everything one replay page shows."""

    source: str  # the file it was read from
    kind: str  # "study" or "eval"
    tasks: list[TaskTimeline] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be replayed as logged

    def to_json(self) -> dict:
        return asdict(self)


def _num(x) -> float | None:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


def _int(x) -> int | None:
    v = _num(x)
    return None if v is None else int(v)


# --- study logs --------------------------------------------------------------------------------------------
def study_replay(log, participant: str | None = None, task: int | None = None, study_id: str | None = None) -> Replay:
    """The tasks of `participant` (None: everyone) in the study log `log` (a StudyLog), optionally one task."""
    events = log.events(study_id, participant)
    if participant is not None and not events:
        known = sorted({p["participant"] for p in log.participants(study_id)})
        raise BadInputError(f"no events of participant {participant!r} in {log.path}; participants: "
                            f"{', '.join(known[:20]) or 'none'}")
    groups: dict[tuple[str, int], list] = {}
    for e in events:
        if e.task is not None and e.type not in _SKIPPED:
            groups.setdefault((e.participant, int(e.task)), []).append(e)
    if task is not None:
        groups = {k: v for k, v in groups.items() if k[1] == task}
        if not groups:
            raise BadInputError(f"no events of task {task} in {log.path}"
                                + (f" for participant {participant!r}" if participant else ""))
    rep = Replay(str(log.path), "study")
    from interactive_ir.study.analysis.paradata import task_paradata

    para = {(r.participant, r.task): r for r in task_paradata(events)}
    for (pid, n), evs in groups.items():
        rep.tasks.append(task_timeline(pid, n, evs))
        row = para.get((pid, n))
        if row is not None and (row.defocus_count or row.idle_count or row.time_away_s):
            rep.tasks[-1].paradata = row.to_dict()
    rep.notes = [f"{t.participant} task {t.task}: the log ends mid-task (after {t.duration_s:.0f} s)"
                 for t in rep.tasks if t.status == UNFINISHED]
    return rep


def task_timeline(participant: str, task: int, events: list) -> TaskTimeline:
    """One task's timeline from its events (in log order)."""
    first = events[0]
    status = next((e.type for e in events if e.type in END_TYPES), UNFINISHED)
    tl = TaskTimeline(participant, task, first.target or "", first.condition or "", status)
    times = task_times(events)
    last_results: Step | None = None
    prev = 0.0
    for e, t in zip(events, times):
        if e.type == "task_start":
            prev = t
            continue
        step = _step(e, t, t - prev)
        prev = t
        if step.type == "results":
            last_results = step
            if step.target_position is None and tl.target in step.shown:  # older logs: no position logged
                step.target_position = step.shown.index(tl.target) + 1
        elif last_results is not None:
            _apply_marks(e, last_results)
        tl.steps.append(step)
    return tl


def task_times(events: list) -> list[float]:
    """Seconds since the task's start for each event: the payload's own elapsed time where logged (shared by the
    events written in the same transaction: a round's input and its results), else the previous event's time plus
    the server's gap; never running backwards."""
    own_by_write: dict[float, float] = {}
    for e in events:
        own = _own_time(e)
        if own is not None and _num(e.server_ts) is not None:
            own_by_write.setdefault(float(e.server_ts), own)
    out: list[float] = []
    t, last_server = 0.0, None
    for e in events:
        server = _num(e.server_ts)
        own = 0.0 if e.type == "task_start" else own_by_write.get(server) if server is not None else None
        if own is None:
            own = t + (server - last_server if server is not None and last_server is not None else 0.0)
        t = max(t, own)
        out.append(round(t, 3))
        last_server = server if server is not None else last_server
    return out


def _own_time(e) -> float | None:
    """The task's elapsed time an event's payload logs (results: elapsed_s; the end of a task: time_s)."""
    p = e.payload if isinstance(e.payload, dict) else {}
    return _num(p.get("elapsed_s")) if e.type == "results" else _num(p.get("time_s")) if e.type in END_TYPES else None


def _step(e, t: float, dt: float) -> Step:
    p = e.payload if isinstance(e.payload, dict) else {}
    s = Step(t=t, dt=round(max(dt, 0.0), 3), type=e.type, round=e.round)
    if e.type == "results":
        s.shown = [str(x) for x in p.get("shown") or []]
        s.target_rank, s.target_position = _int(p.get("target_rank")), _int(p.get("target_position"))
        s.detail = " ".join(x for x in (str(p.get("kind") or ""), str(p.get("method") or "")) if x)
        s.text = str(p.get("query") or "")
    elif e.type == "question_shown":
        q = p.get("question")
        s.text = q.get("text", "") if isinstance(q, dict) else str(q or "")
        s.options = [str(o.get("label", "")) if isinstance(o, dict) else str(o) for o in p.get("options") or []]
    elif e.type == "feedback":
        s.text = _marks_text(p.get("relevant") or [], p.get("irrelevant") or [])
    elif e.type == "click":
        s.text = f"{p.get('action', '')} {p.get('image_id', '')}".strip()
    elif e.type in ("found", "wrong_pick"):
        s.text = str(p.get("image_id") or "")
        s.detail = f"position {p['position']}" if p.get("position") else ""
    elif e.type == "reference":
        s.text = str(p.get("reference") or "")
    elif e.type in ("error", "refused"):
        s.text = str(p.get("message") or "")
    elif e.type == "paradata":
        s.text = {"blur": "left the page (blur)", "focus": "came back (focus)", "hidden": "tab hidden",
                  "visible": "tab visible", "idle": "idle", "active": "active again"}.get(p.get("kind"), str(p.get("kind")))
    else:
        s.text = str(p.get("text") or p.get("question") or "")
        if p.get("question") and e.type == "answer":
            s.detail = f"to: {p['question']}"
    return s


def _marks_text(relevant: Iterable[str], irrelevant: Iterable[str]) -> str:
    rel, irr = list(relevant), list(irrelevant)
    return "; ".join(x for x in (f"relevant: {', '.join(rel)}" if rel else "",
                                 f"not relevant: {', '.join(irr)}" if irr else "") if x) or "no marks"


def _apply_marks(e, results: Step) -> None:
    """Marks given after a round's results, drawn on those results' images."""
    p = e.payload if isinstance(e.payload, dict) else {}
    if e.type == "feedback":
        results.marks.update({str(i): True for i in p.get("relevant") or []})
        results.marks.update({str(i): False for i in p.get("irrelevant") or []})
    elif e.type == "click" and p.get("action") in ("mark_relevant", "mark_irrelevant", "unmark"):
        image = str(p.get("image_id") or "")
        if p["action"] == "unmark":
            results.marks.pop(image, None)
        else:
            results.marks[image] = p["action"] == "mark_relevant"


# --- eval runs ---------------------------------------------------------------------------------------------
def eval_replay(path: Path, protocol: str | None = None, target: str | None = None) -> Replay:
    """The searches of an `eval` output folder (each protocol's checkpoint.jsonl) or of one checkpoint file."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.glob("*/checkpoint.jsonl")) + sorted(path.glob("checkpoint.jsonl"))
    if not files:
        raise BadInputError(f"{path}: no eval run here (no <protocol>/checkpoint.jsonl); give an eval --out folder, "
                            "a checkpoint.jsonl, or a study database (.sqlite)")
    rep = Replay(str(path), "eval")
    for f in files:
        name = f.parent.name if f.name == "checkpoint.jsonl" else f.stem
        if protocol is not None and name != protocol:
            continue
        rep.tasks += _eval_file(f, name, target, rep.notes)
    if not rep.tasks:
        raise BadInputError(f"{path}: no search matches" + (f" protocol {protocol!r}" if protocol else "")
                            + (f" target {target!r}" if target else ""))
    return rep


def _eval_file(f: Path, name: str, target: str | None, notes: list[str]) -> list[TaskTimeline]:
    out: list[TaskTimeline] = []
    for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            notes.append(f"{f}: line {n} is not JSON (a run cut off while writing?): skipped")
            continue
        if not isinstance(rec, dict) or "target" not in rec or "header" in rec:
            continue
        if target is not None and str(rec["target"]) != target and str(rec.get("qid")) != target:
            continue
        out.append(eval_timeline(rec, name, len(out) + 1))
    return out


def eval_timeline(rec: dict, protocol: str, number: int) -> TaskTimeline:
    """One eval search record (`target`, `turns[]` with `shown`, `rank`, `query`, `question`) as a timeline."""
    target = str(rec["target"])
    stop = str(rec.get("stop") or "")
    status = "found" if rec.get("found_round") is not None or stop == "found" else (stop or UNFINISHED)
    tl = TaskTimeline(protocol, number, target, protocol, status)
    t = 0.0
    for turn in rec.get("turns") or []:
        dt = _num(turn.get("seconds")) or 0.0
        t = round(t + dt, 3)
        rnd = _int(turn.get("round"))
        shown = [str(x) for x in turn.get("shown") or []]
        tl.steps.append(Step(t=t, dt=round(dt, 3), type=str(turn.get("kind") or "round"), round=rnd,
                             text=str(turn.get("query") or "")))
        tl.steps.append(Step(t=t, dt=0.0, type="results", round=rnd, shown=shown,
                             target_rank=_int(turn.get("rank")),
                             target_position=shown.index(target) + 1 if target in shown else None,
                             detail=str(turn.get("method") or "")))
        if turn.get("question"):
            tl.steps.append(Step(t=t, dt=0.0, type="question_shown", round=rnd, text=str(turn["question"])))
    if status == "found":
        tl.steps.append(Step(t=t, dt=0.0, type="found", round=_int(rec.get("found_round")), text=target))
    return tl


def load_replay(source: Path, participant: str | None = None, task: str | None = None) -> Replay:
    """A study database (.sqlite) or an eval run (folder or checkpoint.jsonl), as a Replay."""
    from interactive_ir.study.log import open_readonly

    source = Path(source)
    if source.is_dir() or source.suffix == ".jsonl":
        return eval_replay(source, participant, task)
    n = None
    if task is not None:
        try:
            n = int(task)
        except ValueError as e:
            raise BadInputError(f"--task is a task's number in the participant's plan (1, 2, ...), got {task!r}") from e
    with open_readonly(source) as log:
        return study_replay(log, participant, n)
