"""Does a belief search's memory stay flat across rounds? Issue 41, deliverable 2.

On bench_turn's synthetic index of `--size` rows (seeded unit 512-d image + caption vectors, the real writer,
the fake embedder), `--tabs` belief sessions are held open at once (like tabs) and each plays `--rounds`
rounds of the page's actions in turn: a click on a shown image, a click with "but ..." (a statement), and
"none of these". After each round of every session the process's RSS (from /proc) is printed, and its private
part (RssAnon: without the index's memory-mapped pages, which grow as rounds read new rows' vectors and which
the kernel takes back under pressure) with its growth
since the round before. The sessions stay alive to the end, so whatever a round keeps per session shows as
growth per round: before issue 41 each round kept a float64 score per row of the index (`Turn.ranking`,
8 bytes x rows x tabs a round); now a round keeps its page and its evidence only.

`--pooled` forces the path above the exact limit (`IIR_MATRIX_ROWS_MAX=0`): each session's belief covers a
pool that grows with the evidence and is capped (`pool * pool_cap` rows); without it a collection up to the
limit is covered whole (three float64 arrays per row per session, the same every round). `--code DIR` runs
another checkout's engine on the same index (e.g. the commit before, to see the old growth).

Usage: python bench/soak_belief.py [--size 200000] [--tabs 200] [--rounds 6] [--pooled] [--keep DIR] [--code DIR]
       [--index DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

SAID = ("with a red kite instead of a ball", "at night", "two children and a brown dog")


def rss_mb(field: str = "VmRSS") -> float:
    """The process's resident memory in MB (`field` of /proc/self/status: VmRSS, or RssAnon: private memory
    only, without the index's memory-mapped file pages, which the kernel can take back)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith(field + ":"))


def pool_rows(sessions) -> str:
    """The rows each session's belief covers (mean, most): a pool grows to `pool * pool_cap` and stays there."""
    n = [len(s.belief.rows) for s in sessions if s.belief is not None]
    return f"{sum(n) / len(n):,.0f} (most {max(n):,})" if n else "-"


def play(engine, session, r: int) -> None:
    """Round `r` of one session: a click, a click with "but ...", or none of these, in turn."""
    shown = session.last.shown
    if r % 3 == 2:
        engine.closest(session, None, ask=False)
    else:
        engine.closest(session, shown[r % len(shown)], SAID[r % len(SAID)] if r % 3 == 1 else None, ask=False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=200_000)
    ap.add_argument("--tabs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--pooled", action="store_true", help="force the pooled belief (IIR_MATRIX_ROWS_MAX=0)")
    ap.add_argument("--keep", type=Path, default=None, help="build the index here and keep it (default: a temp dir)")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose engine runs (default: this one)")
    ap.add_argument("--index", type=Path, default=None, help="an index folder of the synthetic collection to use "
                    "instead of building one (e.g. bench_belief_scale.py's ivf-pq one; --size is then its size)")
    a = ap.parse_args(argv)
    if a.pooled:
        os.environ["IIR_MATRIX_ROWS_MAX"] = "0"
    sys.path.insert(0, str(a.code.resolve()))
    from bench_turn import reuse_or_build

    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    work = a.keep or Path(tempfile.mkdtemp(prefix="iir_soak_belief_"))
    path = a.index or reuse_or_build(work / f"synthetic_{a.size}", a.size)[0]
    retriever = Retriever(load_index(path), FakeEmbedder(512, spec="fake:512"))
    a.size = len(retriever.index)
    engine = build_engine(retriever, config=EngineConfig(k=10, hide_seen=True))
    engine.search_text(engine.new_session(), "warm up")
    print(f"code {a.code.resolve()}; {a.size:,} rows, {a.tabs} tabs, {a.rounds} rounds, "
          f"{'pooled (IIR_MATRIX_ROWS_MAX=0)' if a.pooled else 'whole collection where it fits'}; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    sessions = []
    for t in range(a.tabs):
        s = engine.new_session(hide_seen=True, ask_questions=False)
        engine.search_text(s, f"a red dog running on the beach {t}", ask=False)
        sessions.append(s)
    last, file_pages = rss_mb("RssAnon"), rss_mb() - rss_mb("RssAnon")
    print("| round | RSS MB | private MB | growth MB (private) | per tab KB | file pages MB | pool rows a tab | seconds |\n"
          "|---|---|---|---|---|---|---|---|\n"
          f"| 0 (described) | {rss_mb():.0f} | {last:.0f} | - | - | {file_pages:.0f} | - | - |", flush=True)
    growth = []
    for r in range(a.rounds):
        t0 = time.perf_counter()
        for s in sessions:
            play(engine, s, r)
        now, total = rss_mb("RssAnon"), rss_mb()
        growth.append(now - last)
        print(f"| {r + 1} | {total:.0f} | {now:.0f} | {now - last:+.1f} | {1024 * (now - last) / a.tabs:+.0f} | "
              f"{total - now:.0f} | {pool_rows(sessions)} | {time.perf_counter() - t0:.1f} |", flush=True)
        last = now
    later = growth[1:] or growth
    print(f"mean growth of private memory per round after the first: {sum(later) / len(later):+.1f} MB "
          f"({1024 * sum(later) / len(later) / a.tabs:+.0f} KB a tab); a float64 per row per round would be "
          f"{8 * a.size * a.tabs / 2**20:.0f} MB a round", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
