"""How should a NOT term (`dogs -leash`) lower scores? Measured on the Flickr8k dev split (issue 26, D2).

A caption index of the 1,000 dev images (each image's first caption is its indexed text; text embedder
all-MiniLM-L6-v2). Per image: the description is its second caption; the ten results of the plain search
are "seen"; the simulated person then adds one NOT term: the word that occurs in most of the shown
non-target results' captions (what those pictures show) and in none of the target's held-out captions
(2nd-5th: what the person knows of the picture in mind; never the index caption). Queries whose target is
already first, or where no such word exists, are left out. Each NOT method then searches `description
-word`; reported: mean reciprocal rank of the target and recall@10, against the plain search.

Usage: python bench/bench_not_terms.py [--n 1000] [--embedder text:all-MiniLM-L6-v2]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DATA = next((p / "shared" / "data" / "flickr8k" for p in (ROOT.parent, ROOT.parent.parent)
             if (p / "shared" / "data" / "flickr8k").is_dir()), ROOT.parent / "shared" / "data" / "flickr8k")
STOP = set("a an the of on in at to and with is are his her its their two three one some while near for from "
           "by into out up down over under through other another people person man woman men women".split())
METHODS = [("plain", None, 0.0), ("subtract", "subtract", 0.25), ("subtract", "subtract", 0.5),
           ("subtract", "subtract", 1.0), ("penalty", "penalty", 0.25), ("penalty", "penalty", 0.5),
           ("penalty", "penalty", 1.0), ("filter", "filter", 0.0)]


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2 and w not in STOP}


def build(tmp: Path, rows: list[dict], embedder):
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index

    (tmp / "list.txt").write_text("\n".join(r["image"] for r in rows))
    with open(tmp / "caps.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps({"image": r["image"], "caption": r["captions"][0]}) + "\n")
    build_index(BuildConfig(images=DATA / "images", out=tmp / "index", captions=tmp / "caps.jsonl",
                            image_list=tmp / "list.txt", kind="exact"), embedder)
    return load_index(tmp / "index")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--embedder", default="text:all-MiniLM-L6-v2")
    args = ap.parse_args()
    from interactive_ir.backends import make_embedder
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig

    rows = [json.loads(x) for x in (DATA / "captions.jsonl").read_text().splitlines()]
    rows = sorted([r for r in rows if r.get("split") == "dev"], key=lambda r: r["image"])[: args.n]
    emb = make_embedder(args.embedder)
    with tempfile.TemporaryDirectory() as tmp:
        index = build(Path(tmp), rows, emb)
        base = Retriever(index, emb, SearchConfig(k=10))
        index_caps = {index.row_of[r["image"]]: r["captions"][0] for r in rows}
        cases = []
        for r in rows:
            target = index.row_of[r["image"]]
            qrow = base.text_query_row(base.encode_text(r["captions"][1]))
            _, shown = base.search_rows(qrow, 10)
            if len(shown) and shown[0] == target:
                continue
            known = set().union(*(words(c) for c in r["captions"][1:]))
            counts = Counter(w for s in shown if s != target for w in words(index_caps[int(s)]) - known)
            if counts:
                cases.append((target, qrow, counts.most_common(1)[0][0]))
        print(f"{len(cases)} of {len(rows)} dev queries get a NOT term (target not first, a word to exclude)")
        results = {}
        for name, method, w in METHODS:
            r = Retriever(index, emb, SearchConfig(k=10, not_method=method or "penalty", not_weight=w))
            rr, hit10, t0 = [], [], time.perf_counter()
            for target, qrow, word in cases:
                nots = r.not_rows([word]) if method else None
                scores = r.all_scores(qrow)
                if method is None:
                    rank = int(np.sum(scores > scores[target])) + 1
                else:
                    _, top = r.search_rows(qrow, 200, nots=nots)
                    pos = np.flatnonzero(top == target)
                    rank = int(pos[0]) + 1 if len(pos) else 201
                rr.append(1.0 / rank)
                hit10.append(rank <= 10)
            ms = 1000 * (time.perf_counter() - t0) / max(1, len(cases))
            key = f"{name} w={w:g}" if method in ("subtract", "penalty") else name
            results[key] = (float(np.mean(rr)), float(np.mean(hit10)), ms)
            print(f"{key:16s} MRR {np.mean(rr):.3f}  R@10 {np.mean(hit10):.3f}  {ms:.1f} ms/query")
    print(json.dumps({k: {"mrr": round(a, 4), "r10": round(b, 4)} for k, (a, b, _) in results.items()}))


if __name__ == "__main__":
    main()
