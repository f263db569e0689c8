"""Keep the server's native memory flat: hand freed memory back to the system.

Python-level state of the web app stays bounded (interactive_ir.ui.tabs), yet a long-running server's
RSS still grew with every event (issue 15): Gradio runs handlers and generator steps in many worker
threads, glibc's malloc gives threads arenas of their own, and memory freed in an arena is kept by the
process rather than returned. Two glibc settings address it, both applied once at start-up by
`keep_memory_flat()`:

- `malloc_arena_max`: `mallopt(M_ARENA_MAX, n)`, fewer arenas (what the `MALLOC_ARENA_MAX` env var does,
  which only works when set before the process starts);
- `malloc_trim_s`: a daemon thread calls `malloc_trim(0)` every so many seconds, returning the free
  pages of every arena.

Where glibc is absent (macOS, musl) both are no-ops, said once in the log at DEBUG. bench/soak.py
measures the effect (`--compare` runs the server with and without).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import platform
import threading
from collections.abc import Callable
from dataclasses import dataclass

from interactive_ir.config import apply_env

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's mallopt parameter number for the arena limit (malloc.h)


@dataclass(frozen=True)
class MemoryConfig:
    """Native memory settings of the web app's process; env `IIR_MALLOC_TRIM_S`, `IIR_MALLOC_ARENA_MAX`."""

    malloc_trim_s: float = 10.0  # seconds between malloc_trim(0) calls returning freed memory; 0 = never
    malloc_arena_max: int = 2  # most glibc malloc arenas (glibc's default: 8 per core); 0 = leave glibc's default


def memory_config(environ=None) -> MemoryConfig:
    """Defaults overridden by env; a negative value is refused with the variable's name."""
    cfg = apply_env(MemoryConfig(), environ=environ)
    if cfg.malloc_trim_s < 0:
        raise ValueError(f"IIR_MALLOC_TRIM_S must be 0 (off) or a number of seconds, got {cfg.malloc_trim_s}")
    if cfg.malloc_arena_max < 0:
        raise ValueError(f"IIR_MALLOC_ARENA_MAX must be 0 (glibc's default) or more, got {cfg.malloc_arena_max}")
    return cfg


def glibc():
    """The C library when it is glibc (it has `malloc_trim` and `mallopt`), else None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not (hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt")):
        return None
    lib.malloc_trim.argtypes, lib.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    lib.mallopt.argtypes, lib.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return lib


def start_trimmer(interval_s: float, trim: Callable[[], object], stop: threading.Event | None = None) -> threading.Thread:
    """A daemon thread calling `trim()` every `interval_s` seconds until `stop` is set."""
    stop = stop or threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                trim()
            except Exception:  # noqa: BLE001 - memory upkeep must never take the server down
                log.exception("malloc_trim failed; memory is no longer trimmed")
                return

    thread = threading.Thread(target=loop, name="iir-malloc-trim", daemon=True)
    thread.start()
    return thread


_UNSET = object()


def keep_memory_flat(cfg: MemoryConfig | None = None, lib=_UNSET,
                     stop: threading.Event | None = None) -> threading.Thread | None:
    """Apply `cfg` (default: `memory_config()`) to this process: call it early, before Gradio starts its
    threads. Returns the trimming thread, or None when trimming is off or glibc is absent.
    `lib`: the C library (tests pass a fake; default `glibc()`)."""
    cfg = memory_config() if cfg is None else cfg
    lib = glibc() if lib is _UNSET else lib
    if lib is None:
        if cfg.malloc_trim_s or cfg.malloc_arena_max:
            log.debug("not glibc: malloc arenas and trimming left as they are")
        return None
    if cfg.malloc_arena_max:
        if lib.mallopt(M_ARENA_MAX, cfg.malloc_arena_max) != 1:  # mallopt returns 1 on success
            log.warning("mallopt(M_ARENA_MAX, %d) was refused; malloc arenas left as they are", cfg.malloc_arena_max)
    if not cfg.malloc_trim_s:
        return None
    log.debug("returning freed memory every %g s (malloc_trim)", cfg.malloc_trim_s)
    return start_trimmer(cfg.malloc_trim_s, lambda: lib.malloc_trim(0), stop)
