"""How many images an index build embeds per forward pass and how many threads decode images ahead of it,
sized from the device the embedder runs on unless set (`IIR_BUILD_BATCH_SIZE`, `IIR_BUILD_WORKERS`, or the
`index` command's `--batch-size` and `--workers`).

On the CPU the forward pass is the bottleneck: 32 images a pass, and a decoding thread per 4 CPUs (2 at least,
CPU_WORKERS_PER; the forward pass keeps the rest): 2 on a 2-core machine, 4 on 16 cores. A CUDA
GPU encodes thousands of images a second, so it gets larger passes and as many decoding threads as the
CPUs allow (one CPU is left to feed the GPU), bounded so that the batches read ahead (threads + 1) hold at
most IN_FLIGHT_MAX decoded images in host memory.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from interactive_ir.config import apply_env
from interactive_ir.errors import BadInputError

log = logging.getLogger(__name__)

ENV_PREFIX = "IIR_BUILD_"
CPU_BATCH = 32  # images per forward pass on the CPU (and mps)
CPU_WORKERS = 2  # decoding threads on the CPU, at least
CPU_WORKERS_PER = 4  # on the CPU, one decoding thread per this many CPUs (the forward pass takes the others)
CUDA_BATCH = 256  # images per forward pass on a CUDA GPU with at least BIG_GPU_GIB of memory
CUDA_SMALL_BATCH = 128  # on a smaller GPU, or one whose memory is unknown
BIG_GPU_GIB = 16
CUDA_WORKERS_MAX = 16  # decoding threads on a CUDA machine, at most
IN_FLIGHT_MAX = 4096  # decoded images read ahead, at most ((workers + 1) batches: ~2.5 GB of 224-pixel inputs)


@dataclass(frozen=True)
class BuildSizes:
    """Forward-pass batch and decoding threads of an index build (env IIR_BUILD_<FIELD>; `index` flags)."""

    batch_size: int = 0  # images per forward pass; 0 = from the device: 32 on the CPU, 256 on a CUDA GPU (128 under 16 GiB)
    workers: int = 0  # decoding threads overlapped with encoding; 0 = from the device: one per 4 CPUs (2 at least) on the CPU, the CPUs but one on CUDA (at most 16)


def build_sizes(environ=None) -> BuildSizes:
    """`BuildSizes` with the environment's `IIR_BUILD_*` applied (0 = from the device); negatives refused."""
    try:
        sizes = apply_env(BuildSizes(), ENV_PREFIX, environ)
    except ValueError as e:
        raise BadInputError(f"{e}: give a whole number, or 0 to size it from the device") from e
    for name in ("batch_size", "workers"):
        if getattr(sizes, name) < 0:
            raise BadInputError(f"{ENV_PREFIX}{name.upper()} must be 0 (from the device) or more, got "
                                f"{getattr(sizes, name)}")
    return sizes


def cpu_count() -> int:
    """CPUs this process may run on (its affinity, which containers narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def gpu_memory_gib(device: str) -> float | None:
    """Total memory of CUDA `device` in GiB, or None when unknown (no torch, no such GPU)."""
    try:
        import torch

        return torch.cuda.get_device_properties(device).total_memory / 2**30
    except Exception:  # noqa: BLE001 - no CUDA here, or a broken install: unknown
        return None


def device_sizes(device: str, cpus: int, gpu_gib: float | None) -> tuple[int, int]:
    """(batch, workers) for a build on `device` with `cpus` CPUs and a GPU of `gpu_gib` GiB (None: unknown)."""
    if not str(device).startswith("cuda"):
        return CPU_BATCH, min(CUDA_WORKERS_MAX, max(CPU_WORKERS, cpus // CPU_WORKERS_PER))
    batch = CUDA_BATCH if gpu_gib is not None and gpu_gib >= BIG_GPU_GIB else CUDA_SMALL_BATCH
    workers = min(CUDA_WORKERS_MAX, max(CPU_WORKERS, cpus - 1), max(1, IN_FLIGHT_MAX // batch - 1))
    return batch, workers


def sizes_for(embedder, batch_size: int = 0, workers: int = 0, environ=None) -> tuple[int, int]:
    """(batch, workers) of a build with `embedder`: the given values, else `IIR_BUILD_*`, else the device's
    (`embedder.device`; the CPU for an embedder that names none)."""
    env = build_sizes(environ)
    batch_size, workers = batch_size or env.batch_size, workers or env.workers
    if batch_size and workers:
        return batch_size, workers
    device = str(getattr(embedder, "device", "cpu") or "cpu")
    gib = gpu_memory_gib(device) if device.startswith("cuda") else None
    auto_batch, auto_workers = device_sizes(device, cpu_count(), gib)
    batch_size, workers = batch_size or auto_batch, workers or auto_workers
    log.info("index build on %s: %d images per forward pass, %d decoding threads", device, batch_size, workers)
    return batch_size, workers
