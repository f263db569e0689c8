"""Does an ivf-pq index's tuned nprobe hold for queries unlike its calibration queries? (issue 16)

Two checks, each printing recall@100 (the retriever's pipeline: IVF candidates, exact re-rank) by nprobe
against exact kNN, beside the nprobe the build chose:

- `--index DIR --noise 1,2,3,4`: on any ivf-pq index, queries made from 32 stored rows plus isotropic noise of
  that many times the row's norm (farther queries need more lists).
- `--flickr W`: real embeddings and real text queries. Rows: all-MiniLM-L6-v2 embeddings of captions 1-4 of
  every Flickr8k image (28,000 rows, built with `index --vectors --kind ivf-pq`, so tuned as any build is);
  queries: the 5th caption of 1,000 images (text the index never saw); then `index tune --queries` on the 5th
  caption of 500 other images, and the held-out recall at what it chose.

The check can fail: a calibration easier than the real queries shows as held-out recall under 0.95 at the
tuned nprobe.

Usage: python bench/bench_tune.py --index DIR [--noise 1,2,3,4]
       python bench/bench_tune.py --flickr W [--data ../shared/data/flickr8k/captions.jsonl]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def recall_table(folder: Path, queries: np.ndarray, ladder=(4, 8, 16, 32, 64, 128, 256)) -> dict[int, float]:
    from interactive_ir.index import load_index
    from interactive_ir.index.folder_rows import FolderRows
    from interactive_ir.index.tune import exact_topk, reranked_recall

    index, src = load_index(folder), FolderRows(folder)
    truth = exact_topk(src.chunk, src.n, queries, 100)
    return {p: reranked_recall(index.faiss_index, index.params, src, queries, truth, 100, p, index.params.rerank_factor)
            for p in ladder if p <= index.params.nlist}


def tuned(folder: Path) -> int:
    return json.loads((folder / "manifest.json").read_text())["index_params"]["nprobe"]


def noise_check(folder: Path, scales: list[float]) -> None:
    from interactive_ir.index.folder_rows import FolderRows

    src, rng = FolderRows(folder), np.random.default_rng(7)
    print(f"{folder}: tuned nprobe {tuned(folder)}")
    for scale in scales:
        x = src.rows(rng.choice(src.n, 32, replace=False))
        noise = rng.standard_normal(x.shape).astype(np.float32)
        noise *= scale * np.linalg.norm(x, axis=1, keepdims=True) / np.linalg.norm(noise, axis=1, keepdims=True)
        q = x + noise
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        cos = float(np.mean(np.sum(q * x, 1) / np.linalg.norm(x, axis=1)))
        t = time.perf_counter()
        table = recall_table(folder, q)
        print(f"| noise {scale}x (cosine {cos:.2f}) | " + " | ".join(f"{p}: {r:.3f}" for p, r in table.items())
              + f" | {time.perf_counter() - t:.0f} s |", flush=True)


def flickr_check(work: Path, data: Path) -> None:
    from interactive_ir.backends import make_embedder

    work.mkdir(parents=True, exist_ok=True)
    recs = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    recs = [r for r in recs if len(r["captions"]) >= 5]
    if not (work / "rows.npy").exists():
        emb = make_embedder("text:all-MiniLM-L6-v2", batch_size=64, show_progress=False)
        np.save(work / "rows.npy", np.asarray(emb.embed_texts([c for r in recs for c in r["captions"][:4]]), np.float32))
        (work / "ids.txt").write_text("".join(f"{r['image']}#{k}\n" for r in recs for k in range(4)))
        q = np.asarray(emb.embed_texts([r["captions"][4] for r in recs[:1500]]), np.float32)
        np.save(work / "q_eval.npy", q[:1000])
        np.save(work / "q_tune.npy", q[1000:1500])
    out, run = work / "idx", [sys.executable, "-m", "interactive_ir", "index"]
    if not (out / "manifest.json").exists():
        subprocess.run(run + ["--vectors", str(work / "rows.npy"), "--ids", str(work / "ids.txt"), "--embedder",
                              "fake:384", "--kind", "ivf-pq", "--out", str(out)], check=True, cwd=ROOT)
    q = np.load(work / "q_eval.npy")
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    built = tuned(out)
    table = recall_table(out, q)
    print(f"rows {np.load(work / 'rows.npy', mmap_mode='r').shape[0]:,}; nprobe tuned at build {built}")
    print("| nprobe | " + " | ".join(str(p) for p in table) + " |")
    print("|---|" + "---|" * len(table))
    print("| recall@100, 1,000 held-out real queries | " + " | ".join(f"{r:.3f}" for r in table.values()) + " |")
    subprocess.run(run + ["tune", str(out), "--queries", str(work / "q_tune.npy")], check=True, cwd=ROOT)
    again = tuned(out)
    held = recall_table(out, q, (again,))[again]
    print(f"index tune --queries (500 other real queries) chose nprobe {again}: held-out recall {held:.3f}; "
          f"at the build's choice {table.get(built, float('nan')):.3f} (goal >= 0.95)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, help="an ivf-pq index folder: the noise check")
    ap.add_argument("--noise", default="1,2,3,4", help="noise norms relative to the row's, comma-separated")
    ap.add_argument("--flickr", type=Path, metavar="W", help="work folder of the real-query check")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "flickr8k" / "captions.jsonl")
    a = ap.parse_args(argv)
    if not (a.index or a.flickr):
        ap.error("give --index DIR or --flickr W")
    if a.index:
        noise_check(a.index, [float(x) for x in a.noise.split(",")])
    if a.flickr:
        flickr_check(a.flickr, a.data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
