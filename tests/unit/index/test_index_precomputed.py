"""index --vectors/--ids: precomputed embeddings, chunked and resumable; bad input is one line and leaves nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from interactive_ir.backends import make_embedder
from interactive_ir.errors import BadInputError
from interactive_ir.index import load_index
from interactive_ir.index.precomputed import VectorsConfig, build_from_vectors
from interactive_ir.retrieval.retriever import Retriever


def source(tmp_path, n=300, dim=16, seed=0, ids=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    np.save(tmp_path / "vecs.npy", x)
    ids = ids if ids is not None else [f"photos/{i:04d}.jpg" for i in range(n)]
    (tmp_path / "ids.txt").write_text("\n".join(ids) + "\n")
    return x, ids


def cfg(tmp_path, **kw):
    return VectorsConfig(vectors=tmp_path / "vecs.npy", ids=tmp_path / "ids.txt", out=tmp_path / "idx",
                         chunk_rows=64, **kw)


def nothing_left(tmp_path):
    return not (tmp_path / "idx").exists() and not list(tmp_path.glob(".idx*"))


def test_round_trip_equals_exact_knn_with_captions(tmp_path):
    x, ids = source(tmp_path)
    (tmp_path / "caps.jsonl").write_text(json.dumps({"image": ids[5], "captions": ["a red boat"]}) + "\n")
    rep = build_from_vectors(cfg(tmp_path, captions=tmp_path / "caps.jsonl"), make_embedder("fake:16"))
    assert (rep.count, rep.kind, rep.resumed_from) == (300, "exact", 0)
    r = Retriever(load_index(tmp_path / "idx"), make_embedder("fake:16"))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    q = unit[7]
    want = [ids[i] for i in np.argsort(-(unit.astype(np.float16).astype(np.float32) @ q), kind="stable")[:10]]
    assert [h.id for h in r.search_row(q, 10)] == want
    assert r.index.records[5].caption == "a red boat" and r.index.records[6].captions == []
    assert r.index.image_path(3) == (tmp_path / "photos" / "0003.jpg")


def test_parquet_folder(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    x, ids = source(tmp_path, n=150)
    (tmp_path / "pq").mkdir()
    for part, (a, b) in enumerate([(0, 100), (100, 150)]):
        pq.write_table(pa.table({"embedding": [list(map(float, v)) for v in x[a:b]]}), tmp_path / "pq" / f"p{part}.parquet")
    rep = build_from_vectors(VectorsConfig(tmp_path / "pq", tmp_path / "ids.txt", tmp_path / "idx", chunk_rows=64),
                             make_embedder("fake:16"))
    idx = load_index(tmp_path / "idx")
    assert rep.count == 150 and list(idx.ids) == ids
    np.testing.assert_allclose(idx.vectors([120])[0], x[120] / np.linalg.norm(x[120]), atol=2e-3)


@pytest.mark.parametrize("spoil,msg", [
    (lambda x, ids: (x.__setitem__((200, 3), np.nan), ids), r"row 200 holds NaN"),
    (lambda x, ids: (x, ids[:-3]), r"has 297 ids, fewer than the 300 vectors"),
    (lambda x, ids: (x, ids[:250] + [ids[10]] + ids[251:]), r"names 'photos/0010.jpg' twice"),
    (lambda x, ids: (x, ids[:100] + ["../../etc/passwd"] + ids[101:]), r"line 101: id '../../etc/passwd' climbs out"),
    (lambda x, ids: (x.__setitem__((280,), 0.0), ids), r"row 280 is all zeros"),
])
def test_bad_input_is_one_line_and_leaves_nothing(tmp_path, spoil, msg):
    x, ids = source(tmp_path)
    x = x.copy()
    spoilt = spoil(x, list(ids))
    np.save(tmp_path / "vecs.npy", x)
    (tmp_path / "ids.txt").write_text("\n".join(spoilt[1]) + "\n")
    with pytest.raises(BadInputError, match=msg) as e:
        build_from_vectors(cfg(tmp_path), make_embedder("fake:16"))
    assert "\n" not in str(e.value) and nothing_left(tmp_path)


def test_wrong_dimension_and_too_few_for_an_approximate_kind(tmp_path, capsys):
    from interactive_ir.cli import main

    source(tmp_path, n=50)
    with pytest.raises(BadInputError, match="holds 16-d vectors but fake:32 gives 32-d"):
        build_from_vectors(cfg(tmp_path), make_embedder("fake:32"))
    base = ["index", "--vectors", str(tmp_path / "vecs.npy"), "--ids", str(tmp_path / "ids.txt"),
            "--out", str(tmp_path / "idx"), "--embedder", "fake:16"]
    assert main(base + ["--kind", "ivf-pq"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has 50: use --kind exact" in err and nothing_left(tmp_path)
    assert main(base) == 0 and "indexed 50 precomputed vectors" in capsys.readouterr().out


def test_interrupted_build_resumes_where_it_stopped(tmp_path, monkeypatch):
    import interactive_ir.index.writer as w

    x, ids = source(tmp_path)
    real = w.IndexWriter.checkpoint
    calls = {"n": 0}

    def flaky(self):
        real(self)
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(w.IndexWriter, "checkpoint", flaky)
    with pytest.raises(KeyboardInterrupt):
        build_from_vectors(cfg(tmp_path), make_embedder("fake:16"))
    assert not (tmp_path / "idx").exists() and (tmp_path / ".idx.partial").is_dir()
    monkeypatch.setattr(w.IndexWriter, "checkpoint", real)
    rep = build_from_vectors(cfg(tmp_path), make_embedder("fake:16"))
    assert rep.resumed_from == 3 * 64 and rep.count == 300 and not (tmp_path / ".idx.partial").exists()
    idx = load_index(tmp_path / "idx", verify=True)
    assert list(idx.ids) == ids
    np.testing.assert_allclose(idx.vectors(np.arange(300)), x / np.linalg.norm(x, axis=1, keepdims=True), atol=2e-3)


def test_changed_source_starts_over(tmp_path, monkeypatch):
    import interactive_ir.index.writer as w

    source(tmp_path)
    monkeypatch.setattr(w.IndexWriter, "finish", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        build_from_vectors(cfg(tmp_path), make_embedder("fake:16"))
    monkeypatch.undo()
    source(tmp_path, seed=1)  # other vectors under the same name
    assert build_from_vectors(cfg(tmp_path), make_embedder("fake:16")).resumed_from == 0
