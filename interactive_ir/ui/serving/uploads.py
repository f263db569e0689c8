"""Uploaded reference images: how big, how many, and for how long they are kept.

Gradio writes an upload to its temp folder and deletes files no event claimed after `idle_s`
(`gr.Blocks(delete_cache=...)`); `upload_guard.UploadGuard` counts each upload's bytes as they arrive
(chunked or not) against `max_bytes`, the client's `per_client_bytes` and the folder's `total_bytes`,
before Gradio writes them. An upload the page uses is moved into the `UploadStore`: its size is checked
before it is kept, each tab keeps at most `per_tab_bytes` (its new reference replaces the old one),
all tabs together at most `total_bytes` (the least recently used uploads of other tabs are deleted before
a new one is refused), and a file is deleted when its search ends, when its tab closes, or when it has
not been used for `idle_s`.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from interactive_ir.config import apply_env, cache_dir
from interactive_ir.errors import BadInputError
from interactive_ir.ui.serving.tokens import UPLOAD_MARK, token

log = logging.getLogger(__name__)

UPLOAD_ENV_PREFIX = "IIR_UPLOAD_"


@dataclass(frozen=True)
class UploadPolicy:
    """Limits on uploads; each field can be set by env `IIR_UPLOAD_<FIELD>`."""

    max_bytes: int = 20 * 2**20  # largest file accepted (also Gradio's max_file_size)
    per_tab_bytes: int = 20 * 2**20  # most bytes one tab keeps (a tab keeps one reference: a new one replaces it)
    total_bytes: int = 512 * 2**20  # most bytes kept for all tabs together (and in Gradio's temp folder)
    per_client_bytes: int = 100 * 2**20  # most bytes one client address may upload per per_client_window_s
    per_client_window_s: float = 600.0  # the window of per_client_bytes, in seconds
    idle_s: float = 1800.0  # a kept upload unused this long is deleted; so are unclaimed files in Gradio's folder
    unclaimed_s: float = 300.0  # an upload no event claimed this long may be deleted to make room for another client's
    sweep_s: float = 60.0  # how often idle files are looked for
    folder: str = ""  # where kept uploads live ("" = IIR_CACHE_DIR/uploads)


def upload_policy(environ=None) -> UploadPolicy:
    return apply_env(UploadPolicy(), UPLOAD_ENV_PREFIX, environ)


def _mb(n: int) -> str:
    return f"{n / 2**20:.0f} MB" if n >= 10 * 2**20 else f"{n / 2**20:.2g} MB"


@dataclass
class _Kept:
    path: Path
    tab: str
    size: int
    used: float  # time.monotonic() of the last use


class UploadStore:
    """The uploads the page holds, by tab. Thread-safe; one per process (`default_store`)."""

    def __init__(self, policy: UploadPolicy | None = None, clock=time.monotonic):
        self.policy = policy or upload_policy()
        self.folder = Path(self.policy.folder) if self.policy.folder else cache_dir() / "uploads"
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[str, _Kept] = {}  # token -> file
        self._last_sweep = clock()

    # --- facts -------------------------------------------------------------------------------------
    def used_bytes(self, tab: str | None = None) -> int:
        with self._lock:
            return sum(k.size for k in self._kept.values() if tab is None or k.tab == tab)

    def path_of(self, tok: str) -> Path | None:
        with self._lock:
            k = self._kept.get(tok)
            if k is not None:
                k.used = self._clock()
            return k.path if k is not None else None

    def token_of(self, path) -> str:
        name = Path(str(path)).name
        with self._lock:
            for tok, k in self._kept.items():
                if k.path.name == name and Path(str(path)).parent == k.path.parent:
                    return tok
        return ""

    # --- keeping and dropping -------------------------------------------------------------------------
    def keep(self, src, tab: str = "", replaces: str | None = None) -> Path:
        """Move Gradio's temp file `src` into the store for `tab` and return its new path.

        The size is checked first (a refused file is deleted). `replaces` (the tab's previous upload)
        is released before the quotas are counted. Raises BadInputError naming the file.
        """
        src = Path(str(src))
        name = src.name
        try:
            size = src.stat().st_size
        except OSError as e:
            raise BadInputError(f"the upload {name} is gone ({e.__class__.__name__}): upload it again") from e
        p = self.policy
        if size > p.max_bytes:
            discard(src)
            raise BadInputError(f"{name} is {_mb(size)}, over the {_mb(p.max_bytes)} limit: upload a smaller image")
        self.sweep()
        if replaces:
            self.release(replaces)
        with self._lock:
            tab_used = sum(k.size for k in self._kept.values() if k.tab == tab)
            total = sum(k.size for k in self._kept.values())
            if tab_used + size > p.per_tab_bytes:
                discard(src)
                raise BadInputError(f"this tab already keeps {_mb(tab_used)} of uploads (limit "
                                    f"{_mb(p.per_tab_bytes)}): clear the reference first")
            evicted = []
            for t, k in sorted(self._kept.items(), key=lambda kv: kv[1].used):  # the least recently used go first
                if total + size <= p.total_bytes:
                    break
                if k.tab != tab:
                    evicted.append(self._kept.pop(t).path)
                    total -= k.size
            if total + size > p.total_bytes:
                discard(src)
                raise BadInputError("the server's upload space is full right now: use a shown result as the "
                                    "reference, or try again in a few minutes")
            tok = UPLOAD_MARK + token(f"upload:{src}:{time.time_ns()}")
            self._kept[tok] = _Kept(self.folder / (tok + src.suffix.lower()[:8]), tab, size, self._clock())
            dest = self._kept[tok].path
        for f in evicted:
            discard(f)
        if evicted:
            log.warning("the upload store was full: deleted %d of the least recently used uploads", len(evicted))
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            shutil.move(str(src), dest)
        except OSError as e:
            with self._lock:
                self._kept.pop(tok, None)
            raise BadInputError(f"the upload {name} could not be kept ({e.__class__.__name__}): try again") from e
        return dest

    def release(self, path) -> None:
        """Delete a kept upload (a path the store returned); anything else is left alone."""
        if not path:
            return
        tok = self.token_of(path)
        with self._lock:
            k = self._kept.pop(tok, None)
        if k is not None:
            discard(k.path)

    def release_tab(self, tab: str) -> None:
        with self._lock:
            gone = [t for t, k in self._kept.items() if k.tab == tab]
            files = [self._kept.pop(t).path for t in gone]
        for f in files:
            discard(f)

    def sweep(self, force: bool = False) -> int:
        """Delete uploads unused for `idle_s`; returns how many went. Runs at most every `sweep_s`."""
        now = self._clock()
        with self._lock:
            if not force and now - self._last_sweep < self.policy.sweep_s:
                return 0
            self._last_sweep = now
            gone = [t for t, k in self._kept.items() if now - k.used > self.policy.idle_s]
            files = [self._kept.pop(t).path for t in gone]
        for f in files:
            discard(f)
        return len(files)


def discard(path: Path) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("cannot delete the upload %s: %s", path.name, e)


@lru_cache(maxsize=1)
def default_store() -> UploadStore:
    """The process's upload store (the total quota is the server's, shared by every tab)."""
    return UploadStore()


def upload_token(path) -> str:
    """The route token of a kept upload, "" for any other path."""
    return default_store().token_of(path) if path else ""


def delete_cache() -> tuple[int, int]:
    """`gr.Blocks(delete_cache=...)`: how often and after how long Gradio deletes files no event kept."""
    p = default_store().policy
    return int(p.sweep_s), int(p.idle_s)
