"""A 50-image synthetic benchmark for the evaluation tests: generated images, four captions each, the
caption hold-out of `queries.make_queries`, and an index of the held-out index captions (fake:32)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from iir_testutils import COLOURS, PLACES, THINGS, make_images

N_IMAGES = 50


@dataclass
class Bench:
    root: Path
    captions_file: Path  # the full captions (JSONL with a split field)
    index_dir: Path
    queries_file: Path
    retriever: object
    queries: list  # list[Query]


def write_full_captions(root: Path, n: int = N_IMAGES) -> Path:
    """n images under root/images and a JSONL of four captions each (all in split "dev")."""
    caps = make_images(root / "images", n, seed=0)
    path = root / "captions_full.jsonl"
    with open(path, "w") as f:
        for rel in sorted(caps):
            i = int(rel.rsplit("img", 1)[1][:3])
            colour, thing, place = COLOURS[i % 8], THINGS[(i // 2) % 8], PLACES[i % 6]
            full = [f"a {colour} {thing} on the {place}", f"the {thing} is {colour} near the {place}",
                    f"a {thing} seen at the {place} number {i}", f"{colour} {thing} and item {i}"]
            f.write(json.dumps({"image": rel, "captions": full, "split": "dev"}) + "\n")
    return path


def build_bench(root: Path, n: int = N_IMAGES, seed: int = 0) -> Bench:
    from interactive_ir.backends import make_embedder
    from interactive_ir.evaluation.queries import make_queries, read_caption_rows, write_index_captions, write_queries
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    full = write_full_captions(root, n)
    held = make_queries(read_caption_rows(full, "dev"), seed=seed)
    idx_caps = write_index_captions(root / "index_captions.jsonl", held.index_captions)
    qfile = write_queries(root / "queries.jsonl", held.queries)
    emb = make_embedder("fake:32")
    build_index(BuildConfig(images=root / "images", out=root / "index", captions=idx_caps), emb)
    retriever = Retriever(load_index(root / "index"), emb)
    return Bench(root, full, root / "index", qfile, retriever, held.queries)
