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


def zero_gpu(environ=os.environ) -> bool:
    """Hugging Face ZeroGPU (SPACES_ZERO_GPU set): a GPU is lent per `spaces.GPU` call, none is held."""
    return bool(environ.get("SPACES_ZERO_GPU", "").strip())


def gpu_present(environ=os.environ) -> bool:
    """A GPU for models: ZeroGPU, or torch seeing CUDA (never judged by which packages are installed)."""
    if zero_gpu(environ):
        return True
    forced = environ.get("IIR_DEVICE", "").strip()
    if forced:
        return forced.startswith("cuda")
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a broken install: no GPU for us
        return False


def pick_device(for_queries: bool = False) -> str:
    """IIR_DEVICE if set, else cuda, else mps, else cpu. On ZeroGPU: "cuda" for models run inside
    `spaces.GPU` calls, "cpu" for `for_queries` (the embedder: query encoding stays out of GPU slots)."""
    if zero_gpu():
        return "cpu" if for_queries else "cuda"
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


def on_cuda(device: str) -> bool:
    return str(device).startswith("cuda")


def half_dtype(torch):
    """bf16 where the GPU has it (and on ZeroGPU, whose GPUs all do; asking would touch CUDA), else fp16."""
    if zero_gpu():
        return torch.bfloat16
    try:
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    except Exception:  # noqa: BLE001
        return torch.float16


def load_options(torch, device: str) -> dict:
    """`from_pretrained` keywords for `device`: half precision placed by `device_map` on CUDA (ZeroGPU: half
    precision, moved with `.to("cuda")` as `spaces` expects), fp32 elsewhere."""
    if not on_cuda(device):
        return {"dtype": torch.float32}
    import importlib.util

    if zero_gpu() or importlib.util.find_spec("accelerate") is None:  # device_map needs accelerate
        return {"dtype": half_dtype(torch)}
    return {"dtype": half_dtype(torch), "device_map": device}


def half_on_cuda(torch, device: str):
    """A context computing in half precision on CUDA (open_clip's encoders), doing nothing elsewhere."""
    import contextlib

    if not on_cuda(device):
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda", dtype=half_dtype(torch))


def gpu_layers(device: str) -> int:
    """llama-cpp's n_gpu_layers: every layer on CUDA (-1), none elsewhere."""
    return -1 if on_cuda(device) else 0


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
