"""Per-turn cost of the belief at 100k, 1M and (estimated) 10M rows on this CPU. Issue 41, deliverable 3.

For each --sizes, bench_turn's synthetic collection (seeded unit 512-d image + caption vectors, word captions,
the fake embedder) written as an index of --kind (default ivf-pq, trained on a sample; kept in --work to be
reused), and sessions of one description then rounds of the page's actions (a click, a click with "but ...",
none of these), beside paging rounds (`search_text` with every shown image hidden) in the SAME process,
alternating by session. Printed as each size finishes: the belief's path (whole: every row, below the exact
limit; pooled: a pool that grows with the evidence, above it), p50 / p95 ms of a belief turn and of a paging
turn, the ratio, the time inside the index's searches, and the load average.

The 10M row is an estimate, stated as such: a pooled turn is the pool's own work (bounded by pool * pool_cap
rows, the same at any size) plus its index searches; an ivf-pq search scans nprobe of nlist lists, so its
time grows with the codes scanned, N * nprobe / nlist (the kind's own parameters at that size). The scan
bandwidth (codes scanned per ms) is measured from the searches at the two largest sizes measured here (a
straight line through them: fixed cost + codes / bandwidth), and the turn at 10M is the measured turn at
the largest size with its search time replaced by the line's value at 10M.

The estimate adds the measured extra cost of finding the lists among 10M's centroids (a flat search of the
round's query rows over nlist random centroids, at 10M's nlist against the largest measured size's).

Then the GPU path (`retrieval/belief_device.py` and `belief_device_state.py`: the belief over every row, its
products on a torch matrix, its per-row state and update on the device) at two --gpu-check sizes:
- with --gpu-time, its code on torch's CPU tensors against the numpy belief over every row, the same rounds in
  lockstep in one run (turn p50 ms and the median ratio: a CPU figure, not a GPU's);
- a MODEL of a GPU turn, not a measurement (--gpu-model sizes): the device path's turns run on torch's CPU tensors
  over an fp16 matrix inside a torch dispatch mode that counts every op's bytes read and written, the ops (kernel
  launches), the syncs and the bytes that come to the host; a turn at each size is those bytes at --bandwidth
  (H200: 4.0e12 bytes/s), --launch-us a launch, --sync-us a sync and the host's bytes at --link, against the floor
  of reading the fp16 matrix once; and the same without the fp32 copies the CPU's products make of each chunk
  (on CUDA each fp16 row is read once: `torch.mm(..., out_dtype=float32)`).

Usage: python bench/bench_belief_scale.py [--sizes 100000,1000000] [--kind ivf-pq] [--estimate 10000000]
       [--sessions 6] [--rounds 6] [--work DIR] [--gpu-model 1000000,10000000,30000000] [--gpu-check 100000,300000]
       [--bandwidth 4.0e12] [--link 5.0e10] [--launch-us 5] [--sync-us 20] [--gpu-time] [--no-cpu]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SAID = ("with a red kite instead of a ball", "at night", "two children and a brown dog")


TRAIN_MAX = 50_000  # an ivf-pq build for timing trains its quantizers on at most this many rows (a sample)
TUNE = {"queries": 16, "max_nprobe": 256, "max_rerank_factor": 8}  # ... and tunes nprobe on fewer, shallower runs


def index_of(work: Path, n: int, kind: str) -> tuple[Path, float | None]:
    """bench_turn's synthetic collection of `n` rows as an index of `kind` (reused when there). Built above
    300,000 rows, ivf-pq trains on a sample of TRAIN_MAX rows and tunes with TUNE (a build that fits minutes;
    random vectors have no clusters, so tuning would otherwise visit every list)."""
    if n > 300_000:
        import dataclasses

        from interactive_ir.index import kinds, tune, writer

        choose, tuner = writer.K.choose_params, writer.tune_ivf
        def sampled(*a):
            p = choose(*a)
            return dataclasses.replace(p, train_size=min(p.train_size, TRAIN_MAX))

        writer.K = types.SimpleNamespace(**{**{k: getattr(kinds, k) for k in dir(kinds) if not k.startswith("__")},
                                            "choose_params": sampled})  # this build's kinds: the train sample capped
        writer.tune_ivf = lambda index, params, rows: tuner(index, params, rows, tune.TuneConfig(**TUNE))
        try:
            return _index_of(work, n, kind)
        finally:
            writer.K, writer.tune_ivf = kinds, tuner
    return _index_of(work, n, kind)


def _index_of(work: Path, n: int, kind: str) -> tuple[Path, float | None]:
    from bench_turn import COLOURS, DIM, PLACES, THINGS

    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.index.builder import _write
    from interactive_ir.index.store import IndexRecord

    out = work / f"synthetic_{kind}_{n}"
    try:
        if json.loads((out / "manifest.json").read_text())["count"] == n:
            return out, None
    except (OSError, ValueError, KeyError):
        shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)

    def unit(rows):
        x = rng.standard_normal((rows, DIM), dtype=np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)

    img, cap = unit(n), unit(n)
    words = [rng.integers(0, len(v), n) for v in (COLOURS, THINGS, PLACES)]
    records = [IndexRecord(f"img{i:08d}.jpg", [f"a {COLOURS[words[0][i]]} {THINGS[words[1][i]]} on the "
                                               f"{PLACES[words[2][i]]}"], 224, 224) for i in range(n)]
    _write(out, work / "images", FakeEmbedder(DIM, spec=f"fake:{DIM}"), records, img, cap, 0, kind=kind)
    return out, time.perf_counter() - t0


class SearchClock:
    """Wraps a retriever's index searches (`search_rows`, and `candidate_rows`: the pool's batched search) and
    sums the seconds spent in them (a batched search calls no `search_rows` inside, so nothing counts twice)."""

    def __init__(self, retriever):
        self.seconds, self.calls = 0.0, 0
        for name in ("search_rows", "candidate_rows"):
            if hasattr(retriever, name):  # (code before the batched search has no `candidate_rows`)
                setattr(retriever, name, self._timed(getattr(retriever, name)))

    def _timed(self, inner):
        def call(*a, **k):
            if self.depth:
                return inner(*a, **k)
            self.depth += 1
            t = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                self.seconds += time.perf_counter() - t
                self.calls += 1
                self.depth -= 1
        return call

    depth = 0  # > 0 inside a timed search (a fallback's `search_rows` inside `candidate_rows` counts once)


def play(engine, sessions: int, rounds: int, clock: SearchClock) -> tuple[list, list, list]:
    """(belief turn seconds, paging turn seconds, search seconds inside each belief turn)."""
    belief, paging, searching = [], [], []
    for s in range(sessions):
        text = f"a red dog running on the beach {s}"
        for kind in (("belief", "paging") if s % 2 == 0 else ("paging", "belief")):
            session = engine.new_session(hide_seen=True, ask_questions=False)
            engine.search_text(session, text, ask=False)
            for r in range(rounds):
                before = clock.seconds
                t0 = time.perf_counter()
                if kind == "belief":
                    shown = session.last.shown
                    pick = None if r % 3 == 2 else shown[r % len(shown)]
                    engine.closest(session, pick, SAID[r % len(SAID)] if r % 3 == 1 else None, ask=False)
                    belief.append(time.perf_counter() - t0)
                    searching.append(clock.seconds - before)
                else:
                    engine.search_text(session, text, kind="search", ask=False)
                    paging.append(time.perf_counter() - t0)
    return belief, paging, searching


def scanned(n: int, params=None, width: int = 1024) -> float:
    """Codes one ivf-pq search scans at `n` rows: n * nprobe / nlist, with `params` (a loaded index's, its tuned
    nprobe) or else the kind's own choice at that size (`kinds.choose_params`)."""
    from interactive_ir.index import kinds

    params = params or kinds.choose_params("ivf-pq", n, width)
    return n * kinds.nprobe(params) / params.nlist


def measure(path: Path, pooled: bool, sessions: int, rounds: int) -> tuple:
    """(belief p50 ms, p95 ms, paging p50 ms, searches p50 ms a belief turn, whether the belief was whole)."""
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import MATRIX_ROWS_ENV, Retriever

    before = os.environ.get(MATRIX_ROWS_ENV)
    if pooled:
        os.environ[MATRIX_ROWS_ENV] = "0"  # the path above the exact limit, forced
    try:
        retriever = Retriever(load_index(path), FakeEmbedder(512, spec="fake:512"))
        whole = retriever._matrix is not None  # noqa: SLF001 - read now, under the forced limit
    finally:
        os.environ.pop(MATRIX_ROWS_ENV, None)
        if before is not None:
            os.environ[MATRIX_ROWS_ENV] = before
    engine = build_engine(retriever, config=EngineConfig(k=10, hide_seen=True))
    engine.search_text(engine.new_session(), "warm up", ask=False)
    clock = SearchClock(retriever)
    belief, paging, searching = play(engine, sessions, rounds, clock)
    return (1000 * float(np.percentile(belief, 50)), 1000 * float(np.percentile(belief, 95)),
            1000 * float(np.percentile(paging, 50)), 1000 * statistics.median(searching), whole)


def coarse_ms(nlist: int, width: int, nq: int = 3, repeat: int = 20) -> float:
    """ms of an ivf search's first step for `nq` query rows: the nearest of `nlist` list centroids (a flat
    inner-product search over random centroids; measured here, the scan of the lists excluded)."""
    import faiss

    rng = np.random.default_rng(0)
    flat = faiss.IndexFlatIP(width)
    flat.add(rng.standard_normal((nlist, width)).astype(np.float32))
    q = rng.standard_normal((nq, width)).astype(np.float32)
    flat.search(q, 64)
    t0 = time.perf_counter()
    for _ in range(repeat):
        flat.search(q, 64)
    return 1000 * (time.perf_counter() - t0) / repeat


def _engines(path: Path, half: bool = False) -> tuple:
    """(the numpy engine: the belief over every row in RAM, the device engine: the belief over every row on a
    torch matrix, run on torch's CPU tensors, fp16 like a GPU's matrix when `half`) over the index at `path`."""
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.modes.belief.mode import BeliefMode
    from interactive_ir.retrieval.belief_device import BeliefDevice
    from interactive_ir.retrieval.retriever import MATRIX_ROWS_ENV, Retriever
    from interactive_ir.retrieval.search_backends import _CpuTorch
    from interactive_ir.retrieval.search_device import TorchMatrix

    index = load_index(path)
    before = os.environ.get(MATRIX_ROWS_ENV)
    os.environ[MATRIX_ROWS_ENV] = str(len(index))  # the numpy belief over every row, whatever the size
    try:
        retriever = Retriever(index, FakeEmbedder(512, spec="fake:512"))
        if retriever._matrix is None:  # noqa: SLF001 - read now, under the raised limit (it is made when first read)
            raise RuntimeError("the numpy belief would not cover every row")
    finally:
        os.environ.pop(MATRIX_ROWS_ENV, None)
        if before is not None:
            os.environ[MATRIX_ROWS_ENV] = before
    engines = []
    for on_device in (False, True):
        engine = build_engine(retriever, config=EngineConfig(k=10, hide_seen=True))
        if on_device:
            source = TorchMatrix(retriever.index, _CpuTorch())
            device = BeliefDevice(source)
            if half and source.ready():
                source.matrix = source.matrix.half()  # the GPU's fp16 matrix (each product upcasts a chunk here)
                make = device.rows

                def rows(make=make):  # a product in one chunk, as an fp16 product on a GPU: its launches
                    got = make()
                    if got is not None:
                        got.chunk = len(got)
                    return got

                device.rows = rows
            engine.belief_mode = BeliefMode(engine.core, engine.belief_config, None, device=device)
        engines.append(engine)
    return engines[0], engines[1]


def _session(engine, s: int):
    session = engine.new_session(hide_seen=True, ask_questions=False)
    engine.search_text(session, f"a red dog running on the beach {s}", ask=False)
    return session


def _turn(engine, session, r: int) -> None:
    """One round of the page's actions: a click, a click with "but ...", none of these (by `r`)."""
    shown = session.last.shown
    engine.closest(session, None if r % 3 == 2 else shown[r % len(shown)],
                   SAID[r % len(SAID)] if r % 3 == 1 else None, ask=False)


def device_path(path: Path, sessions: int, rounds: int) -> dict:
    """The belief's GPU code path (state and update on the device: `belief_device_state.py`) run here on torch's
    CPU tensors against the numpy belief over every row, in ONE run: a session on each with the same rounds, in
    lockstep (each round on one then on the other, the order swapped every round, so that load falls on both):
    turn p50 ms of each and the median of the rounds' ratios (a CPU figure: what the code costs on this CPU, not on
    a GPU). A session's first round (which makes its belief) is left out."""
    engines = dict(zip(("numpy", "device"), _engines(path)))
    times = {"numpy": [], "device": []}
    ratios = []
    for s in range(sessions):
        live = {name: _session(engine, s) for name, engine in engines.items()}
        for name, engine in engines.items():
            _turn(engine, live[name], 0)
        for r in range(1, rounds + 1):
            took = {}
            for name in (("numpy", "device") if (s + r) % 2 == 0 else ("device", "numpy")):
                t0 = time.perf_counter()
                _turn(engines[name], live[name], r)
                took[name] = time.perf_counter() - t0
                times[name].append(took[name])
            ratios.append(took["device"] / took["numpy"])
        for name, session in live.items():
            if (session.belief.pool is not None or (name == "device") != (session.belief.dev is not None)
                    or (name == "device" and engines[name].belief_mode.device.failed)):
                raise RuntimeError(f"the {name} path did not run over every row as asked")
    index = engines["numpy"].retriever.index
    dev, cpu = (1000 * statistics.median(times[k]) for k in ("device", "numpy"))
    return {"rows": len(index), "width": index.faiss_index.d, "device_ms": dev, "numpy_ms": cpu,
            "ratio": statistics.median(ratios), "load": os.getloadavg()[0]}


def traffic_counter():
    """A torch dispatch mode that counts, per torch op run inside it: the bytes its tensors read and write (its
    inputs and outputs; an indexed read or write counts only the rows it touches; views count nothing), the
    ops (kernel launches on a GPU), and the bytes the fp16 -> fp32 upcasts (the products' chunks) write. A MODEL
    of a GPU's memory traffic, counted on torch's CPU tensors (what reaches the host: `device_traffic`)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    def nbytes(x) -> int:
        return sum(t.numel() * t.element_size() for t in tree_flatten(x)[0] if isinstance(t, torch.Tensor))

    class Traffic(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bytes, self.upcast, self.ops = 0, 0, 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.__name__
            if func.is_view or name.startswith(("empty", "lift_fresh", "detach", "alias")):
                return out  # no bytes moved, no kernel
            self.ops += 1
            if name.startswith(("index_put", "index.", "index_select")):  # touches only the indexed rows
                touched = nbytes(out) if name.startswith(("index.", "index_select")) else nbytes(args[2:])
                self.bytes += 2 * touched + nbytes(args[1])
            else:
                read = {k: v for k, v in (kwargs or {}).items() if k != "out"}  # an out= tensor is only written
                self.bytes += nbytes(args) + nbytes(read) + nbytes(out)
            first = args[0] if args else None
            if name.startswith("_to_copy") and isinstance(first, torch.Tensor) and first.dtype == torch.float16:
                self.upcast += nbytes(out)
            return out

    return Traffic()


def device_traffic(path: Path, rounds: int) -> dict:
    """A device session's turns (`_turn`; the first, which makes the session's belief, not counted) on an fp16
    matrix on torch's CPU tensors, counted (`traffic_counter`): per turn, the device memory bytes moved, the bytes
    the products' fp32 upcasts write, the ops, and what comes to the host (`DeviceMath.to_host`: each a sync)."""
    from interactive_ir.retrieval.belief_device_state import DeviceMath

    _, engine = _engines(path, half=True)
    session = _session(engine, 0)
    _turn(engine, session, 0)
    host = {"bytes": 0, "syncs": 0}
    to_host = DeviceMath.to_host

    def counted(self, values):
        out = to_host(self, values)
        host["bytes"] += out.nbytes
        host["syncs"] += 1
        return out

    per = []
    DeviceMath.to_host = counted
    try:
        for r in range(1, rounds + 1):
            host.update(bytes=0, syncs=0)
            with traffic_counter() as t:
                _turn(engine, session, r)
            per.append((t.bytes, t.upcast, t.ops, host["syncs"], host["bytes"]))
    finally:
        DeviceMath.to_host = to_host
    mean = [statistics.mean(x) for x in zip(*per)]
    n, width = len(engine.retriever.index), engine.retriever.index.faiss_index.d
    return {"rows": n, "width": width, "bytes": mean[0], "upcast": mean[1], "ops": mean[2], "syncs": mean[3],
            "host_bytes": mean[4]}


def _line(checks: list[dict], key: str) -> tuple[float, float]:
    """(fixed, per row) of `key` through the first and last check (a count that grows with the rows)."""
    (n1, y1), (n2, y2) = [(c["rows"], c[key]) for c in (checks[0], checks[-1])]
    per_row = (y2 - y1) / (n2 - n1) if n2 != n1 else y2 / n2
    return y2 - per_row * n2, per_row


CLICK_CHUNK_OPS = 12  # the click model's ops (launches) per chunk of rows (`belief_device_state.log_choice`, counted)


def gpu_model(checks: list[dict], sizes: list[int], bandwidth: float, link: float, launch_us: float = 5.0,
              sync_us: float = 20.0) -> None:
    """Print the GPU path's modelled turn at each size (a MODEL, not a measurement) from the traffic counted on
    the device path (`device_traffic`, at two sizes: the bytes a line, fixed + per row; the ops, syncs and host
    bytes as at the larger size, plus CLICK_CHUNK_OPS launches for each further chunk of the click model's
    CLICK_CHUNK_ROWS rows): the bytes moved at
    `bandwidth` bytes/s, each op a kernel launch of `launch_us`, each sync `sync_us`, the host's values at `link`
    bytes/s; against the floor of reading the fp16 matrix once at `bandwidth`. Also the turn with products that
    read the fp16 matrix without an fp32 copy of each chunk (not built: the copy's write and its read by the
    product taken out, twice the upcast's output bytes)."""
    from interactive_ir.retrieval.belief_device import CLICK_CHUNK_ROWS

    last = checks[-1]
    sizes_read = ", ".join(f"{c['rows']:,}" for c in checks)
    lines = {k: _line(checks, k) for k in ("bytes", "upcast")}  # they grow with the rows
    lines.update({k: (last[k], 0.0) for k in ("ops", "syncs", "host_bytes")})  # they do not (up to a click chunk)
    print(f"GPU path, a MODEL (not measured): per turn, counted on the device path run on torch's CPU tensors over an "
          f"fp16 matrix ({sizes_read} rows): "
          f"{lines['bytes'][1]:.0f} bytes a row moved in device memory ({2 * lines['upcast'][1]:.0f} of them the "
          f"products' fp32 copies, written and read), {last['ops']:.0f} ops (launches), {last['syncs']:.0f} syncs, "
          f"{last['host_bytes'] / 1e3:.1f} KB to the host; {last['width']}-wide fp16 rows, device "
          f"{bandwidth / 1e12:.1f} TB/s, {launch_us:.0f} us a launch, {sync_us:.0f} us a sync, link "
          f"{link / 1e9:.0f} GB/s", flush=True)
    print("| rows | device bytes GB | device ms | launches + syncs ms | host ms | modelled turn ms | floor ms "
          "(matrix once) | turn / floor | fp16 products: turn ms | / floor |\n"
          "|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for n in sizes:
        at = {k: fixed + per_row * n for k, (fixed, per_row) in lines.items()}
        at["ops"] += CLICK_CHUNK_OPS * (math.ceil(n / CLICK_CHUNK_ROWS) - 1)  # the click model's further chunks
        floor = 1000 * n * last["width"] * 2 / bandwidth
        dev = 1000 * at["bytes"] / bandwidth
        fixed = 1e-3 * (at["ops"] * launch_us + at["syncs"] * sync_us)
        wire = 1000 * at["host_bytes"] / link
        turn = dev + fixed + wire
        lean = turn - 2000 * at["upcast"] / bandwidth
        print(f"| {n:,} | {at['bytes'] / 1e9:.2f} | {dev:.2f} | {fixed:.2f} | {wire:.3f} | {turn:.2f} | {floor:.2f} | "
              f"{turn / floor:.1f}x | {lean:.2f} | {lean / floor:.1f}x |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--kind", default="ivf-pq")
    ap.add_argument("--estimate", type=int, default=10_000_000, help="the size estimated from the largest two")
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--gpu-model", default="1000000,10000000,30000000",
                    help="sizes of the GPU path's modelled turn ('' for none); its code path runs on the CPU first")
    ap.add_argument("--gpu-check", default="", help="sizes (two) the GPU code path runs over on the CPU, for the "
                    "host's part of the model (default: the two smallest of --sizes)")
    ap.add_argument("--bandwidth", type=float, default=4.0e12, help="device memory bytes/s (H200: 4.0e12)")
    ap.add_argument("--link", type=float, default=5.0e10, help="device-to-host bytes/s (PCIe 5 x16: about 5e10)")
    ap.add_argument("--launch-us", type=float, default=5.0, help="the model's cost of one kernel launch (us)")
    ap.add_argument("--sync-us", type=float, default=20.0, help="the model's cost of one value read by the host (us)")
    ap.add_argument("--gpu-time", action="store_true", help="time the device path on torch's CPU tensors against "
                    "the numpy belief at the --gpu-check sizes")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU table (--sizes): only the GPU rows")
    a = ap.parse_args(argv)
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import matrix_rows_max

    work = a.work or Path(tempfile.mkdtemp(prefix="iir_belief_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"kind {a.kind}, {a.sessions} sessions x {a.rounds} rounds per way; exact limit {matrix_rows_max():,} rows",
          flush=True)
    print("| rows | path | belief p50 ms | p95 | paging p50 ms | belief / paging | searches ms a turn | built s | load |\n"
          "|---|---|---|---|---|---|---|---|---|", flush=True)
    fit = []
    for n in [] if a.no_cpu else [int(x) for x in a.sizes.split(",")]:
        path, built = index_of(work, n, a.kind)
        for pooled in ((False, True) if n <= matrix_rows_max() else (True,)):  # below the limit: both paths
            row = measure(path, pooled, a.sessions, a.rounds)
            b50, b95, p50, s50, whole = row
            print(f"| {n:,} | {'whole' if whole else 'pooled'} | {b50:.1f} | {b95:.1f} | {p50:.1f} | {b50 / p50:.2f}x "
                  f"| {s50:.1f} | {'-' if built is None else f'{built:.0f}'} | {os.getloadavg()[0]:.1f} |", flush=True)
            if not whole:
                fit.append((n, scanned(n, load_index(path).params) if a.kind == "ivf-pq" else n, b50, s50))
    if len(fit) >= 2 and a.kind == "ivf-pq":
        (n1, c1, _, s1), (n2, c2, b2, s2) = fit[-2], fit[-1]
        per_code = (s2 - s1) / (c2 - c1) if c2 != c1 else 0.0
        fixed = s2 - per_code * c2
        c10 = scanned(a.estimate)
        from interactive_ir.index import kinds

        width = load_index(index_of(work, n2, a.kind)[0]).faiss_index.d
        more = coarse_ms(kinds.choose_params("ivf-pq", a.estimate, width).nlist, width) - coarse_ms(
            load_index(index_of(work, n2, a.kind)[0]).params.nlist, width)
        s10 = fixed + per_code * c10 + more
        print(f"estimate at {a.estimate:,} rows (not measured): the searches scan {c10:,.0f} codes "
              f"(measured line through {n1:,} and {n2:,}: {fixed:.1f} ms + "
              f"{per_code * 1e6:.1f} ms per million codes) and find their lists among more centroids (+{more:.1f} ms, "
              f"measured); a pooled turn {b2 - s2 + s10:.1f} ms "
              f"(the {n2:,}-row turn's {b2 - s2:.1f} ms of pool work + {s10:.1f} ms of searches)", flush=True)
    if a.gpu_model or a.gpu_time:
        sizes = sorted(int(x) for x in (a.gpu_check or a.sizes).split(","))[:2]
        paths = [index_of(work, n, a.kind)[0] for n in sizes]
    if a.gpu_time:  # the device path on torch's CPU tensors against the numpy belief, the same run
        print("device path on this CPU (torch CPU tensors) against the numpy belief over every row, the same rounds in "
              "lockstep (CPU figures, not a GPU's)\n| rows | numpy turn p50 ms | device path on the CPU p50 ms | "
              "device / numpy (median of the rounds) | load |\n|---|---|---|---|---|", flush=True)
        for path in paths:
            c = device_path(path, a.sessions, a.rounds)
            print(f"| {c['rows']:,} | {c['numpy_ms']:.1f} | {c['device_ms']:.1f} | {c['ratio']:.2f}x | {c['load']:.1f} |",
                  flush=True)
    if a.gpu_model:
        checks = [device_traffic(path, a.rounds) for path in paths]
        gpu_model(checks, [int(x) for x in a.gpu_model.split(",")], a.bandwidth, a.link, a.launch_us, a.sync_us)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
