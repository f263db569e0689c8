"""Sanity check of grounded questions (not the formal benchmark: `interactive_ir eval` owns that).

A caption index of the first N Flickr8k images (text:all-MiniLM-L6-v2) holds captions 2-5 of each image;
caption 1 is held out: it is the user's description and all the simulated user knows of its target. After
round 0 the grounded questioner asks "Which is closest to your image?"; the simulated user clicks, and the
target's collection rank is taken after each round. Users (model-free; none sees the target's id, rank or
index captions):

- `none`: no interaction (round 0's rank for every round): the baseline;
- `closest`: clicks the option whose label is most like what it knows (MiniLM cosine with caption 1);
- `random`: clicks a seeded random option; `farthest`: the least like it (a known-bad strategy, so the
  check can fail).

    python bench/sanity_grounded.py --images 1000 --targets 100 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FLICKR = ROOT.parent / "shared" / "data" / "flickr8k"


def build(out: Path, n: int):
    """(Retriever, rows) of a caption index of the first n images; reused when `out` already holds it."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    images = out / "images"
    rows = []
    with open(FLICKR / "captions.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if len(row["captions"]) >= 2 and (FLICKR / "images" / row["image"]).is_file():
                rows.append(row)
            if len(rows) == n:
                break
    emb = make_embedder("text:all-MiniLM-L6-v2")
    if not (out / "index").is_dir():
        images.mkdir(parents=True)
        for row in rows:  # links, never copies, of the shared data
            os.symlink(FLICKR / "images" / row["image"], images / row["image"])
        caps = out / "captions.jsonl"
        caps.write_text("".join(json.dumps({"image": r["image"], "captions": r["captions"][1:]}) + "\n"
                                for r in rows))
        build_index(BuildConfig(images=images, out=out / "index", captions=caps), emb)
    return Retriever(load_index(out / "index"), emb), rows


def pick(user: str, question, knows: np.ndarray, retriever, rng: random.Random) -> int:
    options = list(question.options)
    if question.kind == "yesno":
        return 0 if user != "farthest" else 1
    labels = [o.label for o in options[:-1]]  # "none of these" is never the closest
    if user == "random":
        return rng.randrange(len(options))
    sims = retriever.embedder.embed_texts(labels) @ knows
    return int(np.argmax(sims) if user == "closest" else np.argmin(sims))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--images", type=int, default=1000)
    p.add_argument("--targets", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--style", default="choice", choices=("choice", "yesno", "alternate"))
    p.add_argument("--words", type=int, default=0, help="the description is the first N words of the held-out "
                   "caption (a vague start; the user still knows the whole caption); 0: all of it")
    p.add_argument("--pull", type=float, default=None, help="PlugIRConfig.grounded_pull (default: its default)")
    p.add_argument("--push", type=float, default=None, help="PlugIRConfig.grounded_push")
    p.add_argument("--temperature", type=float, default=None, help="PlugIRConfig.grounded_temperature")
    p.add_argument("--work", type=Path, default=None, help="keep the index here and reuse it (default: a temp dir)")
    args = p.parse_args(argv)
    if not (FLICKR / "captions.jsonl").is_file():
        print(f"Flickr8k not found at {FLICKR}", file=sys.stderr)
        return 1
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.modes.conversation.plugir.config import plugir_config

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        retriever, rows = build(args.work or Path(tmp), args.images)
        build_s = time.perf_counter() - t0
        cfg = plugir_config(questioner="grounded", grounded_style=args.style, grounded_pull=args.pull,
                            grounded_push=args.push, grounded_temperature=args.temperature)
        eng = build_engine(retriever, config=EngineConfig(k=args.k), plugir=cfg)
        targets = rows[:: max(1, len(rows) // args.targets)][: args.targets]
        ranks: dict[str, list[list[int]]] = {u: [] for u in ("none", "closest", "random", "farthest")}
        secs = []
        for i, row in enumerate(targets):
            target, known = row["image"], row["captions"][0]
            desc = " ".join(known.split()[: args.words]) if args.words else known
            knows = retriever.embedder.embed_texts([known])[0]
            for user in ("closest", "random", "farthest"):
                rng = random.Random(i)
                s = eng.new_session()
                t = eng.start(s, desc)
                per = [retriever.rank_of(t.query_row, target)]
                for _ in range(args.rounds):
                    q = s.question
                    if q is None:
                        per.append(per[-1])
                        continue
                    t_click = time.perf_counter()
                    t = eng.answer_choice(s, pick(user, q, knows, retriever, rng))
                    secs.append(time.perf_counter() - t_click)
                    per.append(retriever.rank_of(t.query_row, target))
                ranks[user].append(per)
            ranks["none"].append([ranks["closest"][-1][0]] * (args.rounds + 1))
    print(f"{len(targets)} targets, {len(rows)} Flickr8k images (caption index, MiniLM; index ready in "
          f"{build_s:.0f} s), style {args.style}, pull {cfg.grounded_pull}, push {cfg.grounded_push}, "
          f"temperature {cfg.grounded_temperature}, "
          f"description: {f'first {args.words} words' if args.words else 'a whole held-out caption'}, "
          f"k={args.k}; load average {os.getloadavg()[0]:.1f}")
    print(f"a click round (reshape + retrieve + next question): p50 {np.median(secs) * 1000:.0f} ms\n")
    head = " | ".join(f"round {r}" for r in range(args.rounds + 1))
    print(f"| user | mean rank: {head} | Hits@{args.k} at round {args.rounds} | better / worse than round 0 |")
    print("|---" * (args.rounds + 4) + "|")
    for user, per in ranks.items():
        a = np.array(per, float)
        means = " | ".join(f"{m:.1f}" for m in a.mean(axis=0))
        hits = float(np.mean(a[:, -1] <= args.k))
        better, worse = int(np.sum(a[:, -1] < a[:, 0])), int(np.sum(a[:, -1] > a[:, 0]))
        print(f"| {user} | {means} | {hits:.2f} | {better} / {worse} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
