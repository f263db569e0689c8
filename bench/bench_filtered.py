"""Filtered ivf-pq at scale (issue 26, D3): recall@k of a filtered top-k against exact kNN over the filtered
subset, and the time per query, at filter selectivities 50%, 10%, 1% and 0.1%.

One process, one collection (clustered synthetic unit 512-d vectors, as bench_scale.py), one ivf-pq index
built by the project (`index --vectors` path), and a synthetic metadata field: a uniform random number per
row, so that "field < s" keeps a share s of the rows, spread over every cluster. The filter's rows are
computed once per selectivity, as the retriever's `filter_rows` gives them (`FilteredRows`, which also keep
the bitmap the first ID-selector search builds: the retriever remembers both between a session's rounds);
what is timed is the search. Ways, query by query in turn (who goes first alternates), so the machine's load falls
on all alike:

- `faiss, same selector`: plain faiss, the same trained IndexIVFPQ read into RAM, in IndexRefine with fp16
  refine codes in RAM, the index's nprobe, and the ID selector the project uses, built once per filter;
  `faiss, same selector and widened nprobe`: the same with the nprobe the project's ID-selector path uses
  (WIDEN_SHARE / share times the index's): the library's speed with the project's parameters;
- `project`: `Retriever.search_rows(q, k, allow=rows)` as the app runs it: it chooses the exact pool (the
  allowed rows' fp16 vectors gathered and scored) or the ID-selector search (WIDEN_SHARE / share times the
  lists) by the filter's count and the measured costs (`scoped_search.filtered_path`), the choice in brackets;
- `project, exact pool` and `project, ID selector`: each path forced, to show where the choice should fall;
- baselines without a filter, in the same run: `faiss, no filter` and `project, no filter`.

Prints a table: per selectivity and way, p50 wall and CPU ms per query, the ratios to faiss with the same
selector, recall@k on the recall queries; and `uptime`'s load average at start and end.

Usage: python bench/bench_filtered.py [--n 1000000] [--queries 100] [--recall-queries 50] [--k 100]
       [--selectivities 0.5,0.1,0.01,0.001] [--work /tmp/iir_bench_filtered] [--keep]
       (--keep: the vectors and the index stay in --work, and the next run with that --work reuses them)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_rerank import build, plain_faiss, timed  # noqa: E402
from bench_scale import DIM, generate, loadavg, rss_mb  # noqa: E402


def exact_scores(vec: Path, queries: np.ndarray) -> np.ndarray:
    """(queries x N) exact inner products with the fp16 rows as float32 (what the project re-ranks with)."""
    src = np.load(vec, mmap_mode="r")
    out = np.empty((len(queries), len(src)), np.float32)
    for a in range(0, len(src), 200_000):
        out[:, a : a + 200_000] = queries @ np.asarray(src[a : a + 200_000], np.float32).T
    return out


def top_k(scores: np.ndarray, rows: np.ndarray, k: int) -> set[int]:
    """The k best of `rows` (all rows when None) by `scores`."""
    s = scores if rows is None else scores[rows]
    top = np.argpartition(-s, min(k, len(s)) - 1)[:k]
    return set((top if rows is None else rows[top]).tolist())


def ways_for(r, fx, sp_of, allow, k: int) -> dict:
    """The timed ways for one filter (`allow`: sorted rows, None: no filter)."""
    from interactive_ir.retrieval import scoped_search as ss

    def forced(pool: bool):  # the pool made free, or dearer than any search
        def fn(q):
            was, ss.POOL_ROW_NS = ss.POOL_ROW_NS, 0.0 if pool else float("inf")
            try:
                return r.search_rows(q, k, allow=allow)[1]
            finally:
                ss.POOL_ROW_NS = was
        return fn

    if allow is None:
        sp = sp_of(None)
        return {"faiss, no filter": lambda q: fx.search(q[None], k, params=sp)[1][0],
                "project, no filter": lambda q: r.search_rows(q, k)[1]}
    sp = sp_of(allow)
    path, widen = ss.filtered_path(r.index.params, r.index.faiss_index.d, len(r.index), len(allow))
    wide = sp_of(allow, max(1.0, ss.WIDEN_SHARE * len(r.index) / len(allow)))
    path = "exact pool" if path == "pool" else f"ID selector, {widen:.1f}x nprobe"
    return {"faiss, same selector": lambda q: fx.search(q[None], k, params=sp)[1][0],
            "faiss, same selector and widened nprobe": lambda q: fx.search(q[None], k, params=wide)[1][0],
            f"project [{path}]": lambda q: r.search_rows(q, k, allow=allow)[1],
            "project, exact pool": forced(True),
            f"project, ID selector ({max(1.0, ss.WIDEN_SHARE * len(r.index) / len(allow)):.1f}x nprobe)": forced(False)}


def selector_params(index_params, n: int, k: int):
    """sp_of(allow): IndexRefine search parameters with the project's ID selector for `allow` (None: none),
    built once per filter."""
    import faiss

    from interactive_ir.index import kinds as K
    from interactive_ir.retrieval.scoped_search import id_selector

    keep = []  # the selectors must outlive the searches

    def sp_of(allow, widen: float = 1.0):
        ivf = faiss.SearchParametersIVF(nprobe=max(1, min(index_params.nlist, round(index_params.nprobe * widen))))
        if allow is not None:
            sel = id_selector(allow, n)
            keep.append(sel)
            ivf.sel = sel.selector
        return faiss.IndexRefineSearchParameters(k_factor=K.candidates(index_params, k) / k, base_index_params=ivf)

    return sp_of


def run_ways(ways: dict, qs: np.ndarray) -> tuple[dict, dict]:
    t = {w: [] for w in ways}
    got = {w: [] for w in ways}
    for i, q in enumerate(qs):
        for w, fn in (ways.items() if i % 2 else reversed(ways.items())):
            wall, cpu, _, rows = timed(fn, q)
            t[w].append((wall, cpu))
            got[w].append(np.asarray(rows))
    return t, got


def rows_of_table(label: str, n_allowed: int, t: dict, got: dict, truth: list[set[int]], k: int, base: str) -> list[str]:
    b = np.asarray(t[base])
    out = []
    for w in t:
        x = np.asarray(t[w])
        k_eff = min(k, n_allowed)
        rec = np.mean([len(set(g[g >= 0].tolist()) & tr) / k_eff for g, tr in zip(got[w], truth)])
        out.append(f"| {label} | {n_allowed:,} | {w} | {1e3 * np.median(x[:, 0]):.2f} | {1e3 * np.median(x[:, 1]):.2f} | "
                   f"{np.median(x[:, 0]) / np.median(b[:, 0]):.2f} / {np.median(x[:, 1]) / np.median(b[:, 1]):.2f} | {rec:.3f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=100, help="timed queries per selectivity")
    ap.add_argument("--recall-queries", type=int, default=50, help="of those, how many recall is measured on")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--selectivities", default="0.5,0.1,0.01,0.001")
    ap.add_argument("--work", type=Path, default=Path("/tmp/iir_bench_filtered"))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    import faiss

    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.filters import Filter, FilteredRows
    from interactive_ir.retrieval.retriever import Retriever

    faiss.omp_set_num_threads(1)
    print(f"load average at start: {loadavg()}")
    vec, ids = generate(a.work, a.n)
    out = a.work / f"idx_{a.n}"
    build_s = build(vec, ids, out)
    r = Retriever(load_index(out), make_embedder(f"fake:{DIM}"))
    p = r.index.params
    fx, _, _ = plain_faiss(out, vec, p, a.k)
    sp_of = selector_params(p, a.n, a.k)
    src = np.load(vec, mmap_mode="r")
    rng = np.random.default_rng(1)
    qs = np.asarray(src[rng.integers(a.n, size=a.queries)], np.float32)
    qs += 0.05 * rng.standard_normal(qs.shape, dtype=np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    nrec = min(a.recall_queries, a.queries)
    exact = exact_scores(vec, qs[:nrec])
    field = np.random.default_rng(7).random(a.n)  # the synthetic metadata field: uniform, independent of the vectors
    for a0 in range(0, a.n, 100_000):  # the fp16 file read once in order: in the page cache, as after a while of use
        np.asarray(r.index.image_vectors[a0 : a0 + 100_000]).max()
    print(f"\nN={a.n:,} {DIM}-d, ivf-pq nlist {p.nlist} PQ{p.pq_m}x{p.pq_bits} nprobe {p.nprobe}, top-{a.k}, "
          f"{a.queries} queries per filter (recall on {nrec}), 1 thread" + (f"; built in {build_s:.0f} s" if build_s else ""))
    print(f"\n## Filtered ivf-pq top-{a.k}: time per query and recall@{a.k} against exact kNN over the filtered subset")
    print("| selectivity | allowed rows | way | p50 ms wall | p50 ms CPU | ratio to faiss (wall / CPU) | recall@k |")
    print("|---|---|---|---|---|---|---|")
    truth = [top_k(s, None, a.k) for s in exact]
    t, got = run_ways(ways_for(r, fx, sp_of, None, a.k), qs)
    print("\n".join(rows_of_table("none", a.n, t, got, truth, a.k, "faiss, no filter")))
    for s in (float(x) for x in a.selectivities.split(",")):
        allow = FilteredRows(np.flatnonzero(field < s), (Filter("bucket", f"below {s}"),))  # as filter_rows gives
        if not len(allow):
            print(f"| {100 * s:g}% | 0 | (no row: use a larger --n) | | | | |")
            continue
        truth = [top_k(e, allow, a.k) for e in exact]
        t, got = run_ways(ways_for(r, fx, sp_of, allow, a.k), qs)
        print("\n".join(rows_of_table(f"{100 * s:g}%", len(allow), t, got, truth, a.k, "faiss, same selector")), flush=True)
    print(f"\nload average at end: {loadavg()}; process RSS {rss_mb():,.0f} MB")
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
