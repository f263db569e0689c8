"""Retrieval equals exact kNN on tiny seeded indices: text, image, caption, fused, exclusions."""

from __future__ import annotations

import numpy as np
import pytest

from interactive_ir.errors import BadInputError, IndexLoadError
from interactive_ir.retrieval.retriever import Retriever, SearchConfig


def exact(retriever, image_q, caption_q, k, exclude=()):
    """Reference: brute force over float32 copies of the stored fp16 vectors."""
    idx = retriever.index
    img = np.asarray(idx.image_vectors, np.float32)
    s = img @ image_q if image_q is not None else np.zeros(len(idx))
    if caption_q is not None:
        s = s + np.asarray(idx.caption_vectors, np.float32) @ caption_q
    order = [int(i) for i in np.argsort(-s, kind="stable") if idx.ids[i] not in set(exclude)]
    return [idx.ids[i] for i in order[:k]], s


def test_text_search_is_fused_exact_knn(tiny_index):
    r, ids, caps = tiny_index
    q = r.encode_text("a red dog on the beach")
    tau = r.config.tau
    want, scores = exact(r, (1 - tau) * q, tau * q, 5)
    hits = r.search_text("a red dog on the beach", k=5)
    assert [h.id for h in hits] == want
    for h in hits:
        assert h.score == pytest.approx(scores[r.index.row_of[h.id]], abs=1e-4)
        assert h.caption == caps[h.id][0]


@pytest.mark.parametrize("tau", [0.0, 0.5, 1.0])
def test_fusion_weight(tiny_index, tau):
    r, _, _ = tiny_index
    q = r.encode_text("green cat in the park")
    want, _ = exact(r, (1 - tau) * q, tau * q, 7)
    assert [h.id for h in r.search_text("green cat in the park", k=7, tau=tau)] == want


def test_caption_only_and_image_search(tiny_index):
    r, ids, _ = tiny_index
    q = r.encode_text("boat near a river")
    assert [h.id for h in r.search_caption("boat near a river", k=4)] == exact(r, None, q, 4)[0]
    v = r.row_vector(r.index.row_of[ids[3]])
    want, _ = exact(r, v, None, 4)
    got = [h.id for h in r.search_image(ids[3], k=4)]
    assert got == want and got[0] == ids[3]


def test_image_query_by_path_matches_indexed_vector(tiny_index, tmp_path):
    r, ids, _ = tiny_index
    hits = r.search_image(str(tmp_path / "images" / ids[5]), k=1)
    assert hits[0].id == ids[5]


def test_exclude_removes_shown_and_keeps_order(tiny_index):
    r, _, _ = tiny_index
    first = [h.id for h in r.search_text("yellow horse", k=6)]
    q = r.encode_text("yellow horse")
    tau = r.config.tau
    want, _ = exact(r, (1 - tau) * q, tau * q, 6, exclude=first[:3])
    got = [h.id for h in r.search_text("yellow horse", k=6, exclude=first[:3])]
    assert got == want and not set(got) & set(first[:3])


def test_exclude_everything_and_k_larger_than_index(tiny_index):
    r, ids, _ = tiny_index
    assert r.search_text("dog", k=5, exclude=ids) == []
    assert len(r.search_text("dog", k=1000)) == len(ids)


def test_rank_of_agrees_with_search(tiny_index):
    r, _, _ = tiny_index
    row = r.text_query_row(r.encode_text("white bird in the snow"))
    hits = r.search_row(row, k=len(r.index))
    for pos, h in enumerate(hits[:5], 1):
        assert r.rank_of(row, h.id) == pos


def test_torch_search_matches_faiss(tiny_index, monkeypatch):
    pytest.importorskip("torch")
    r, ids, _ = tiny_index
    faiss_hits = [h.id for h in r.search_text("black car on the street", k=8, exclude=ids[:2])]
    monkeypatch.setenv("IIR_SEARCH_DEVICE", "torch")
    t = Retriever(r.index, r.embedder, SearchConfig())
    assert [h.id for h in t.search_text("black car on the street", k=8, exclude=ids[:2])] == faiss_hits


def test_torch_path_ranks_without_a_host_float32_copy(tiny_index, monkeypatch):
    pytest.importorskip("torch")
    r, ids, _ = tiny_index
    monkeypatch.setenv("IIR_SEARCH_DEVICE", "torch")
    t = Retriever(r.index, r.embedder, SearchConfig())
    row = t.text_query_row(t.encode_text("white bird in the snow"))
    exact = np.concatenate([np.asarray(r.index.image_vectors, np.float32),
                            np.asarray(r.index.caption_vectors, np.float32)], axis=1) @ row
    np.testing.assert_allclose(t.all_scores(row), exact, rtol=1e-5, atol=1e-6)
    assert [t.rank_of(row, h.id) for h in t.search_row(row, k=5)] == [1, 2, 3, 4, 5]
    assert "_matrix" not in vars(t)  # the GPU path keeps only its device matrix


@pytest.mark.parametrize("text,msg", [("", "empty"), ("   ", "empty"), ("x" * 10_000, "10,000 characters")])
def test_bad_text_queries(tiny_index, text, msg):
    r, _, _ = tiny_index
    with pytest.raises(BadInputError, match=msg):
        r.search_text(text)


def test_non_image_query(tiny_index, tmp_path):
    r, _, _ = tiny_index
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    with pytest.raises(BadInputError, match="not a readable image"):
        r.search_image(str(p))


def test_embedder_mismatch_is_refused(tiny_index):
    from interactive_ir.backends import make_embedder

    r, _, _ = tiny_index
    with pytest.raises(IndexLoadError, match="built with fake:32"):
        Retriever(r.index, make_embedder("fake:16"))


def test_huge_upload_gets_a_size_message(tiny_index, tmp_path):
    """100 megapixels: PIL's own bomb guard fires first; the message must still say it is too large."""
    from PIL import Image

    p = tmp_path / "huge.png"
    Image.new("L", (10_000, 10_000)).save(p)
    r, _, _ = tiny_index
    with pytest.raises(BadInputError, match="MP limit: downscale"):
        r.search_image(str(p))
