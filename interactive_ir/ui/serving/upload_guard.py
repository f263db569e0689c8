"""Gradio's `/upload`, bounded on the bytes as they arrive: `UploadGuard`, ASGI middleware.

A body is counted chunk by chunk as the server reads it, whether it declared a `Content-Length` or came
`Transfer-Encoding: chunked` (which declares none), and each chunk is counted *before* the app (Gradio) sees
it and writes it:

- one upload is at most `max_bytes` (plus room for the multipart framing): past it the request is cut, 413;
- one client address uploads at most `per_client_bytes` per `per_client_window_s`, counted across its
  parallel uploads: past it the request is cut, 429;
- Gradio's temp folder never holds more than `total_bytes`: what is there plus the bytes counted for
  uploads still arriving (the folder is walked again at least every `RECOUNT_S`, so files Gradio writes
  there itself, outside uploads, are counted within that time). A chunk that would pass it makes room first by deleting only
  files that may go: the same client's own earlier uploads, uploads that no event claimed within
  `unclaimed_s` (a page claims its upload within seconds; this bounds how long a flood from many addresses
  holds the space), and other files older than `idle_s` (which Gradio would delete anyway); another visitor's
  recent upload that no event has claimed yet is never deleted. Else the request is cut, 507, before the
  chunk is written.

A declared size is counted in full when the request arrives, so a request that cannot fit is refused
before any byte is read. A cut request gets its status and one line, the connection is closed, and Gradio
deletes the part it wrote (the cut reaches its parser as the multipart error it cleans up after; a client
that goes away mid-body is handled the same way).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

from interactive_ir.ui.serving.limits import WindowCounter, client_of
from interactive_ir.ui.serving.uploads import UploadPolicy, _mb, default_store

log = logging.getLogger(__name__)

FRAMING_BYTES = 64 * 1024  # multipart boundaries and part headers allowed on top of max_bytes
RECOUNT_S = 10.0  # the folder is walked again at least this often (Gradio writes there too, events move files out)
RECOUNT_FULL_S = 0.5  # ... and, when a chunk would not fit, if the last walk is older than this
EVICT_MIN_AGE_S = 2.0  # a file written more recently than this may still be arriving: never deleted to make room
ANSWER_BYTES = 1 << 20  # most bytes of Gradio's answer (the stored paths) read to learn whose files they are


def _cut_error():
    """The exception a cut raises inside the app's body reader: Starlette's multipart error, after which
    Gradio's (and Starlette's) parser deletes the files it was writing."""
    try:
        from starlette.formparsers import MultiPartException
    except ImportError:  # pragma: no cover - Starlette comes with Gradio
        return RuntimeError
    return MultiPartException


class UploadGuard:
    """ASGI middleware counting each `/upload` body as it streams in (see the module's text)."""

    def __init__(self, app, policy: UploadPolicy | None = None, folder: Path | None = None, clock=time.monotonic):
        self.app = app
        self.policy = policy or default_store().policy
        self.folder = folder
        self.clock = clock
        self.recent = WindowCounter(self.policy.per_client_window_s, clock, merge_s=1.0)  # bytes counted per client
        self._lock = threading.Lock()
        self._estimate: int | None = None  # bytes in the folder plus bytes counted for uploads still arriving
        self._inflight = 0  # bytes counted for uploads still arriving
        self._walked_at = float("-inf")
        self._owners: dict[str, set[str]] = {}  # stored upload (absolute path) -> the client addresses that sent it

    # --- the folder --------------------------------------------------------------------------------------------
    def _folder(self) -> Path:
        if self.folder is None:
            from gradio.utils import get_upload_folder

            self.folder = Path(get_upload_folder())
        return self.folder

    def _files(self) -> list[tuple[float, int, str]]:
        out = []
        for dirpath, _, names in os.walk(self._folder()):
            for f in names:
                path = os.path.abspath(os.path.join(dirpath, f))
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                out.append((st.st_mtime, st.st_size, path))
        return out

    def folder_bytes(self) -> int:
        return sum(n for _, n, _ in self._files())

    def _recount(self) -> list[tuple[float, int, str]]:
        """Walk the folder: stored files (in folders of their own) plus the uploads arriving, whose parts Gradio
        writes at the top as it reads them (counted as the larger of those files and the bytes counted for them,
        so a part written is not counted twice and a file left at the top by a crash still counts)."""
        files = self._files()
        root = os.path.abspath(self._folder())
        top = sum(n for _, n, p in files if os.path.dirname(p) == root)
        self._estimate = sum(n for _, n, _ in files) - top + max(top, self._inflight)
        self._walked_at = self.clock()
        present = {p for _, _, p in files}
        self._owners = {p: c for p, c in self._owners.items() if p in present}
        return files

    def _may_go(self, client: str, mtime: float, path: str, now: float) -> bool:
        if mtime > now - EVICT_MIN_AGE_S:
            return False
        owners = self._owners.get(path)
        if owners == {client}:  # equal uploads share a path: only when every sender is this client
            return True
        p = self.policy
        return mtime < now - (min(p.unclaimed_s, p.idle_s) if owners else p.idle_s)

    def _evict(self, need: int, client: str) -> int:
        """Delete `client`'s own stored uploads and expired files, oldest first, until `need` bytes are free;
        returns the bytes freed. Another client's upload not yet expired stays."""
        freed, now, root = 0, time.time(), os.path.abspath(self._folder())
        for mtime, size, path in sorted(self._recount()):
            if freed >= need:
                break
            if not self._may_go(client, mtime, path, now):
                continue
            try:
                os.remove(path)
            except OSError:
                continue
            freed += size
            self._owners.pop(path, None)
            parent = os.path.dirname(path)
            if parent != root:
                try:
                    os.rmdir(parent)  # Gradio keeps each upload in a folder of its own
                except OSError:
                    pass
        if freed:
            log.warning("the upload folder was full: deleted %s of uploads of the same client or expired ones",
                        _mb(freed))
        return freed

    def _room(self, need: int, client: str) -> bool:
        """Count `need` more bytes in the folder when they fit under `total_bytes` (making room if it may)."""
        cap, since = self.policy.total_bytes, self.clock() - self._walked_at
        if self._estimate is None or since > RECOUNT_S or (self._estimate + need > cap and since > RECOUNT_FULL_S):
            self._recount()
        if self._estimate + need > cap:
            freed = self._evict(self._estimate + need - cap, client)  # it recounts the folder first
            self._estimate -= freed
        if self._estimate + need > cap:
            return False
        self._estimate += need
        return True

    # --- counting ---------------------------------------------------------------------------------------------
    def reserve(self, client: str, amount: int) -> tuple[int, str] | None:
        """Count `amount` bytes more for an upload of `client` against its quota and the folder's cap: None
        when they fit (they are counted now), else (HTTP status, message) and nothing is counted."""
        p = self.policy
        with self._lock:
            if not self.recent.take(client, amount, p.per_client_bytes):
                minutes = max(1, int(self.recent.wait_s(client) / 60 + 0.99))
                return 429, (f"you uploaded {_mb(int(self.recent.of(client)))} in the last minutes (limit "
                             f"{_mb(p.per_client_bytes)}): try again in {minutes} min")
            if not self._room(amount, client):
                self.recent.give_back(client, amount)
                log.warning("upload refused: the upload folder holds %s (limit %s)", _mb(self._estimate or 0),
                            _mb(p.total_bytes))
                return 507, "the server's upload space is full right now: try again later"
            self._inflight += amount
        return None

    def settle(self, client: str, reserved: int, received: int, stored: list[str] | None) -> None:
        """An upload ended: `stored` its files (Gradio's answer), or None when it failed or was cut (Gradio
        deleted what it wrote). Bytes counted ahead and never received go back to the quota."""
        with self._lock:
            self._inflight -= reserved
            if self._estimate is not None:
                self._estimate -= reserved if stored is None else max(0, reserved - received)
            for path in stored or ():
                self._owners.setdefault(os.path.abspath(path), set()).add(client)
        if reserved > received:
            self.recent.give_back(client, reserved - received)

    # --- ASGI ------------------------------------------------------------------------------------------------
    async def __call__(self, scope, receive, send):
        if not (scope.get("type") == "http" and scope.get("method") == "POST"
                and scope.get("path", "").endswith("/upload")):
            return await self.app(scope, receive, send)
        up = _MeteredUpload(self, client_of(scope), _declared(scope))
        refused = up.admit()
        if refused is not None:
            return await _plain(send, *refused)
        try:
            await self.app(scope, up.receive_from(receive), up.send_to(send))
        except Exception:
            if up.refusal is None and not up.gone:
                raise
        finally:
            up.settle()
        if up.refusal is not None and not up.started:
            await _plain(send, *up.refusal)


def _declared(scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return None
    return None


class _MeteredUpload:
    """One upload request: its body counted chunk by chunk, its answer read for the stored paths."""

    def __init__(self, guard: UploadGuard, client: str, declared: int | None):
        self.guard, self.client, self.declared = guard, client, declared
        self.limit = guard.policy.max_bytes + FRAMING_BYTES
        self.received = 0  # body bytes read so far
        self.reserved = 0  # bytes counted against the quota and the cap so far
        self.complete = False  # the whole body was read
        self.refusal: tuple[int, str] | None = None  # the cut's status and message
        self.gone = False  # the client went away mid-body
        self.started = False  # the app's answer went out
        self.status: int | None = None
        self.answer = bytearray()

    def admit(self) -> tuple[int, str] | None:
        """Before any byte is read: a declared size over the limit is refused, else counted in full."""
        if self.declared is None:
            return None
        if self.declared > self.limit:
            return 413, f"the file is over the {_mb(self.guard.policy.max_bytes)} upload limit"
        refused = self.guard.reserve(self.client, self.declared)
        if refused is None:
            self.reserved = self.declared
        return refused

    def _count(self, n: int) -> tuple[int, str] | None:
        if self.received + n > self.limit:
            return 413, f"the file is over the {_mb(self.guard.policy.max_bytes)} upload limit"
        need = self.received + n - self.reserved
        if need > 0:
            refused = self.guard.reserve(self.client, need)
            if refused is not None:
                return refused
            self.reserved += need
        self.received += n
        return None

    def receive_from(self, receive):
        async def metered():
            if self.refusal is not None or self.gone:
                raise _cut_error()("the upload was cut")
            msg = await receive()
            if msg.get("type") == "http.request":
                refused = self._count(len(msg.get("body") or b""))
                if refused is not None:
                    self.refusal = refused
                    raise _cut_error()(f"File size exceeded maximum allowed size: {refused[1]}")
                self.complete = self.complete or not msg.get("more_body", False)
            elif msg.get("type") == "http.disconnect" and not self.complete:
                self.gone = True
                raise _cut_error()("the client went away before the upload was complete")
            return msg

        return metered

    def send_to(self, send):
        async def watched(msg):
            if (self.refusal is not None or self.gone) and not self.started:
                return  # the app's answer to a cut request: ours goes out instead
            if msg.get("type") == "http.response.start":
                self.started, self.status = True, int(msg.get("status", 0))
            elif msg.get("type") == "http.response.body" and self.status == 200 and len(self.answer) < ANSWER_BYTES:
                self.answer += msg.get("body") or b""
            await send(msg)

        return watched

    def settle(self) -> None:
        stored = None
        if self.refusal is None and not self.gone and self.status == 200:
            try:
                paths = json.loads(bytes(self.answer))
            except ValueError:
                paths = []
            stored = [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
        self.guard.settle(self.client, self.reserved, self.received, stored)


async def _plain(send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
