"""Where to fold near-duplicates (issue 26, D6): the cosine of near-identical vs distinct results.

On an index: "distinct" pairs are each image and its nearest other image in the collection; "near-identical"
pairs are each image and a copy of it changed the way a burst or a re-save changes it. On a caption index
(Flickr8k dev, all-MiniLM-L6-v2, built as docs/evaluation.md's offline benchmark does) the copy is the indexed caption
re-written trivially (lower case, no final full stop, "A" for "The"); on an image index (needs the vision
embedder's weights) it is the image re-saved as JPEG quality 70 and cropped by 4% on each side. Reported: each
distribution's quantiles and the share of each kind at or above a few cut-offs (folded).

Usage: python bench/bench_duplicates.py --index runs/f8k/index [--n 1000]
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def retouch(caption: str) -> str:
    c = caption.strip().rstrip(" .").lower()
    return ("the " + c[2:]) if c.startswith("a ") else ("a " + c[4:]) if c.startswith("the ") else c


def copy_of(path):
    from PIL import Image

    im = Image.open(path).convert("RGB")
    w, h = im.size
    im = im.crop((int(w * .04), int(h * .04), int(w * .96), int(h * .96)))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=70)
    return Image.open(io.BytesIO(buf.getvalue()))


def unit(v):
    v = np.asarray(v, np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--n", type=int, default=1000, help="images sampled")
    args = ap.parse_args(argv)
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index

    idx = load_index(args.index)
    emb = make_embedder(idx.embedder_spec)
    rows = np.sort(np.random.default_rng(0).choice(len(idx), min(args.n, len(idx)), replace=False))
    own = unit(idx.vectors(rows, "image"))
    all_v = unit(idx.vectors(np.arange(len(idx)), "image"))
    sims = own @ all_v.T
    sims[np.arange(len(rows)), rows] = -1
    distinct = sims.max(1)
    if idx.caption_only:
        copies = unit(emb.embed_texts([retouch(idx.records[int(r)].caption) for r in rows]))
    else:
        copies = unit(emb.embed_images([copy_of(idx.image_path(int(r))) for r in rows]))
    near = np.einsum("ij,ij->i", own, copies)
    qs = (0.01, 0.05, 0.5, 0.95, 0.99)
    print(f"{len(rows)} images of {args.index} ({'captions' if idx.caption_only else 'images'}, {idx.embedder_spec})")
    print("near-identical quantiles:", " ".join(f"{q:g}:{np.quantile(near, q):.3f}" for q in qs))
    print("distinct (nearest other) quantiles:", " ".join(f"{q:g}:{np.quantile(distinct, q):.3f}" for q in qs))
    print("cut-off  near-identical folded  distinct folded")
    for c in (0.85, 0.9, 0.93, 0.95, 0.97, 0.99):
        print(f"{c:7.2f}  {np.mean(near >= c):21.1%}  {np.mean(distinct >= c):15.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
