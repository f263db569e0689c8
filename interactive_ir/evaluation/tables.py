"""Benchmark tables from finished `eval` runs: first the headline metrics (`evaluation.headline`: targets found
within the budget, median rank by round, log-ratio of the final rank to round 0, each against paging with 95%
paired intervals, over every target and the hard ones), then, for comparison with the papers, BRI,
best-so-far and at-round Hits@10 with 95% bootstrap intervals, costs, and paired differences against
baselines (no interaction, zs).

    python -m interactive_ir.evaluation.tables RUNS_DIR PASS [PASS ...] [--rounds 5] [--baselines none,zs]

Each PASS is a folder of `RUNS_DIR` written by one `eval --out` (summary.json and <protocol>/ranks.json).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from interactive_ir.evaluation import headline
from interactive_ir.evaluation.report import markdown_table, paired_difference


def _ranks(folder: Path, protocol: str) -> dict:
    return json.loads((folder / protocol.replace(":", "-") / "ranks.json").read_text(encoding="utf-8"))


def _cell(d: dict, name: str, scale: float = 1.0, fmt: str = "{:+.1f}") -> str:
    """'mean [lo, hi]' of a paired difference, scaled (100 for points)."""
    v = d[name]
    return f"{fmt.format(scale * v['mean'])} [{fmt.format(scale * v['ci'][0])}, {fmt.format(scale * v['ci'][1])}]"


def _subset(ranks: dict, qids: set) -> dict:
    return {q: r for q, r in ranks.items() if q in qids}


def _targets(folder: Path, summary: dict) -> dict:
    """protocol -> its per-target headline outcomes (targets.json), for the protocols that wrote them."""
    out = {}
    for p in summary:
        path = folder / p.replace(":", "-") / "targets.json"
        if path.exists():
            out[p] = json.loads(path.read_text(encoding="utf-8"))
    return out


def pass_tables(folder: Path, rounds: int, baselines=("none", "zs"), k: int = 10) -> str:
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    first = next(iter(summary.values()))
    n_images = first["n_images"]
    has_paging = headline.compare_with_paging(summary, _targets(folder, summary))
    lines = [f"### {folder.name}: {', '.join(sorted({str(m['n_queries']) for m in summary.values()}))} targets, "
             f"index of {n_images} images, {rounds} rounds; simulated user: {first.get('simulated_user', '?')}", "",
             headline.report_text(summary, has_paging) or "(no headline metrics: runs recorded before them)", "",
             f"#### BRI and Hits@{k}: {headline.PAPERS_LABEL}", "",
             markdown_table(summary, k=k, extra=("s/query", "cpu/query", "llm")), ""]
    for base, hard in [(b, h) for b in baselines for h in (False, True)]:
        if base not in summary:
            continue
        base_ranks = _ranks(folder, base)
        # the targets the description alone left outside the top k: the only ones interaction can help
        keep = {q for q, r in base_ranks.items() if r[0] > k} if hard else set(base_ranks)
        if hard and (not keep or len(keep) == len(base_ranks)):
            continue
        rows = ["| protocol | targets | dBRI [95% CI] | dHits@10 best-so-far, pts | dat-round@10, pts |",
                "|---|---|---|---|---|"]
        for p, m in summary.items():
            if p == base or m.get("not_comparable") or summary[base].get("not_comparable"):
                continue
            d = paired_difference(_subset(_ranks(folder, p), keep), _subset(base_ranks, keep), n_images, rounds, k)
            rows.append(f"| {p} | {d['n']} | {_cell(d, 'bri', 1, '{:+.3f}')} | {_cell(d, f'hits@{k}', 100)} | "
                        f"{_cell(d, f'at_round@{k}', 100)} |")
        scope = (f"on the {len(keep)} targets not in the top {k} at round 0" if hard else "on every target")
        lines += [f"Paired differences against `{base}`, {scope} (protocol minus {base}; negative dBRI is better; "
                  "for comparison with the papers):",
                  "", *rows, ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path)
    ap.add_argument("passes", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baselines", default="none,zs")
    args = ap.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    for name in args.passes:
        folder = args.runs / name
        if (folder / "summary.json").exists():
            print(pass_tables(folder, args.rounds, tuple(args.baselines.split(","))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
