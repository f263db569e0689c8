"""The search language (issue 26): parsing, metadata at index time, filters on every kind, NOT terms,
filters kept by every mode, old indices without metadata, the CLI's --text / --where."""

from __future__ import annotations

import json
import sqlite3
import sys

import numpy as np
import pytest
from iir_testutils import build_tiny, make_images, write_captions

from interactive_ir.errors import QueryError
from interactive_ir.retrieval import scoped_search
from interactive_ir.retrieval.query_language import parse_query, parse_where


# --- parsing ---------------------------------------------------------------------------------------
def test_the_issue_example_parses_into_a_typed_query():
    q = parse_query('dog on a beach -leash "red kite" date:2019..2021 folder:trips camera:canon tag:family')
    assert q.text == "dog on a beach red kite"
    assert q.nots == ("leash",) and q.phrases == ("red kite",)
    by = {f.field: f for f in q.filters}
    assert set(by) == {"phrase", "date", "folder", "camera", "tag"}
    assert by["date"].lo == 1546300800.0 and by["date"].hi == 1640995200.0  # 2019-01-01 .. 2022-01-01
    assert by["tag"].value == "family" and not by["tag"].negate
    assert parse_query("-tag:work x").filters[0].negate
    assert parse_query('album:"summer trip" x').filters[0].value == "summer trip"
    assert parse_query("see http://example.com").text == "see http://example.com"  # a URL is not a filter


@pytest.mark.parametrize("text, names", [
    ("date:2021..2019", "date:2021..2019"), ("date:2019-13", "date:2019-13"),
    ("orientation:tall", "orientation:tall"), ("tag:", None),
])
def test_a_malformed_query_is_one_line_naming_the_token(text, names):
    if names is None:  # "tag:" with nothing after it is a word, not a filter
        assert parse_query(text).text == "tag:"
        return
    with pytest.raises(QueryError) as e:
        parse_query(text)
    assert names in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text, words", [
    ('A man wearing a shirt that says " Teen Wolf " .', "A man wearing a shirt that says Teen Wolf ."),  # Flickr8k
    ('sign saying , " The Rescue . "', "sign saying , The Rescue ."),
    ('dog "red kite', "dog red kite"),  # an open quote: its words
    ('a 5" screen', "a 5 screen"), ('x -""', "x"), ('"', ""), ('""', ""), ('"red kite "', "red kite"),
])
def test_a_quote_that_opens_no_phrase_is_text(text, words):
    """Issue 40: a quote with a space inside it, or one nothing closes, is part of the description, not an exact
    phrase (a Flickr8k caption `says " Teen Wolf "` was a phrase filter no image matched)."""
    q = parse_query(text)
    assert q.text == words and not q.phrases and not q.filters


def test_a_phrase_is_still_a_phrase_beside_a_literal_quote():
    q = parse_query('a sign " Mambo " and "red kite" -"leash"')
    assert q.phrases == ("red kite",) and [f.label() for f in q.filters] == ['"red kite"', '-"leash"']
    assert q.text == "a sign Mambo and red kite"


def test_where_takes_filters_only():
    assert [f.field for f in parse_where("date:2020 -folder:x")] == ["date", "folder"]
    with pytest.raises(QueryError, match="'dog' is not a filter"):
        parse_where("dog date:2020")


# --- metadata at index time --------------------------------------------------------------------------
def _exif_jpeg(path, date="2019:07:14 18:03:22", make="Canon", model="EOS 80D"):
    from PIL import Image

    im = Image.new("RGB", (30, 60), (200, 10, 10))
    ex = Image.Exif()
    ex[271], ex[272], ex[274] = make, model, 1
    ex.get_ifd(0x8769)[36867] = date
    im.save(path, exif=ex)


@pytest.fixture
def photos(tmp_path):
    """A tiny collection with two EXIF photos, a broken-EXIF one, user fields and a subfolder."""
    caps = make_images(tmp_path / "images", 12)
    (tmp_path / "images" / "trips").mkdir()
    _exif_jpeg(tmp_path / "images" / "trips" / "beach.jpg")
    _exif_jpeg(tmp_path / "images" / "trips" / "old.jpg", date="2005:01:02 10:00:00", make="NIKON", model="D70")
    from PIL import Image

    Image.new("RGB", (20, 20)).save(tmp_path / "images" / "broken.jpg")
    raw = (tmp_path / "images" / "broken.jpg").read_bytes()
    junk = b"Exif\x00\x00MM\x00*\xff\xff\xff\xf0garbage"  # an EXIF block whose first directory is nowhere
    (tmp_path / "images" / "broken.jpg").write_bytes(raw[:2] + b"\xff\xe1" + (len(junk) + 2).to_bytes(2, "big") + junk + raw[2:])
    caps.update({"trips/beach.jpg": ["a red kite over a beach"], "trips/old.jpg": ["an old car in the snow"]})
    path = write_captions(tmp_path / "captions.jsonl", caps)
    with open(path, "a") as f:
        f.write(json.dumps({"image": "img001.png", "caption": "x", "tags": ["family", "Dog"], "album": "Summer"}) + "\n")
        f.write(json.dumps({"image": "trips/old.jpg", "caption": "y", "tags": "work", "person": ["Ann"]}) + "\n")
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    emb = make_embedder("fake:32")
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "index", captions=path), emb)
    return Retriever(load_index(tmp_path / "index"), emb)


def _ids(r, rows):
    return sorted(r.index.ids[int(i)] for i in rows)


def test_exif_folder_and_user_fields_are_stored_and_filter(photos):
    r = photos
    assert "broken.jpg" in r.index.ids  # broken EXIF: indexed all the same, without camera or EXIF date
    assert _ids(r, r.filter_rows(parse_query("camera:canon x").filters)) == ["trips/beach.jpg"]
    assert _ids(r, r.filter_rows(parse_query('camera:"nikon d70" x').filters)) == ["trips/old.jpg"]
    assert _ids(r, r.filter_rows(parse_query("date:2019-07 x").filters)) == ["trips/beach.jpg"]
    assert _ids(r, r.filter_rows(parse_query("date:..2010 x").filters)) == ["trips/old.jpg"]
    assert _ids(r, r.filter_rows(parse_query("folder:trips x").filters)) == ["trips/beach.jpg", "trips/old.jpg"]
    assert _ids(r, r.filter_rows(parse_query("tag:dog x").filters)) == ["img001.png"]  # tag: finds "tags", any case
    assert _ids(r, r.filter_rows(parse_query("person:ann album:x x").filters)) == []
    assert _ids(r, r.filter_rows(parse_query('"red kite" x').filters)) == ["trips/beach.jpg"]
    assert _ids(r, r.filter_rows(parse_query("orientation:portrait folder:trips x").filters)) == \
        ["trips/beach.jpg", "trips/old.jpg"]
    everything = r.filter_rows(parse_query("folder:trips x").filters)
    assert "trips/old.jpg" not in _ids(r, r.filter_rows(parse_query("folder:trips -tag:work x").filters))
    assert len(everything) == 2
    db = sqlite3.connect(r.index.path / "metadata.sqlite")
    assert db.execute("SELECT date_source FROM info i JOIN records r USING (row) WHERE r.id = 'img002.png'"
                      ).fetchone()[0] == "file"  # no EXIF: the file's time


def test_an_unknown_field_or_one_without_data_says_so(photos, tmp_path):
    with pytest.raises(QueryError, match="unknown field in 'colour:red'.*tags"):
        photos.filter_rows(parse_query("colour:red x").filters)
    r, _, _ = build_tiny(tmp_path / "t")
    with pytest.raises(QueryError, match="no camera make or model"):
        r.filter_rows(parse_query("camera:canon x").filters)


def test_an_index_built_before_metadata_loads_and_its_filters_say_so(tmp_path):
    r, ids, _ = build_tiny(tmp_path)
    db = sqlite3.connect(r.index.path / "metadata.sqlite")  # as written by the previous version: no info table
    db.execute("DROP TABLE info")
    db.execute("DROP TABLE fields")
    db.commit()
    db.close()
    import hashlib

    m = json.loads((r.index.path / "manifest.json").read_text())
    data = (r.index.path / "metadata.sqlite").read_bytes()
    m["files"]["metadata.sqlite"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (r.index.path / "manifest.json").write_text(json.dumps(m))
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    old = Retriever(load_index(r.index.path), r.embedder)
    assert len(old.search_query("a red dog", 3)) == 3  # plain search works
    with pytest.raises(QueryError, match="no metadata to filter 'folder:sub'.*rebuild"):
        old.search_query("a red dog folder:sub", 3)


# --- filters on every kind -------------------------------------------------------------------------
def test_filtered_exact_top_k_is_brute_force_over_the_subset(tmp_path, monkeypatch):
    from test_index_kinds import DIM, exact_top, write_index

    r, img, cap = write_index(tmp_path / "idx", "exact", n=600)
    rng = np.random.default_rng(3)
    for pool_max in (50_000, 0):  # the exact pool, then faiss's ID selector
        monkeypatch.setattr(scoped_search, "POOL_MAX", pool_max)
        for size in (5, 60, 300):
            allow = np.sort(rng.choice(600, size, replace=False))
            qrow = r.text_query_row(img[rng.integers(600)].astype(np.float32), 0.15)
            _, s = exact_top(img, cap, qrow, 1, [])
            masked = np.full_like(s, -np.inf)
            masked[allow] = s[allow]
            want = np.argsort(-masked, kind="stable")[: min(20, size)]
            scores, rows = r.search_rows(qrow, 20, allow=allow)
            assert set(rows.tolist()) == set(want.tolist()), (pool_max, size)
            np.testing.assert_allclose(scores, s[rows], rtol=1e-3, atol=1e-3)
            assert DIM == 32


@pytest.mark.parametrize("kind", ["ivf-pq", "hnsw"])
def test_filtered_approximate_search_recalls_the_subsets_top_k(tmp_path, monkeypatch, kind):
    from test_index_kinds import N, exact_top, write_index

    monkeypatch.setattr(scoped_search, "POOL_MAX", 0)  # the ID-selector path, not the exact pool (hnsw)
    monkeypatch.setattr(scoped_search, "POOL_ROW_NS", 1e9)  # and ivf-pq: pooling made to cost more
    r, img, cap = write_index(tmp_path / "idx", kind)
    rng = np.random.default_rng(5)
    recalls = []
    for share in (0.5, 0.1):
        allow = np.sort(rng.choice(N, int(N * share), replace=False))
        for _ in range(8):
            qrow = r.text_query_row(img[rng.integers(N)].astype(np.float32), 0.15)
            _, s = exact_top(img, cap, qrow, 1, [])
            masked = np.full_like(s, -np.inf)
            masked[allow] = s[allow]
            want = set(np.argsort(-masked)[:20].tolist())
            _, rows = r.search_rows(qrow, 20, allow=allow)
            assert set(rows.tolist()) <= set(allow.tolist())
            recalls.append(len(set(rows.tolist()) & want) / 20)
    assert np.mean(recalls) >= 0.9, recalls


def test_the_filters_count_chooses_the_exact_pool_or_the_id_selector(tmp_path, monkeypatch):
    """ivf-pq scores every allowed row exactly when that costs less than an ID-selector search visiting
    WIDEN_SHARE / share times the lists (by the costs measured in bench/bench_filtered.py), else searches with
    a bitmap ID selector; hnsw and exact pool up to POOL_MAX rows. Either way only allowed rows return."""
    from test_index_kinds import N, exact_top, write_index

    from interactive_ir.index.kinds import IndexParams, choose_params

    ss = scoped_search
    p1m = IndexParams("ivf-pq", nlist=2048, pq_m=64, nprobe=4)  # the 1M index of bench_filtered.py
    assert ss.filtered_path(p1m, 512, 1_000_000, 500_000) == ("selector", 1.0)  # 50%: the index's own nprobe
    assert ss.filtered_path(p1m, 512, 1_000_000, 100_000) == ("selector", 4.0)  # 10%: 4x the lists
    assert ss.filtered_path(p1m, 512, 1_000_000, 10_000) == ("selector", 40.0)  # 1%: 1.3 ms, the pool 3 ms
    assert ss.filtered_path(p1m, 512, 1_000_000, 1_000)[0] == "pool"  # 0.1%: 0.2 ms, the selector 3 ms
    p10m = IndexParams("ivf-pq", nlist=8192, pq_m=64, nprobe=16)
    assert ss.filtered_path(p10m, 512, 10_000_000, 20_000)[0] == "pool"
    assert ss.filtered_path(p10m, 512, 10_000_000, 60_000)[0] == "selector"
    hnsw = choose_params("hnsw", 1_000_000, 512)
    assert ss.filtered_path(hnsw, 512, 1_000_000, 50_000)[0] == "pool"
    assert ss.filtered_path(hnsw, 512, 1_000_000, 60_000) == ("selector", 0.4 * 1_000_000 / 60_000)
    assert ss.filtered_path(hnsw, 512, 10_000_000, 100_000)[0] == "pool"  # 40x the nodes: above WIDEN_MAX
    r, img, cap = write_index(tmp_path / "idx", "ivf-pq")
    pooled, searched = [], []
    real_pool, real_sel = ss.pool_top, ss.id_selector
    monkeypatch.setattr(ss, "pool_top", lambda r_, q, rows, k: pooled.append(len(rows)) or real_pool(r_, q, rows, k))
    monkeypatch.setattr(ss, "id_selector", lambda rows, n, ex: searched.append(len(rows) - len(ex)) or real_sel(rows, n, ex))
    monkeypatch.setattr(ss, "SCAN_CODE_NS", 0)  # costs set so that 150 rows pooled cost as much as a search
    monkeypatch.setattr(ss, "POOL_ROW_NS", ss.SELECTOR_BASE_NS / 150 * 512 / r.index.faiss_index.d)
    rng = np.random.default_rng(11)
    qrow = r.text_query_row(img[3].astype(np.float32), 0.15)
    _, s = exact_top(img, cap, qrow, 1, [])
    for size, path in ((152, pooled), (153, searched), (1200, searched)):  # counted once 2 shown rows are out
        pooled.clear(), searched.clear()
        allow = np.sort(rng.choice(N, size, replace=False))
        scores, rows = r.search_rows(qrow, 20, exclude_rows=allow[:2], allow=allow)
        assert path == [size - 2] and len(pooled) + len(searched) == 1, size
        assert set(rows.tolist()) <= set(allow[2:].tolist())
        np.testing.assert_allclose(scores, s[rows], atol=1e-3)
        if path is pooled:
            masked = np.full_like(s, -np.inf)
            masked[allow[2:]] = s[allow[2:]]
            assert rows.tolist() == np.argsort(-masked, kind="stable")[:20].tolist()


# --- NOT terms and sessions -------------------------------------------------------------------------
def test_a_not_term_lowers_images_like_it(tmp_path):
    r, ids, caps = build_tiny(tmp_path)
    plain = [h.id for h in r.search_query("a red dog", 24)]
    pushed = [h.id for h in r.search_query("a red dog -dog", 24)]
    dogs = [i for i in ids if "dog" in caps[i][0]]
    mean_rank = lambda order: np.mean([order.index(i) for i in dogs])  # noqa: E731
    assert mean_rank(pushed) > mean_rank(plain)


def test_every_mode_keeps_the_searchs_filters(tmp_path):
    from interactive_ir.core.text_search import EngineConfig
    from interactive_ir.engine import build_engine

    r, ids, _ = build_tiny(tmp_path)
    sub = {i for i in ids if i.startswith("sub/")}
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t = eng.search_text(s, "a red dog folder:sub")
    assert set(t.shown) <= sub and s.filters == "folder:sub"
    t = eng.feedback(s, relevant=[t.shown[0]], irrelevant=[t.shown[-1]])
    assert set(t.shown) <= sub
    t = eng.relative(s, "make it blue", reference=t.shown[0])
    assert set(t.shown) <= sub
    t = eng.search_text(s, "a green house")  # a plain follow-up keeps the filters
    assert set(t.shown) <= sub
    s2 = eng.new_session()
    t = eng.start(s2, "a dog -blue folder:sub")
    assert set(t.shown) <= sub and s2.not_terms == ["blue"]
    with pytest.raises(QueryError):
        eng.search_text(eng.new_session(), "a dog date:2021..2019")


def test_cli_search_takes_text_and_where(tmp_path, capsys, monkeypatch):
    from interactive_ir.cli import main

    r, ids, _ = build_tiny(tmp_path)
    main(["search", "--index", str(r.index.path), "--embedder", "fake:32", "--text", "a red dog -leash",
          "--where", "folder:sub", "-k", "3", "--json"])
    got = json.loads(capsys.readouterr().out)
    assert len(got) == 3 and all(h["id"].startswith("sub/") for h in got)
    assert sys is not None
