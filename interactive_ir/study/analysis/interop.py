"""`study export --format dres|lsc-csv`: the study log as the community's evaluation servers read it.

- dres: one JSON file, per task (participant x task) the DRES query-event logs (every input: TEXT, IMAGE,
  BROWSING, FILTER; see `interactive_ir.study.dres`), the result logs (each round's shown images, ranked, with
  the round's inputs as events) and the submissions ("This is it") with their verdict, CORRECT or WRONG;
- lsc-csv: the NTCIR/LSC run format, one row per submitted image, no header:
  `GROUP-ID, RUN-ID, TOPIC-ID, IMAGE-ID, SECONDS-ELAPSED, SCORE`. GROUP-ID is the study (or --group), RUN-ID the
  condition and participant (`A-P3`: one searcher per run, as in LSC), TOPIC-ID the task's place in the study's
  task list (1, 2, ...; the same image for everyone), SECONDS-ELAPSED the time since the task started (the replay's
  clock), SCORE the system's score of that image in the latest round that showed it (0 when it logged none).

The practice task is left out of both, as from the report. Tasks that ended mid-way are exported up to their last
event.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from interactive_ir.errors import BadInputError
from interactive_ir.study.analysis.timeline import END_TYPES, UNFINISHED, task_times
from interactive_ir.study.dres import SUBMIT_EVENTS, query_event, result_log, submission
from interactive_ir.study.log import StudyLog

INTEROP_FORMATS = ("dres", "lsc-csv")
LSC_COLUMNS = ("GROUP-ID", "RUN-ID", "TOPIC-ID", "IMAGE-ID", "SECONDS-ELAPSED", "SCORE")


def _tasks(log: StudyLog, study_id: str | None = None) -> list[tuple[str, int, list]]:
    """(participant, task, its events in log order) for every task but the practice one."""
    groups: dict[tuple[str, int], list] = {}
    for e in log.events(study_id):
        if e.task is not None and e.type not in ("questionnaire", "study_end", "paradata", "dres"):
            groups.setdefault((e.participant, int(e.task)), []).append(e)
    out = []
    for (pid, n), evs in groups.items():
        start = next((e for e in evs if e.type == "task_start"), None)
        if start is not None and (start.payload or {}).get("practice"):
            continue
        out.append((pid, n, evs))
    return out


def _topic(events: list) -> str:
    start = next((e for e in events if e.type == "task_start"), None)
    index = (start.payload or {}).get("task_index") if start is not None else None
    return str(int(index) + 1) if isinstance(index, int) and index >= 0 else str(events[0].target or "")


def dres_export(log: StudyLog, collection: str = "", study_id: str | None = None) -> dict:
    """The DRES logs of every task (see the module docstring)."""
    tasks = []
    for pid, n, evs in _tasks(log, study_id):
        queries, results, submissions, pending = [], [], [], []
        for e in evs:
            q = query_event(e)
            if q is not None:
                queries.append({"timestamp": q["timestamp"], "events": [q]})
                pending.append(e)
            elif e.type == "results":
                results.append(result_log(e, pending, collection))
                pending = []
            elif e.type in SUBMIT_EVENTS:
                image = str((e.payload or {}).get("image_id") or "")
                submissions.append({"timestamp": round(e.server_ts * 1000), "submission": submission(image, collection),
                                    "verdict": "CORRECT" if e.type == "found" else "WRONG"})
        status = next((e.type for e in evs if e.type in END_TYPES), UNFINISHED)
        tasks.append({"participant": pid, "task": n, "topic": _topic(evs), "condition": evs[0].condition,
                      "target": evs[0].target, "status": status, "query_event_logs": queries,
                      "result_logs": results, "submissions": submissions})
    return {"format": "dres-v2 client logs (interactive_ir study export)", "source": str(log.path),
            "study_id": study_id or next((e.study_id for e in log.events(study_id)[:1]), ""), "tasks": tasks}


def lsc_rows(log: StudyLog, group: str = "", study_id: str | None = None) -> list[tuple]:
    """The NTCIR/LSC run rows (see the module docstring), in log order."""
    rows = []
    for pid, _n, evs in _tasks(log, study_id):
        times = task_times(evs)
        scores: dict[str, float] = {}
        for e, t in zip(evs, times):
            p = e.payload or {}
            if e.type == "results":
                scores.update({str(i): float(s) for i, s in zip(p.get("shown") or [], p.get("scores") or [])
                               if isinstance(s, (int, float))})
            elif e.type in SUBMIT_EVENTS:
                image = str(p.get("image_id") or "")
                rows.append((group or e.study_id, f"{e.condition}-{pid}", _topic(evs), image, round(t, 3),
                             round(scores.get(image, 0.0), 6)))
    return rows


def export_interop(log: StudyLog, out: str | Path, fmt: str, group: str = "", collection: str = "") -> int:
    """Write the `fmt` export to `out`; the number of tasks (dres) or rows (lsc-csv) written."""
    out = Path(out)
    if fmt == "dres":
        data = dres_export(log, collection)
        out.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        return len(data["tasks"])
    if fmt == "lsc-csv":
        rows = lsc_rows(log, group)
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        out.write_text(buf.getvalue(), encoding="utf-8")
        return len(rows)
    raise BadInputError(f"unknown export format {fmt!r}; choose one of {', '.join(INTEROP_FORMATS)}")
