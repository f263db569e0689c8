"""Choosing where a search runs, and the two GPU searches: a torch matrix (exact indices) and a faiss GPU
copy (ivf-pq indices), each falling back to the memory-mapped CPU index where the GPU cannot serve.

- exact index: a torch fp16 matrix on the GPU ("torch") when torch sees CUDA, else faiss on the CPU.
  Never faiss-gpu: exact indices are `IndexScalarQuantizer(fp16)`, which faiss cannot clone to a GPU;
- ivf-pq: a faiss GPU copy ("faiss-gpu") when faiss has GPUs and the index's PQ size is one GPU IVFPQ
  accepts (`gpu_pq_ok`), else the memory-mapped CPU index;
- hnsw: always the CPU (faiss has no GPU HNSW);
- on ZeroGPU (SPACES_ZERO_GPU) searches stay on the CPU: the GPU is lent per model call only.

The hardware is a value (`Hardware`): detected once by default, handed in by tests (tests/fakes/ has a
fake faiss GPU module and a fake CUDA device with a memory limit that enforce the real limits).

What only the fakes have checked (no GPU was lent; bench/gpu_check.py runs the real thing): the torch
upload's memory check and out-of-memory fallback, GPU k and PQ limits, nprobe on the GPU copy, the lock.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

DEVICES = ("auto", "faiss", "faiss-gpu", "torch")
GPU_K_MAX = 2048  # faiss GPU indices return at most this many neighbours per query (GPU_MAX_SELECTION_K)
# GPU IVFPQ (non-interleaved codes, as index_cpu_to_gpu copies them): bytes per code and dimensions per
# sub-quantizer it accepts (faiss/gpu/impl/IVFPQ.cu, PQScanMultiPassNoPrecomputed); 56+ need fp16 lookup tables
GPU_PQ_M = (1, 2, 3, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 96)
GPU_PQ_SUB_DIMS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 28, 32)
MEMORY_HEADROOM = 1.25  # the torch matrix is uploaded only when free GPU memory exceeds its size by this factor
TORCH_CHUNK_ROWS = 65_536  # rows copied to the GPU at a time (host memory stays at one chunk)
RESCORE_MARGIN = 64  # the torch search re-scores 2k + this many fp16 candidates in fp32


def zero_gpu(environ=os.environ) -> bool:
    """Hugging Face ZeroGPU: a GPU lent per decorated call, never held by the process."""
    return bool(environ.get("SPACES_ZERO_GPU", "").strip())


def cuda_device_present() -> bool:
    """True when the machine shows an NVIDIA device node (checked before importing torch, which is slow)."""
    import glob

    return bool(glob.glob("/dev/nvidia[0-9]*")) or bool(os.environ.get("IIR_ASSUME_CUDA"))


def device_number(environ=os.environ) -> int:
    """The GPU searches use: IIR_DEVICE's number ("cuda:1" -> 1), else 0."""
    name = environ.get("IIR_DEVICE", "").strip()
    if name.startswith("cuda:") and name[5:].isdigit():
        return int(name[5:])
    return 0


@dataclass
class Hardware:
    """What a search may run on: torch's CUDA, faiss's GPUs, and the modules that reach them."""

    torch_cuda: bool = False  # torch sees a CUDA device
    faiss_gpus: int = 0  # GPUs faiss can use
    faiss: Any = None  # the faiss module with GPU support (None: `import faiss` when needed)
    cuda: Any = None  # a CUDA device for the torch matrix (None: `CudaDevice` over torch)
    gpu: int = 0  # which GPU (IIR_DEVICE=cuda:N)


def available_gpus() -> tuple[bool, int]:
    """(torch sees a CUDA device, number of GPUs faiss can use). Imports lazily; never fails; (False, 0) on
    ZeroGPU (searches run on the CPU there, and touching CUDA before `spaces` breaks its start-up)."""
    if zero_gpu() or not cuda_device_present():
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


def detect_hardware() -> Hardware:
    torch_cuda, faiss_gpus = available_gpus()
    return Hardware(torch_cuda, faiss_gpus, gpu=device_number())


def gpu_pq_ok(pq_m: int, width: int, bits: int = 8) -> bool:
    """Whether GPU IVFPQ accepts `pq_m` sub-quantizers of `bits` bits over rows of `width` dimensions."""
    return (bits <= 8 and pq_m in GPU_PQ_M and pq_m > 0 and width % pq_m == 0
            and width // pq_m in GPU_PQ_SUB_DIMS)


def select_device(wanted: str, kind: str, torch_cuda: bool, faiss_gpus: int, gpu_ok: bool = True) -> str:
    """The device a search of an index of `kind` runs on; pure (the caller says what hardware exists, and
    `gpu_ok`: whether faiss-gpu can run this index's parameters, `gpu_pq_ok`)."""
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
        if faiss_gpus > 0 and kind == "ivf-pq" and gpu_ok:
            return "faiss-gpu"
        why = ("faiss sees no GPU" if faiss_gpus <= 0 else "faiss-gpu cannot run this index's PQ size"
               if kind == "ivf-pq" else f"faiss-gpu cannot run {kind} indices")
        if kind == "exact" and torch_cuda:
            log.warning("faiss-gpu asked for but %s; searching with torch on the GPU", why)
            return "torch"
        log.warning("faiss-gpu asked for but %s; searching on the CPU", why)
        return "faiss"
    # auto
    if kind == "exact" and torch_cuda:
        return "torch"
    if kind == "ivf-pq" and faiss_gpus > 0 and gpu_ok:
        return "faiss-gpu"
    return "faiss"


class GpuFaiss:
    """A faiss GPU copy of an ivf-pq index, searched under one lock (faiss GPU indices are not thread-safe)
    with the tuned nprobe; a search asking more than GPU_K_MAX neighbours goes to the CPU index."""

    def __init__(self, cpu_index, nprobe: int, hardware: Hardware):
        faiss = hardware.faiss
        if faiss is None:
            import faiss
        self.cpu_index = cpu_index
        self.lock = threading.Lock()
        res = faiss.StandardGpuResources()
        opts = faiss.GpuClonerOptions()
        opts.useFloat16 = True  # fp16 lookup tables: needed by 56+ sub-quantizers
        self.index = faiss.index_cpu_to_gpu(res, hardware.gpu, cpu_index, opts)
        self.index.referenced_objects = [res]  # the resources must live as long as the index
        self.set_nprobe(nprobe)

    def set_nprobe(self, nprobe: int) -> None:
        self.nprobe = max(1, int(nprobe))
        self.index.nprobe = self.nprobe  # the copy keeps the file's nprobe (1) otherwise

    def search(self, q: np.ndarray, k: int, cpu_params=None):
        """(distances, rows) of the top-k; `cpu_params` serve the CPU index beyond GPU_K_MAX."""
        if k > GPU_K_MAX:
            return self.cpu_index.search(q, k, params=cpu_params)
        with self.lock:
            return self.index.search(q, k)


class CudaDevice:
    """torch on one CUDA device: free memory, allocation, and the error it raises when memory runs out."""

    def __init__(self, torch=None, gpu: int = 0):
        if torch is None:
            import torch
        self.torch = torch
        self.name = f"cuda:{gpu}"
        self.oom_errors = (torch.cuda.OutOfMemoryError,)

    def free_bytes(self) -> int:
        return int(self.torch.cuda.mem_get_info(self.name)[0])

    def empty(self, rows: int, cols: int):
        return self.torch.empty((rows, cols), dtype=self.torch.float16, device=self.name)


class TorchMatrix:
    """Every row of an exact index in fp16 on one device, searched by a matrix product; the top candidates
    are re-scored in fp32 from the stored vectors, so scores and ranks equal the CPU search's.

    `build` fills the matrix in place chunk by chunk after checking free memory; it runs at start-up
    (`Retriever.warm`). Running out of memory (at the upload or at a search) is logged once and the
    search moves to the CPU index for good (`failed`)."""

    def __init__(self, index, cuda):
        self.index = index
        self.cuda = cuda
        self.matrix = None
        self.failed = ""  # why the GPU is not used (empty: it is)
        self._lock = threading.Lock()
        self._fail_lock = threading.Lock()  # not `_lock`: `_build` holds that one when it fails

    def ready(self) -> bool:
        """Build once (thread-safe); False when the GPU cannot hold the matrix."""
        if self.matrix is not None or self.failed:
            return self.matrix is not None
        with self._lock:
            if self.matrix is None and not self.failed:
                self._build()
        return self.matrix is not None

    def _parts(self) -> list:
        return [self.index.image_vectors] + ([self.index.caption_vectors] if self.index.has_captions else [])

    def _build(self) -> None:
        parts = self._parts()
        rows, cols = len(self.index), sum(p.shape[1] for p in parts)
        need, free = rows * cols * 2, self.cuda.free_bytes()
        if need * MEMORY_HEADROOM > free:
            return self._fail(f"the index needs {need / 2**30:.1f} GiB on {self.cuda.name} and "
                              f"{free / 2**30:.1f} GiB are free")
        try:
            m = self.cuda.empty(rows, cols)
            for a in range(0, rows, TORCH_CHUNK_ROWS):
                b, c = min(rows, a + TORCH_CHUNK_ROWS), 0
                for p in parts:
                    chunk = self.cuda.torch.from_numpy(np.array(p[a:b], dtype=np.float16))
                    m[a:b, c : c + p.shape[1]].copy_(chunk)
                    c += p.shape[1]
            self.matrix = m
        except self.cuda.oom_errors as e:
            self._fail(f"out of GPU memory uploading the index ({e})")

    def _fail(self, why: str) -> None:
        """Drop the matrix and log why, once: searches that ran out of memory together log one line."""
        with self._fail_lock:
            first, self.matrix = not self.failed, None
            self.failed = self.failed or why
        if first:
            log.warning("GPU search off: %s; every search runs on the CPU from now on", why)

    def search(self, q: np.ndarray, k: int, ex: np.ndarray):
        """(scores, rows) best first, or None when the GPU failed (the caller searches the CPU index)."""
        torch, m = self.cuda.torch, self.matrix  # one reference: another search may drop it (`_fail`) meanwhile
        if m is None:
            return None
        fetch = min(len(self.index), 2 * k + RESCORE_MARGIN + len(ex))
        try:
            with torch.no_grad():
                qt = torch.from_numpy(np.asarray(q, np.float32)).to(m.device, m.dtype)
                s = (m @ qt).float()
                if len(ex):
                    s[torch.from_numpy(ex).to(s.device)] = float("-inf")
                rows = torch.topk(s, fetch).indices.cpu().numpy()
        except self.cuda.oom_errors as e:
            self._fail(f"out of GPU memory in a search ({e})")
            return None
        rows = rows[~np.isin(rows, ex)] if len(ex) else rows
        exact = self.index.row_vectors(rows) @ np.asarray(q, np.float32)  # fp32, as the CPU computes them
        order = np.lexsort((rows, -exact))[:k]
        return exact[order], rows[order]

    def all_scores(self, q: np.ndarray) -> np.ndarray | None:
        """fp32 scores of every row (chunks upcast on the device), or None when the GPU failed."""
        torch, m = self.cuda.torch, self.matrix
        if m is None:
            return None
        out = np.empty(len(self.index), np.float32)
        try:
            with torch.no_grad():
                qt = torch.from_numpy(np.asarray(q, np.float32)).to(m.device)
                for a in range(0, len(out), TORCH_CHUNK_ROWS):
                    b = min(len(out), a + TORCH_CHUNK_ROWS)
                    out[a:b] = (m[a:b].float() @ qt).cpu().numpy()
        except self.cuda.oom_errors as e:
            self._fail(f"out of GPU memory scoring every row ({e})")
            return None
        return out


def canonical_order(scores: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best score first, ties by row: the same order whichever device found them."""
    order = np.lexsort((rows, -scores))
    return scores[order], rows[order]
