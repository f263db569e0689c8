"""Is "no close match" right: false alarms where the described image is present and first, hits where it was
removed? Measured on the Flickr8k dev split (issue 38, D5).

A caption index of the 1,000 dev images (one caption each, text embedder all-MiniLM-L6-v2), built as the
offline benchmark of docs/evaluation.md does (`queries --split dev`, then `index`, which stores the calibration:
`retrieval/score_profile.py`). Each query's description is a held-out caption of a dev image (never the indexed
one, and not what the calibration searched). Present: searched over the whole index; among those whose image
comes first, the share the note flags are false alarms. Removed: the same description with its image left out
of the search; the share flagged are hits. Also a fixed list OFF of things Flickr8k's photos do not show.

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


def verdicts(r, profile, texts, rows=None, quantile: float = 0.05):
    """(weak, first) per description: the note's verdict, and whether its image (`rows`) came first."""
    from interactive_ir.retrieval.score_profile import STANDOUT_K, close_match

    weak, first = [], []
    for i, v in enumerate(r.encode_texts(texts)):
        q = r.text_query_row(v)
        ex = None if rows is None or rows[i] is None else np.array([rows[i]], np.int64)
        scores, found = r.search_rows(q, STANDOUT_K, exclude_rows=ex)
        cm = close_match(profile, scores, r.default_tau, quantile)
        weak.append(bool(cm and cm.weak))
        first.append(rows is not None and rows[i] is not None and int(found[0]) == rows[i])
    return np.asarray(weak), np.asarray(first)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--n", type=int, default=1000, help="in-collection descriptions used")
    args = ap.parse_args(argv)
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.score_profile import PROFILE_KEY, fit_score_profile

    idx = load_index(args.index)
    r = Retriever(idx, make_embedder(idx.embedder_spec))
    profile = idx.manifest.get(PROFILE_KEY)
    if not isinstance(profile, dict) or profile.get("version") != 2:
        profile = fit_score_profile(r)
    print(f"calibration: {json.dumps({k: profile[k] for k in ('samples', 'false_alarm', 'absent_hit')})}")
    queries = [json.loads(line) for line in args.queries.read_text().splitlines() if line.strip()][: args.n]
    rows = [idx.row_of.get(q["target"]) for q in queries]
    keep = [i for i, row in enumerate(rows) if row is not None]
    texts, rows = [queries[i]["description"] for i in keep], [int(rows[i]) for i in keep]
    weak_p, _ = verdicts(r, profile, texts, [None] * len(texts))
    first = np.asarray([int(r.search_rows(r.text_query_row(v), 1)[1][0]) == row
                        for v, row in zip(r.encode_texts(texts), rows)])
    weak_a, _ = verdicts(r, profile, texts, rows)
    weak_off, _ = verdicts(r, profile, OFF)
    print(f"descriptions: {len(texts)}; image first: {first.sum()}")
    print(f"false alarms where the image is present and first: {weak_p[first].mean():.1%} ({weak_p[first].sum()}"
          f"/{first.sum()}); flagged where present at all: {weak_p.mean():.1%}")
    print(f"hits where the image was removed: {weak_a.mean():.1%} ({weak_a.sum()}/{len(weak_a)})")
    print(f"hits on {len(OFF)} descriptions of things the photos do not show: {weak_off.mean():.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
