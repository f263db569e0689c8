"""Issue 29 item 5: hand-edited index files give a one-line IndexLoadError, never a traceback or a silent
load; a link the build indexed out of --images is served, not a broken card."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from iir_testutils import build_tiny

from interactive_ir.errors import IndexLoadError
from interactive_ir.index import load_index


def _resize_in_manifest(folder, name):
    m = json.loads((folder / "manifest.json").read_text())
    m["files"][name]["bytes"] = (folder / name).stat().st_size  # as a hand edit that kept the manifest in step
    (folder / "manifest.json").write_text(json.dumps(m))


def test_captions_that_are_not_json_are_a_clean_error(tmp_path):
    r, ids, _ = build_tiny(tmp_path, n=5)
    folder = tmp_path / "index"
    db = sqlite3.connect(folder / "metadata.sqlite")
    db.execute("UPDATE records SET captions = 'a dog, not JSON' WHERE row = 3")
    db.commit()
    db.close()
    _resize_in_manifest(folder, "metadata.sqlite")
    with pytest.raises(IndexLoadError, match=r"row 3: its captions are not a JSON list; rebuild"):
        load_index(folder)
    # a large index skips the scan at load: reading the row says the same, not JSONDecodeError
    from interactive_ir.index.metadata import SqliteMetadata

    meta = SqliteMetadata(folder / "metadata.sqlite", 5)
    with pytest.raises(IndexLoadError, match="row 3: its captions are not a JSON list"):
        meta.record(3)
    with pytest.raises(IndexLoadError, match="row 3"):
        list(meta.iter_records())
    assert meta.record(2).captions  # the other rows read


def test_a_nan_row_in_the_vectors_is_refused(tmp_path):
    build_tiny(tmp_path, n=6)
    f = tmp_path / "index" / "image_emb.npy"
    a = np.load(f)
    a[4, 7] = np.nan
    np.save(f, a)  # same size: only the values changed
    with pytest.raises(IndexLoadError, match=r"image_emb.npy row 4 holds NaN or infinite values"):
        load_index(tmp_path / "index")
    a[4, 7], a[1, 0] = 0, np.inf
    np.save(f, a)
    with pytest.raises(IndexLoadError, match="row 1 holds NaN"):
        load_index(tmp_path / "index")


def test_links_the_build_saw_are_served(tmp_path, monkeypatch):
    """The builder indexes links out of --images (recording where they point); the image route refused
    them, so their cards were broken."""
    from fastapi import FastAPI
    from iir_testutils import make_images
    from starlette.testclient import TestClient

    from interactive_ir.backends import make_embedder
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.ui.serving import files

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    make_images(tmp_path / "src", 3)
    (tmp_path / "links").mkdir()
    for p in sorted((tmp_path / "src").rglob("*.png")):
        (tmp_path / "links" / p.name).symlink_to(p)
    build_index(BuildConfig(images=tmp_path / "links", out=tmp_path / "idx"), make_embedder("fake:8"))
    index = load_index(tmp_path / "idx")
    client = TestClient(FastAPI(routes=files.media_routes(index)))
    for i in index.ids:
        r = client.get(f"/{files.ROUTE}/{files.token(i)}?full=1")
        assert r.status_code == 200 and r.headers["content-type"] == "image/png", i
    assert files.inside(tmp_path / "links", index.ids[0], index.manifest["link_roots"])
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.png").write_bytes((tmp_path / "links" / index.ids[0]).read_bytes())
    (tmp_path / "links" / "planted.png").symlink_to(other / "x.png")  # after the build, into a folder it did not see
    with pytest.raises(files.NotServed, match="outside the image root"):
        files.inside(tmp_path / "links", "planted.png", index.manifest["link_roots"])
