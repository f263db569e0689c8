"""Per-turn cost of relevance feedback and composed search (issue 4, "Speed").

A synthetic index of N images (default 100,000; 512-d image + caption vectors written by the builder's
own writer; every image file is a symlink to one of 16 small JPEGs, so the VLM re-rank really decodes
images). Models are fakes that answer instantly with valid replies, so the figures are the engine's own
work: caption lookup, prompt building and parsing, text encoding (the fake embedder), the fused exact
search over N rows with the shown images excluded, Rocchio, composition and the history mean, image
decoding for the VLM, the stable re-rank. Model time (`timings["llm"]`, `["vlm"]`) is subtracted.
Goal: under 50 ms per turn at 100k images.

Sessions: one text search, then `--turns` feedback rounds (marking the top result relevant and the last
not relevant) or `--turns` relative captions (the first with an explicit reference, later ones on the
previous top-1, ranked by the history mean). The conversation mode's questions are off
(`ask_questions=False`): bench/bench_turn.py measures those.

Usage: python bench/bench_feedback.py [--size 100000] [--sessions 5] [--turns 4] [-k 10]
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DIM = 512
GOAL_MS = 50.0
WORDS = ("red green blue yellow white black dog cat man woman child car boat horse bird ball "
         "running sitting jumping beach street park snow field river").split()
STAGE1 = json.dumps({"step1": [["Modification", "Make the dog red."], ["Retention", "Keep the beach."]],
                     "step2": ["A red dog.", "A red dog on a beach.", "A red dog running on a sunny beach."]})
STAGE2 = json.dumps({"step1": ["The dog is red.", "There is a beach.", "There is no man."],
                     "step2": [["Is the dog red?", "True"], ["Is there a beach?", "True"],
                               ["Is there a man?", "False"]]})
REWRITES = {"summary": "Topic: A red dog running on a sunny beach",
            "keywords": "Taggings: red dog, beach, running, sun",
            "cot": "Keywords: red dog, beach, running\nDescription: A red dog runs along a sunny beach."}


def responder(prompt: str) -> str:
    """Valid replies for every prompt of the two modes."""
    if prompt.startswith("Given the image descriptions, generate the topic"):
        return REWRITES["summary"]
    if prompt.startswith("Given the image descriptions, generate a list of image taggings"):
        return REWRITES["keywords"]
    if prompt.startswith("Given the image descriptions"):
        return REWRITES["cot"]
    if "Atomic Proposition Generation" in prompt:
        return STAGE2
    if "Instruction Classification" in prompt:
        return STAGE1
    return "a red dog"


def vlm_responder(images, question: str) -> str:
    if "ANSWER:" in question:
        return "ANSWER: No\nnot quite"
    return "Yes" if (images[-1].size[0] + len(question)) % 3 else "No"


# --- the index ------------------------------------------------------------------------------------------
def synthetic_index(out: Path, n: int, seed: int = 0) -> Path:
    from PIL import Image

    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.index.builder import _write
    from interactive_ir.index.store import IndexRecord

    rng = np.random.default_rng(seed)

    def unit(rows):
        x = rng.standard_normal((rows, DIM), dtype=np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)

    images = out.parent / "images"
    images.mkdir(parents=True, exist_ok=True)
    pool = []
    for j in range(16):
        p = out.parent / f"pool{j:02d}.jpg"
        Image.fromarray(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)).save(p, quality=85)
        pool.append(p)
    w = rng.integers(0, len(WORDS), (n, 5))
    records = []
    for i in range(n):
        name = f"img{i:07d}.jpg"
        os.symlink(pool[i % 16], images / name)
        records.append(IndexRecord(name, [" ".join(WORDS[x] for x in w[i])], 224, 224))
    _write(out, images, FakeEmbedder(DIM, spec=f"fake:{DIM}"), records, unit(n), unit(n), 0)
    return out


# --- sessions ----------------------------------------------------------------------------------------------
def turn_record(t, cpu: float) -> dict:
    model = t.timings.get("llm", 0.0) + t.timings.get("vlm", 0.0)
    return {"engine": t.timings["total"] - model, "total": t.timings["total"], "cpu": cpu,
            "retrieve": t.timings.get("retrieve", 0.0),
            "llm_trips": t.extra.get("llm_round_trips", 0), "vlm_trips": t.extra.get("vlm_round_trips", 0),
            "prompts": len(t.llm_calls), "error": bool(t.error)}


def timed(fn, *a, **kw):
    c = time.process_time()
    t = fn(*a, **kw)
    return t, time.process_time() - c


def feedback_sessions(engine, method: str, queries: list[str], turns: int) -> list[dict]:
    out = []
    for q in queries:
        s = engine.new_session(ask_questions=False)
        engine.search_text(s, q)
        for _ in range(turns):
            last = s.last.shown
            t, cpu = timed(engine.feedback, s, [last[0]], [last[-1]], method=method)
            out.append(turn_record(t, cpu))
    return out


def composed_sessions(engine, method: str, queries: list[str], turns: int, upload=None) -> list[dict]:
    out = []
    for q in queries:
        s = engine.new_session(ask_questions=False)
        engine.search_text(s, q)
        for i in range(turns):
            if i == 0 and upload is not None:
                t, cpu = timed(engine.relative, s, "make it red", image=upload, method=method)
            elif i == 0:
                t, cpu = timed(engine.relative, s, "make it red", reference=s.last.shown[2], method=method)
            else:
                t, cpu = timed(engine.relative, s, ["now at night", "with a ball", "smaller"][i % 3], method=method)
            out.append(turn_record(t, cpu))
    return out


def pct(values, q):
    return float(np.percentile(values, q)) if len(values) else float("nan")


def row(label: str, recs: list[dict]) -> str:
    ms = lambda key, q: 1000 * pct([r[key] for r in recs], q)  # noqa: E731
    ok = "yes" if ms("engine", 95) < GOAL_MS else "NO"
    return (f"| {label} | {len(recs)} | {ms('engine', 50):.1f} / {ms('engine', 95):.1f} | {ms('cpu', 50):.1f} | "
            f"{ms('retrieve', 50):.1f} | {max(r['llm_trips'] for r in recs)} | {max(r['vlm_trips'] for r in recs)} | "
            f"{pct([r['prompts'] for r in recs], 50):.0f} | {ms('total', 50):.1f} | {sum(r['error'] for r in recs)} | {ok} |")


HEADER = ("| turn | turns | engine excl. models ms p50 / p95 | engine CPU ms p50 | retrieve ms p50 | "
          "LLM round trips | VLM round trips | model prompts p50 | total ms p50 | errors | p95 < 50 ms |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000, help="synthetic index size")
    ap.add_argument("--sessions", type=int, default=5, help="sessions per method")
    ap.add_argument("--turns", type=int, default=4, help="feedback / relative turns per session")
    ap.add_argument("-k", type=int, default=10, help="results per turn")
    ap.add_argument("--keep", type=Path, default=None, help="build the index here and keep it")
    args = ap.parse_args(argv)

    from PIL import Image

    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.backends.vlms import FakeVLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    work = args.keep or Path(tempfile.mkdtemp(prefix="iir-bench-feedback-"))
    try:
        t = time.perf_counter()
        idx = work / "index"
        if not (idx / "manifest.json").exists():
            synthetic_index(idx, args.size)
        r = Retriever(load_index(idx, verify=False), FakeEmbedder(DIM, spec=f"fake:{DIM}"))
        print(f"index: {len(r.index):,} images, {r.index.dim}-d image + caption rows, built/loaded in "
              f"{time.perf_counter() - t:.1f} s")
        cfg = EngineConfig(k=args.k)
        plain = build_engine(r, config=cfg)
        with_llm = build_engine(r, llm=FakeLLM(responder=responder), config=cfg)
        with_vlm = build_engine(r, llm=FakeLLM(responder=responder), vlm=FakeVLM(responder=vlm_responder), config=cfg)
        compose_vlm = build_engine(r, vlm=FakeVLM(responder=vlm_responder), config=cfg)
        rng = np.random.default_rng(1)
        queries = [" ".join(rng.choice(WORDS, 5)) for _ in range(args.sessions)]
        upload = Image.fromarray(rng.integers(0, 256, (480, 640, 3), dtype=np.uint8))

        plain.new_session()  # warm up faiss, the embedder and the mmap
        composed_sessions(plain, "compose", queries[:1], 1)
        feedback_sessions(plain, "expand", queries[:1], 1)

        lines = [f"## Feedback and composed turns at {len(r.index):,} images (k={args.k}, "
                 f"{args.sessions} sessions x {args.turns} turns)", "", HEADER]
        for label, eng, method in (("feedback expand (no LLM)", plain, "expand"),
                                   ("feedback rocchio (no LLM)", plain, "rocchio"),
                                   ("feedback summary (LLM)", with_llm, "summary"),
                                   ("feedback keywords (LLM)", with_llm, "keywords"),
                                   ("feedback cot (LLM)", with_llm, "cot")):
            lines.append(row(label, feedback_sessions(eng, method, queries, args.turns)))
        for label, eng, method, up in (("relative compose (no LLM)", plain, "compose", None),
                                       ("relative compose, 640x480 upload", plain, "compose", upload),
                                       ("relative imagescope stage 1 (LLM)", with_llm, "imagescope", None),
                                       ("relative compose + stage 3 (VLM)", compose_vlm, "compose", None),
                                       ("relative imagescope stages 1-3 (LLM+VLM)", with_vlm, "imagescope", None)):
            lines.append(row(label, composed_sessions(eng, method, queries, args.turns, up)))
        import faiss

        lines += ["", f"python {platform.python_version()}, numpy {np.__version__}, faiss {faiss.__version__}, "
                      f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; stage 2 verifies the top 20 "
                      "with every proposition in one batched VLM call, stage 3 the top 3 in another."]
        print("\n".join(lines))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
