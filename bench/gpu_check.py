"""The GPU paths on a real GPU (issue 30): run it on a lent GPU machine, under 30 minutes on one GPU.

    python bench/gpu_check.py                      # 1M and 3M rows, every check; prints a table
    python bench/gpu_check.py --sizes 1000000      # fewer sizes
    python bench/gpu_check.py --dry-run            # CPU, 3,000 rows, the fakes of tests/fakes stand in for the GPU

Checks, each printed as one row (name, result, figures):
1. exact search on the torch matrix and ivf-pq on a faiss GPU copy at each size: p50 latency, peak GPU memory;
2. the out-of-memory fallback: a device too small for the matrix logs once and searches on the CPU, and a
   search that finds the GPU full after the upload is answered on the CPU;
3. concurrency: 8 threads on one faiss GPU copy, no error;
4. fp32-consistent ranks: the torch search's rows and scores against faiss on the CPU;
5. open_clip and a tiny LLM (transformers:smollm2) on CUDA in half precision: dtype, device, seconds per call;
   the index build's batch and decoding threads sized from open_clip's device;
6. the cancel path: a generation cancelled after 0.5 s stops within a second.
It exits 1 when a check fails. With --dry-run nothing touches CUDA: it shows the script starts and runs.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
DIM = 512


def write(folder: Path, kind: str, n: int, seed: int = 0):
    """An index of `n` clustered unit rows (DIM wide, no captions) built without images."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.metadata import IndexRecord
    from interactive_ir.index.writer import IndexWriter

    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((256, DIM)).astype(np.float32)
    w = IndexWriter(folder, DIM, caption_vectors=False)
    for a in range(0, n, 100_000):
        b = min(n, a + 100_000)
        x = centers[rng.integers(0, 256, b - a)] + 0.7 * rng.standard_normal((b - a, DIM)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        w.add([IndexRecord(f"r{i}", []) for i in range(a, b)], x.astype(np.float16), None)
    w.finish(kind, {"embedder": f"fake:{DIM}", "has_vision": True, "image_root": "."})
    return load_index(folder), make_embedder(f"fake:{DIM}")


def hardware(dry: bool, small: bool = False):
    from interactive_ir.retrieval.search_device import Hardware, detect_hardware

    if not dry:
        return detect_hardware()
    from fakes.cuda import FakeCudaDevice
    from fakes.faiss_gpu import FakeFaissGpu

    return Hardware(True, 1, FakeFaissGpu(), FakeCudaDevice(1000 if small else 1 << 34))


def peak_gib(dry: bool) -> float:
    if dry:
        return 0.0
    import torch

    return torch.cuda.max_memory_allocated() / 2**30


def timed(r, qs, k: int) -> float:
    times = []
    for q in qs:
        t = time.perf_counter()
        r.search_rows(q, k)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def check_search(rows: list, tmp: Path, n: int, dry: bool) -> None:
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig

    qs = np.random.default_rng(1).standard_normal((50, DIM)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    for kind, want in (("exact", "torch"), ("ivf-pq", "faiss-gpu")):
        index, emb = write(tmp / f"{kind}-{n}", kind, n)
        t = time.perf_counter()
        r = Retriever(index, emb, hardware=hardware(dry)).warm()
        warm_s = time.perf_counter() - t
        cpu = Retriever(index, emb, SearchConfig(device="faiss"))
        ms, cpu_ms = timed(r, qs, 100), timed(cpu, qs, 100)
        rows.append((f"{kind} {n:,}", r.device == want, f"device {r.device}, warm {warm_s:.1f} s, p50 {ms:.2f} ms "
                     f"(CPU {cpu_ms:.2f} ms), peak {peak_gib(dry):.2f} GiB"))
        if kind == "exact":
            same = all(r.search_rows(q, 100)[1].tolist() == cpu.search_rows(q, 100)[1].tolist() for q in qs)
            ranks = all(r.rank_of(q, index.ids[7]) == cpu.rank_of(q, index.ids[7]) for q in qs[:10])
            rows.append((f"fp32 ranks {n:,}", same and ranks, "top-100 rows and ranks equal the CPU's"))
        else:
            errors = []

            def worker(seed, r=r, errors=errors):  # this pass's retriever and list (the threads end within it)
                try:
                    for q in np.random.default_rng(seed).permutation(qs)[:20]:
                        r.search_rows(q, 100)
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))

            threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
            [th.start() for th in threads]
            [th.join() for th in threads]
            rows.append((f"concurrency {n:,}", not errors, f"8 threads x 20 searches, {len(errors)} errors"))


def check_oom(rows: list, tmp: Path, dry: bool) -> None:
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig
    from interactive_ir.retrieval.search_device import CudaDevice, Hardware

    index, emb = write(tmp / "oom", "exact", 20_000)
    if dry:
        hw = hardware(True, small=True)
    else:
        import torch

        torch.cuda.empty_cache()
        free = torch.cuda.mem_get_info()[0]
        hog = torch.empty(max(0, free - (8 << 20)), dtype=torch.uint8, device="cuda")  # leave 8 MiB free
        hw = Hardware(True, 0, cuda=CudaDevice(torch))
    r = Retriever(index, emb, hardware=hw).warm()
    q = index.row_vectors([3])[0]
    ok = r.backends.torch.failed != "" and r.search_rows(q, 10)[1].tolist() == Retriever(
        index, emb, SearchConfig(device="faiss")).search_rows(q, 10)[1].tolist()
    rows.append(("out-of-memory fallback", ok, r.backends.torch.failed[:90]))
    if not dry:
        del hog


def check_oom_in_search(rows: list, tmp: Path, dry: bool) -> None:
    """The matrix fits; then the GPU fills up (another process) and a search's scores no longer do."""
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig
    from interactive_ir.retrieval.search_device import CudaDevice, Hardware

    index, emb = write(tmp / "oom-search", "exact", 20_000 if dry else 200_000)
    if dry:
        from fakes.cuda import FakeCudaDevice

        cuda = FakeCudaDevice(len(index) * DIM * 2 + 64, reported_free=1 << 34)
    else:
        import torch

        cuda = CudaDevice(torch)
    r = Retriever(index, emb, hardware=Hardware(True, 0, cuda=cuda)).warm()
    uploaded = r.backends.torch.failed == ""
    hog = None
    if not dry:
        import torch

        torch.cuda.empty_cache()
        hog = torch.empty(max(0, torch.cuda.mem_get_info()[0] - (256 << 10)), dtype=torch.uint8, device="cuda")
    q = index.row_vectors([3])[0]
    cpu = Retriever(index, emb, SearchConfig(device="faiss"))
    same = r.search_rows(q, 10)[1].tolist() == cpu.search_rows(q, 10)[1].tolist()
    rows.append(("out-of-memory in search", uploaded and same and "in a search" in r.backends.torch.failed,
                 r.backends.torch.failed[:90]))
    del hog


def check_models(rows: list, dry: bool) -> None:
    from interactive_ir.backends import make_embedder, make_llm
    from interactive_ir.backends.cancel import CancelToken
    from interactive_ir.errors import Cancelled

    emb = make_embedder("open_clip:ViT-B-32:none" if dry else "open_clip:ViT-B-32:laion2b_s34b_b79k")
    t = time.perf_counter()
    emb.embed_texts(["a dog on a beach"] * 32)
    rows.append(("open_clip", dry or str(emb.device).startswith("cuda"),
                 f"{emb.device}, 32 texts in {time.perf_counter() - t:.2f} s"))
    from interactive_ir.index.build_sizes import sizes_for

    batch, workers = sizes_for(emb)
    rows.append(("build sizes", dry or batch > 32, f"{emb.device}: {batch} images per pass, {workers} threads"))
    llm = make_llm("transformers:smollm2")
    model = getattr(getattr(llm, "loaded", None), "model", None)
    dtype = str(getattr(model, "dtype", "?"))
    t = time.perf_counter()
    llm.generate(["Ask one short question about a photo."], max_tokens=24)
    rows.append(("tiny LLM", dry or ("16" in dtype), f"{dtype}, 24 tokens in {time.perf_counter() - t:.2f} s"))
    token = CancelToken()
    threading.Timer(0.5, token.cancel).start()
    t = time.perf_counter()
    try:
        llm.generate(["Write a very long story about a dog."], max_tokens=2000, cancel=token)
        stopped = False
    except Cancelled:
        stopped = True
    took = time.perf_counter() - t
    rows.append(("cancel path", stopped and (dry or took < 1.5),  # a shared CPU's timings judge nothing
                 f"stopped after {took:.2f} s (cancelled at 0.5 s)"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 3_000_000])
    ap.add_argument("--dry-run", action="store_true", help="CPU and the fakes, 3,000 rows: shows the script runs")
    ap.add_argument("--skip-models", action="store_true", help="no open_clip / LLM / cancel checks")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sizes = [3000] if args.dry_run else args.sizes
    rows: list = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            check_search(rows, Path(d), n, args.dry_run)
        check_oom(rows, Path(d), args.dry_run)
        check_oom_in_search(rows, Path(d), args.dry_run)
    if not args.skip_models:
        check_models(rows, args.dry_run)
    print(f"{'check':<24} {'ok':<4} figures")
    for name, ok, text in rows:
        print(f"{name:<24} {'yes' if ok else 'NO':<4} {text}")
    print(f"total {time.perf_counter() - start:.0f} s{' (dry run: CPU and fakes)' if args.dry_run else ''}")
    return 0 if all(ok for _, ok, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
