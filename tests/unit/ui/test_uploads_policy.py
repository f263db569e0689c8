"""Upload policy: size checked before a file is kept, per-tab and total quotas, deletion when released or idle,
and Gradio's upload endpoint refused early when a declared size is too large or the space is full (bodies counted
as they arrive, chunked ones included, and parallel uploads: test_upload_streams.py)."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
from PIL import Image

from interactive_ir.errors import BadInputError
from interactive_ir.ui.serving.upload_guard import UploadGuard
from interactive_ir.ui.serving.uploads import UploadPolicy, UploadStore


def _file(folder, name, size=None):
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    Image.new("RGB", (20, 20)).save(p)
    if size:
        with open(p, "ab") as f:
            f.write(b"\0" * (size - p.stat().st_size))
    return p


def test_too_large_a_file_is_refused_and_deleted_before_it_is_kept(tmp_path):
    store = UploadStore(UploadPolicy(max_bytes=10_000, folder=str(tmp_path / "kept")))
    big = _file(tmp_path / "tmp", "big.png", 20_000)
    with pytest.raises(BadInputError, match=r"big.png is 0.019 MB, over the 0.0095 MB limit: upload a smaller image"):
        store.keep(big, tab="a")
    assert not big.exists() and store.used_bytes() == 0


def test_per_tab_and_total_quotas(tmp_path):
    store = UploadStore(UploadPolicy(max_bytes=5_000, per_tab_bytes=5_000, total_bytes=8_000,
                                     folder=str(tmp_path / "kept")))
    a1 = store.keep(_file(tmp_path / "tmp", "a1.png", 4_000), tab="a")
    a2 = store.keep(_file(tmp_path / "tmp", "a2.png", 4_000), tab="a", replaces=a1)  # a new reference replaces
    assert not a1.exists() and a2.exists() and store.used_bytes("a") == 4_000
    with pytest.raises(BadInputError, match="this tab already keeps"):
        store.keep(_file(tmp_path / "tmp", "a3.png", 4_000), tab="a")  # a second one at once is over its quota
    # 4,000 + 4,500 > 8,000 for all tabs: the least recently used upload of another tab goes first (issue 29)
    b1 = store.keep(_file(tmp_path / "tmp", "b1.png", 4_500), tab="b")
    assert b1.exists() and not a2.exists() and store.used_bytes("a") == 0 and store.used_bytes() == 4_500
    store.release_tab("b")
    assert not b1.exists() and store.keep(_file(tmp_path / "tmp", "b2.png", 4_500), tab="b").exists()


def test_a_full_store_is_refused_only_when_nothing_else_can_go(tmp_path):
    store = UploadStore(UploadPolicy(max_bytes=5_000, per_tab_bytes=10_000, total_bytes=8_000,
                                     folder=str(tmp_path / "kept")))
    store.keep(_file(tmp_path / "tmp", "a1.png", 4_500), tab="a")
    with pytest.raises(BadInputError, match="upload space is full"):  # only this tab's own upload holds it
        store.keep(_file(tmp_path / "tmp", "a2.png", 4_500), tab="a")


def test_idle_uploads_are_deleted(tmp_path):
    now = [0.0]
    store = UploadStore(UploadPolicy(idle_s=100, sweep_s=10, folder=str(tmp_path / "kept")), clock=lambda: now[0])
    kept = store.keep(_file(tmp_path / "tmp", "x.png"), tab="a")
    now[0] = 50.0
    assert store.path_of(store.token_of(kept)) == kept  # serving it counts as a use
    now[0] = 140.0
    assert store.sweep() == 0 and kept.exists()
    now[0] = 151.0
    assert store.sweep() == 1 and not kept.exists() and store.token_of(kept) == ""


def _call(guard, path="/gradio_api/upload", length=None):
    sent = []

    async def app(scope, receive, send):
        sent.append("app")

    guard.app = app
    headers = [(b"content-length", str(length).encode())] if length is not None else []

    async def send(msg):
        sent.append(msg)

    # in a thread of its own: an earlier test of the suite may have left an event loop running in this one
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, guard({"type": "http", "method": "POST", "path": path, "headers": headers}, None,
                                       send)).result()
    return sent


def test_gradios_upload_endpoint_is_refused_early(tmp_path):
    folder = tmp_path / "gradio"
    guard = UploadGuard(None, UploadPolicy(max_bytes=10_000, total_bytes=30_000), folder=folder)
    assert _call(guard, length=5_000) == ["app"]
    assert _call(guard, length=200_000)[0]["status"] == 413  # declared too large: refused before any byte is read
    _file(folder, "old.png", 29_000)
    guard._estimate = None  # recounted
    assert _call(guard, length=5_000)[0]["status"] == 507  # the temp folder holds the total already
    assert _call(guard, path="/gradio_api/queue/join", length=5_000) == ["app"]  # other routes pass
