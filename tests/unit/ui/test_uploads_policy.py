"""Upload policy: size checked before a file is kept, per-tab and total quotas, deletion when released or idle,
and Gradio's upload endpoint refused early when a declared size is too large or the space is full."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
from PIL import Image

from interactive_ir.errors import BadInputError
from interactive_ir.ui.serving.uploads import UploadGuard, UploadPolicy, UploadStore


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


def _upload_call(guard, client, length, folder):
    """One upload through the guard from `client`: the inner app writes the body as Gradio would."""
    sent = []

    async def app(scope, receive, send):
        d = folder / f"{scope['client'][0]}-{id(scope)}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "up.png").write_bytes(b"\0" * length)
        await asyncio.sleep(0.01)
        scope["sent"].append(200)

    async def send(msg):
        sent.append(msg["status"]) if msg["type"] == "http.response.start" else None

    guard.app = app
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "client": (client, 5555),
             "headers": [(b"content-length", str(length).encode())], "sent": sent}
    return guard(scope, None, send), sent


def _run_all(calls):
    async def go():
        await asyncio.gather(*(c for c, _ in calls))

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, go()).result()
    return [s[0] for _, s in calls]


def test_parallel_uploads_are_counted_when_admitted_per_client_and_in_total(tmp_path):
    """The attack of issue 29: 40 parallel uploads from one client all went in (the folder was recounted
    every 2 s), then every upload from anyone was refused for up to 30 minutes."""
    folder = tmp_path / "gradio"
    folder.mkdir()
    policy = UploadPolicy(max_bytes=20_000, total_bytes=100_000, per_client_bytes=50_000)
    guard = UploadGuard(None, policy, folder=folder)
    statuses = _run_all([_upload_call(guard, "203.0.113.5", 19_000, folder) for _ in range(40)])
    assert statuses.count(200) == 2 and statuses.count(429) == 38  # one client: its own quota
    statuses = _run_all([_upload_call(guard, f"203.0.113.{i}", 19_000, folder) for i in range(10, 50)])
    assert guard.folder_bytes() <= policy.total_bytes  # many clients: never more than the total
    assert 200 in statuses and 507 in statuses
    import os
    import time

    for f in folder.rglob("*.png"):  # a while later: the old uploads are the ones that go
        os.utime(f, (time.time() - 60, time.time() - 60))
    assert _run_all([_upload_call(guard, "198.51.100.1", 155, folder)]) == [200]
    assert guard.folder_bytes() <= policy.total_bytes
