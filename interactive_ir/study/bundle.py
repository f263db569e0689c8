"""`study export --bundle DIR`: a study log as a run bundle (`interactive_ir.evaluation.bundle`), and back.

Each condition is a run whose records are the participants' tasks in eval's record shape (`qid` =
participant/task, `target`, `ranks` by round from the logged target ranks, `shown_ranks`, `turns[]` with the
round's input, the system's question, the `shown` ids and the `rank`, `found_round`, `stop` = how the task ended),
so `metrics DIR` scores people and simulated users alike. The whole event log goes along (`events.jsonl`,
`participants.json`, `meta.json`) for `study report --db DIR`, which rebuilds a database from it (`bundle_log`).
The practice task is left out of the records (it stays in the event log, as the report leaves it out). The
recruitment platform's ids (PROLIFIC_PID, workerId, ...) are left out of the bundle; participant ids stay.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.bundle import read_bundle, write_bundle
from interactive_ir.study.analysis.export import event_rows
from interactive_ir.study.analysis.report import read_sessions
from interactive_ir.study.log import SCHEMA, StudyLog, open_readonly

_INPUTS = ("description", "answer", "skip", "feedback", "relative_caption", "search")


def study_records(log: StudyLog) -> dict[str, list[dict]]:
    """Condition -> its tasks as eval-shaped records (see the module docstring)."""
    turns: dict[tuple[str, int], dict[int, dict]] = {}
    for e in log.events():
        if e.task is None or e.round is None:
            continue
        t = turns.setdefault((e.participant, int(e.task)), {}).setdefault(int(e.round), {"round": int(e.round)})
        p = e.payload if isinstance(e.payload, dict) else {}
        if e.type in _INPUTS:
            t.setdefault("kind", e.type)
            t["input"] = p.get("text") if e.type != "feedback" else {"relevant": p.get("relevant"),
                                                                     "irrelevant": p.get("irrelevant")}
        elif e.type == "results":
            t.update(query=p.get("query") or "", method=p.get("method") or "", shown=list(p.get("shown") or []),
                     rank=p.get("target_rank"), shown_rank=p.get("target_position"))
        elif e.type == "question_shown":
            q = p.get("question")
            t["question"] = q.get("text", "") if isinstance(q, dict) else str(q or "")
    out: dict[str, list[dict]] = {}
    for s in read_sessions(log):
        if s.practice:
            continue
        rounds = [v for _, v in sorted(turns.get((s.participant, s.task), {}).items()) if "shown" in v]
        for t in rounds:
            t.setdefault("llm_calls", 0)
            t.setdefault("seconds", 0.0)
        out.setdefault(s.condition, []).append({
            "qid": f"{s.participant}/{s.task}", "target": s.target, "participant": s.participant, "task": s.task,
            "task_index": s.task_index, "condition": s.condition, "ranks": list(s.ranks),
            "shown_ranks": [t.get("shown_rank") for t in rounds], "turns": rounds, "found_round": s.found_round,
            "stop": s.ended or "unfinished", "seconds": float(s.time_s or 0.0), "engine_llm_seconds": 0.0,
            "sim_seconds": 0.0, "ratings": s.ratings})
    return out


def _scrub(d):
    """A payload or participant's meta without the recruitment platform's ids (PROLIFIC_PID, workerId, ...)."""
    return {k: v for k, v in d.items() if k != "recruitment"} if isinstance(d, dict) else d


def _meta(path: Path) -> dict:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta")}
    finally:
        con.close()


def study_bundle(db: str | Path, out: str | Path) -> Path:
    """Write the bundle of the study database `db` into `out`."""
    db, out = Path(db), Path(out)
    with open_readonly(db) as log:
        meta = _meta(db)
        study, run = meta.get("study") or {}, meta.get("run") or {}
        n_images = int(run.get("n_images") or 0)
        runs = {c: {"records": recs, "n_images": n_images or max([1] + [r for x in recs for r in x["ranks"] if r]),
                    "rounds": study.get("rounds"), "k": study.get("k"), "ks": (1, 5, 10)}
                for c, recs in study_records(log).items()}
        if not runs:
            raise BadInputError(f"{db}: no task to bundle yet (no participant started one)")
        rows = [{**r, "payload": _scrub(r["payload"])} for r in event_rows(log)]
        participants = [{**p, "meta": _scrub(p["meta"])} for p in log.participants()]
    write_bundle(out, "study", {"study": study, "run": run, "source": db.name}, runs)
    with open(out / "events.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    (out / "participants.json").write_text(json.dumps(participants, indent=1, default=str), encoding="utf-8")
    (out / "meta.json").write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
    return out


def bundle_log(bundle: str | Path) -> Path:
    """A study database rebuilt from a study bundle's event log (in a temporary folder), for the report."""
    bundle = Path(bundle)
    meta = read_bundle(bundle)
    if meta.get("kind") != "study" or not (bundle / "events.jsonl").is_file():
        raise BadInputError(f"{bundle}: a bundle of an eval run has no study log; `metrics {bundle}` re-scores it")
    path = Path(tempfile.mkdtemp(prefix="iir-bundle-")) / f"{bundle.name or 'bundle'}.sqlite"
    con = sqlite3.connect(str(path))
    try:
        con.executescript(SCHEMA)
        for line in (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                con.execute("INSERT INTO events (id, study_id, participant, task, target, condition, round, type, "
                            "payload, client_ts, server_ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (r["id"], r["study_id"], r["participant"], r["task"], r["target"], r["condition"],
                             r["round"], r["type"], json.dumps(r["payload"]), r["client_ts"], r["server_ts"]))
        for p in json.loads((bundle / "participants.json").read_text(encoding="utf-8")):
            con.execute("INSERT INTO participants (study_id, participant, number, created_at, meta) VALUES "
                        "(?, ?, ?, ?, ?)", (p["study_id"], p["participant"], p["number"], p["created_at"],
                                            json.dumps(p.get("meta") or {})))
        for k, v in json.loads((bundle / "meta.json").read_text(encoding="utf-8")).items():
            con.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (k, json.dumps(v)))
        con.commit()
    finally:
        con.close()
    return path
