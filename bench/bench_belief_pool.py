"""Is any target within reach when the belief covers a pool? Issue 41, deliverable 1, on the dev split.

The large-collection path is forced on a small index: `IIR_MATRIX_ROWS_MAX=0` (the retriever keeps no matrix,
so the belief covers a pool) and `IIR_BELIEF_POOL` = `--pool-share` of the rows (5%). The targets are those
the description alone ranks beyond the pool (round 0 of `eval --protocol none`, over the whole collection),
so the first pool never holds them. On those targets, for each index kind (exact, ivf-pq, a Milvus Lite
store) and each protocol of the page's simulated user (`user:typing`, `user:click`), it runs the evaluator
(`python -m interactive_ir eval`, 5 rounds of 10) with:

| row | how the belief covers the collection |
|---|---|
| whole | every row (the float32 matrix; the default below the exact limit) |
| fixed | the first query's pool only (`IIR_BELIEF_POOL_GROW=0`: the behaviour before issue 41) |
| growing | the pool grows with the evidence and reaches for the rest (the default above the limit) |
| paging | `--protocol none` on the same targets (the baseline every strategy must beat) |

and prints each row as it finishes: the share of those targets found (shown on a page within the rounds).
Goals: growing within 5 points of whole on every kind and protocol; fixed finds none (it cannot).

Data exactly as /work/shared/tools/found-vs-paging makes it: the first N images of a split of a Flickr8k-style
captions file, caption 0 indexed with the text embedder, caption 1 the description, captions 2-4 what the
simulated user knows (it never sees the target's id, rank or index caption).

Usage: python bench/bench_belief_pool.py [--n 1000] [--pool-share 0.05] [--protocols user:typing,user:click]
       [--kinds exact,ivf-pq,milvus] [--rows whole,fixed,growing,paging] [--split dev] [--work DIR] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path("/work/shared/data/flickr8k")
ROWS = {"whole": {}, "fixed": {"IIR_MATRIX_ROWS_MAX": "0", "IIR_BELIEF_POOL_GROW": "0"},
        "growing": {"IIR_MATRIX_ROWS_MAX": "0"}, "paging": {}}


def _run(args: list[str], env: dict | None = None, log: Path | None = None) -> None:
    full = {**os.environ, **(env or {})}
    with open(log or os.devnull, "w") as out:
        done = subprocess.run([sys.executable, "-m", "interactive_ir", *args], env=full, cwd=ROOT, stdout=out,
                              stderr=subprocess.STDOUT)
    if done.returncode:
        raise SystemExit(f"failed: interactive_ir {' '.join(args)} (log: {log})")


def prepare(work: Path, n: int, split: str, data: Path) -> None:
    """The image folder, index captions and queries of the first `n` images of `split`."""
    if (work / "queries.jsonl").exists():
        return
    rows = [json.loads(line) for line in open(data / "captions.jsonl")]
    rows = [r for r in rows if r.get("split") == split][:n]
    (work / "images").mkdir(parents=True, exist_ok=True)
    with open(work / "index_captions.jsonl", "w") as f, open(work / "queries.jsonl", "w") as q:
        for r in rows:
            link = work / "images" / r["image"]
            if not link.exists():
                link.symlink_to(data / "images" / r["image"])
            f.write(json.dumps({"image": r["image"], "caption": r["captions"][0]}) + "\n")
            q.write(json.dumps({"target": r["image"], "description": r["captions"][1],
                                "captions": r["captions"][2:]}) + "\n")


def build(work: Path, kind: str, embedder: str) -> tuple[Path, dict]:
    """(index folder, env) of one kind: exact, ivf-pq, or the exact index's vectors in a Milvus Lite store."""
    base = ["index", "--images", str(work / "images"), "--captions", str(work / "index_captions.jsonl"),
            "--embedder", embedder]
    if kind in ("exact", "milvus") and not (work / "idx-exact").exists():
        _run([*base, "--kind", "exact", "--out", str(work / "idx-exact")], log=work / "idx-exact.log")
    if kind == "ivf-pq":
        if not (work / "idx-ivf-pq").exists():
            _run([*base, "--kind", "ivf-pq", "--out", str(work / "idx-ivf-pq")], log=work / "idx-ivf-pq.log")
        return work / "idx-ivf-pq", {}
    if kind == "milvus":
        db = work / "store.db"
        if not db.exists():
            subprocess.run(["cp", "-r", str(work / "idx-exact"), str(work / "idx-milvus")], check=True)
            _run(["index", "export", str(work / "idx-milvus"), "--store", f"milvus-lite:{db}"], log=work / "export.log")
        return work / "idx-milvus", {"IIR_STORE": f"milvus-lite:{db}"}
    return work / "idx-exact", {}


def records(out: Path) -> list[dict]:
    recs = []
    for f in out.rglob("checkpoint.jsonl"):
        for line in open(f):
            r = json.loads(line)
            if isinstance(r, dict) and "target" in r:
                recs.append(r)
    return recs


def beyond_pool(work: Path, pool: int, seed: int) -> Path:
    """The queries whose description ranks its target beyond `pool` over the whole collection."""
    out = work / "r0"
    if not out.exists():
        _run(["eval", "--index", str(work / "idx-exact"), "--queries", str(work / "queries.jsonl"), "--protocol",
              "none", "--rounds", "0", "--seed", str(seed), "--no-progress", "--out", str(out)], log=work / "r0.log")
    far = {r["target"] for r in records(out) if r["ranks"] and r["ranks"][0] > pool}
    path = work / f"beyond-{pool}.jsonl"
    with open(path, "w") as o:
        for line in open(work / "queries.jsonl"):
            if json.loads(line)["target"] in far:
                o.write(line)
    return path


def found_share(work: Path, index: Path, env: dict, queries: Path, protocol: str, row: str, tag: str,
                rounds: int, seed: int) -> tuple[float, int, float]:
    """(share found, targets, seconds) of one eval run."""
    out = work / "runs" / f"{tag}-{row}-{protocol.replace(':', '-')}"
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    _run(["eval", "--index", str(index), "--queries", str(queries), "--protocol", "none" if row == "paging" else protocol,
          "--rounds", str(rounds), "--seed", str(seed), "--no-progress", "--fresh", "--out", str(out)],
         env={**env, **ROWS[row]}, log=out.with_suffix(".log"))
    recs = records(out)
    found = sum(r.get("found_round") is not None for r in recs)
    return found / max(1, len(recs)), len(recs), time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--pool-share", type=float, default=0.05)
    p.add_argument("--protocols", default="user:typing,user:click")
    p.add_argument("--kinds", default="exact,ivf-pq,milvus")
    p.add_argument("--rows", default="whole,fixed,growing,paging")
    p.add_argument("--split", default="dev")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--embedder", default="text:all-MiniLM-L6-v2")
    p.add_argument("--work", type=Path, default=None)
    a = p.parse_args(argv)
    work = a.work or Path(tempfile.mkdtemp(prefix="bench-belief-pool-"))
    work.mkdir(parents=True, exist_ok=True)
    pool = max(1, round(a.n * a.pool_share))
    prepare(work, a.n, a.split, a.data)
    build(work, "exact", a.embedder)
    queries = beyond_pool(work, pool, a.seed)
    n_far = sum(1 for _ in open(queries))
    print(f"{a.n} {a.split} images, pool {pool} rows ({a.pool_share:.0%}): {n_far} targets the description ranks "
          f"beyond it; rounds {a.rounds} of 10, seed {a.seed}; work {work}", flush=True)
    print("| kind | protocol | row | found | targets | seconds |\n|---|---|---|---|---|---|", flush=True)
    shares: dict[tuple, float] = {}
    for kind in a.kinds.split(","):
        index, env = build(work, kind, a.embedder)
        env = {**env, "IIR_BELIEF_POOL": str(pool)}
        for protocol in a.protocols.split(","):
            for row in a.rows.split(","):
                if row == "paging" and (kind, "paging") in {(k, r) for k, _, r in shares}:
                    continue  # paging does not depend on the protocol
                share, n, secs = found_share(work, index, env, queries, protocol, row, kind, a.rounds, a.seed)
                shares[(kind, protocol, row)] = share
                print(f"| {kind} | {'none' if row == 'paging' else protocol} | {row} | {share:.1%} | {n} | {secs:.0f} |",
                      flush=True)
    ok = True
    for (kind, protocol, row), share in shares.items():
        if row == "growing" and (kind, protocol, "whole") in shares:
            gap = 100 * (shares[(kind, protocol, "whole")] - share)
            good = gap <= 5.0
            ok &= good
            print(f"{kind} {protocol}: growing {share:.1%} vs whole {shares[(kind, protocol, 'whole')]:.1%}: "
                  f"{gap:+.1f} points behind -> {'PASS' if good else 'FAIL'} (goal: within 5)", flush=True)
        if row == "fixed":
            ok &= share == 0.0
            print(f"{kind} {protocol}: fixed pool {share:.1%} -> {'PASS' if share == 0.0 else 'FAIL'} (finds none)",
                  flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
