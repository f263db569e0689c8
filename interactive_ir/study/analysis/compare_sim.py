"""`study compare-sim --db HUMAN --sim SIMULATED`: does the simulator rank the conditions as people do?

SimEval-IR (2026) found that whether simulated sessions "look human" barely predicts whether a simulator ranks
systems correctly, while distances between simulated and human distributions of click depth and session length
do. So, for the conditions the two logs share:

- per metric (found rate, BRI, rounds used, time to success, click depth), each log's condition means and
  ranking, Kendall's tau between the two rankings (tau-b, ties allowed) with a 95% bootstrap interval (tasks
  resampled within each condition of each log, `n_boot` times, seeded), and whether both pick the same winner;
- per distribution (rounds used, click depth, time to success; pooled over conditions and per condition), the
  Kolmogorov-Smirnov statistic and the Wasserstein-1 (earth mover's) distance between people and simulator.

Click depth: the position on the page (1 = top) of each image a participant clicked, marked or picked, in the
round whose results showed it. Time to success: seconds from a task's start to "found" (the study's clock: a dry
run's is simulated, so compare times only when both logs ran on real time). Practice and timed-out tasks are left
out, as in the report.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from interactive_ir.errors import BadInputError
from interactive_ir.study.analysis.report import ended_sessions, read_sessions
from interactive_ir.study.log import StudyLog

# metric -> True when higher is better
METRICS = {"found_rate": True, "bri": False, "rounds_used": False, "time_to_success_s": False, "click_depth": False}
DISTRIBUTIONS = ("rounds_used", "click_depth", "time_to_success_s")
_CLICKS = ("click", "wrong_pick", "found")


@dataclass
class TaskRow:
    """One analysed task: what the comparison reads of it."""

    condition: str
    found: bool
    bri: float | None
    rounds_used: int | None
    time_s: float | None
    depths: list[int] = field(default_factory=list)  # page positions of the images clicked, marked or picked


def task_rows(log: StudyLog) -> list[TaskRow]:
    """The analysed tasks of a study log (people or a dry run)."""
    run = log.get_meta("run") or {}
    sessions = ended_sessions(read_sessions(log), run.get("n_images"))
    depths: dict[tuple[str, int], list[int]] = {}
    where: dict[tuple[str, int], dict[str, int]] = {}  # image -> its position in the latest round that showed it
    for e in log.events():
        if e.task is None:
            continue
        key = (e.participant, int(e.task))
        p = e.payload if isinstance(e.payload, dict) else {}
        if e.type == "results":
            where.setdefault(key, {}).update({str(x): i + 1 for i, x in enumerate(p.get("shown") or [])})
            continue
        clicked = [p.get("image_id")] if e.type in _CLICKS else \
            list(p.get("relevant") or []) + list(p.get("irrelevant") or []) if e.type == "feedback" else []
        page = where.get(key, {})
        depths.setdefault(key, []).extend(page[str(i)] for i in clicked if str(i) in page)
    return [TaskRow(s.condition, s.ended == "found", s.bri,
                    s.rounds_used if s.rounds_used is not None else max(0, len(s.ranks) - 1),
                    s.time_s if s.ended == "found" else None, depths.get((s.participant, s.task), []))
            for s in sessions]


def _values(rows: Sequence[TaskRow], metric: str) -> list[float]:
    if metric == "found_rate":
        return [1.0 if r.found else 0.0 for r in rows]
    if metric == "bri":
        return [r.bri for r in rows if r.bri is not None]
    if metric == "rounds_used":
        return [float(r.rounds_used) for r in rows if r.rounds_used is not None]
    if metric == "time_to_success_s":
        return [float(r.time_s) for r in rows if r.time_s is not None]
    if metric == "click_depth":
        return [float(d) for r in rows for d in r.depths]
    raise BadInputError(f"unknown metric {metric!r}")


def _means(by_cond: Mapping[str, Sequence[TaskRow]], metric: str) -> dict[str, float | None]:
    out = {}
    for c, rows in by_cond.items():
        v = _values(rows, metric)
        out[c] = sum(v) / len(v) if v else None
    return out


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired lists (None when either is constant or has fewer than 2 items)."""
    conc = disc = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif (dx > 0) == (dy > 0):
            conc += 1
        else:
            disc += 1
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return None if denom == 0 else (conc - disc) / denom


def ks_statistic(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical CDFs."""
    if not a or not b:
        return None
    a, b = sorted(a), sorted(b)
    gap = 0.0
    for x in sorted(set(a) | set(b)):
        gap = max(gap, abs(_cdf(a, x) - _cdf(b, x)))
    return gap


def wasserstein(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The Wasserstein-1 (earth mover's) distance between two samples: the area between their empirical CDFs."""
    if not a or not b:
        return None
    a, b = sorted(a), sorted(b)
    xs = sorted(set(a) | set(b))
    return sum(abs(_cdf(a, x) - _cdf(b, x)) * (x1 - x) for x, x1 in zip(xs, xs[1:]))


def _cdf(sorted_values: Sequence[float], x: float) -> float:
    import bisect

    return bisect.bisect_right(sorted_values, x) / len(sorted_values)


def _winner(means: Mapping[str, float | None], higher: bool) -> str | None:
    known = {c: m for c, m in means.items() if m is not None}
    if not known:
        return None
    best = max(known.values()) if higher else min(known.values())
    tied = sorted(c for c, m in known.items() if m == best)
    return tied[0] if len(tied) == 1 else " = ".join(tied)


def _ranking(means: Mapping[str, float | None], higher: bool) -> list[str]:
    known = [(m, c) for c, m in means.items() if m is not None]
    return [c for m, c in sorted(known, key=lambda mc: (-mc[0] if higher else mc[0], mc[1]))]


def _boot_tau(human: Mapping[str, Sequence[TaskRow]], sim: Mapping[str, Sequence[TaskRow]], conds: Sequence[str],
              metric: str, n_boot: int, rng: random.Random) -> list[float] | None:
    taus = []
    for _ in range(n_boot):
        h = _means({c: [rng.choice(human[c]) for _ in human[c]] for c in conds}, metric)
        s = _means({c: [rng.choice(sim[c]) for _ in sim[c]] for c in conds}, metric)
        keep = [c for c in conds if h[c] is not None and s[c] is not None]
        tau = kendall_tau([h[c] for c in keep], [s[c] for c in keep]) if len(keep) > 1 else None
        if tau is not None:
            taus.append(tau)
    if len(taus) < max(10, n_boot // 10):
        return None
    taus.sort()
    return [round(taus[int(0.025 * (len(taus) - 1))], 4), round(taus[int(0.975 * (len(taus) - 1))], 4)]


def compare(human: Sequence[TaskRow], sim: Sequence[TaskRow], n_boot: int = 1000, seed: int = 0) -> dict:
    """The comparison (see the module docstring) of two logs' analysed tasks."""
    by_h, by_s = _by_condition(human), _by_condition(sim)
    conds = sorted(set(by_h) & set(by_s))
    if not conds:
        raise BadInputError(f"the two logs share no condition with analysed tasks (people: {sorted(by_h) or 'none'}; "
                            f"simulator: {sorted(by_s) or 'none'})")
    rng = random.Random(seed)
    metrics = {}
    for metric, higher in METRICS.items():
        h, s = _means({c: by_h[c] for c in conds}, metric), _means({c: by_s[c] for c in conds}, metric)
        keep = [c for c in conds if h[c] is not None and s[c] is not None]
        tau = kendall_tau([h[c] for c in keep], [s[c] for c in keep]) if len(keep) > 1 else None
        wh, ws = _winner(h, higher), _winner(s, higher)
        metrics[metric] = {"higher_is_better": higher, "human": _round(h), "simulated": _round(s),
                           "human_ranking": _ranking(h, higher), "simulated_ranking": _ranking(s, higher),
                           "kendall_tau": None if tau is None else round(tau, 4),
                           "tau_ci95": _boot_tau(by_h, by_s, keep, metric, n_boot, rng) if len(keep) > 1 else None,
                           "human_winner": wh, "simulated_winner": ws,
                           "same_winner": None if wh is None or ws is None else wh == ws}
    dists = {name: _distances(human, sim, name, conds) for name in DISTRIBUTIONS}
    return {"conditions": conds, "n_tasks": {"human": len(human), "simulated": len(sim)}, "metrics": metrics,
            "distances": dists, "n_boot": n_boot, "seed": seed,
            "notes": _notes(conds, human, sim)}


def _distances(human: Sequence[TaskRow], sim: Sequence[TaskRow], name: str, conds: Sequence[str]) -> dict:
    def pair(fh: Callable[[TaskRow], bool]) -> dict:
        a = _values([r for r in human if fh(r)], name)
        b = _values([r for r in sim if fh(r)], name)
        ks, w = ks_statistic(a, b), wasserstein(a, b)
        return {"n_human": len(a), "n_simulated": len(b), "ks": None if ks is None else round(ks, 4),
                "wasserstein": None if w is None else round(w, 4)}

    out = {"all": pair(lambda r: r.condition in conds)}
    for c in conds:
        out[c] = pair(lambda r, c=c: r.condition == c)
    return out


def _notes(conds: Sequence[str], human: Sequence[TaskRow], sim: Sequence[TaskRow]) -> list[str]:
    notes = []
    if len(conds) < 3:
        notes.append(f"{len(conds)} shared condition(s): Kendall's tau over two conditions is +1 or -1 (the same or "
                     "the opposite order); the interval says how often resampling flips it")
    if min(len(human), len(sim)) < 20:
        notes.append(f"few tasks ({len(human)} people's, {len(sim)} simulated): the intervals are wide")
    return notes


def _by_condition(rows: Sequence[TaskRow]) -> dict[str, list[TaskRow]]:
    out: dict[str, list[TaskRow]] = {}
    for r in rows:
        out.setdefault(r.condition, []).append(r)
    return out


def _round(d: Mapping[str, float | None]) -> dict[str, float | None]:
    return {k: None if v is None else round(v, 4) for k, v in d.items()}


def compare_logs(human_db: str | Path, sim_db: str | Path, n_boot: int = 1000, seed: int = 0) -> dict:
    """`compare` of two study databases (or study bundles)."""
    from interactive_ir.study.log import open_readonly

    rows = []
    for db in (human_db, sim_db):
        path = Path(db)
        if path.is_dir():
            from interactive_ir.study.bundle import bundle_log

            path = bundle_log(path)
        with open_readonly(path) as log:
            rows.append(task_rows(log))
    rep = compare(rows[0], rows[1], n_boot, seed)
    rep.update(human=str(human_db), simulated=str(sim_db))
    return rep


def compare_markdown(rep: dict) -> str:
    """The comparison as a short markdown page."""
    lines = [f"# Simulator against people: {rep['simulated']} vs {rep['human']}", "",
             f"Conditions: {', '.join(rep['conditions'])}; analysed tasks: {rep['n_tasks']['human']} (people), "
             f"{rep['n_tasks']['simulated']} (simulated); bootstrap: {rep['n_boot']} resamples, seed {rep['seed']}.", "",
             "| metric | people's ranking | simulator's ranking | Kendall's tau [95% CI] | same winner |",
             "|---|---|---|---|---|"]
    for name, m in rep["metrics"].items():
        tau = "n/a" if m["kendall_tau"] is None else f"{m['kendall_tau']:+.2f}"
        ci = f" [{m['tau_ci95'][0]:+.2f}, {m['tau_ci95'][1]:+.2f}]" if m["tau_ci95"] else ""
        same = {True: "yes", False: "**no**", None: "n/a"}[m["same_winner"]]
        lines.append(f"| {name} | {_order(m, 'human')} | {_order(m, 'simulated')} | {tau}{ci} | {same} |")
    lines += ["", "| distribution | KS (all) | Wasserstein-1 (all) | per condition (KS / W1) |", "|---|---|---|---|"]
    for name, d in rep["distances"].items():
        per = "; ".join(f"{c}: {_f(v['ks'])} / {_f(v['wasserstein'])}" for c, v in d.items() if c != "all")
        lines.append(f"| {name} | {_f(d['all']['ks'])} | {_f(d['all']['wasserstein'])} | {per} |")
    lines += [""] + [f"- note: {n}" for n in rep["notes"]]
    return "\n".join(lines) + "\n"


def _order(m: dict, side: str) -> str:
    """One log's ranking of the conditions on one metric, with the means ("A (0.8) > B (0.5)")."""
    sign = " > " if m["higher_is_better"] else " < "
    return sign.join(f"{c} ({m[side][c]:.3g})" for c in m[f"{side}_ranking"]) or "n/a"


def _f(x) -> str:
    return "n/a" if x is None else f"{x:.3g}"
