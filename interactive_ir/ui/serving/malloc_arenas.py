"""One glibc malloc arena for the web app's process: the last of the per-event memory growth (issue 15).

Once Python-level state was bounded (ui/serving/session_ids.py, ui/serving/tabs.py), the app's RSS still grew about
11 MB per 10,000 events while Python's live blocks and malloc's in-use bytes stayed flat: the growth was
free memory kept inside glibc's per-thread arenas (Gradio runs handlers in a pool of worker threads, the
model steps in threads of their own, and each thread may get an arena; freed chunks scattered over up to
8 arenas per core are neither reused across arenas nor handed back, and malloc_trim did not release
them). With a single arena the same soak grows under 1 MB per 10,000 events (docs/benchmarks/memory-soak.md).
Allocations that matter here happen under Python's GIL, so one arena costs no measurable latency.

`limit_malloc_arenas()` sets glibc's limit with `mallopt(M_ARENA_MAX, n)` before the server's threads
start (threads that already have an arena keep it). An operator's own `MALLOC_ARENA_MAX` (read by glibc
at process start) wins: nothing is changed then. `IIR_MALLOC_ARENAS=0` leaves glibc's default. Off glibc
(macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import platform

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's mallopt parameter number for the arena limit (malloc.h)
DEFAULT_ARENAS = 1  # arenas for the whole process (glibc's own default: 8 per core)


def glibc():
    """The C library when it is glibc with `mallopt`, else None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(lib, "mallopt"):
        return None
    lib.mallopt.argtypes, lib.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return lib


def limit_malloc_arenas(environ=None, lib=None) -> int | None:
    """Limit glibc to `IIR_MALLOC_ARENAS` (default 1) malloc arenas; returns the limit set, or None when
    nothing was changed (an operator's MALLOC_ARENA_MAX, `IIR_MALLOC_ARENAS=0`, not glibc). `lib`: the C
    library (tests pass a fake). A value that is not a whole number >= 0 raises ValueError saying so."""
    env = os.environ if environ is None else environ
    raw = env.get("IIR_MALLOC_ARENAS", "").strip()
    try:
        n = int(raw) if raw else DEFAULT_ARENAS
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"IIR_MALLOC_ARENAS must be 0 (glibc's default) or a number of arenas, got {raw!r}")
    if n == 0 or env.get("MALLOC_ARENA_MAX"):
        return None
    lib = lib if lib is not None else glibc()
    if lib is None:
        log.debug("not glibc: malloc arenas left as they are")
        return None
    if lib.mallopt(M_ARENA_MAX, n) != 1:  # mallopt answers 1 on success
        log.warning("could not limit malloc arenas to %d: memory may grow with use (issue 15)", n)
        return None
    return n
