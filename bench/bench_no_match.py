"""How often does "no close match" speak, for descriptions of pictures in the collection and for others?
Measured on the Flickr8k dev split (issue 26, D7).

A caption index of the 1,000 dev images (one caption each, text embedder all-MiniLM-L6-v2), built as the
offline benchmark of docs/evaluation.md does (`queries --split dev`, then `index`). The score profile is fitted as at build
time (`retrieval/score_profile.py`). In-collection descriptions: each query's description (a held-out caption
of a dev image; never the indexed one). Out-of-collection descriptions: the fixed list OFF below, of things
Flickr8k's photos (people, dogs, outdoor scenes) do not show. Reported, per quantile: the share of each kind
whose best score falls below the profile's cut-off (the note's false alarms and its hits).

Usage: python bench/bench_no_match.py --index runs/f8k/index --queries runs/f8k/queries.jsonl [--n 1000]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OFF = ["a spreadsheet of quarterly sales figures", "a bowl of ramen with chopsticks", "a circuit board close up",
       "the inside of a car engine", "a screenshot of a phone settings menu", "a plate of sushi on a table",
       "a microscope image of cells", "a pie chart in a business report", "a keyboard and a computer mouse",
       "a page of handwritten math equations", "a stack of old books on a shelf", "a cup of coffee with latte art",
       "an x-ray of a broken arm", "a violin lying on sheet music", "the moon through a telescope",
       "a bathroom sink with a toothbrush", "a map of the london underground", "a box of chocolates",
       "a server rack in a data centre", "a close up of a wristwatch", "a scanned passport page",
       "a bowl of fruit on a kitchen counter", "a pair of glasses on a newspaper", "a satellite photo of a city",
       "a vacuum cleaner in a living room", "a logo on a white background", "a jar of honey and a spoon",
       "an electric guitar amplifier", "a chess board mid game", "a birthday cake with candles"]


def best_scores(retriever, texts, batch: int = 256) -> np.ndarray:
    out = []
    for a in range(0, len(texts), batch):
        vecs = retriever.encode_texts(texts[a : a + batch])
        for v in vecs:
            s, _ = retriever.search_rows(retriever.text_query_row(v), 1)
            out.append(float(s[0]))
    return np.asarray(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--n", type=int, default=1000, help="in-collection descriptions used")
    args = ap.parse_args(argv)
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.score_profile import cutoff_of, fit_score_profile

    idx = load_index(args.index)
    r = Retriever(idx, make_embedder(idx.embedder_spec))
    profile = fit_score_profile(r)
    queries = [json.loads(line) for line in args.queries.read_text().splitlines() if line.strip()][: args.n]
    inside = best_scores(r, [q["description"] for q in queries])
    outside = best_scores(r, OFF)
    print(f"profile ({profile['samples']} captions): median best {profile['quantiles']['0.5']:.3f}")
    print(f"in-collection descriptions: n={len(inside)}, median best {np.median(inside):.3f}; "
          f"out-of-collection: n={len(outside)}, median best {np.median(outside):.3f}")
    print("quantile  cutoff  in-collection flagged  out-of-collection flagged")
    for q in (0.01, 0.02, 0.05, 0.1, 0.25):
        c = cutoff_of(profile, q)
        print(f"{q:8.2f}  {c:6.3f}  {np.mean(inside < c):21.1%}  {np.mean(outside < c):25.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
