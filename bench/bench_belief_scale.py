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

Then the GPU path (`retrieval/belief_device.py`: the belief over every row, its products on a torch matrix) as a
MODEL, not a measurement: its code runs here on torch's CPU tensors at two sizes (--gpu-check), which counts the
products over every row a turn and the bytes they return, and times the host's part (the turn outside those
products: the per-row update in numpy); a turn at each --gpu-model size is modelled as those products reading
the fp16 matrix at --bandwidth (H200: 4.0e12 bytes/s), their results crossing --link, and the host's part on the
line through the two CPU figures, against the floor of reading the matrix once.

Usage: python bench/bench_belief_scale.py [--sizes 100000,1000000] [--kind ivf-pq] [--estimate 10000000]
       [--sessions 6] [--rounds 6] [--work DIR] [--gpu-model 1000000,10000000,30000000] [--gpu-check 100000,300000]
       [--bandwidth 4.0e12] [--link 5.0e10]
"""

from __future__ import annotations

import argparse
import json
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


class ProductClock:
    """Times the belief's products over every row on the device (`DeviceRows @ x`): seconds, how many, and the
    bytes they return to the host."""

    def __init__(self, device):
        from interactive_ir.retrieval.belief_device import BeliefDevice, DeviceRows

        self.seconds, self.calls, self.returned = 0.0, 0, 0
        clock = self

        class Timed(DeviceRows):
            def __matmul__(self, x):
                t = time.perf_counter()
                out = DeviceRows.__matmul__(self, x)
                clock.seconds += time.perf_counter() - t
                clock.calls += 1
                clock.returned += out.nbytes
                return out

        def rows():
            got = BeliefDevice.rows(device)
            if got is not None:
                got.__class__ = Timed
            return got

        device.rows = rows


def device_path(path: Path, sessions: int, rounds: int) -> dict:
    """The belief's GPU code path (`belief_device`: every row's products on a torch matrix) run here on torch's
    CPU tensors over the index at `path` (a check that the path works at this size, not a GPU figure): turn p50
    ms, the part outside the device's products (the host's per-row update), products and bytes back per turn."""
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.modes.belief.mode import BeliefMode
    from interactive_ir.retrieval.belief_device import BeliefDevice
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.search_backends import _CpuTorch
    from interactive_ir.retrieval.search_device import TorchMatrix

    retriever = Retriever(load_index(path), FakeEmbedder(512, spec="fake:512"))
    engine = build_engine(retriever, config=EngineConfig(k=10, hide_seen=True))
    device = BeliefDevice(TorchMatrix(retriever.index, _CpuTorch()))
    engine.belief_mode = BeliefMode(engine.core, engine.belief_config, None, device=device)
    clock = ProductClock(device)
    turns, host, calls, returned = [], [], [], []
    for s in range(sessions):
        session = engine.new_session(hide_seen=True, ask_questions=False)
        engine.search_text(session, f"a red dog running on the beach {s}", ask=False)
        for r in range(rounds):
            before = (clock.seconds, clock.calls, clock.returned)
            t0 = time.perf_counter()
            shown = session.last.shown
            engine.closest(session, None if r % 3 == 2 else shown[r % len(shown)],
                           SAID[r % len(SAID)] if r % 3 == 1 else None, ask=False)
            turns.append(time.perf_counter() - t0)
            host.append(turns[-1] - (clock.seconds - before[0]))
            calls.append(clock.calls - before[1])
            returned.append(clock.returned - before[2])
    if session.belief.pool is not None or device.failed:
        raise RuntimeError(f"the device path did not run over every row ({device.failed or 'a pool'})")
    n, width = len(retriever.index), retriever.index.faiss_index.d
    return {"rows": n, "width": width, "turn_ms": 1000 * statistics.median(turns),
            "host_ms": 1000 * statistics.median(host), "products": statistics.mean(calls),
            "returned_per_row": statistics.mean(returned) / n}


def gpu_model(checks: list[dict], sizes: list[int], bandwidth: float, link: float) -> None:
    """Print the GPU path's modelled turn at each size (a MODEL, not a measurement): the device reads the fp16
    matrix once per product over every row (products per turn as measured by `device_path`) at `bandwidth`
    bytes/s, the products' results cross to the host at `link` bytes/s, and the host's update costs what it
    cost here: the line through the `device_path` checks (fixed ms + ms per row, this CPU). The floor: the fp16
    matrix read once at `bandwidth`."""
    (n1, h1), (n2, h2) = [(c["rows"], c["host_ms"]) for c in (checks[0], checks[-1])]
    per_row = (h2 - h1) / (n2 - n1) if n2 != n1 else h2 / n2
    fixed = h2 - per_row * n2
    last = checks[-1]
    print(f"GPU path, a MODEL (not measured): {last['products']:.2f} products over every row a turn and "
          f"{last['returned_per_row']:.0f} bytes a row back to the host (counted on the code path run on torch's "
          "CPU tensors: " + "; ".join(f"{c['rows']:,} rows: turn {c['turn_ms']:.1f} ms, {c['host_ms']:.1f} ms of it "
                                      "outside the products" for c in checks) +
          f"), {last['width']}-wide fp16 rows, device {bandwidth / 1e12:.1f} TB/s, link {link / 1e9:.0f} GB/s, the "
          f"host's update {fixed:.1f} ms + {per_row * 1e6:.1f} ms per million rows (the line through those, this CPU)",
          flush=True)
    print("| rows | device reads ms | link ms | host update ms | modelled turn ms | floor ms (matrix once) | turn / floor |\n"
          "|---|---|---|---|---|---|---|", flush=True)
    for n in sizes:
        floor = 1000 * n * last["width"] * 2 / bandwidth
        dev, wire, host = last["products"] * floor, 1000 * n * last["returned_per_row"] / link, fixed + per_row * n
        turn = dev + wire + host
        print(f"| {n:,} | {dev:.2f} | {wire:.2f} | {host:.1f} | {turn:.1f} | {floor:.2f} | {turn / floor:.1f}x |",
              flush=True)


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
    for n in [int(x) for x in a.sizes.split(",")]:
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
    if a.gpu_model:
        sizes = sorted(int(x) for x in (a.gpu_check or a.sizes).split(","))[:2]
        checks = [device_path(index_of(work, n, a.kind)[0], max(1, a.sessions // 2), a.rounds) for n in sizes]
        gpu_model(checks, [int(x) for x in a.gpu_model.split(",")], a.bandwidth, a.link)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
