"""Search latency, memory and disk benchmark (issue 2, "Speed and memory").

For each size N it writes two synthetic indices through the real writer (`builder._write`): image
vectors only (512-wide faiss rows) and image + caption vectors (1024-wide rows, the fused ImageScope
search). Vectors are seeded random unit vectors, queries are random unit vectors (text-query
stand-ins, composed with tau=0.15 on the captioned index by `Retriever.text_query_row`).

Each index is then measured in a fresh child process, so RSS deltas are not blurred by the
generator's allocations:
- `faiss`: the raw `faiss_index.search` kernel (exact fp16 inner product, one query);
- `search_row`: the engine call the app makes (`Retriever.search_row`, typed hits included);
- `+excl50`: the same with 50 excluded ids (half of that query's exact top-100: images already shown);
- `numpy`: plain exact search, a float32 (N, D) matrix @ q then argpartition + sort of the top k
  (`numpy+excl50`: the excluded rows set to -inf first);
- recall@k of `search_row` against the numpy exact top-k (1.0 = the same set for every query);
- memory: VmRSS growth of the child while loading the index and running a first search, per image;
  the numpy baseline's float32 matrix is reported the same way; disk: the index folder's bytes per image.

Usage: python bench/bench_search.py [--sizes 10000,100000,1000000] [--queries 200] [--large-queries 40]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DIM = 512
TAU = 0.15
LATENCY_HEADER = "## Search latency"
MEMORY_HEADER = "## Memory and disk"


# --- memory ------------------------------------------------------------------------------------
def rss_bytes() -> int:
    """Resident set size of this process (psutil when installed, else /proc/self/status VmRSS)."""
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    return 0


# --- synthetic data ----------------------------------------------------------------------------
def unit_vectors(n: int, dim: int, seed: int, chunk: int = 1 << 16) -> np.ndarray:
    """(n, dim) float16 rows of seeded random unit vectors, generated in chunks."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), np.float16)
    for i in range(0, n, chunk):
        x = rng.standard_normal((min(chunk, n - i), dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        out[i : i + len(x)] = x
    return out


def write_index(out: Path, image_mat: np.ndarray, cap_mat: np.ndarray | None) -> float:
    """Write an index folder through the builder's own writer; returns seconds."""
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.index.builder import _write
    from interactive_ir.index.store import IndexRecord

    n = len(image_mat)
    records = [
        IndexRecord(f"img{i:07d}.jpg", [f"a synthetic photo number {i} of something"] if cap_mat is not None else [],
                    224, 224, 20_000, 1.7e9)
        for i in range(n)
    ]
    t0 = time.perf_counter()
    _write(out, out.parent / "images", FakeEmbedder(DIM, spec=f"fake:{DIM}"), records, image_mat, cap_mat, 0)
    return time.perf_counter() - t0


def dir_bytes(path: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in sorted(path.iterdir()) if f.is_file()}


# --- one measured index (child process) --------------------------------------------------------
def numpy_topk(matrix: np.ndarray, q: np.ndarray, k: int, ex_rows: np.ndarray | None = None) -> np.ndarray:
    """Plain exact search: scores of every row, top k by argpartition, sorted by score."""
    s = matrix @ q
    if ex_rows is not None and len(ex_rows):
        s[ex_rows] = -np.inf
    top = np.argpartition(-s, k - 1)[:k]
    return top[np.argsort(-s[top], kind="stable")]


def limit_threads(threads: int):
    """Cap BLAS and OpenMP pools (numpy's OpenBLAS, faiss's OpenMP + OpenBLAS, torch) at `threads`; 0 = leave."""
    if threads <= 0:
        return None
    import faiss

    faiss.omp_set_num_threads(threads)
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        pass
    try:
        from threadpoolctl import threadpool_limits

        return threadpool_limits(limits=threads)
    except ImportError:
        return None


def measure_cell(index_dir: Path, k: int, n_queries: int, n_exclude: int, seed: int, device: str,
                 threads: int) -> dict:
    import faiss  # noqa: F401 - imported before the baseline RSS reading

    _limits = limit_threads(threads)  # noqa: F841 - kept alive for the whole measurement

    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig

    gc.collect()
    rss0 = rss_bytes()
    t0 = time.perf_counter()
    index = load_index(index_dir, verify=True)  # with checksums, as the app loaded it before format 2
    load_s = time.perf_counter() - t0
    retriever = Retriever(index, FakeEmbedder(DIM, spec=index.embedder_spec), SearchConfig(k=k, device=device))
    rng = np.random.default_rng(seed)
    queries = rng.standard_normal((n_queries + 1, DIM), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    qrows = [retriever.text_query_row(q, TAU) for q in queries]
    retriever.search_row(qrows[0], k)  # warm-up: touches the faiss codes
    rss_index = rss_bytes() - rss0

    gc.collect()
    rss1 = rss_bytes()
    # read without mmap, so the RSS delta is the float32 matrix alone (not the fp16 file pages)
    parts = [np.load(index_dir / "image_emb.npy").astype(np.float32)]
    if index.has_captions:
        parts.append(np.load(index_dir / "caption_emb.npy").astype(np.float32))
    matrix = np.ascontiguousarray(np.concatenate(parts, axis=1)) if len(parts) > 1 else parts[0]
    del parts
    gc.collect()
    rss_numpy = rss_bytes() - rss1
    numpy_topk(matrix, qrows[0], k)  # warm-up

    times: dict[str, list[float]] = {n: [] for n in ("numpy", "numpy+excl", "faiss", "search_row", "search_row+excl")}
    recall, recall_ex, identical = [], [], 0

    def timed(name, fn, *a):
        t = time.perf_counter()
        out = fn(*a)
        times[name].append(time.perf_counter() - t)
        return out

    fi = index.faiss_index
    ids = index.ids
    for qrow in qrows[1:]:
        q2 = np.ascontiguousarray(qrow[None, :])
        exact = timed("numpy", numpy_topk, matrix, qrow, k)
        timed("faiss", fi.search, q2, k)
        hits = timed("search_row", retriever.search_row, qrow, k)
        ex_rows = np.sort(exact[::2][:n_exclude])
        exclude = [ids[r] for r in ex_rows]
        hits_ex = timed("search_row+excl", retriever.search_row, qrow, k, exclude)
        exact_ex = timed("numpy+excl", numpy_topk, matrix, qrow, k, ex_rows)
        got = {h.row for h in hits}
        recall.append(len(got & set(exact.tolist())) / len(exact))
        identical += [h.row for h in hits] == exact.tolist()
        got_ex = {h.row for h in hits_ex}
        if got_ex & set(ex_rows.tolist()):
            raise RuntimeError("search_row returned an excluded id")
        recall_ex.append(len(got_ex & set(exact_ex.tolist())) / len(exact_ex))
    n = len(index)
    return {
        "n": n,
        "width": int(fi.d),
        "threads": threads or int(faiss.omp_get_max_threads()),
        "loadavg": os.getloadavg()[0],
        "queries": n_queries,
        "load_s": load_s,
        "ms": {name: [float(np.percentile(v, 50)) * 1e3, float(np.percentile(v, 95)) * 1e3] for name, v in times.items()},
        "recall": float(np.mean(recall)),
        "recall_excl": float(np.mean(recall_ex)),
        "same_order": identical / n_queries,
        "rss_index_per_img": rss_index / n,
        "rss_numpy_per_img": rss_numpy / n,
        "disk": dir_bytes(index_dir),
    }


# --- driver ------------------------------------------------------------------------------------
def queries_for(size: int, args) -> int:
    return args.queries if size < args.large_from else min(args.queries, args.large_queries)


def run_cell(index_dir: Path, args, n_queries: int, threads: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_cell", str(index_dir), "--k", str(args.k),
           "--queries", str(n_queries), "--exclude", str(args.exclude), "--seed", str(args.seed),
           "--device", args.device, "--threads", str(threads)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def environment() -> str:
    import faiss

    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(f"{i['internal_api']} x{i['num_threads']}" for i in threadpool_info() if i["user_api"] == "blas")
    except ImportError:
        blas = "unknown BLAS"
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; python {platform.python_version()}, "
            f"numpy {np.__version__} ({blas}), faiss {faiss.__version__} (omp threads {faiss.omp_get_max_threads()})")


def print_tables(results: list[dict], args) -> None:
    print(f"{LATENCY_HEADER} (ms, p50 / p95), k={args.k}, one query at a time, {args.exclude} excluded ids in +excl")
    print("| N | row width | threads | queries | numpy exact | numpy+excl | faiss fp16 | search_row | search_row+excl "
          "| recall@k vs exact | recall@k +excl | same order | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ms = r["ms"]
        cells = " | ".join(f"{ms[n][0]:.2f} / {ms[n][1]:.2f}"
                           for n in ("numpy", "numpy+excl", "faiss", "search_row", "search_row+excl"))
        print(f"| {r['n']:,} | {r['width']} | {r['threads']} | {r['queries']} | {cells} | {r['recall']:.4f} "
              f"| {r['recall_excl']:.4f} | {r['same_order']:.2f} | {r['loadavg']:.1f} |")
    print()
    print(f"{MEMORY_HEADER} (bytes per image)")
    print("| N | row width | RAM: loaded index (+first search) | RAM: numpy float32 matrix | disk: total "
          "| disk: *_emb.npy | disk: faiss.index | disk: metadata.sqlite | load s (with checksums) | write s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    seen = set()
    for r in results:
        if (r["n"], r["width"]) in seen:  # one row per index (memory does not depend on the thread cap)
            continue
        seen.add((r["n"], r["width"]))
        d, n = r["disk"], r["n"]
        npy = sum(v for k_, v in d.items() if k_.endswith(".npy"))
        print(f"| {n:,} | {r['width']} | {r['rss_index_per_img']:,.0f} | {r['rss_numpy_per_img']:,.0f} "
              f"| {sum(d.values()) / n:,.0f} | {npy / n:,.0f} | {d.get('faiss.index', 0) / n:,.0f} "
              f"| {d.get('metadata.sqlite', 0) / n:,.0f} | {r['load_s']:.2f} | {r['write_s']:.2f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated index sizes")
    ap.add_argument("--queries", type=int, default=200, help="timed queries per index")
    ap.add_argument("--large-queries", type=int, default=40, help="timed queries per index at sizes >= --large-from")
    ap.add_argument("--large-from", type=int, default=500_000, help="size from which --large-queries applies")
    ap.add_argument("--k", type=int, default=100, help="results per query")
    ap.add_argument("--exclude", type=int, default=50, help="excluded ids in the +excl runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="faiss", help="SearchConfig.device for search_row (faiss, torch, auto)")
    ap.add_argument("--modes", default="image,image+caption",
                    help="which indices: image (512-wide rows), image+caption (1024-wide rows)")
    ap.add_argument("--threads", default="1,0",
                    help="comma list of thread caps for BLAS/OpenMP, one measurement each (0 = library default)")
    ap.add_argument("--tmp", default=None, help="folder for the temporary indices (default: system temp)")
    ap.add_argument("--_cell", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._cell:
        print(json.dumps(measure_cell(Path(args._cell), args.k, args.queries, args.exclude, args.seed, args.device,
                                      int(args.threads))))
        return 0

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in ("image", "image+caption") for m in modes):
        ap.error("--modes takes image and/or image+caption")
    if min(sizes) <= args.k + args.exclude:
        ap.error(f"sizes must exceed k + exclude = {args.k + args.exclude}")
    thread_caps = [int(t) for t in args.threads.split(",") if t.strip()]
    print(environment())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other processes share the cores)")
    print(f"command: python bench/bench_search.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    t_all = time.perf_counter()
    results = []
    for size in sizes:
        work = Path(tempfile.mkdtemp(prefix="iir-bench-search-", dir=args.tmp))
        try:
            t = time.perf_counter()
            image_mat = unit_vectors(size, DIM, args.seed + 1)
            cap_mat = unit_vectors(size, DIM, args.seed + 2) if "image+caption" in modes else None
            gen_s = time.perf_counter() - t
            dirs = []
            for mode in modes:
                out = work / mode.replace("+", "_")
                write_s = write_index(out, image_mat, cap_mat if mode == "image+caption" else None)
                dirs.append((out, write_s))
            del image_mat, cap_mat
            gc.collect()
            for out, write_s in dirs:
                for threads in thread_caps:
                    r = run_cell(out, args, queries_for(size, args), threads)
                    r["write_s"] = write_s
                    results.append(r)
                shutil.rmtree(out, ignore_errors=True)
            print(f"# N={size:,}: generated in {gen_s:.1f}s, measured; {time.perf_counter() - t_all:.0f}s so far",
                  file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print_tables(results, args)
    print(f"\ntotal {time.perf_counter() - t_all:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
