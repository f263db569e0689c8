"""A fake faiss GPU module: refuses what faiss-gpu refuses, records what it was asked.

Refused as faiss-gpu does (faiss 1.15, GpuCloner / GpuIndexIVFPQ / GPU_MAX_SELECTION_K):
- cloning anything but IndexFlat, IndexIVFFlat, IndexIVFScalarQuantizer and IndexIVFPQ (e.g. the exact
  indices' IndexScalarQuantizer(fp16)): "could not find a GPU equivalent";
- IVFPQ with a code length (sub-quantizers) not in GPU_PQ_M, dimensions per sub-quantizer not in
  GPU_PQ_SUB_DIMS, more than 8 bits, or 56+ sub-quantizers without fp16 lookup tables;
- k > 2048 in a search, a search with an ID selector;
- two searches at once on one GPU index (faiss GPU indices are not thread-safe; the real failure aborts).
The copy searches with the nprobe it holds (the file's, unless set), recorded per search in `nprobes`.
"""

from __future__ import annotations

import threading
import time

import faiss as _faiss

GPU_PQ_M = (1, 2, 3, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 96)
GPU_PQ_SUB_DIMS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 28, 32)
GPU_K_MAX = 2048
CLONABLE = ("IndexFlat", "IndexFlatIP", "IndexFlatL2", "IndexIVFFlat", "IndexIVFScalarQuantizer", "IndexIVFPQ")


class StandardGpuResources:
    pass


class GpuClonerOptions:
    def __init__(self):
        self.useFloat16 = False


class FakeGpuIndex:
    """A GPU copy: searches the CPU index it was cloned from, under the GPU's rules."""

    def __init__(self, cpu_index, owner: FakeFaissGpu, search_s: float):
        self.cpu = cpu_index
        self.d = cpu_index.d
        self.nprobe = int(getattr(cpu_index, "nprobe", 1))  # the copy keeps the file's nprobe
        self.owner = owner
        self.search_s = search_s
        self._busy = threading.Lock()

    def search(self, q, k, params=None):
        if params is not None and getattr(params, "sel", None) is not None:
            raise RuntimeError("GPU indices take no ID selector")
        if k > GPU_K_MAX:
            raise RuntimeError(f"Error: 'k <= GPU_MAX_SELECTION_K' failed: k {k} > {GPU_K_MAX}")
        if not self._busy.acquire(blocking=False):
            self.owner.concurrent += 1
            raise RuntimeError("two searches at once on one GPU index (not thread-safe)")
        try:
            time.sleep(self.search_s)  # a window in which an unlocked second search would collide
            self.owner.nprobes.append(self.nprobe)
            return self.cpu.search(q, k, params=_faiss.SearchParametersIVF(nprobe=self.nprobe))
        finally:
            self._busy.release()


class FakeFaissGpu:
    """The module: hand it as `Hardware(faiss=FakeFaissGpu(), faiss_gpus=1)`."""

    StandardGpuResources = StandardGpuResources
    GpuClonerOptions = GpuClonerOptions

    def __init__(self, gpus: int = 1, search_s: float = 0.002):
        self.gpus = gpus
        self.search_s = search_s
        self.nprobes: list[int] = []  # the nprobe of every search made on a GPU copy
        self.clones: list[int] = []  # the device of every copy made
        self.concurrent = 0  # searches refused for overlapping another

    def get_num_gpus(self) -> int:
        return self.gpus

    def index_cpu_to_gpu(self, res, device: int, index, opts=None):
        if device >= self.gpus:
            raise RuntimeError(f"invalid GPU device {device}")
        index = _faiss.downcast_index(index)
        name = type(index).__name__
        if name not in CLONABLE:
            raise RuntimeError(f"could not find a GPU equivalent for {name}")
        if name == "IndexIVFPQ":
            m, bits, d = index.pq.M, index.pq.nbits, index.d
            if m not in GPU_PQ_M or d // m not in GPU_PQ_SUB_DIMS or bits > 8:
                raise RuntimeError(f"GPU IVFPQ: {m} sub-quantizers of {d // m} dims, {bits} bits not supported")
            if m >= 56 and not (opts and opts.useFloat16):
                raise RuntimeError(f"GPU IVFPQ: {m} sub-quantizers need float16 lookup tables")
        self.clones.append(device)
        return FakeGpuIndex(index, self, self.search_s)
