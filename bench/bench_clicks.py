"""Do clicks and questions carry information? Issue 38's goals, on the hard targets, for every judge.

Data exactly as /work/shared/tools/found-vs-paging makes it: the first N images of a split of a Flickr8k-style
captions file (one JSON line per image: image, captions[5], split), caption 0 indexed with the text embedder,
caption 1 the description, captions 2-4 what the simulated user knows; the hard targets are those the
description alone ranks beyond 10 (round 0 of `eval --protocol none`); then 5 rounds of 10.

For each judge of "alike" (`--judges`, e.g. words and bm25: neither shares anything with the index's
embedder) it runs the rows below through the evaluator (`evaluation.runner.run_protocol`, the simulated user
of `evaluation.users`), prints each row as it finishes, and checks issue 38's goals:

| row | protocol | user noise | overlook | against | goal |
|---|---|---|---|---|---|
| paging | none | 0 | 0 | - | the baseline |
| click@25 | user:click | 0.25 | 0 | paging | at least +10 points |
| question@25 | user:question | 0.25 | 0 | paging | at least +10 points |
| typing | user:typing | 0 | 0 | paging | at least +15 points |
| paging@overlook | none | 0 | 0.2 | - | the baseline at 20% overlook |
| typing@overlook | user:typing | 0 | 0.2 | paging@overlook | at least +10 points |
| random-questions, wrong-marks, shuffled-page | (the known-bad) | 0 | 0 | paging | below paging |

Extra rows by name: click, question, picture (no noise), click@N / question@N / picture@N / typing@N (N% noise);
`picture` is the question-only user with Picture questions chosen in Options (`user:picture`).

"Found" is the target shown on a page within the rounds and not overlooked. The difference to the baseline
is in points with a 95% paired bootstrap interval over the targets (the same targets and seeds in both
rows). A goal PASSes when the difference reaches it and the interval is clear of zero; a known-bad row
PASSes when its whole interval is below zero (below paging beyond chance).

Rows that cannot depend on the judge (paging, shuffled pages, wrong marks: ground-truth marks) run once and
are shown under every judge.

Usage: python bench/bench_clicks.py [--n 1000] [--seed 0] [--judges words,bm25] [--protocols ROW,...]
       [--split dev|train] [--out DIR] [--data DIR] [--embedder text:all-MiniLM-L6-v2] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = Path("/work/shared/data/flickr8k")
JUDGE_FREE = {"none", "shuffled-page", "wrong-marks"}  # their rounds never ask the user's judge
DEFAULT_ROWS = ("paging", "click@25", "question@25", "typing", "paging@overlook", "typing@overlook",
                "random-questions", "wrong-marks", "shuffled-page")


@dataclass(frozen=True)
class Row:
    """One line of the table: a protocol run with a user noise and an overlook rate, against a baseline."""

    name: str
    protocol: str
    noise: float = 0.0
    overlook: float = 0.0
    baseline: str = ""  # the row it is compared with ("": it is a baseline)
    goal: float | None = None  # points above the baseline it must reach; None with `below`: must be below
    below: bool = False  # a known-bad: must be below the baseline


def make_row(name: str, overlook: float = 0.2) -> Row:
    """The row called `name` (see the module docstring)."""
    fixed = {
        "paging": Row("paging", "none"),
        "paging@overlook": Row("paging@overlook", "none", overlook=overlook),
        "typing@overlook": Row("typing@overlook", "user:typing", 0.0, overlook, "paging@overlook", 10.0),
        "random-questions": Row("random-questions", "random-questions", baseline="paging", below=True),
        "wrong-marks": Row("wrong-marks", "wrong-marks", baseline="paging", below=True),
        "shuffled-page": Row("shuffled-page", "shuffled-page", baseline="paging", below=True),
    }
    if name in fixed:
        return fixed[name]
    user, _, pct = name.partition("@")
    goals = {"click": 10.0, "question": 10.0, "typing": 15.0, "picture": 10.0}
    if user not in goals:
        raise SystemExit(f"unknown row {name!r}: choose from {', '.join(DEFAULT_ROWS)}, click, question, "
                         "or click@N, question@N, picture@N, typing@N (N% noise)")
    noise = float(pct) / 100 if pct else 0.0
    return Row(name, f"user:{user}", noise, 0.0, "paging", goals[user])


# --- data, index, hard targets ------------------------------------------------------------------------------


def write_split(data: Path, split: str, n: int, out: Path, rotate: int = 0) -> None:
    """The first `n` images of `split`: images linked, caption 0 to index, caption 1 described, 2-4 known
    (with `rotate` r: caption r indexed, r + 1 described, the other three known; each image's five captions
    taken round)."""
    rows = [json.loads(line) for line in open(data / "captions.jsonl", encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r.get("split") == split][:n]
    if not rows:
        raise SystemExit(f"no {split} images in {data / 'captions.jsonl'}")
    (out / "images").mkdir(parents=True, exist_ok=True)
    with open(out / "index_captions.jsonl", "w") as f, open(out / "queries.jsonl", "w") as q:
        for r in rows:
            link = out / "images" / r["image"]
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                os.symlink((data / "images" / r["image"]).resolve(), link)
            caps = list(r["captions"])
            caps = caps[rotate % len(caps):] + caps[:rotate % len(caps)]
            f.write(json.dumps({"image": r["image"], "caption": caps[0]}) + "\n")
            q.write(json.dumps({"target": r["image"], "description": caps[1], "captions": caps[2:]}) + "\n")


def build_index(work: Path, embedder: str) -> Path:
    """The caption index of `work`'s images (kept in `work/idx` and reused when it is there)."""
    idx = work / "idx"
    if (idx / "manifest.json").exists():
        return idx
    cmd = [sys.executable, "-m", "interactive_ir", "index", "--images", str(work / "images"), "--captions",
           str(work / "index_captions.jsonl"), "--embedder", embedder, "--out", str(idx)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"index failed: {done.stderr[-2000:]}")
    return idx


def run_row(row: Row, queries, retriever, judge: str, seed: int, out: Path, rounds: int, k: int) -> dict[str, bool]:
    """target -> found (shown within the rounds and not overlooked) for `row` with the `judge`."""
    from interactive_ir.evaluation.protocols import get_protocol
    from interactive_ir.evaluation.runner import RunConfig, run_protocol
    from interactive_ir.evaluation.similarity import make_similarity
    from interactive_ir.evaluation.simulators import SimConfig, make_user

    user = make_user(retriever.index, config=SimConfig(noise=row.noise), seed=seed,
                     similarity=make_similarity(judge, retriever.embedder))
    cfg = RunConfig(rounds=rounds, seed=seed, k=k, overlook=row.overlook, progress=False)
    run = run_protocol(get_protocol(row.protocol), queries, retriever, user, out, cfg, fresh=True,
                       backends={"sim": {"similarity": judge, "noise": row.noise}})
    return {r["target"]: r.get("found_round") is not None for r in run.results}


def hard_queries(queries, retriever, out: Path, k: int) -> list:
    """The queries whose description alone ranks the target beyond `k` (round 0 of `none`; kept in
    `out/hard.json` and reused with the same index)."""
    from interactive_ir.evaluation.protocols import get_protocol
    from interactive_ir.evaluation.runner import RunConfig, run_protocol
    from interactive_ir.evaluation.simulators import make_user

    kept = out / "hard.json"
    if kept.exists():
        hard = set(json.loads(kept.read_text()))
    else:
        cfg = RunConfig(rounds=0, seed=0, k=k, progress=False)
        run = run_protocol(get_protocol("none"), queries, retriever, make_user(retriever.index), out, cfg)
        hard = {r["target"] for r in run.results if r.get("ranks") and r["ranks"][0] > k}
        kept.write_text(json.dumps(sorted(hard)))
    return [q for q in queries if q.target in hard]


def one_thread() -> None:
    """One faiss and one torch thread, as `eval` runs by default: on a shared machine more only spin."""
    import faiss

    faiss.omp_set_num_threads(1)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - a caption index needs no torch
        pass


# --- the comparison -------------------------------------------------------------------------------------------


def paired_interval(a: np.ndarray, b: np.ndarray, seed: int, n_boot: int = 2000) -> tuple[float, float, float]:
    """(mean of a - b, 2.5th and 97.5th percentile of its bootstrap over the paired items), in points (x100)."""
    d = (a.astype(float) - b.astype(float)) * 100.0
    if len(d) == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def verdict(row: Row, diff: float, lo: float, hi: float) -> str:
    """PASS / FAIL against the row's goal ("" for a baseline)."""
    if not row.baseline:
        return ""
    if row.below:
        return "PASS" if hi < 0 else "FAIL"
    return "PASS" if diff >= (row.goal or 0.0) and lo > 0 else "FAIL"


def goal_text(row: Row) -> str:
    if not row.baseline:
        return "baseline"
    return f"below {row.baseline}" if row.below else f">= +{row.goal:g} vs {row.baseline}"


def table_line(judge: str, row: Row, found: dict[str, bool], base: dict[str, bool] | None, targets: list[str],
               seed: int) -> tuple[str, dict]:
    """The markdown line of a finished row and its figures."""
    a = np.array([found.get(t, False) for t in targets], bool)
    share = 100.0 * a.mean() if len(a) else 0.0
    rec = {"judge": judge, "row": row.name, "protocol": row.protocol, "noise": row.noise, "overlook": row.overlook,
           "found": int(a.sum()), "targets": len(a), "found_pct": round(share, 2), "goal": goal_text(row)}
    if base is None:
        return f"| {judge} | {row.name} | {row.protocol} | {a.sum()}/{len(a)} | {share:.1f} | - | - | baseline | |", rec
    b = np.array([base.get(t, False) for t in targets], bool)
    diff, lo, hi = paired_interval(a, b, seed)
    result = verdict(row, diff, lo, hi)
    rec.update({"diff": round(diff, 2), "ci": [round(lo, 2), round(hi, 2)], "result": result})
    return (f"| {judge} | {row.name} | {row.protocol} | {a.sum()}/{len(a)} | {share:.1f} | {diff:+.1f} | "
            f"[{lo:+.1f}, {hi:+.1f}] | {goal_text(row)} | {result} |"), rec


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="images of the split (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the users' errors, overlooks and the bootstrap")
    ap.add_argument("--judges", default="words,bm25", help="comma-separated --user-similarity judges")
    ap.add_argument("--protocols", default=",".join(DEFAULT_ROWS), help="comma-separated rows (see the docstring)")
    ap.add_argument("--split", default="dev", help="dev (tuning) or train (the 'other photos' check)")
    ap.add_argument("--rotate", type=int, default=0, help="caption roles: caption R indexed, R+1 described, the "
                    "others known (0: as found-vs-paging; 1-4 give other hard targets of the same images)")
    ap.add_argument("--overlook", type=float, default=0.2, help="the overlook rate of the @overlook rows (0.2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--data", type=Path, default=DATA, help="folder with captions.jsonl and images/")
    ap.add_argument("--embedder", default="text:all-MiniLM-L6-v2", help="the index's embedder")
    ap.add_argument("--work", type=Path, default=None, help="keep the data, index and runs here (reused)")
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    from interactive_ir.assembly.indexes import open_retriever
    from interactive_ir.evaluation.queries import read_queries

    args = parse_args(argv)
    one_thread()
    rows = [make_row(n.strip(), args.overlook) for n in args.protocols.split(",") if n.strip()]
    rows = [make_row(b, args.overlook) for b in {r.baseline for r in rows if r.baseline}
            if b not in {r.name for r in rows}] + rows  # a row's baseline runs too
    work = args.work or Path(tempfile.mkdtemp(prefix="iir_bench_clicks_"))
    work = work / (f"{args.split}-{args.n}" + (f"-r{args.rotate}" if args.rotate else ""))
    t0 = time.perf_counter()
    write_split(args.data, args.split, args.n, work, args.rotate)
    retriever = open_retriever(build_index(work, args.embedder), None, args.k)
    queries = hard_queries(read_queries(work / "queries.jsonl"), retriever, work / "round0", args.k)
    targets = [q.target for q in queries]
    print(f"{args.split} split, N = {len(retriever.index)} images, {len(targets)} hard targets (description beyond "
          f"rank {args.k}), {args.rounds} rounds of {args.k}, seed {args.seed}, embedder {args.embedder}, load "
          f"average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print("\n| judge | row | protocol | found | found % | vs baseline (points) | 95% paired CI | goal | result |\n"
          "|---|---|---|---|---|---|---|---|---|", flush=True)
    found: dict[tuple[str, str], dict[str, bool]] = {}
    records = []
    judges = [j.strip() for j in args.judges.split(",") if j.strip()]
    for judge in judges:
        if judge in ("index", args.embedder):
            print(f"note: the judge {judge!r} is the index's embedder: it shares the retriever's notion of alike, "
                  "so its rows do not count for the goals", flush=True)
    for judge in judges:
        for row in rows:
            free = row.protocol in JUDGE_FREE and (row.protocol, row.noise, row.overlook)
            cached = next((v for (j, n), v in found.items() if free and n == row.name), None)
            found[(judge, row.name)] = cached if cached is not None else run_row(
                row, queries, retriever, judge, args.seed, work / "runs" / judge / row.name, args.rounds, args.k)
            base = found.get((judge, row.baseline)) if row.baseline else None
            line, rec = table_line(judge, row, found[(judge, row.name)], base, targets, args.seed)
            print(line, flush=True)
            records.append(rec)
    print(f"\n{time.perf_counter() - t0:.0f} s, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
          flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"n": len(retriever.index), "split": args.split, "seed": args.seed,
                                        "hard_targets": len(targets), "rows": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
