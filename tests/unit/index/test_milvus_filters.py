"""Filters on a Milvus store (issue 26): the photo metadata exported as scalar fields, a query's filters sent as
one Milvus boolean expression that keeps exactly the images the SQLite store keeps, filtered top-k equal to
brute force over the filtered subset, every mode keeping the filters, and the bad-input messages (a collection
exported before the metadata, a filter keeping nothing, a field without data). Milvus Lite, FLAT index."""

from __future__ import annotations

import calendar

import numpy as np
import pytest

from interactive_ir.errors import QueryError
from interactive_ir.index.filters import Filter
from interactive_ir.index.milvus_filters import like_escape, literal
from interactive_ir.retrieval.query_language import parse_query, parse_where

pytest.importorskip("pymilvus")

N, DIM = 300, 16
FOLDERS = ["trips", "trips/2019 summer", "Home/Trips_old", "a%b/c_d", "ünïcode/ÄÖ", "", "it's/x", "tripsy"]
CAMERAS = [("Canon", "EOS 80D"), ("NIKON CORPORATION", "D70"), ("", ""), ("Apple", "iPhone 12"),
           ('Odd"Cam', "back\\slash")]
TAGS = ["family", "Dog", 'say "hi"', "a\\b", "Zürich", "x_y", "100%", "work", "emoji 🐶"]


def _records(rng):
    from interactive_ir.index.metadata import IndexRecord
    from interactive_ir.index.photo_info import PhotoInfo

    recs = []
    for i in range(N):
        folder = FOLDERS[i % len(FOLDERS)]
        name = f"IMG_{i:03d}.jpg" if i % 3 else f"img {i}%.png"
        make, model = CAMERAS[i % len(CAMERAS)]
        year = 2014 + int(rng.integers(0, 10))
        date = None if i % 11 == 0 else float(calendar.timegm((year, 1 + i % 12, 1 + i % 28, 12, 0, 0)))
        tags = sorted({TAGS[j] for j in rng.choice(len(TAGS), int(rng.integers(0, 4)), replace=False)})
        fields = {"tags": tags} if tags else {}
        if i % 5 == 0:
            fields["album"] = ["Summer" if i % 2 else "x"]
        if i % 7 == 0:
            fields["person"] = ["Ann", "bo"]
        info = PhotoInfo(date=date, date_source="exif" if date else "", make=make, model=model,
                         lat=48.1 if i % 4 == 0 else None, lon=11.5 if i % 4 == 0 else None,
                         orientation=[0, 1, 6, 8][i % 4], folder=folder, fields=fields)
        caption = ["a red kite over the beach", 'a sign saying "100% off"', "an old car in the snow"][i % 3]
        w, h = [(60, 30), (30, 60), (40, 40), (0, 0)][i % 4]
        recs.append(IndexRecord(f"{folder}/{name}" if folder else name, [f"{caption} {i}"], w, h, 1000 + i,
                                1.6e9 + i, info=info))
    return recs


@pytest.fixture(scope="module")
def milvus(tmp_path_factory):
    """(the index folder's retriever, the same through Milvus Lite, the store spec, image vectors)."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.vector_store import export_index
    from interactive_ir.index.writer import IndexWriter
    from interactive_ir.retrieval.retriever import Retriever

    base = tmp_path_factory.mktemp("mfilters")
    try:
        from pymilvus import MilvusClient

        MilvusClient(str(base / "probe.db")).close()
    except Exception as e:  # noqa: BLE001 - any failure to start the embedded server
        pytest.skip(f"milvus-lite cannot start here: {e}")
    rng = np.random.default_rng(0)
    img = rng.standard_normal((N, DIM)).astype(np.float32)
    img = (img / np.linalg.norm(img, axis=1, keepdims=True)).astype(np.float16)
    w = IndexWriter(base / "idx", DIM, caption_vectors=False)
    w.add(_records(rng), img)
    w.finish("exact", {"embedder": f"fake:{DIM}", "has_vision": True, "image_root": "."})
    spec = f"milvus-lite:{base / 'store.db'}"
    rep = export_index(load_index(base / "idx", store=""), spec, chunk=64)
    assert rep.metadata and rep.user_fields == ("album", "person", "tags") and rep.rows == N
    emb = make_embedder(f"fake:{DIM}")
    return (Retriever(load_index(base / "idx", store=""), emb), Retriever(load_index(base / "idx", store=spec), emb),
            spec, img.astype(np.float32))


# --- values into expressions ------------------------------------------------------------------------
def test_values_are_escaped_into_milvus_literals():
    assert literal('say "hi"') == '"say \\"hi\\""'
    assert literal("a\\b") == '"a\\\\b"'
    assert literal("two\nlines\tand\r") == '"two\\nlines\\tand\\r"'
    assert literal("Zürich 🐶 中文") == '"Zürich 🐶 中文"'  # no \\u escapes: Milvus's parser reads none
    assert like_escape("100%_x\\") == "100\\%\\_x_"  # a backslash: any one character (like_escape says why)
    for bad in ("nul\x00", "lone \ud800"):
        with pytest.raises(QueryError, match="no Milvus string"):
            literal(bad)


FILTERS = [
    "date:2019..2021", "-date:2019", "date:..2016", "date:2020-03..", "folder:trips", "folder:TRIPS", "-folder:trips",
    'folder:"2019 summer"', "folder:trips/", "folder:a%b", "folder:c_d", "folder:ünïcode", "folder:it's",
    "camera:canon", 'camera:"nikon corporation d70"', "camera:EOS", "-camera:apple", "orientation:portrait",
    "-orientation:landscape", "orientation:square", "tag:family", "tag:DOG", "tags:x_y", "tag:100%", "-tag:work",
    "tag:zürich", 'tag:"emoji 🐶"', "album:summer", "person:ann", "people:BO", "-person:ann", '"red kite"',
    '-"red kite"', '"100% off"', "file:img_0", "file:%", "file:IMG", "date:2015..2022 folder:trips camera:canon tag:family",
]


@pytest.mark.parametrize("query", FILTERS)
def test_a_milvus_expression_keeps_exactly_what_sqlite_keeps(milvus, query):
    local, remote, spec, _ = milvus
    filters = parse_where(query) if not query.startswith(('"', '-"')) else parse_query(query).filters
    _same_rows(local, remote, filters)


@pytest.mark.parametrize("f", [Filter("tag", 'say "hi"'), Filter("tag", "a\\b"), Filter("camera", "back\\slash"),
                               Filter("camera", 'odd"cam'), Filter("phrase", 'saying "100%'), Filter("file", "_"),
                               Filter("folder", "a%b/c_d"), Filter("tag", "a\\b", negate=True)],
                         ids=lambda f: repr(f.value))
def test_quotes_backslashes_and_wildcards_in_values_match_literally(milvus, f):
    local, remote, spec, _ = milvus
    _same_rows(local, remote, (f,))


def _same_rows(local, remote, filters):
    want = local.filter_rows(filters)
    store = remote.index.store
    expr = store.where_of(filters)
    got = store.client.query(store.spec.collection, filter=expr, output_fields=["row"], limit=N)
    assert sorted(g["row"] for g in got) == want.tolist(), expr


# --- filtered search --------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["folder:trips", "date:2016..2020 -tag:work", "tag:dog", "orientation:portrait camera:canon"])
def test_filtered_milvus_top_k_is_brute_force_over_the_subset(milvus, where):
    local, remote, spec, img = milvus
    allow = remote.filter_rows(parse_where(where))
    assert 0 < len(allow) < N
    rng = np.random.default_rng(len(where))
    for _ in range(5):
        q = img[rng.integers(N)] + 0.3 * rng.standard_normal(DIM).astype(np.float32)
        s = img @ q
        masked = np.full(N, -np.inf, np.float32)
        masked[allow] = s[allow]
        first = np.argsort(-masked, kind="stable")[:3]  # shown already: excluded from the next page
        masked[first] = -np.inf
        k = min(20, len(allow) - 3)
        want = np.argsort(-masked, kind="stable")[:k]
        scores, rows = remote.search_rows(q, 20, exclude_rows=first, allow=allow)
        assert rows.tolist() == want.tolist()
        np.testing.assert_allclose(scores, s[rows], atol=1e-5)
        assert local.search_rows(q, 20, exclude_rows=first, allow=allow)[1].tolist() == want.tolist()


def test_every_mode_keeps_the_filters_on_a_milvus_store(milvus, monkeypatch):
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.retrieval import retriever as R

    local, remote, spec, _ = milvus
    trips = {i for i in remote.index.ids if i.startswith("trips/")}
    eng = build_engine(remote, llm=FakeLLM(), config=EngineConfig(k=4))
    s = eng.new_session()
    t = eng.search_text(s, "a red kite folder:trips -snow")
    assert set(t.shown) <= trips and s.filters == "folder:trips"
    t = eng.feedback(s, relevant=[t.shown[0]], irrelevant=[t.shown[-1]])
    assert set(t.shown) <= trips
    t = eng.relative(s, "make it blue", reference=t.shown[0])
    assert set(t.shown) <= trips
    monkeypatch.setattr(R, "MATRIX_ROWS_MAX", 10)  # the belief keeps a pool, as on a large collection
    remote.__dict__.pop("_matrix", None)
    s2 = eng.new_session()
    t = eng.start(s2, "an old car folder:trips")
    assert set(t.shown) <= trips
    t = eng.closest(s2, t.shown[0], ask=False)  # the belief: its pool is the filtered search's
    assert t.shown and set(t.shown) <= trips
    b = s2.belief
    assert len(b.rows) == min(b.config.pool, len(trips))
    assert {remote.index.ids[int(i)] for i in b.rows} <= trips


# --- bad input ----------------------------------------------------------------------------------------
def test_a_collection_exported_before_the_metadata_says_to_export_again(milvus, tmp_path):
    from pymilvus import DataType, MilvusClient

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    local, remote, spec, img = milvus
    old = f"milvus-lite:{tmp_path / 'old.db'}"  # as the previous export wrote it: row and vector only
    c = MilvusClient(str(tmp_path / "old.db"))
    schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    p = c.prepare_index_params()
    p.add_index(field_name="vector", index_type="FLAT", metric_type="IP")
    c.create_collection("images", schema=schema, index_params=p, consistency_level="Strong")
    c.insert("images", [{"row": i, "vector": v.tolist()} for i, v in enumerate(img)])
    c.flush("images")
    c.close()
    r = Retriever(load_index(local.index.path, store=old), local.embedder)
    assert len(r.search_rows(img[0], 5)[1]) == 5  # plain search works
    with pytest.raises(QueryError) as e:
        r.filter_rows(parse_where("folder:trips"))
    msg = str(e.value)
    assert "\n" not in msg and "export it again" in msg and f"index export {local.index.path} --store" in msg
    eng = build_engine(r, config=EngineConfig(k=4))
    s = eng.new_session()
    with pytest.raises(QueryError, match="export it again"):
        eng.search_text(s, "a red kite folder:trips")
    assert not s.turns and eng.search_text(s, "a red kite").shown  # the session is untouched; plain search works


def test_a_filter_keeping_nothing_or_a_field_without_data_says_so(milvus, tmp_path):
    from iir_testutils import build_tiny

    from interactive_ir.index import load_index
    from interactive_ir.index.vector_store import export_index
    from interactive_ir.retrieval.retriever import Retriever

    local, remote, spec, _ = milvus
    for r in (local, remote):
        with pytest.raises(QueryError, match=r"^no image matches folder:nowhere tag:family: change or remove"):
            r.search_query("a kite", 5, where="folder:nowhere tag:family")
        with pytest.raises(QueryError, match="unknown field in 'colour:red'"):
            r.search_query("a kite colour:red", 5)
    tiny, _, _ = build_tiny(tmp_path / "t", n=8)  # generated PNGs: no EXIF camera
    s = f"milvus-lite:{tmp_path / 'tiny.db'}"
    assert export_index(tiny.index, s).user_fields == ()
    m = Retriever(load_index(tiny.index.path, store=s), tiny.embedder)
    with pytest.raises(QueryError, match="no camera make or model"):
        m.search_query("a red dog camera:canon", 3)
    assert {h.id for h in m.search_query("a red dog folder:sub", 3)} <= {i for i in tiny.index.ids if i.startswith("sub/")}


def test_export_replaces_a_collection_only_once_complete(milvus, tmp_path, monkeypatch):
    from interactive_ir.errors import IndexLoadError
    from interactive_ir.index import load_index
    from interactive_ir.index import milvus_schema as ms
    from interactive_ir.index.vector_store import export_index, open_store

    local, remote, spec, _ = milvus
    s = f"milvus-lite:{tmp_path / 'r.db'}"
    export_index(local.index, s, chunk=100)

    real = ms.entities

    def broken(db, n, users, chunk):
        yield from real(db, 100, users, chunk)
        raise RuntimeError("disk full")

    monkeypatch.setattr(ms, "entities", broken)
    with pytest.raises(IndexLoadError, match="exporting into .* failed \\(disk full\\)"):
        export_index(local.index, s, chunk=100)
    st = open_store(s, DIM, N)  # the complete collection of the first export is still there, the half one gone
    assert st.fields.has_metadata and st.client.list_collections() == ["images"]
    assert load_index(local.index.path, store=s) is not None


def test_cli_export_reports_the_fields_and_search_filters_through_the_store(milvus, tmp_path, monkeypatch, capsys):
    from interactive_ir.cli import main

    local, remote, spec, _ = milvus
    s = f"milvus-lite:{tmp_path / 'cli.db'}#mine"
    assert main(["index", "export", str(local.index.path), "--store", s]) == 0
    out = capsys.readouterr().out
    assert f"exported {N} rows" in out and "user fields: album, person, tags" in out
    monkeypatch.setenv("IIR_STORE", s)
    assert main(["search", "--index", str(local.index.path), "--text", "a kite", "--where",
                 'folder:trips camera:canon -tag:work', "-k", "3", "--json"]) == 0
    import json

    got = json.loads(capsys.readouterr().out)
    assert got and all(h["id"].startswith("trips/") for h in got)
