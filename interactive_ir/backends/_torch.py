"""Small helpers shared by torch-based backends. torch is imported only when called."""

from __future__ import annotations

import os

import numpy as np

from interactive_ir.errors import BackendUnavailable
from interactive_ir.types import Vectors


def require(module: str, extra: str, pip_name: str | None = None):
    """Import an optional dependency or raise an error with the install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise BackendUnavailable(
            f"this backend needs the Python package {pip_name or module!r}: "
            f"pip install '{pip_name or module}'  (or: pip install 'interactive_ir[{extra}]')"
        ) from e


def pick_device() -> str:
    """IIR_DEVICE if set, else cuda, else mps, else cpu."""
    forced = os.environ.get("IIR_DEVICE")
    if forced:
        return forced
    torch = require("torch", "vision")
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def l2_normalise(x: np.ndarray) -> Vectors:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (x / norms).astype(np.float32, copy=False)


def to_numpy(t) -> Vectors:
    return l2_normalise(t.detach().float().cpu().numpy())


def batches(items, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def bars_wanted() -> bool:
    """Progress bars only on a terminal: in a log file (stderr not a TTY) each redraw would be a line."""
    import sys

    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")


def progress(iterable, total: int, desc: str, enabled: bool):
    if not enabled or not bars_wanted():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="batch", leave=False)
