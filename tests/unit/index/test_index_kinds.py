"""Index kinds (exact, ivf-pq, hnsw, auto) against exact kNN on a tiny seeded clustered collection."""

from __future__ import annotations

import json

import numpy as np
import pytest

from interactive_ir.backends import make_embedder
from interactive_ir.errors import BadInputError
from interactive_ir.index import kinds as K
from interactive_ir.index import load_index
from interactive_ir.index.metadata import IndexRecord
from interactive_ir.index.writer import IndexWriter
from interactive_ir.retrieval.retriever import Retriever

N, DIM = 2000, 32


def clustered(n: int, dim: int, seed: int, centers: int = 20) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, dim)).astype(np.float32)
    x = c[rng.integers(0, centers, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)


def write_index(folder, kind: str, n: int = N, dim: int = DIM, captions: bool = True):
    img, cap = clustered(n, dim, 1), clustered(n, dim, 2)
    w = IndexWriter(folder, dim, caption_vectors=captions)
    for a in range(0, n, 512):
        recs = [IndexRecord(f"img{i:05d}.png", [f"caption {i}"]) for i in range(a, min(n, a + 512))]
        w.add(recs, img[a : a + 512], cap[a : a + 512] if captions else None)
    w.finish(kind, {"embedder": f"fake:{dim}", "has_vision": True, "image_root": "."})
    return Retriever(load_index(folder), make_embedder(f"fake:{dim}")), img, cap


@pytest.fixture(scope="module", params=["exact", "ivf-pq", "hnsw"])
def kind_index(request, tmp_path_factory):
    return request.param, *write_index(tmp_path_factory.mktemp(request.param) / "idx", request.param)


def exact_top(img, cap, qrow, k, exclude_rows):
    s = img.astype(np.float32) @ qrow[:DIM] + cap.astype(np.float32) @ qrow[DIM:]
    s[list(exclude_rows)] = -np.inf
    return list(np.argsort(-s, kind="stable")[:k]), s


@pytest.mark.parametrize("tau", [0.0, 0.15, 1.0])
def test_reranked_top_k_matches_exact_knn_with_exclusions(kind_index, tau):
    kind, r, img, cap = kind_index
    assert r.index.kind == kind and json.loads((r.index.path / "manifest.json").read_text())["kind"] == kind
    rng = np.random.default_rng(7)
    recalls = []
    for _ in range(20):
        q = img[rng.integers(N)].astype(np.float32) + 0.3 * rng.standard_normal(DIM).astype(np.float32)
        qrow = r.text_query_row(q / np.linalg.norm(q), tau)
        first, _ = exact_top(img, cap, qrow, 50, [])
        excluded = [r.index.ids[i] for i in first]  # the 50 best were already shown
        want, s = exact_top(img, cap, qrow, 100, first)
        scores, rows = r.search_rows(qrow, 100, exclude=excluded)
        assert not set(rows.tolist()) & set(first)
        np.testing.assert_allclose(scores, s[rows], rtol=1e-4, atol=1e-4)  # every shown score is exact
        assert list(scores) == sorted(scores, reverse=True)
        recalls.append(len(set(rows.tolist()) & set(want)) / 100)
    assert np.mean(recalls) >= (1.0 if kind == "exact" else 0.9), recalls


def test_every_mode_works_on_every_kind(kind_index):
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine

    kind, r, img, cap = kind_index
    eng = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=6))
    s = eng.new_session()
    t0 = eng.search_text(s, "a red dog on the beach")
    t1 = eng.feedback(s, [t0.shown[0]], [t0.shown[1]], method="rocchio")
    assert len(t1.shown) == 6 and not set(t1.shown) & set(t0.shown)
    s2 = eng.new_session()
    t2 = eng.start(s2, "a red dog on the beach")
    assert len(t2.shown) == 6
    hits = r.search_image(t0.shown[0], k=3)
    assert hits[0].id == t0.shown[0] and hits[0].path.endswith(t0.shown[0])


def test_approximate_kinds_refuse_a_tiny_collection(tmp_path):
    for kind in ("ivf-pq", "hnsw"):
        with pytest.raises(BadInputError, match="needs at least 1,000 images.*has 50: use --kind exact"):
            K.choose_params(kind, 50, 512)
    from iir_testutils import make_images

    from interactive_ir.index.builder import BuildConfig, build_index

    make_images(tmp_path / "images", 5)
    with pytest.raises(BadInputError, match="--kind exact"):
        build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "idx", kind="ivf-pq"),
                    make_embedder("fake:8"))
    assert not (tmp_path / "idx").exists() and not list(tmp_path.glob(".idx*"))


def test_auto_is_exact_up_to_the_documented_size_then_ivf_pq():
    assert K.choose_params("auto", K.AUTO_EXACT_MAX, 512).kind == "exact"
    big = K.choose_params("auto", 10_000_000, 512)
    assert big.kind == "ivf-pq" and 4096 <= big.nlist <= 16384 and 512 % big.pq_m == 0
    assert K.choose_params("auto", 10_000_000, 512).pq_m == 64  # 8 dimensions per sub-quantizer
    from interactive_ir.retrieval.search_device import gpu_pq_ok

    for width in (384, 512, 768, 1024, 1536, 2048):  # every size a GPU IVFPQ accepts (1024: 64, not 128)
        m = K.choose_params("auto", 10_000_000, width).pq_m
        assert gpu_pq_ok(m, width) and width // m >= 8, (width, m)
    with pytest.raises(BadInputError, match="unknown index kind"):
        K.choose_params("flat", 10, 8)


def test_cli_kind_is_recorded_and_unknown_kind_is_one_line(tmp_path, capsys):
    from iir_testutils import make_images

    from interactive_ir.cli import main

    make_images(tmp_path / "images", 4)
    assert main(["index", "--images", str(tmp_path / "images"), "--out", str(tmp_path / "idx"),
                 "--embedder", "fake:8", "--kind", "exact"]) == 0
    assert json.loads((tmp_path / "idx" / "manifest.json").read_text())["kind"] == "exact"
    assert main(["index", "--images", str(tmp_path / "images"), "--out", str(tmp_path / "i2"),
                 "--embedder", "fake:8", "--kind", "hnsw"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--kind exact" in err and not (tmp_path / "i2").exists()


def test_exclusions_are_looked_up_in_one_batch_and_remembered(kind_index):
    """Excluded ids map to their rows (unknown ids and non-strings skipped), whatever the order or repeats;
    a second search with the same shown ids asks SQLite nothing new."""
    _, r, _, _ = kind_index
    meta = r.index.meta
    ids = [r.index.ids[i] for i in (5, 1999, 0, 5, 700)]
    want = np.array([0, 5, 700, 1999])
    np.testing.assert_array_equal(r.exclude_rows(ids + ["nope.png", 3]), want)
    assert meta.rows_many(["img00005.png", "missing.png"]) == {"img00005.png": 5}
    assert r.index.row_of.get("img00700.png") == 700 and r.index.row_of.get("missing.png") is None
    calls = []
    db = meta._db()
    db.set_trace_callback(calls.append)
    try:
        np.testing.assert_array_equal(r.exclude_rows(reversed(ids)), want)
    finally:
        db.set_trace_callback(None)
    assert calls == []  # remembered from the first lookup
    assert len(r.exclude_rows([])) == 0


def test_shown_images_are_excluded_without_a_lookup(kind_index):
    """Ids read for rows about to be shown (hits, records, ids) come back as exclusions with no SQL query."""
    _, r, img, _ = kind_index
    q = r.text_query_row(img[3].astype(np.float32), 0.0)
    scores, rows = r.search_rows(q, 12)
    shown = [h.id for h in r.hits(scores, rows)] + [r.index.ids[1234]]
    calls = []
    db = r.index.meta._db()
    db.set_trace_callback(calls.append)
    try:
        ex = r.exclude_rows(shown)
    finally:
        db.set_trace_callback(None)
    np.testing.assert_array_equal(ex, np.sort(np.append(rows, 1234)))
    assert calls == []


def test_opening_a_large_index_reads_no_full_table(tmp_path):
    """Past the load-time id scan, the metadata check asks SQLite only for the ends of the row b-tree
    (`SELECT min(row), max(row)` in one query scans every row: 1.2 s at 10M), and still catches a wrong count."""
    import sqlite3

    from interactive_ir.index.metadata import SqliteMetadata

    _, img, _ = write_index(tmp_path / "idx", "exact", captions=False)
    path = tmp_path / "idx" / "metadata.sqlite"
    meta = SqliteMetadata(path, N)
    sql = []
    meta._db().set_trace_callback(sql.append)
    meta.check("rebuild", scan_ids=False)
    meta._db().set_trace_callback(None)
    plans = [row[-1] for q in sql for row in sqlite3.connect(path).execute("EXPLAIN QUERY PLAN " + q)]
    assert plans and not [p for p in plans if p.startswith("SCAN records")], plans
    from interactive_ir.errors import IndexLoadError

    with pytest.raises(IndexLoadError, match="rows"):
        SqliteMetadata(path, N + 1).check("rebuild", scan_ids=False)
