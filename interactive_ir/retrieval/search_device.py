"""Choosing where a search runs: a CUDA GPU when one is present, else faiss on the CPU.

- exact index: torch fp16 matrix product on the GPU ("torch") when torch sees CUDA, else a faiss GPU
  index ("faiss-gpu") when faiss was built with GPU support, else faiss on the CPU ("faiss");
- ivf-pq: a faiss GPU copy ("faiss-gpu") when faiss has GPUs, else the memory-mapped CPU index;
- hnsw: always the CPU (faiss has no GPU HNSW).

A wanted device other than "auto" is honoured when it can run ("torch" also runs on the CPU, for tests);
one that cannot ("faiss-gpu" without a GPU) falls back to "faiss" with a warning.

Not yet run on a GPU machine: the selection and the CPU fallback are tested with the GPU absent.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

DEVICES = ("auto", "faiss", "faiss-gpu", "torch")


def cuda_device_present() -> bool:
    """True when the machine shows an NVIDIA device node (checked before importing torch, which is slow)."""
    import glob

    return bool(glob.glob("/dev/nvidia[0-9]*")) or bool(os.environ.get("IIR_ASSUME_CUDA"))


def available_gpus() -> tuple[bool, int]:
    """(torch sees a CUDA device, number of GPUs faiss can use). Imports lazily; never fails."""
    if not cuda_device_present():
        return False, 0  # no GPU: do not pay for importing torch (about a second and 400 MB) to learn it
    torch_cuda = False
    try:
        import torch

        torch_cuda = bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a broken CUDA install: the CPU it is
        torch_cuda = False
    faiss_gpus = 0
    try:
        import faiss

        faiss_gpus = int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0
    except Exception:  # noqa: BLE001
        faiss_gpus = 0
    return torch_cuda, faiss_gpus


def select_device(wanted: str, kind: str, torch_cuda: bool, faiss_gpus: int) -> str:
    """The device a search of an index of `kind` runs on; pure (the caller says what hardware exists)."""
    if wanted not in DEVICES:
        log.warning("unknown search device %r (choose %s); using auto", wanted, ", ".join(DEVICES))
        wanted = "auto"
    if wanted == "faiss":
        return "faiss"
    if wanted == "torch":
        if kind == "exact":
            return "torch"
        log.warning("the torch search runs exact indices only; this %s index is searched by faiss", kind)
        wanted = "auto"
    if wanted == "faiss-gpu":
        if faiss_gpus > 0 and kind != "hnsw":
            return "faiss-gpu"
        log.warning("faiss-gpu asked for but %s; searching on the CPU",
                    "faiss has no GPU HNSW" if kind == "hnsw" else "faiss sees no GPU")
        return "faiss"
    # auto
    if kind == "exact" and torch_cuda:
        return "torch"
    if kind in ("exact", "ivf-pq") and faiss_gpus > 0:
        return "faiss-gpu"
    return "faiss"


def to_gpu(cpu_index):
    """A copy of a faiss index on GPU 0 (fp16 lookup tables where the index allows)."""
    import faiss

    res = faiss.StandardGpuResources()
    opts = faiss.GpuClonerOptions()
    opts.useFloat16 = True
    gpu = faiss.index_cpu_to_gpu(res, 0, cpu_index, opts)
    gpu.referenced_objects = [res]  # the resources must live as long as the index
    return gpu
