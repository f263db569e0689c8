"""Gradio's `/upload` bounded on the bytes as they arrive (issue 40, item 1): chunked bodies, which declare no
size, are cut at the per-upload limit and at the client's quota, the temp folder never passes its cap, and
another visitor's pending upload is never deleted to make room for someone else's flood.

The app behind the guard does what Gradio's upload route does: it writes each chunk to a temp file in the
folder as it reads it, deletes it on a multipart error (answering 413 itself), and on success moves it into a
folder of its own and answers with the stored paths."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import os
import time
import uuid

import pytest
from starlette.formparsers import MultiPartException

from interactive_ir.ui.serving.limits import WindowCounter
from interactive_ir.ui.serving.upload_guard import FRAMING_BYTES, UploadGuard
from interactive_ir.ui.serving.uploads import UploadPolicy


def _folder_bytes(folder) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


class GradioLike:
    """Writes bodies to `folder` as Gradio does; records the folder's size after every write (`peaks`) and
    how many body bytes it was handed."""

    def __init__(self, folder):
        self.folder, self.peaks, self.handed = folder, [], 0

    async def __call__(self, scope, receive, send):
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f"tmp{uuid.uuid4().hex[:8]}"
        sha = hashlib.sha256()
        with open(tmp, "wb") as f:
            try:
                while True:
                    msg = await receive()
                    body = msg.get("body") or b""
                    self.handed += len(body)
                    f.write(body)
                    f.flush()
                    sha.update(body)
                    self.peaks.append(_folder_bytes(self.folder))
                    if not msg.get("more_body"):
                        break
            except MultiPartException as e:
                f.close()
                tmp.unlink()
                return await _answer(send, 413, e.message.encode())
        dest = self.folder / sha.hexdigest() / "up.png"
        dest.parent.mkdir(exist_ok=True)
        os.rename(tmp, dest)
        await _answer(send, 200, json.dumps([str(dest)]).encode())


async def _answer(send, status, body):
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": body})


def _request(guard, client, size, chunk=1_000, declared=False, leave_after=None):
    """One upload of `size` bytes from `client`, `chunk` bytes at a time (chunked: no Content-Length unless
    `declared`), yielding to the other requests between chunks; `leave_after` chunks: the client goes away.
    Returns (coroutine, answer) where answer gets 'status' and 'body'."""
    answer = {}
    pieces = [chunk] * (size // chunk) + ([size % chunk] if size % chunk else [])
    state = {"i": 0}
    tag = uuid.uuid4().bytes

    async def receive():
        await asyncio.sleep(0)
        i = state["i"]
        state["i"] += 1
        if leave_after is not None and i >= leave_after:
            return {"type": "http.disconnect"}
        if i >= len(pieces):
            return {"type": "http.disconnect"}
        body = (tag + b"\0" * pieces[i])[:pieces[i]] if i == 0 else b"\0" * pieces[i]  # each upload its own bytes
        return {"type": "http.request", "body": body, "more_body": i < len(pieces) - 1}

    async def send(msg):
        if msg["type"] == "http.response.start":
            answer["status"] = msg["status"]
        else:
            answer["body"] = answer.get("body", b"") + msg.get("body", b"")

    headers = [(b"content-length", str(size).encode())] if declared else [(b"transfer-encoding", b"chunked")]
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "client": (client, 5555),
             "headers": headers}
    return guard(scope, receive, send), answer


def _run(*requests):
    async def go():
        await asyncio.gather(*(c for c, _ in requests))

    # in a thread of its own: an earlier test of the suite may have left an event loop running in this one
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, go()).result()
    return [a.get("status") for _, a in requests]


def _guard(tmp_path, **policy):
    folder = tmp_path / "gradio"
    folder.mkdir()
    app = GradioLike(folder)
    return UploadGuard(app, UploadPolicy(**policy), folder=folder), app, folder


def test_a_chunked_body_is_cut_with_413_the_moment_it_passes_the_limit(tmp_path):
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=10**9, total_bytes=10**9)
    limit = 20_000 + FRAMING_BYTES
    assert _run(_request(guard, "203.0.113.1", limit, chunk=4_000)) == [200]  # exactly the limit passes
    kept = _folder_bytes(folder)
    assert kept == limit
    app.handed = 0
    req = _request(guard, "203.0.113.2", 10 * limit, chunk=4_000)
    assert _run(req) == [413]
    assert req[1]["body"] == b"the file is over the 0.019 MB upload limit"  # ours, not the app's own 413
    assert app.handed <= limit  # the chunk that passes it never reached the app
    assert _folder_bytes(folder) == kept  # the part written was deleted


def test_a_declared_size_over_the_limit_is_refused_before_a_byte_is_read(tmp_path):
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=10**9, total_bytes=10**9)
    assert _run(_request(guard, "203.0.113.1", 20_000 + FRAMING_BYTES + 1, declared=True)) == [413]
    assert app.handed == 0 and _folder_bytes(folder) == 0


def test_one_clients_parallel_chunked_uploads_share_its_quota(tmp_path):
    """Issue 40's flood in small: 45 parallel chunked uploads from one address, each under the size limit."""
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=50_000, total_bytes=10**9)
    statuses = _run(*(_request(guard, "203.0.113.5", 19_000) for _ in range(45)))
    assert app.handed <= 50_000 and guard.recent.of("203.0.113.5") <= 50_000  # bytes taken in, all uploads together
    # interleaved chunk by chunk, all may be cut before any completes: what counts is the bytes taken in
    assert statuses.count(200) <= 2 and statuses.count(429) == 45 - statuses.count(200) >= 43
    assert _folder_bytes(folder) == 19_000 * statuses.count(200)  # cut uploads left nothing behind
    other = _request(guard, "203.0.113.6", 19_000)  # another address has its own quota
    assert _run(other) == [200]


def test_a_flood_from_many_addresses_never_passes_the_folders_cap(tmp_path):
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=60_000, total_bytes=100_000)
    statuses = _run(*(_request(guard, f"203.0.113.{i % 20}", 19_000, chunk=500) for i in range(60)))
    assert max(app.peaks) <= 100_000  # measured after every write, during the flood
    assert _folder_bytes(folder) <= 100_000
    assert 200 in statuses and 507 in statuses and set(statuses) <= {200, 429, 507}


def test_anothers_pending_upload_survives_a_flood_and_the_flooders_own_files_go(tmp_path):
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=10**9, total_bytes=60_000)
    assert _run(_request(guard, "198.51.100.7", 19_000)) == [200]  # a visitor's upload, not yet claimed
    pending = [p for p in folder.rglob("up.png")]
    old = time.time() - 10
    os.utime(pending[0], (old, old))  # older than the flooder's files: oldest-first eviction would take it
    flood = []
    for _ in range(6):  # one after the other: each finished upload of the flooder may be deleted for its next one
        flood += _run(_request(guard, "203.0.113.66", 19_000))
        for f in folder.rglob("up.png"):
            if f != pending[0]:
                os.utime(f, (old + 1, old + 1))  # finished a while ago: no longer "still arriving"
    assert pending[0].exists()
    assert flood.count(200) == 6  # the flooder keeps going by replacing its own earlier uploads
    assert _folder_bytes(folder) <= 60_000
    # parallel, nothing of its own left to delete: refused before the cap, the visitor's file still there
    statuses = _run(*(_request(guard, "203.0.113.66", 19_000) for _ in range(4)))
    assert 507 in statuses and pending[0].exists() and max(app.peaks) <= 60_000


def test_the_same_bytes_sent_by_two_clients_are_not_the_flooders_to_delete(tmp_path):
    """Gradio stores equal uploads at one path: a flooder sending a copy of a visitor's file does not own it."""
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=10**9, total_bytes=40_000)
    same = b"x" * 19_000

    async def receive():
        return {"type": "http.request", "body": same, "more_body": False}

    def upload(client):
        answer = {}

        async def send(msg):
            answer.setdefault("status", msg.get("status"))

        scope = {"type": "http", "method": "POST", "path": "/upload", "client": (client, 1), "headers": []}
        return guard(scope, receive, send), answer

    assert _run(upload("198.51.100.7")) == [200] and _run(upload("203.0.113.66")) == [200]
    shared = next(folder.rglob("up.png"))
    os.utime(shared, (time.time() - 10, time.time() - 10))
    assert _run(_request(guard, "203.0.113.66", 19_000), _request(guard, "203.0.113.66", 19_000)) == [200, 507]
    assert shared.exists()


def test_expired_files_of_anyone_may_go(tmp_path):
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=10**9, total_bytes=40_000, idle_s=100)
    assert _run(_request(guard, "198.51.100.7", 19_000), _request(guard, "198.51.100.8", 19_000)) == [200, 200]
    assert _run(_request(guard, "203.0.113.9", 19_000)) == [507]
    for f in folder.rglob("up.png"):
        os.utime(f, (time.time() - 200, time.time() - 200))
    guard._walked_at = float("-inf")
    assert _run(_request(guard, "203.0.113.9", 19_000)) == [200]


def test_uploads_no_event_claimed_for_unclaimed_s_may_go_other_files_only_after_idle_s(tmp_path):
    """A flood from many addresses holds the space at most `unclaimed_s`, not until Gradio's sweep."""
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=10**9, total_bytes=40_000,
                                unclaimed_s=60, idle_s=1_000)
    assert _run(_request(guard, "198.51.100.7", 19_000)) == [200]
    upload = next(folder.rglob("up.png"))
    gradios_own = folder / "cafe" / "output.png"  # a file Gradio wrote itself (an export, an example)
    gradios_own.parent.mkdir()
    gradios_own.write_bytes(b"\0" * 19_000)
    for f, age in ((upload, 30), (gradios_own, 120)):
        os.utime(f, (time.time() - age, time.time() - age))
    guard._walked_at = float("-inf")  # Gradio's own files are counted at the next walk (at most RECOUNT_S later)
    assert _run(_request(guard, "203.0.113.9", 19_000)) == [507]  # both younger than their limits
    os.utime(upload, (time.time() - 120, time.time() - 120))
    guard._walked_at = float("-inf")
    assert _run(_request(guard, "203.0.113.9", 19_000)) == [200]
    assert not upload.exists() and gradios_own.exists()


def test_a_client_leaving_mid_body_leaves_no_file_and_is_charged_what_it_sent(tmp_path):
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=50_000, total_bytes=100_000)
    statuses = _run(_request(guard, "203.0.113.3", 19_000, leave_after=5))
    assert statuses == [None]  # nothing is sent to a client that left
    assert _folder_bytes(folder) == 0 and guard._inflight == 0
    assert guard.recent.of("203.0.113.3") == 5_000
    declared = _request(guard, "203.0.113.4", 19_000, declared=True, leave_after=3)
    _run(declared)
    assert guard.recent.of("203.0.113.4") == 3_000  # counted ahead in full, the part never sent given back
    assert guard._estimate == 0


def test_declared_uploads_are_counted_in_full_when_they_arrive(tmp_path):
    guard, app, folder = _guard(tmp_path, max_bytes=20_000, per_client_bytes=50_000, total_bytes=10**9)
    statuses = _run(*(_request(guard, "203.0.113.5", 19_000, declared=True) for _ in range(10)))
    assert statuses.count(200) == 2 and statuses.count(429) == 8
    assert app.handed == 38_000  # the refused ones were refused before a byte was read


@pytest.mark.parametrize("merge_s", [0.0, 1.0])
def test_window_counter_gives_back_without_a_debt(merge_s):
    now = [0.0]
    w = WindowCounter(10, clock=lambda: now[0], merge_s=merge_s)
    assert w.take("a", 3, 10) and w.take("a", 4, 10) and w.take("b", 2, 10)
    w.give_back("a", 5)
    assert w.of("a") == 2 and w.total() == 4
    now[0] = 11
    assert w.of("a") == 0 and w.of("b") == 0 and w.total() == 0  # nothing owed once the window has passed
    assert w.take("a", 10, 10)
