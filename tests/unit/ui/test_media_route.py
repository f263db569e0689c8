"""The image route serves indexed images by token and nothing else: no other file beside them, no
traversal, no symlink out, no HTML or SVG, no server path in a URL; kept uploads go out the same way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from iir_testutils import query_modes
from PIL import Image

from interactive_ir.ui.serving import files, media, uploads

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402


class StubIndex:
    """What the route reads of an index: ids in row order and the image root."""

    def __init__(self, root: Path, ids: list[str]):
        self.image_root = Path(root)
        self.ids = list(ids)
        self.row_of = {i: n for n, i in enumerate(self.ids)}

    def image_path(self, row: int) -> Path:
        return self.image_root / self.ids[row]


@pytest.fixture
def gallery(tmp_path, monkeypatch):
    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "photos"
    (root / "sub").mkdir(parents=True)
    Image.new("RGB", (40, 30), (200, 0, 0)).save(root / "a.png")
    Image.new("RGB", (40, 30), (0, 200, 0)).save(root / "sub" / "b.jpg")
    Image.new("RGB", (2000, 1000), (0, 0, 200)).save(root / "big.png")
    (root / ".env").write_text("SECRET=1\n")
    (root / "notes.txt").write_text("private notes\n")
    (root / "page.png").write_text("<html><script>alert(1)</script></html>")  # HTML named .png
    (root / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
    outside = tmp_path / "outside.png"
    Image.new("RGB", (10, 10)).save(outside)
    os.symlink(outside, root / "link.png")  # a symlink out of the image root
    (tmp_path / "secret.png").write_bytes(outside.read_bytes())
    ids = ["a.png", "sub/b.jpg", "big.png", "page.png", "logo.svg", "link.png", "../secret.png", str(outside)]
    return StubIndex(root, ids), tmp_path


def _client(index, store=None) -> TestClient:
    app = fastapi.FastAPI(routes=files.media_routes(index, store))
    return TestClient(app)


def _get(client, url: str):
    return client.get("/" + url)


def test_indexed_images_are_served_with_their_sniffed_type_and_safe_headers(gallery):
    index, _ = gallery
    c = _client(index)
    r = _get(c, media.image_url(index, "a.png"))
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert r.headers["x-content-type-options"] == "nosniff" and "sandbox" in r.headers["content-security-policy"]
    assert Image.open(__import__("io").BytesIO(r.content)).size == (40, 30)
    r = _get(c, media.image_url(index, "sub/b.jpg"))
    assert r.status_code == 200 and r.headers["content-type"] == "image/jpeg"


def test_large_images_go_out_as_thumbnails_and_full_size_on_request(gallery):
    import io

    index, _ = gallery
    c = _client(index)
    thumb = _get(c, media.image_url(index, "big.png"))
    full = _get(c, media.image_url(index, "big.png", full=True))
    assert Image.open(io.BytesIO(thumb.content)).size == (512, 256) and thumb.headers["content-type"] == "image/jpeg"
    assert Image.open(io.BytesIO(full.content)).size == (2000, 1000)


def test_urls_hold_no_server_path(gallery):
    index, tmp = gallery
    for i in ("a.png", "sub/b.jpg", "big.png"):
        url = media.image_url(index, i)
        assert url.startswith("iir/img/") and str(tmp) not in url and i not in url and "/" not in url[len("iir/img/"):]
    assert media.image_url(index, "not-indexed.png") == "" and media.image_url(index, "") == ""
    assert media.image_url(None, "a.png") == ""


def test_files_beside_the_images_are_not_served(gallery):
    index, _ = gallery
    c = _client(index)
    for name in (".env", "notes.txt"):  # even with a correctly made token: they are not indexed
        assert _get(c, f"{files.ROUTE}/{files.token(name)}").status_code == 404
    assert _get(c, f"{files.ROUTE}/deadbeef").status_code == 404
    assert _get(c, f"{files.ROUTE}/..%2F..%2Fetc%2Fpasswd").status_code == 404


def test_html_and_svg_are_never_served_even_when_indexed(gallery):
    index, _ = gallery
    c = _client(index)
    for i in ("page.png", "logo.svg"):
        r = _get(c, f"{files.ROUTE}/{files.token(i)}")
        assert r.status_code == 404 and b"script" not in r.content and r.headers["content-type"].startswith("text/plain")


def test_traversal_absolute_ids_and_symlinks_out_are_refused(gallery):
    index, tmp = gallery
    c = _client(index)
    for i in ("link.png", "../secret.png", str(tmp / "outside.png")):
        assert _get(c, f"{files.ROUTE}/{files.token(i)}").status_code == 404, i
        assert _get(c, f"{files.ROUTE}/{files.token(i)}?full=1").status_code == 404, i


def test_inside_refuses_a_file_system_root_and_climbing_ids(tmp_path):
    (tmp_path / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    assert files.inside(tmp_path, "x.png") == (tmp_path / "x.png").resolve()
    for bad in ("../x.png", "/etc/passwd", "a/../../x.png", "", "..\\x.png"):
        with pytest.raises(files.NotServed):
            files.inside(tmp_path, bad)
    with pytest.raises(files.NotServed, match="file system root"):
        files.inside(Path("/"), "etc/hostname")


def test_kept_uploads_are_served_by_token_until_released(gallery, tmp_path):
    index, _ = gallery
    store = uploads.UploadStore(uploads.UploadPolicy(folder=str(tmp_path / "kept")))
    src = tmp_path / "gradio-tmp" / "mine.png"
    src.parent.mkdir()
    Image.new("RGB", (30, 30)).save(src)
    kept = store.keep(src, tab="t1")
    tok = store.token_of(kept)
    c = _client(index, store)
    r = _get(c, f"{files.ROUTE}/{tok}")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert str(tmp_path) not in tok
    store.release(kept)
    assert not kept.exists() and _get(c, f"{files.ROUTE}/{tok}").status_code == 404


def test_the_app_serves_images_by_token_and_no_folder_by_gradios_file_route(tmp_path, monkeypatch):
    """End to end on a launched page: the route is mounted, the image folder is not opened to /file=."""
    pytest.importorskip("gradio")
    import urllib.error
    import urllib.request

    from iir_testutils import build_tiny

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import build_demo, launch_options, render
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui.state import UIState

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    uploads.default_store.cache_clear()
    r, ids, _ = build_tiny(tmp_path)
    (r.index.image_root / "notes.txt").write_text("private")
    engine = build_engine(r, config=EngineConfig(k=4), belief=query_modes())
    demo = build_demo(engine)
    demo.queue()
    demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True,
                **launch_options(engine))
    try:
        html = render.results_html(engine, h.start(engine, UIState(), "a red dog"))
        assert str(tmp_path) not in html and "gradio_api/file=" not in html
        url = html.split('src="', 1)[1].split('"', 1)[0]
        with urllib.request.urlopen(demo.local_url + url, timeout=10) as resp:
            assert resp.status == 200 and resp.headers["Content-Type"] == "image/png"
        for path in (r.index.image_root / "notes.txt", r.index.image_root / ids[0]):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(f"{demo.local_url}gradio_api/file={path}", timeout=10)
            assert e.value.code in (403, 404)
    finally:
        demo.close()
        uploads.default_store.cache_clear()
