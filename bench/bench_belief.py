"""Per-turn engine time of the belief's "closest image" round against paging, at N images (default 100,000).

On bench_turn's synthetic index (seeded unit 512-d image + caption vectors, written by the real writer) and
the fake embedder: sessions of one description, then rounds of `closest` (a click on a shown image, or
"none of these" every third round), beside the same number of paging rounds (`search_text` of the same
text with every shown image hidden: what `none` does) in the SAME process, alternating by session. Prints
p50 / p95 of each and the ratio, with the load average (the machines are shared: read the ratio).

With `--ask` the belief's rounds also choose its next question (the default page's round: open ones, then
yes/no by expected information) and every other round answers the pending yes/no question "yes". To compare
two versions of the belief, run this script from each checkout on the same kept index, one after the other,
and compare their closest / paging ratios (paging is the same code in both).

Usage: python bench/bench_belief.py [--size 100000] [--sessions 6] [--rounds 5] [-k 10] [--keep DIR] [--ask]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


SAID = ("with a red kite instead of a ball", "at night", "two children and a brown dog")  # "like this, but ..."


def time_sessions(engine, sessions: int, rounds: int, ask: bool = False) -> tuple[list[float], list[float], float, list[float]]:
    """(closest round seconds, paging round seconds, first belief build seconds median, seconds of the rounds
    whose click says how the image differs: the default page's round)."""
    closest, paging, builds, said = [], [], [], []
    for s in range(sessions):
        text = f"a red dog running on the beach {s}"
        for kind in (("closest", "paging") if s % 2 == 0 else ("paging", "closest")):
            session = engine.new_session(hide_seen=True, ask_questions=ask and kind == "closest")
            engine.search_text(session, text)
            for r in range(rounds):
                t0 = time.perf_counter()
                if kind == "closest":
                    shown = session.last.shown
                    but = SAID[r % len(SAID)] if r % 2 == 1 else None
                    q = session.question
                    if ask and but is None and q is not None and q.kind == "yesno":
                        but = "yes"
                    engine.closest(session, None if r % 3 == 2 else shown[r % len(shown)], but)
                    (builds if r == 0 else said if but else closest).append(time.perf_counter() - t0)
                else:
                    engine.search_text(session, text, kind="search")
                    paging.append(time.perf_counter() - t0)
    return closest, paging, float(np.median(builds)) if builds else 0.0, said


def main(argv=None) -> int:
    from bench_turn import reuse_or_build

    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--ask", action="store_true", help="the belief's rounds ask (and answer) its questions")
    ap.add_argument("--keep", type=Path, default=None, help="build the index here and keep it (default: a temp dir)")
    args = ap.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="iir_bench_belief_"))
    path, built = reuse_or_build(work / f"synthetic_{args.size}", args.size)
    retriever = Retriever(load_index(path), FakeEmbedder(512, spec="fake:512"))
    engine = build_engine(retriever, config=EngineConfig(k=args.k, hide_seen=True))
    engine.search_text(engine.new_session(), "warm up")  # the matrix copy and faiss, once
    closest, paging, build, said = time_sessions(engine, args.sessions, args.rounds, args.ask)
    p = lambda xs, q: 1000 * float(np.percentile(xs, q))  # noqa: E731
    print(f"N = {args.size:,} images, k = {args.k}, questions {'asked' if args.ask else 'off'}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
          + (f", index built in {built:.0f} s" if built else ""))
    print("| round | p50 ms | p95 ms | rounds |\n|---|---|---|---|")
    print(f"| closest (belief update + page) | {p(closest, 50):.1f} | {p(closest, 95):.1f} | {len(closest)} |")
    print(f"| closest with \"but ...\" (+ the statement's words: one encoding, one more pass) | {p(said, 50):.1f} | "
          f"{p(said, 95):.1f} | {len(said)} |")
    print(f"| first closest of a session (belief built) | {1000 * build:.1f} | - | {args.sessions // 2 + args.sessions % 2} |")
    print(f"| paging (search_text, shown hidden) | {p(paging, 50):.1f} | {p(paging, 95):.1f} | {len(paging)} |")
    print(f"closest / paging, p50: {p(closest, 50) / p(paging, 50):.2f}x; with \"but ...\": "
          f"{p(said, 50) / p(paging, 50):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
