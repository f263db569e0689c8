"""`spaces.GPU` on Hugging Face ZeroGPU Spaces, a no-op everywhere else."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

GPU_DURATION_S = 120  # longest a model step may hold a ZeroGPU device (seconds)


def spaces_available() -> bool:
    try:
        return importlib.util.find_spec("spaces") is not None
    except (ImportError, ValueError):
        return False


def gpu(fn: Callable, duration: int = GPU_DURATION_S) -> Callable:
    """`fn` wrapped with `spaces.GPU(duration=...)` when the `spaces` package is importable.

    On ZeroGPU the wrapped call runs in a worker process: it must return what it changes.
    """
    if not spaces_available():
        return fn
    import spaces

    log.info("wrapping %s with spaces.GPU(duration=%d)", getattr(fn, "__name__", fn), duration)
    return spaces.GPU(duration=duration)(fn)
