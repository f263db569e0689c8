"""The SQ8-pruned exact re-rank of approximate kinds (issue 26, deliverable 10): same top-k as exact kNN,
fewer fp16 rows read, old index folders (no codes) still load and search."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_index_kinds import DIM, N, exact_top, write_index

from interactive_ir.backends import make_embedder
from interactive_ir.errors import IndexLoadError
from interactive_ir.index import load_index
from interactive_ir.index import rerank as R
from interactive_ir.retrieval.retriever import Retriever


@pytest.fixture(scope="module")
def ivf(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(R.CODES_ENV, "1")  # the codes are read at load when asked for
        return write_index(tmp_path_factory.mktemp("ivf") / "idx", "ivf-pq")


def _queries(img, count=20, seed=3):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q = img[rng.integers(N)].astype(np.float32) + 0.3 * rng.standard_normal(DIM).astype(np.float32)
        yield q / np.linalg.norm(q)


def test_ivf_pq_writes_codes_and_the_other_kinds_do_not(tmp_path, ivf, monkeypatch):
    monkeypatch.setenv(R.CODES_ENV, "1")
    r, _, _ = ivf
    assert R.CODES in r.index.manifest["files"]
    sq = r.index.rerank_codes.index
    assert (sq.ntotal, sq.d, sq.code_size) == (N, 2 * DIM, 2 * DIM)  # one byte per dimension, in RAM
    for kind in ("exact", "hnsw"):
        other, _, _ = write_index(tmp_path / kind, kind, n=1200)
        assert R.CODES not in other.index.manifest["files"] and other.index.rerank_codes is None


def test_exact_top_equals_numpy_float32(ivf):
    r, img, cap = ivf
    rows = np.sort(np.random.default_rng(2).permutation(N)[:300])
    for q in _queries(img, 3):
        qrow = r.text_query_row(q, 0.15)
        scores, top = R.exact_top(qrow, rows, 40, [r.index.image_vectors, r.index.caption_vectors])
        want = r.index.row_vectors(rows) @ qrow
        order = np.argsort(-want, kind="stable")[:40]
        np.testing.assert_allclose(scores, want[order], rtol=0, atol=1e-5)
        assert len(set(top.tolist()) ^ set(rows[order].tolist())) <= 2  # at most a tie at the edge differs


def test_pruned_top_k_equals_exact_knn_and_scores_only_the_shortlist(ivf, monkeypatch):
    r, img, cap = ivf
    scored = []
    full = R.exact_top
    monkeypatch.setattr(R, "exact_top", lambda q, rows, k, parts: scored.append(len(rows)) or full(q, rows, k, parts))
    hits = total = 0
    for q in _queries(img):
        qrow = r.text_query_row(q, 0.15)
        first, _ = exact_top(img, cap, qrow, 10, [])
        want, s = exact_top(img, cap, qrow, 20, first)
        scores, rows = r.search_rows(qrow, 20, exclude=[r.index.ids[i] for i in first])
        np.testing.assert_allclose(scores, s[rows], rtol=0, atol=1e-5)  # every score shown is exact
        assert np.all(np.diff(scores) <= 0) and not set(rows.tolist()) & set(first)
        hits += len(set(rows.tolist()) & set(want))
        total += 20
    assert hits / total >= 0.97
    cands = max(20 * r.index.params.rerank_factor, r.index.params.rerank_min)
    assert scored and set(scored) == {R.shortlist(20)} and R.shortlist(20) < cands  # the shortlist, not all


def test_pruning_keeps_the_full_re_rank_result(ivf, monkeypatch):
    """With and without the SQ8 codes, the same top-k (the codes only save work)."""
    r, img, _ = ivf
    same = total = 0
    for q in _queries(img, seed=5):
        qrow = r.text_query_row(q, 0.15)
        s1, r1 = r.search_rows(qrow, 50)
        with monkeypatch.context() as m:
            m.setitem(r.index.__dict__, "rerank_codes", None)
            s0, r0 = r.search_rows(qrow, 50)
        same += len(set(r1.tolist()) & set(r0.tolist()))
        total += 50
        np.testing.assert_allclose(s1[:10], s0[:10], atol=1e-6)
    assert same / total >= 0.99


def test_codes_are_read_only_when_asked_for(monkeypatch, ivf):
    monkeypatch.delenv(R.CODES_ENV, raising=False)
    assert load_index(ivf[0].index.path).rerank_codes is None  # the default: no RAM for them
    monkeypatch.setenv(R.CODES_ENV, "0")
    assert load_index(ivf[0].index.path).rerank_codes is None
    monkeypatch.setenv(R.CODES_ENV, "1")
    assert load_index(ivf[0].index.path).rerank_codes is not None


def test_an_index_without_codes_still_loads_and_searches_exactly(tmp_path, monkeypatch):
    monkeypatch.setenv(R.CODES_ENV, "1")
    r, img, cap = write_index(tmp_path / "old", "ivf-pq")
    folder = r.index.path
    _ = r.index.rerank_codes.index
    m = json.loads((folder / "manifest.json").read_text())
    (folder / R.CODES).unlink()  # as written before the codes existed
    del m["files"][R.CODES]
    (folder / "manifest.json").write_text(json.dumps(m))
    old = Retriever(load_index(folder), make_embedder(f"fake:{DIM}"))
    assert old.index.rerank_codes is None
    for q in _queries(img, 5):
        qrow = old.text_query_row(q, 0.15)
        scores, rows = old.search_rows(qrow, 30)
        _, rows_new = r.search_rows(qrow, 30)
        _, s = exact_top(img, cap, qrow, 30, [])
        np.testing.assert_allclose(scores, s[rows], atol=1e-5)
        assert len(set(rows.tolist()) & set(rows_new.tolist())) >= 29


def test_codes_stay_readable_when_the_folder_is_replaced_after_load(tmp_path, monkeypatch):
    monkeypatch.setenv(R.CODES_ENV, "1")
    r, img, _ = write_index(tmp_path / "re", "ivf-pq")
    idx = load_index(r.index.path)
    (r.index.path / R.CODES).unlink()  # a rebuild renamed the folder away and deleted it
    assert idx.rerank_codes.index.ntotal == N


def test_a_truncated_codes_file_is_refused_at_load(tmp_path):
    r, _, _ = write_index(tmp_path / "bad", "ivf-pq", n=1200)
    f = r.index.path / R.CODES
    f.write_bytes(f.read_bytes()[:-100])
    with pytest.raises(IndexLoadError, match="rerank_sq8"):
        load_index(r.index.path)


def test_a_loaded_ivf_pq_index_starts_no_prefetch_threads(ivf):
    """faiss's memory-mapped lists start 32 threads per search by default (5x the search on cached lists)."""
    import faiss

    index = load_index(ivf[0].index.path)  # held: the lists belong to it
    lists = faiss.downcast_InvertedLists(index.faiss_index.invlists)
    assert isinstance(lists, faiss.OnDiskInvertedLists) and lists.prefetch_nthread == 0
