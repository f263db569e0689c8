"""The study report: per-condition retrieval metrics, questionnaire means, and BRI-rating correlations.

A *session* is one participant's task. Only ended sessions (found, gave up, or budget exhausted) count.

- Ranks: the target's collection rank after each round (the `results` events, round 0 = the
  description). A session that ended before its budget carries its last rank forward to round
  T = its round budget (the convention of `interactive_ir.evaluation.metrics`).
- Headline (first in summary.md): found rate within the round budget, the target's rank at each round
  itself (median over sessions, by round), and the log-ratio ``ln(rank_T / rank_0)`` of the session's final
  rank to its round 0 (mean with a 95% t-interval; below 0: the search brought the target closer), over
  every session and over the "hard" ones (round-0 rank beyond the page of k). Every condition searches the
  same ranked collection, so a paging condition (if the study has one) is the bar.
- For comparison with the papers (not headline: best-so-far metrics reward a query that moves at random):
  BRI per session: PlugIR's Best log Rank Integral of its padded ranks (lower is better); per condition
  the mean with a 95% t-interval. Hits@K by round, success rate and rounds to success@K come from
  `evaluation.metrics.compute_all` over the condition's sessions.
- Found rate, rounds to found (the round in which the participant picked the target) and time to found
  (seconds from the task start to the pick), with 95% t-intervals over the found sessions.
- Questionnaire: each Likert question's mean with a 95% t-interval, per condition.
- PlugIR's Table 2 analysis: Spearman and Pearson correlation between per-session BRI and each Likert
  rating, over all rated sessions and per condition (BRI is lower-better, so agreement with ratings
  shows as a negative correlation).
"""

from __future__ import annotations

import csv
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.metrics import bri_per_query, compute_all
from interactive_ir.study.analysis.stats import correlation, mean_ci
from interactive_ir.study.log import TASK_END_TYPES, StudyLog

log = logging.getLogger(__name__)

DEFAULT_REPORT_KS = (1, 5, 10)


@dataclass
class SessionSummary:
    """One participant's task, read back from the log."""

    participant: str
    task: int  # 1-based position in the participant's plan
    task_index: int | None  # the task's index in the study file
    target: str
    condition: str
    budget: int  # round budget
    ranks: list[int | None] = field(default_factory=list)  # target's collection rank by round (round 0 first)
    ended: str = ""  # "found", "give_up", "budget_exhausted", or "" (not ended)
    found_round: int | None = None  # the round in which the target was picked
    time_s: float | None = None  # seconds from the task start to its end
    rounds_used: int | None = None
    ratings: dict[str, Any] = field(default_factory=dict)  # questionnaire answers by question id
    bri: float | None = None  # per-session BRI over rounds 0..budget
    practice: bool = False  # the practice task (never analysed)
    scores: dict[str, float] = field(default_factory=dict)  # instrument scores of the after-task form
    expert: bool | None = None  # an expert (True) or novice (False) session, as enrolled (None: not said)

    @property
    def key(self) -> str:
        return f"{self.participant}#{self.task}"


def read_sessions(log: StudyLog, study_id: str | None = None) -> list[SessionSummary]:
    """Every session that started, in the order they started."""
    sessions: dict[tuple[str, int], SessionSummary] = {}
    for e in log.events(study_id):
        if e.task is None:
            continue
        key = (e.participant, e.task)
        if e.type == "task_start":
            sessions[key] = SessionSummary(participant=e.participant, task=e.task,
                                           task_index=e.payload.get("task_index"), target=e.target or "",
                                           condition=e.condition or "", budget=int(e.payload.get("rounds") or 0),
                                           practice=bool(e.payload.get("practice")),
                                           expert=e.payload.get("expert") if isinstance(e.payload.get("expert"),
                                                                                        bool) else None)
            continue
        s = sessions.get(key)
        if s is None:
            continue
        if e.type == "results" and e.round is not None:
            while len(s.ranks) <= e.round:
                s.ranks.append(s.ranks[-1] if s.ranks else None)
            s.ranks[e.round] = e.payload.get("target_rank")
        elif e.type in TASK_END_TYPES:
            s.ended = e.type
            s.time_s = e.payload.get("time_s")
            s.rounds_used = e.payload.get("rounds_used")
            if e.type == "found":
                s.found_round = e.payload.get("found_round", e.round)
        elif e.type == "questionnaire" and e.payload.get("form", "task") == "task":
            s.ratings = dict(e.payload.get("answers") or {})
            s.scores = dict(e.payload.get("scores") or {})
    return list(sessions.values())


def read_forms(log: StudyLog, study_id: str | None = None) -> list[dict]:
    """Every questionnaire submission: participant, form, task, condition, answers, scores, attention."""
    return [{"participant": e.participant, "form": e.payload.get("form", "task"), "task": e.task,
             "condition": e.condition, "answers": dict(e.payload.get("answers") or {}),
             "scores": dict(e.payload.get("scores") or {}), "attention": dict(e.payload.get("attention") or {})}
            for e in log.events(study_id, types=["questionnaire"])]


def padded_ranks(s: SessionSummary, n_rounds: int) -> list[int | None]:
    """Ranks over rounds 0..n_rounds-1, the last carried forward."""
    ranks = list(s.ranks[:n_rounds])
    return ranks + [ranks[-1]] * (n_rounds - len(ranks))


def _likert_ids(study: dict | None, sessions: Sequence[SessionSummary]) -> list[str]:
    if study and study.get("questions"):
        return [q["id"] for q in study["questions"] if q.get("type", "likert") == "likert"]
    ids: dict[str, None] = {}
    for s in sessions:
        for k, v in s.ratings.items():
            if isinstance(v, int) and not isinstance(v, bool):
                ids.setdefault(k, None)
    return list(ids)


def _ratings(sessions: Sequence[SessionSummary], qid: str) -> list[float | None]:
    return [s.ratings.get(qid) if isinstance(s.ratings.get(qid), (int, float)) else None for s in sessions]


def _correlations(sessions: Sequence[SessionSummary], qids: Sequence[str]) -> dict:
    out = {}
    for q in qids:
        pairs = [(s.bri, s.ratings[q]) for s in sessions
                 if s.bri is not None and isinstance(s.ratings.get(q), (int, float))]
        out[q] = correlation([p[0] for p in pairs], [p[1] for p in pairs])
    return out


def ended_sessions(sessions: Sequence[SessionSummary], n_images: int | None) -> list[SessionSummary]:
    """The analysed sessions: ended with at least one ranked round, neither practice nor timed out; each with
    its BRI over rounds 0..budget."""
    out = [s for s in sessions if s.ended and s.ranks and not s.practice and s.ended != "timeout"]
    for s in out:
        t = max(s.budget, len(s.ranks) - 1)
        s.bri = bri_per_query({s.key: padded_ranks(s, t + 1)}, n_images)[s.key]
    return out


def headline(group: Sequence[SessionSummary], n_rounds: int, k: int | None) -> dict:
    """Found rate, median rank by round and mean log-ratio [95% t-interval] of `group`, over every session
    ("all") and over those whose round-0 rank is beyond `k` ("hard"; none without `k`)."""
    import numpy as np

    def one(sessions: Sequence[SessionSummary]) -> dict:
        rows = [[float(r) for r in padded_ranks(s, n_rounds)] for s in sessions
                if all(r is not None for r in padded_ranks(s, n_rounds))]
        if not rows:
            return {"n": len(sessions), "found_rate": None, "median_rank": [], "log_ratio": mean_ci([]).to_dict()}
        m = np.array(rows)
        return {"n": len(sessions), "found_rate": sum(s.ended == "found" for s in sessions) / len(sessions),
                "median_rank": [float(np.median(m[:, t])) for t in range(m.shape[1])],
                "log_ratio": mean_ci([math.log(r[-1] / r[0]) for r in rows]).to_dict()}

    hard = [s for s in group if k and s.ranks and s.ranks[0] is not None and s.ranks[0] > k]
    return {"all": one(group), "hard": one(hard) if hard else {"n": 0}}


def build_report(log: StudyLog, study_id: str | None = None, ks: Sequence[int] = DEFAULT_REPORT_KS,
                 sessions: Sequence[SessionSummary] | None = None) -> dict:
    """Everything the report shows, as a JSON-able dict."""
    study = log.get_meta("study")
    run = log.get_meta("run") or {}
    n_images = run.get("n_images")
    all_sessions = list(sessions) if sessions is not None else read_sessions(log, study_id)
    ended = ended_sessions(all_sessions, n_images)
    if not ended:
        raise BadInputError(f"{log.path}: no ended task with a search round to report on yet "
                            f"({len(all_sessions)} task(s) started)")
    ks = tuple(dict.fromkeys([*ks, *([study["k"]] if study and study.get("k") else [])]))
    qids = _likert_ids(study, ended)
    order = [c["name"] for c in study["conditions"]] if study else []
    conditions = list(dict.fromkeys([*[c for c in order if any(s.condition == c for s in ended)],
                                     *sorted({s.condition for s in ended})]))
    points = {q["id"]: int(q.get("points", 5)) for q in (study or {}).get("questions", []) if isinstance(q, dict)}
    bri_max = math.log(n_images + 1) if n_images else None  # BRI lies in [0, ln(worst rank)]
    per_condition = {}
    for c in conditions:
        group = [s for s in ended if s.condition == c]
        n_rounds = max(max(s.budget, len(s.ranks) - 1) for s in group) + 1
        metrics = compute_all({s.key: padded_ranks(s, n_rounds) for s in group}, ks=ks, n_images=n_images)
        found = [s for s in group if s.ended == "found"]
        per_condition[c] = {
            "headline": headline(group, n_rounds, (study or {}).get("k")),
            "n_sessions": len(group),
            "n_participants": len({s.participant for s in group}),
            "bri": mean_ci([s.bri for s in group], 0.0, bri_max).to_dict(),
            "found_rate": len(found) / len(group),
            "gave_up": sum(s.ended == "give_up" for s in group),
            "timeout": sum(s.ended == "timeout" and not s.practice and s.condition == c for s in all_sessions),
            "budget_exhausted": sum(s.ended == "budget_exhausted" for s in group),
            "rounds_to_found": mean_ci([s.found_round for s in found], 0.0).to_dict(),
            "time_to_found_s": mean_ci([s.time_s for s in found], 0.0).to_dict(),
            "time_per_task_s": mean_ci([s.time_s for s in group], 0.0).to_dict(),
            "metrics": metrics,
            "questionnaire": {q: mean_ci(_ratings(group, q), 1.0, float(points.get(q, 5))).to_dict() for q in qids},
            "correlation_bri_rating": _correlations(group, qids),
        }
    forms = read_forms(log, study_id)
    from interactive_ir.study.analysis.tables import attention_flags, run_analysis

    analysis = run_analysis(ended, forms, conditions, qids)
    return {
        "study_id": study.get("study_id") if study else study_id,
        "simulated": log.get_meta("simulated"),
        "excluded": {"practice": sum(s.practice for s in all_sessions),
                     "timeout": sum(s.ended == "timeout" and not s.practice for s in all_sessions)},
        "analysis": analysis["models"],
        "warnings": analysis["warnings"],
        "end_scores": analysis["end_scores"],
        "tables": analysis["tables"],
        "attention": attention_flags(forms),
        "database": str(log.path),
        "n_images": n_images,
        "ks": list(ks),
        "n_participants": len({s.participant for s in all_sessions}),  # who started a task
        "n_participants_ended": len({s.participant for s in ended}),  # ... and ended at least one with a search
        "n_sessions_started": len(all_sessions),
        "n_sessions_ended": len(ended),
        "likert_questions": qids,
        "conditions": per_condition,
        "correlation_bri_rating": _correlations(ended, qids),
        "expertise": expertise_split(ended, conditions),
        "notes": ["headline: found rate, rank at each round (not best so far) and ln(final rank / round-0 rank); "
                  "BRI and Hits@K are for comparison with the papers (best so far: they reward a query that moves "
                  "at random)",
                  "practice and timed-out tasks are left out of every analysis (counted under excluded)",
                  "BRI is lower-better: agreement with ratings shows as a negative correlation",
                  "ranks are collection ranks of the target; sessions that ended early carry their last rank "
                  "forward to their round budget"],
    }


# ---------------------------------------------------------------- writing


EXPERTISE = {True: "expert", False: "novice", None: "not said"}


def expertise_split(ended: Sequence[SessionSummary], conditions: Sequence[str]) -> list[dict]:
    """Per condition and expert / novice group: sessions, participants, found rate and time to found ([] when no
    participant was marked expert or novice)."""
    if all(s.expert is None for s in ended):
        return []
    rows = []
    for c in conditions:
        for flag, name in EXPERTISE.items():
            group = [s for s in ended if s.condition == c and s.expert is flag]
            if group:
                found = [s for s in group if s.ended == "found"]
                rows.append({"condition": c, "group": name, "n_sessions": len(group),
                             "n_participants": len({s.participant for s in group}),
                             "found_rate": len(found) / len(group),
                             "time_to_found_s": mean_ci([s.time_s for s in found], 0.0).to_dict()})
    return rows


def expertise_lines(rows: Sequence[dict]) -> list[str]:
    if not rows:
        return []
    lines = ["", "## Expert and novice sessions", "", "| condition | group | participants | sessions | found rate | "
             "time to found (s) |", "|---" * 6 + "|"]
    for r in rows:
        lines.append(f"| {r['condition']} | {r['group']} | {r['n_participants']} | {r['n_sessions']} | "
                     f"{_fmt(r['found_rate'])} | {_ci(r['time_to_found_s'], 1)} |")
    return lines


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ci(d: dict, digits: int = 3) -> str:
    if d["mean"] is None:
        return "-"
    if d["ci_low"] is None:
        return f"{_fmt(d['mean'], digits)} (n={d['n']})"
    return f"{_fmt(d['mean'], digits)} [{_fmt(d['ci_low'], digits)}, {_fmt(d['ci_high'], digits)}] (n={d['n']})"


def summary_markdown(rep: dict) -> str:
    ks = rep["ks"]
    lines = [f"# Study report: {rep['study_id']}", "",
             f"{rep['n_participants']} participant(s) started tasks, {rep.get('n_participants_ended', '-')} ended at "
             f"least one after searching; {rep['n_sessions_ended']} task(s) with a search ended of "
             f"{rep['n_sessions_started']} started (sessions.csv lists every started task); index of "
             f"{rep['n_images']} images.", "",
             "## Retrieval: headline (95% t-intervals)", "",
             "Found within the round budget; the target's rank at each round itself (median over sessions); "
             "ln(final rank / round-0 rank), below 0 = brought closer. Hard: round-0 rank beyond the page.", "",
             "| condition | sessions | found rate | rounds to found | time to found (s) | median rank by round | "
             "mean ln(rank_T/rank_0) | hard: sessions | hard: found rate | hard: mean ln-ratio |",
             "|---" * 10 + "|"]
    for c, d in rep["conditions"].items():
        h = d.get("headline") or {}
        a, hd = h.get("all") or {}, h.get("hard") or {}
        med = " > ".join(f"{x:.0f}" for x in a.get("median_rank") or []) or "-"
        lines.append(f"| {c} | {d['n_sessions']} | {_fmt(d['found_rate'])} | {_ci(d['rounds_to_found'], 2)} | "
                     f"{_ci(d['time_to_found_s'], 1)} | {med} | "
                     f"{_ci(a['log_ratio'], 2) if a.get('log_ratio') else '-'} | {hd.get('n', 0)} | "
                     f"{_fmt(hd.get('found_rate'))} | {_ci(hd['log_ratio'], 2) if hd.get('log_ratio') else '-'} |")
    lines += ["", "## Retrieval: for comparison with the papers (best so far; not headline: rewards a query that "
              "moves at random)", "",
              "| condition | sessions | BRI (lower is better) | " + " | ".join(f"Hits@{k} (last round)" for k in ks)
              + " |", "|---" * (3 + len(ks)) + "|"]
    for c, d in rep["conditions"].items():
        hits = [_fmt(d["metrics"][f"hits@{k}"][-1]) for k in ks]
        lines.append(f"| {c} | {d['n_sessions']} | {_ci(d['bri'])} | " + " | ".join(hits) + " |")
    if rep["likert_questions"]:
        lines += ["", "## Questionnaire (means, 95% t-intervals)", "",
                  "| condition | " + " | ".join(rep["likert_questions"]) + " |",
                  "|---" * (1 + len(rep["likert_questions"])) + "|"]
        for c, d in rep["conditions"].items():
            lines.append(f"| {c} | " + " | ".join(_ci(d["questionnaire"][q], 2) for q in rep["likert_questions"])
                         + " |")
        lines += ["", "## Correlation of per-session BRI with ratings (PlugIR Table 2; for comparison with the papers)", "",
                  "| question | n | Spearman | Pearson |", "|---|---|---|---|"]
        for q, r in rep["correlation_bri_rating"].items():
            lines.append(f"| {q} | {r['n']} | {_fmt(r['spearman'])} | {_fmt(r['pearson'])} |")
    if rep.get("analysis"):
        lines += ["", "## Mixed-effects models (condition fixed; participant and task random; see report.html)", "",
                  "| metric | condition | estimated mean [95% CI] | contrast | difference | p (Holm) | d |",
                  "|---|---|---|---|---|---|---|"]
        for m in rep["analysis"].values():
            if m["error"]:
                lines.append(f"| {m['metric']} | - | {m['error']} | | | | |")
                continue
            cons = m["contrasts"]
            for i, (c, d) in enumerate(m["means"].items()):
                con = cons[i] if i < len(cons) else None
                lines.append(f"| {m['metric'] if i == 0 else ''} | {c} | {_fmt(d['mean'])} [{_fmt(d['ci_low'])}, "
                             f"{_fmt(d['ci_high'])}] | " + (f"{con['a']} - {con['b']} | {_fmt(con['diff'])} | "
                                                            f"{_fmt(con['p_holm'])} | {_fmt(con['d'], 2)} |"
                                                            if con else "| | | |"))
    lines += expertise_lines(rep.get("expertise") or [])
    lines += paradata_lines(rep.get("paradata"))
    if rep.get("warnings"):
        lines += ["", "## Design warnings", "", *[f"- {w}" for w in rep["warnings"]]]
    lines += ["", *[f"- {n}" for n in rep["notes"]], ""]
    return "\n".join(lines)


def paradata_lines(para: dict | None) -> list[str]:
    """The report's paradata section (markdown): per task defocus count and time away, the flagged tasks, and
    the analysis with or without them (whichever the main tables are not)."""
    if not para or not para.get("n_tasks_with_events"):
        return ["", "## Time on the page", "", "No focus or visibility events were logged (older page, or none)."]
    th = para["thresholds"]
    lines = ["", "## Time on the page (paradata)", "",
             f"{para['n_tasks_with_events']} of {para['n_tasks']} task(s) logged leaving the page; flagged above "
             f"{th['max_away_s']} s away or {th['max_defocus']} defocus event(s) (0 = off): "
             f"{len(para['flagged'])} ({', '.join(para['flagged']) or 'none'}). The tables above "
             + ("leave the flagged tasks out." if para["excluded"] else "include them (--exclude-away leaves them out)."),
             "", "| task | condition | defocus | time away (s) | idle periods | idle (s) | clock offset (s) | flagged |",
             "|---" * 8 + "|"]
    for r in para["tasks"]:
        if r["defocus_count"] or r["idle_count"] or r["flagged"]:
            lines.append(f"| {r['key']} | {r['condition']} | {r['defocus_count']} | {r['time_away_s']:.1f} | "
                         f"{r['idle_count']} | {r['idle_s']:.1f} | {r['clock_offset_s']:.1f} | "
                         f"{'yes' if r['flagged'] else ''} |")
    other = para.get("other_analysis")
    if other and "error" not in other:
        lines += ["", "With the flagged tasks " + ("in:" if para["excluded"] else "left out:"), "",
                  "| condition | sessions | found rate | mean BRI | mean time per task (s) |", "|---|---|---|---|---|"]
        lines += [f"| {c} | {d['n_sessions']} | {_fmt(d['found_rate'])} | {_fmt(d['bri'])} | "
                  f"{_fmt(d['time_per_task_s'], 1)} |" for c, d in other.items()]
    elif other:
        lines += ["", f"The other analysis could not run: {other['error']}"]
    return lines


def write_sessions_csv(sessions: Sequence[SessionSummary], path: Path, qids: Sequence[str]) -> None:
    cols = ["participant", "task", "task_index", "target", "condition", "budget", "ended", "found_round", "time_s",
            "rounds_used", "bri", "ranks", "practice", *[f"rating_{q}" for q in qids]]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for s in sessions:
            d = asdict(s)
            w.writerow([d[c] for c in cols[:10]] + [s.bri, json.dumps(s.ranks), s.practice]
                       + [s.ratings.get(q) for q in qids])


def write_rows(rows: Sequence[dict], path: Path) -> None:
    """A CSV of dict rows (columns in order of first appearance)."""
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(cols), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def questionnaire_rows(forms: Sequence[dict]) -> list[dict]:
    return [{"participant": f["participant"], "form": f["form"], "task": f["task"], "condition": f["condition"],
             **f["answers"], **f["scores"],
             "attention_failed": ";".join(k for k, ok in f["attention"].items() if not ok)} for f in forms]


def paradata_split(log: StudyLog, sessions: Sequence[SessionSummary], study_id: str | None, ks: Sequence[int],
                   exclude_away: bool, away: tuple[float, int] | None = None) -> tuple[list[SessionSummary], dict]:
    """(the sessions the analysis uses, the report's paradata section). Tasks whose participant was away from the
    page above the thresholds (`away` = (seconds, defocus count); default StudyLogConfig's) are flagged; with
    `exclude_away` the analysis leaves them out. The section also holds the other analysis's per-condition
    results (with them when they are left out, without them when they are in), so both are shown."""
    from interactive_ir.study.analysis.paradata import paradata_summary, task_paradata
    from interactive_ir.study.log import study_log_config

    if away is None:
        cfg = study_log_config()
        away = (cfg.away_max_s, cfg.away_max_defocus)
    rows = task_paradata(log.events(study_id), *away)
    section = {**paradata_summary(rows, *away), "excluded": exclude_away}
    flagged = set(section["flagged"])
    kept = [s for s in sessions if s.key not in flagged]
    main, other = (kept, list(sessions)) if exclude_away else (list(sessions), kept)
    if flagged:
        try:
            alt = build_report(log, study_id, ks, other)["conditions"]
            section["other_analysis"] = {c: {"n_sessions": d["n_sessions"], "found_rate": d["found_rate"],
                                             "bri": d["bri"]["mean"], "time_per_task_s": d["time_per_task_s"]["mean"]}
                                         for c, d in alt.items()}
        except BadInputError as e:
            section["other_analysis"] = {"error": str(e)}
    return main, section


def write_report(log: StudyLog, out_dir: str | Path, study_id: str | None = None,
                 ks: Sequence[int] = DEFAULT_REPORT_KS, plots: bool = True, exclude_away: bool = False,
                 away: tuple[float, int] | None = None) -> dict:
    """Write report.json, summary.md, sessions.csv and PNG plots into `out_dir`; the report dict.

    The report dict gains "files": the paths written, and "paradata" (see `paradata_split`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    every_session = read_sessions(log, study_id)
    all_sessions, para = paradata_split(log, every_session, study_id, ks, exclude_away, away)
    rep = build_report(log, study_id, ks, all_sessions)
    rep["paradata"] = para
    sessions = [s for s in all_sessions if s.bri is not None]
    tables = rep.pop("tables")
    files = [out / "report.json", out / "summary.md", out / "sessions.csv", out / "questionnaires.csv",
             out / "analysis_tasks.csv", out / "analysis_conditions.csv", out / "data_dictionary.csv",
             out / "report.html"]
    write_sessions_csv(every_session, files[2], rep["likert_questions"])  # every started task (bri blank: not scored)
    write_rows(questionnaire_rows(read_forms(log, study_id)), files[3])
    write_rows(tables["tasks"], files[4])
    write_rows(tables["conditions"], files[5])
    (out / "summary.md").write_text(summary_markdown(rep), encoding="utf-8")
    pngs = []
    if plots:
        from interactive_ir.study.analysis.plots import write_plots

        pngs = write_plots(rep, sessions, out)
    from interactive_ir.study.analysis.report_html import data_dictionary, write_dictionary, write_html

    dictionary = data_dictionary(log.get_meta("study"))
    write_dictionary(dictionary, files[6])
    write_html(rep, files[7], pngs, dictionary)
    rep["files"] = [str(f) for f in files + pngs]
    (out / "report.json").write_text(json.dumps(rep, indent=2, default=str), encoding="utf-8")
    return rep
