"""Free malloc memory handed back to the system every minute: glibc's share of a burst's peak leaves RSS (issue 29).

With Python's records per tab bounded (ui/serving/tabs.py, session_ids.py), what was left of the web app's
memory growth at 200 tabs opening and closing came in steps: a burst of events (many tabs' pages built at
once while the machine was slow) pushed glibc's heap up by several MB, and the heap kept those pages after
the burst, as free chunks that glibc does not return while anything live sits above them
(docs/benchmarks/memory-soak.md). `malloc_trim(0)` returns every whole free page of the heap to the system
(`madvise`), wherever it lies. It takes milliseconds (17-58 ms for a 170 MB heap with 70% freed, on a loaded
2-core VM) and holds malloc's lock meanwhile, so it runs once every `IIR_MALLOC_TRIM_S` seconds (default
60; 0 = never) on a daemon thread started by `start_malloc_trim()`, once per process. Off glibc nothing is
done. Python's own small-object arenas are not malloc's: they return to the system only when empty.
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)

DEFAULT_EVERY_S = 60.0  # seconds between trims (0: never)
_started: dict[str, threading.Thread] = {}  # the process's one trimming thread, once started
_stop = threading.Event()  # set by `stop_malloc_trim` (tests)


def trim_every_s(environ=None) -> float:
    """`IIR_MALLOC_TRIM_S` (default 60): seconds between trims, 0 for none. Anything else that is not a number
    >= 0 raises ValueError saying what to write."""
    env = os.environ if environ is None else environ
    raw = env.get("IIR_MALLOC_TRIM_S", "").strip()
    try:
        every = float(raw) if raw else DEFAULT_EVERY_S
    except ValueError:
        every = -1.0
    if not every >= 0 or every == float("inf"):
        raise ValueError(f"IIR_MALLOC_TRIM_S must be 0 (never) or seconds between malloc trims, got {raw!r}")
    return every


def _trimmer(lib):
    """glibc's `malloc_trim` with its types set, or None when `lib` has none."""
    trim = getattr(lib, "malloc_trim", None)
    if trim is None:
        return None
    if hasattr(trim, "argtypes"):  # a ctypes function (tests pass a plain one)
        import ctypes

        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def start_malloc_trim(environ=None, lib=None) -> float | None:
    """Start the thread that calls glibc's `malloc_trim(0)` every `IIR_MALLOC_TRIM_S` seconds (once per process:
    a second call starts nothing). Returns the period, or None when nothing trims (0, not glibc). `lib`: the C
    library (tests pass a fake). Raises ValueError for a bad IIR_MALLOC_TRIM_S."""
    every = trim_every_s(environ)
    if every == 0:
        return None
    if lib is None:
        from interactive_ir.ui.serving.malloc_arenas import glibc

        lib = glibc()
    trim = _trimmer(lib) if lib is not None else None
    if trim is None:
        log.debug("no glibc malloc_trim: freed memory is left to the allocator")
        return None
    if "thread" not in _started or not _started["thread"].is_alive():
        _stop.clear()
        _started["thread"] = threading.Thread(target=_loop, args=(trim, every), name="iir-malloc-trim", daemon=True)
        _started["thread"].start()
    return every


def stop_malloc_trim() -> None:
    """Stop the trimming thread (tests; the app's runs as long as the process)."""
    _stop.set()
    thread = _started.pop("thread", None)
    if thread is not None:
        thread.join(5)


def _loop(trim, every: float) -> None:
    while not _stop.wait(every):
        trim(0)
