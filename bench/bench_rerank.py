"""ivf-pq at the library's speed (issue 26, deliverable 10): the project's ivf-pq search against plain faiss.

One process, one collection (clustered synthetic unit 512-d vectors, as bench_scale.py), one ivf-pq index
built by the project (`index --vectors` path: trained, tuned, SQ8 re-rank codes written), searched three ways,
query by query in turn so that the machine's load falls on all alike:

- `faiss IndexRefine`: plain faiss, the same trained IndexIVFPQ read into RAM, wrapped in IndexRefine with
  fp16 refine codes in RAM (IndexScalarQuantizer QT_fp16) and k_factor = the index's candidates / k, the
  same nprobe: the library's own speed with the same parameters;
- `project, default`: `Retriever.search_rows` as the app runs it (memory-mapped ivf-pq, every candidate
  scored exactly from the memory-mapped fp16 file by faiss's fp16 kernel);
- `project, IIR_RERANK_CODES=1`: the candidates scored from the SQ8 codes in RAM, only the shortlist read
  from the fp16 file and scored exactly;
- `old re-rank`: the re-rank before issue 26 (every candidate's fp16 row converted by numpy, then a matmul);
- `old code`: the same with faiss's default of 32 prefetch threads started by every search of the
  memory-mapped lists, as the kind ran before issue 26.

Prints time per query (p50, mean; wall and CPU), the ratio to faiss, recall@k against exact kNN, the RAM
each holds for re-ranking, and `uptime`'s load average.

Usage: python bench/bench_rerank.py [--n 1000000] [--queries 300] [--k 100] [--work /tmp/iir_bench_rerank]
       [--keep] (the vectors and the index stay in --work and are reused by the next run)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_scale import DIM, generate, loadavg, rss_mb  # noqa: E402


def build(vec: Path, ids: Path, out: Path) -> float:
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.precomputed import VectorsConfig, build_from_vectors

    if (out / "manifest.json").exists():
        return 0.0
    t = time.perf_counter()
    build_from_vectors(VectorsConfig(vec, ids, out, kind="ivf-pq"), make_embedder(f"fake:{DIM}"))
    return time.perf_counter() - t


def plain_faiss(out: Path, vec: Path, params, k: int):
    """IndexRefine(the same IndexIVFPQ in RAM, fp16 refine codes in RAM) and its search parameters."""
    import faiss

    from interactive_ir.index import kinds as K

    base = faiss.read_index(str(out / "faiss.index"))
    refine = faiss.IndexScalarQuantizer(DIM, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    src = np.load(vec, mmap_mode="r")
    for a in range(0, len(src), 100_000):
        refine.add(np.asarray(src[a : a + 100_000], np.float32))
    index = faiss.IndexRefine(base, refine)
    index.own_fields = True
    base.this.disown()
    refine.this.disown()
    factor = K.candidates(params, k) / k
    sp = faiss.IndexRefineSearchParameters(k_factor=factor, base_index_params=faiss.SearchParametersIVF(nprobe=params.nprobe))
    return index, sp, refine.sa_code_size() * refine.ntotal


def exact_knn(vec: Path, queries: np.ndarray, k: int) -> np.ndarray:
    src = np.load(vec, mmap_mode="r")
    best_s = np.full((len(queries), 0), -np.inf, np.float32)
    best_i = np.zeros((len(queries), 0), np.int64)
    for a in range(0, len(src), 200_000):
        s = queries @ np.asarray(src[a : a + 200_000], np.float32).T
        s_all = np.concatenate([best_s, s], axis=1)
        i_all = np.concatenate([best_i, np.broadcast_to(np.arange(a, a + s.shape[1]), s.shape)], axis=1)
        top = np.argpartition(-s_all, k - 1, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(s_all, top, 1), np.take_along_axis(i_all, top, 1)
    return best_i


def timed(fn, q):
    import resource

    f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_majflt
    w, c = time.perf_counter(), time.thread_time()
    rows = fn(q)
    wall, cpu = time.perf_counter() - w, time.thread_time() - c
    return wall, cpu, resource.getrusage(resource.RUSAGE_THREAD).ru_majflt - f0, rows


def evict(*arrays) -> None:
    """Drop memory-mapped fp16 files from this process's mappings and the page cache: the next read of any
    row is a disk read (a collection whose vectors do not fit in RAM). Only these files are touched."""
    import mmap

    for arr in arrays:
        m = getattr(arr, "_mmap", None)
        if m is not None:
            m.madvise(mmap.MADV_DONTNEED)
    for arr in arrays:
        fn = getattr(arr, "filename", None)
        if fn:
            fd = os.open(fn, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def run(ways: dict, qs: np.ndarray, before=None) -> tuple[dict, dict]:
    """Every way on every query, in turn (who goes first alternates); `before()` runs before each timed call."""
    t = {w: [] for w in ways}
    got = {w: [] for w in ways}
    for i, q in enumerate(qs):
        for w, fn in (ways.items() if i % 2 else reversed(ways.items())):
            if before is not None:
                before()
            wall, cpu, faults, rows = timed(fn, q)
            t[w].append((wall, cpu, faults))
            got[w].append(rows)
    return t, got


def table(t: dict, got: dict, truth: np.ndarray, k: int, ram: list[str]) -> None:
    base = np.asarray(t[next(iter(t))])
    print("| way | p50 ms wall | mean ms wall | p50 ms CPU | ratio to faiss (p50 wall / mean wall / p50 CPU) | "
          "recall@k | RAM held to re-rank | disk reads (major faults) a query |")
    print("|---|---|---|---|---|---|---|---|")
    for j, w in enumerate(t):
        x = np.asarray(t[w])
        rec = np.mean([len(set(g.tolist()) & set(tr.tolist())) / k for g, tr in zip(got[w], truth)])
        rat = (np.median(x[:, 0]) / np.median(base[:, 0]), x[:, 0].mean() / base[:, 0].mean(),
               np.median(x[:, 1]) / np.median(base[:, 1]))
        print(f"| {w} | {1e3 * np.median(x[:, 0]):.2f} | {1e3 * x[:, 0].mean():.2f} | {1e3 * np.median(x[:, 1]):.2f} | "
              f"{rat[0]:.2f} / {rat[1]:.2f} / {rat[2]:.2f} | {rec:.3f} | {ram[j]} | {x[:, 2].mean():.1f} |")


def setup(a):
    import faiss

    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    vec, ids = generate(a.work, a.n)
    out = a.work / f"idx_{a.n}"
    build_s = build(vec, ids, out)
    if a.nprobe:
        os.environ["IIR_NPROBE"] = str(a.nprobe)
    os.environ["IIR_RERANK_CODES"] = "1"
    new = Retriever(load_index(out), make_embedder(f"fake:{DIM}"))
    os.environ["IIR_RERANK_CODES"] = "0"  # the default
    old = Retriever(load_index(out), make_embedder(f"fake:{DIM}"))
    r0 = rss_mb()
    _ = new.index.rerank_codes.index
    codes_mb = rss_mb() - r0
    p = dataclasses.replace(new.index.params, nprobe=a.nprobe or new.index.params.nprobe)
    r0 = rss_mb()
    fx, sp, refine_bytes = plain_faiss(out, vec, p, a.k)
    ram = [f"{refine_bytes / 2**20:,.0f} MB fp16 codes (RSS +{rss_mb() - r0:,.0f} MB with the IVF in RAM)",
           f"{new.index.rerank_codes.nbytes / 2**20:,.0f} MB SQ8 codes (RSS +{codes_mb:,.0f} MB)",
           "0 (fp16 file mapped)", "0 (fp16 file mapped)", "0 (fp16 file mapped)"]
    prior = Retriever(load_index(out), make_embedder(f"fake:{DIM}"))
    faiss.downcast_InvertedLists(prior.index.faiss_index.invlists).prefetch_nthread = 32  # faiss's default
    none = np.zeros(0, np.int64)

    def old_code(q, r=old):  # search_rows's re-rank before issue 26: numpy float16 -> float32, then a matmul
        _, rows = r.backends.faiss_search(q[None], a.k, none)
        exact = r.index.row_vectors(rows) @ q
        return rows[np.argsort(-exact, kind="stable")[: a.k]]

    ways = {"faiss IndexRefine (fp16 refine in RAM)": lambda q: fx.search(q[None], a.k, params=sp)[1][0],
            "project, IIR_RERANK_CODES=1 (SQ8 in RAM, fp16 shortlist)": lambda q: new.search_rows(q, a.k)[1],
            "project, default (all candidates, faiss fp16)": lambda q: old.search_rows(q, a.k)[1],
            "old re-rank (all candidates, numpy fp16)": old_code,
            "old code (numpy re-rank, faiss's 32 prefetch threads a search)": lambda q: old_code(q, prior)}
    print(f"\nN={a.n:,} {DIM}-d, ivf-pq nlist {p.nlist} PQ{p.pq_m}x{p.pq_bits} nprobe {p.nprobe}, candidates "
          f"{max(p.rerank_factor * a.k, p.rerank_min)} for a top-{a.k}, 1 thread" + (f"; built in {build_s:.0f} s" if build_s else ""))
    return vec, ways, ram, (new.index.image_vectors, old.index.image_vectors, prior.index.image_vectors)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--cold-queries", type=int, default=60, help="queries with the fp16 file evicted before each (0: none)")
    ap.add_argument("--recall-queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--nprobe", type=int, default=0, help="lists visited (0: the index's tuned nprobe)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/iir_bench_rerank"))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    import faiss

    faiss.omp_set_num_threads(1)
    print(f"load average at start: {loadavg()}")
    vec, ways, ram, mapped = setup(a)
    src = np.load(vec, mmap_mode="r")
    rng = np.random.default_rng(1)
    qs = np.asarray(src[rng.integers(a.n, size=a.queries)], np.float32)
    qs += 0.05 * rng.standard_normal(qs.shape, dtype=np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    truth = exact_knn(vec, qs[: max(a.recall_queries, min(a.cold_queries, a.queries))], a.k)
    for arr in mapped:  # read once in order: the fp16 file in the page cache and mapped, as after a while of use
        for a0 in range(0, len(arr), 100_000):
            np.asarray(arr[a0 : a0 + 100_000]).max()
    print(f"\nWarm (the fp16 file in the page cache): {a.queries} queries, recall on {a.recall_queries}")
    table(*run(ways, qs), truth[: a.recall_queries], a.k, ram)
    if a.cold_queries:
        print(f"\nCold (the fp16 file evicted before each query: every row read is a disk read): {a.cold_queries} queries")
        table(*run(ways, qs[: a.cold_queries], before=lambda: evict(*mapped)), truth[: a.cold_queries], a.k, ram)
    print(f"\nload average at end: {loadavg()}; process RSS {rss_mb():,.0f} MB")
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
