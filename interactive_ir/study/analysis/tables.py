"""The study's analysis tables and their mixed models (see `interactive_ir.study.analysis.mixed`).

Two tables are modelled:
- per analysed task (practice and timed-out tasks left out): found (0/1), BRI, rounds and time to
  success (found tasks only), each after-task instrument score and Likert rating; participant and task
  are random effects;
- per participant x condition: the scores of the questionnaires given after each condition (SUS,
  NASA-TLX, UEQ-S); participant is a random effect.
End-of-study scores have one value per participant and no condition: the report gives their means.
"""

from __future__ import annotations

from collections.abc import Sequence

from interactive_ir.study.analysis.stats import mean_ci

TASK_METRICS = {  # column -> what it is (lower/higher better), for the report and the data dictionary
    "found": "1 when the participant picked the target, else 0 (higher is better)",
    "bri": "Best log Rank Integral of the target's rank over the rounds (lower is better)",
    "rounds_to_success": "round in which the target was picked, found tasks only (lower is better)",
    "time_to_success_s": "seconds from the task start to the pick, found tasks only (lower is better)",
}


def task_rows(sessions: Sequence, qids: Sequence[str]) -> list[dict]:
    """One row per analysed task."""
    rows = []
    for s in sessions:
        found = s.ended == "found"
        row = {"participant": s.participant, "task": s.task_index if s.task_index is not None else s.target,
               "condition": s.condition, "position": s.task, "found": 1.0 if found else 0.0, "bri": s.bri,
               "rounds_to_success": s.found_round if found else None,
               "time_to_success_s": s.time_s if found else None}
        row.update({k: float(v) for k, v in s.scores.items()})
        for q in qids:
            v = s.ratings.get(q)
            row[f"rating_{q}"] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        rows.append(row)
    return rows


def condition_rows(forms: Sequence[dict]) -> list[dict]:
    """One row per participant x condition: the after-condition scores, position = the block's order."""
    rows, seen = [], {}
    for f in forms:
        if f["form"] != "condition" or not f["scores"]:
            continue
        seen[f["participant"]] = seen.get(f["participant"], 0) + 1
        rows.append({"participant": f["participant"], "condition": f["condition"], "position": seen[f["participant"]],
                     **f["scores"]})
    return rows


def attention_flags(forms: Sequence[dict]) -> dict:
    """Participants who failed an attention check, with the items they failed."""
    failed: dict[str, list[str]] = {}
    checked = set()
    for f in forms:
        for item, ok in f["attention"].items():
            checked.add(f["participant"])
            if not ok:
                failed.setdefault(f["participant"], []).append(item)
    return {"n_checked": len(checked), "failed": failed}


def run_analysis(sessions: Sequence, forms: Sequence[dict], conditions: Sequence[str], qids: Sequence[str]) -> dict:
    """{"models": metric -> fitted model dict, "warnings": [...], "end_scores": score -> mean_ci, "tables"}."""
    import importlib.util

    from interactive_ir.study.analysis.mixed import analyse, to_frame

    conditions = list(conditions)
    tasks = task_rows(sessions, qids)
    per_condition = condition_rows(forms)
    models: dict[str, dict] = {}
    warnings: list[str] = []
    if importlib.util.find_spec("statsmodels") is None:
        warnings.append("no mixed-effects models: statsmodels is not installed (pip install statsmodels)")
        tasks_for_models, per_condition_for_models = [], []
    else:
        tasks_for_models, per_condition_for_models = tasks, per_condition
    if tasks_for_models:
        df = to_frame(tasks)
        metrics = [m for m in df.columns if m not in ("participant", "task", "condition", "position")]
        models.update(analyse(df, {m: True for m in metrics}, conditions))
    if per_condition_for_models:
        df = to_frame(per_condition)
        metrics = [m for m in df.columns if m not in ("participant", "condition", "position")]
        models.update(analyse(df, {m: False for m in metrics}, conditions))
    for m in models.values():
        warnings.extend(w for w in m["warnings"] if w not in warnings)
        if m["error"]:
            warnings.append(f"{m['metric']}: {m['error']}")
    end: dict[str, list[float]] = {}
    for f in forms:
        if f["form"] == "end":
            for k, v in f["scores"].items():
                end.setdefault(k, []).append(v)
    return {"models": models, "warnings": warnings, "end_scores": {k: mean_ci(v).to_dict() for k, v in end.items()},
            "tables": {"tasks": tasks, "conditions": per_condition}}
