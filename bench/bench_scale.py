"""Scale benchmark (issue 16): index kinds on clustered synthetic 512-d vectors at 1M+ images.

For each size and kind: build time and peak RSS (the build runs in a child process), open time and
RSS, p50/p95 of a top-100 with 50 exclusions, recall@100 against exact kNN on a sample of queries,
and the per-turn engine cost at that size (feedback turn, PlugIR describe turn with the fake LLM;
models excluded). The vectors are a Gaussian mixture (not uniform noise), generated to disk in chunks
and indexed through `index --vectors` (the bring-your-own-embeddings path), so no step holds the
collection in RAM. Baselines in the same run: the exact kind at the same size; `uptime` load average.

The benchmark can fail: recall is measured against exact kNN, so a bad approximate index shows.

Kind `milvus-lite`: the exact index exported into Milvus Lite (`index export`), searched through it.

Usage: python bench/bench_scale.py [--sizes 1000000] [--kinds exact,ivf-pq,hnsw,milvus-lite] [--hnsw-max 200000]
       [--queries 200] [--recall-queries 30] [--work /tmp/iir_bench_scale] [--keep] [--build-only | --reuse]
A 10M run: `--sizes 10000000 --kinds exact,ivf-pq --build-only` (long; any load), then the same with `--reuse`
on a quiet machine (the searches' times).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DIM = 512


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def generate(folder: Path, n: int, clusters: int = 0, seed: int = 0, chunk: int = 100_000) -> tuple[Path, Path]:
    """A Gaussian mixture of unit 512-d vectors (fp16 .npy) and its ids file, written in chunks."""
    vec, ids = folder / f"vectors_{n}.npy", folder / f"ids_{n}.txt"
    clusters = clusters or max(10, n // 1000)  # about 1,000 images per cluster
    if vec.exists() and ids.exists():
        return vec, ids
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, DIM)).astype(np.float32)
    scales = rng.uniform(0.15, 0.45, clusters).astype(np.float32)  # noise norm 0.15-0.45x the centre's
    out = np.lib.format.open_memmap(str(vec) + ".tmp.npy", mode="w+", dtype=np.float16, shape=(n, DIM))
    with open(str(ids) + ".tmp", "w") as f:
        for a in range(0, n, chunk):
            b = min(n, a + chunk)
            c = rng.integers(0, clusters, b - a)
            x = centers[c] + scales[c, None] * rng.standard_normal((b - a, DIM), dtype=np.float32)
            out[a:b] = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)
            f.write("".join(f"img/{i:09d}.jpg\n" for i in range(a, b)))
    out.flush()
    del out
    os.replace(str(vec) + ".tmp.npy", vec)
    os.replace(str(ids) + ".tmp", ids)
    return vec, ids


def child_build(vec: str, ids: str, out: str, kind: str) -> dict:
    """Build (milvus-lite: an exact index, then exported into a Milvus Lite file beside it)."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.precomputed import VectorsConfig, build_from_vectors

    t = time.perf_counter()
    build_from_vectors(VectorsConfig(Path(vec), Path(ids), Path(out), kind="exact" if kind == "milvus-lite" else kind),
                       make_embedder(f"fake:{DIM}"))
    extra = {}
    if kind == "milvus-lite":
        from interactive_ir.index import load_index
        from interactive_ir.index.vector_store import export_index

        t2 = time.perf_counter()
        export_index(load_index(Path(out)), milvus_spec(out))
        extra["export_s"] = time.perf_counter() - t2
    return {"build_s": time.perf_counter() - t, **extra,
            "build_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def milvus_spec(out: str) -> str:
    return f"milvus-lite:{out}.milvus.db"


def child_search(out: str, vec: str, queries: int, recall_queries: int, store: str = "") -> dict:
    import faiss

    faiss.omp_set_num_threads(1)
    r0 = rss_mb()  # numpy and faiss imported: the baseline
    t = time.perf_counter()
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    import_s = time.perf_counter() - t
    t = time.perf_counter()
    index = load_index(Path(out), store=store)
    r = Retriever(index, make_embedder(f"fake:{DIM}"))
    open_s = time.perf_counter() - t
    open_mb = rss_mb() - r0
    src = np.load(vec, mmap_mode="r")
    rng = np.random.default_rng(1)
    n = len(index)
    qs = []
    for _ in range(queries):
        q = np.asarray(src[rng.integers(n)], np.float32) + 0.05 * rng.standard_normal(DIM).astype(np.float32)
        qs.append(q / np.linalg.norm(q))
    times, excl_rows = [], []
    for q in qs:
        first = r.search_rows(q, 50)[1]  # the 50 already shown
        ex = [index.ids[int(i)] for i in first]
        t = time.perf_counter()
        scores, rows = r.search_rows(q, 100, exclude=ex)
        times.append(time.perf_counter() - t)
        excl_rows.append(first)
    search_mb = rss_mb() - r0
    recalls, exact_times = [], []
    for q, first in zip(qs[:recall_queries], excl_rows):
        t = time.perf_counter()
        s = exact_scores(index, q)  # exact, chunked over the memory-mapped fp16 vectors
        exact_times.append(time.perf_counter() - t)
        s[first] = -np.inf
        want = set(np.argpartition(-s, 100)[:100].tolist())
        got = set(r.search_rows(q, 100, exclude_rows=first)[1].tolist())
        recalls.append(len(want & got) / 100)
    turn = engine_turns(r, 5)
    p, forced = index.params, os.environ.get("IIR_NPROBE")
    searched = {"ivf-pq": f"nprobe {forced or p.nprobe}{' (IIR_NPROBE)' if forced else ''}, re-rank {p.rerank_factor}x",
                "hnsw": f"efSearch {os.environ.get('IIR_EF_SEARCH') or p.ef_search}"}.get(p.kind, "-")
    tuning = index.manifest.get("tuning") or {}
    return {"params": searched, "tune_s": tuning.get("seconds", 0.0), "tune_recall": tuning.get("recall"),
            "import_s": import_s, "open_s": open_s, "open_mb": open_mb, "after_search_mb": search_mb,
            "p50_ms": 1000 * float(np.percentile(times, 50)), "p95_ms": 1000 * float(np.percentile(times, 95)),
            "recall": float(np.mean(recalls)), "device": r.device,
            # the same run's baseline: a brute-force scan of the fp16 vectors with numpy (no index)
            "scan_p50_ms": 1000 * float(np.percentile(exact_times, 50)) if exact_times else float("nan"), **turn}


def exact_scores(index, q: np.ndarray) -> np.ndarray:
    v = index.image_vectors
    return np.concatenate([np.asarray(v[a : a + 65_536], np.float32) @ q for a in range(0, len(v), 65_536)])


def engine_turns(r, sessions: int) -> dict:
    """Engine time of a feedback turn and a PlugIR describe turn (fake LLM, fake embedder: no model time)."""
    from bench.bench_turn import fake_responder
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine

    eng = build_engine(r, llm=FakeLLM(responder=fake_responder), config=EngineConfig(k=10))
    fb, pl, fb_cpu, pl_cpu = [], [], [], []
    eng.start(eng.new_session(), "warm-up")  # first-call imports (faiss KMeans, threadpoolctl) are not a turn's cost
    for i in range(sessions):
        s = eng.new_session()
        t0 = eng.search_text(s, f"a red dog running on the beach {i}")
        t, c = time.perf_counter(), time.process_time()
        eng.feedback(s, [t0.shown[0]], [t0.shown[1]], method="rocchio")
        fb.append(time.perf_counter() - t)
        fb_cpu.append(time.process_time() - c)
        s2 = eng.new_session()
        t, c = time.perf_counter(), time.process_time()
        turn = eng.start(s2, f"a brown horse in a field {i}")
        pl.append(time.perf_counter() - t - turn.timings.get("llm", 0.0))
        pl_cpu.append(time.process_time() - c)
    # CPU seconds of the process: what the turn costs without the other jobs on the machine (wall time too)
    return {"feedback_ms": 1000 * float(np.median(fb)), "plugir_ms": 1000 * float(np.median(pl)),
            "feedback_cpu_ms": 1000 * float(np.median(fb_cpu)), "plugir_cpu_ms": 1000 * float(np.median(pl_cpu))}


def run_child(args: list[str]) -> dict:
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000")
    ap.add_argument("--kinds", default="exact,ivf-pq,hnsw")
    ap.add_argument("--hnsw-max", type=int, default=200_000, help="largest size hnsw is built at (slow to build)")
    ap.add_argument("--milvus-max", type=int, default=100_000, help="largest size Milvus Lite is measured at")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--recall-queries", type=int, default=30)
    ap.add_argument("--work", type=Path, default=Path("/tmp/iir_bench_scale"))
    ap.add_argument("--keep", action="store_true", help="keep the generated vectors and indices")
    ap.add_argument("--reuse", action="store_true", help="search indices a previous --keep run built (its build "
                    "figures are reported again): build on a busy machine, time the searches on a quiet one")
    ap.add_argument("--build-only", action="store_true", help="build (and keep) the indices, skip the searches")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        fn = {"build": child_build, "search": child_search}[a.child[0]]
        rest = [int(x) if x.isdigit() else x for x in a.child[1:]]
        print(json.dumps(fn(*rest)))
        return 0
    rows = []
    print(f"load average at start: {loadavg()}; {os.cpu_count()} CPUs")
    for n in [int(s) for s in a.sizes.split(",")]:
        t = time.perf_counter()
        vec, ids = generate(a.work, n)
        print(f"generated {n:,} clustered vectors in {time.perf_counter() - t:.1f} s", flush=True)
        for kind in a.kinds.split(","):
            cap = {"hnsw": a.hnsw_max, "milvus-lite": a.milvus_max}.get(kind, n)
            if n > cap:
                n_k = cap
                vec_k, ids_k = generate(a.work, n_k)
            else:
                n_k, vec_k, ids_k = n, vec, ids
            out = a.work / f"idx_{kind}_{n_k}"
            built = Path(str(out) + ".build.json")  # the build's figures, kept for --reuse
            if a.reuse and built.exists() and (out / "manifest.json").exists():
                b = json.loads(built.read_text())
                print(f"reusing {out} (built in {b['build_s']:.0f} s)", flush=True)
            else:
                shutil.rmtree(out, ignore_errors=True)
                b = run_child(["--child", "build", str(vec_k), str(ids_k), str(out), kind])
                built.write_text(json.dumps(b))
            if a.build_only:
                print(json.dumps({"n": n_k, "kind": kind, **b, "load": loadavg()}), flush=True)
                continue
            store = [milvus_spec(str(out))] if kind == "milvus-lite" else []
            s = run_child(["--child", "search", str(out), str(vec_k), str(a.queries), str(a.recall_queries), *store])
            disk = sum(f.stat().st_size for f in out.iterdir()) / 2**20
            if kind == "milvus-lite":
                disk = sum(f.stat().st_size for f in Path(str(out) + ".milvus.db").rglob("*") if f.is_file()) / 2**20
            row = {"n": n_k, "kind": kind, **b, **s, "disk_mb": disk, "load": loadavg()}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not a.keep:
                built.unlink(missing_ok=True)
                shutil.rmtree(out, ignore_errors=True)
                shutil.rmtree(str(out) + ".milvus.db", ignore_errors=True)
                Path(str(out) + ".milvus.db").unlink(missing_ok=True)
    print()
    print("| N | kind | search params | build s (of which tuning) | build peak RSS MB | open s | open RSS MB | RSS after searches MB | top-100 p50 / p95 ms "
          "(50 excluded) | recall@100 | feedback turn ms wall / CPU | PlugIR turn ms wall / CPU | disk MB | device | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {r['kind']} | {r.get('params', '-')} | {r['build_s']:.1f} ({r.get('tune_s', 0):.1f}) "
              f"| {r['build_peak_mb']:,.0f} | {r['open_s']:.3f} "
              f"| {r['open_mb']:,.0f} | {r['after_search_mb']:,.0f} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} "
              f"| {r['recall']:.3f} | {r['feedback_ms']:.0f} / {r.get('feedback_cpu_ms', 0):.0f} "
              f"| {r['plugir_ms']:.0f} / {r.get('plugir_cpu_ms', 0):.0f} | {r['disk_mb']:,.0f} "
              f"| {r['device']} | {r['load']} |")
    print("\nBaseline in the same processes: a brute-force numpy scan of the fp16 vectors, p50 ms per query: "
          + ", ".join(f"{r['n']:,} {r['kind']}: {r['scan_p50_ms']:.0f}" for r in rows))
    if not (a.keep or a.build_only):
        shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
