"""Where a `Retriever`'s searches run: faiss on the CPU (the memory-mapped index), a faiss GPU copy, or an
exact index's matrix in torch on the GPU (`search_device`), chosen once from the hardware and `IIR_SEARCH_DEVICE`.
"""

from __future__ import annotations

import os
import threading
from functools import cached_property

import numpy as np


class SearchBackends:
    """The search backends of one index (thread-safe): `device` names the one used; `faiss_search` and
    `torch_search` run a top-k there."""

    def __init__(self, index, config, hardware=None):
        self.index = index
        self.config = config  # retriever.SearchConfig: device wanted, search threads
        self._given_hardware = hardware  # search_device.Hardware (tests hand in fakes); None: detected when needed
        self._local = threading.local()  # the calling thread's faiss thread count

    @cached_property
    def hardware(self):
        """What searches may run on (`search_device.Hardware`): the one handed in, else detected once."""
        from interactive_ir.retrieval.search_device import Hardware, detect_hardware

        if self._given_hardware is not None:
            return self._given_hardware
        wanted = os.environ.get("IIR_SEARCH_DEVICE", self.config.device)
        return detect_hardware() if wanted in ("auto", "faiss-gpu", "torch") else Hardware()

    @cached_property
    def device(self) -> str:
        """Where searches run: "torch" (GPU fp16 matmul, exact only), "faiss-gpu", "faiss" (CPU) or "milvus"."""
        if self.index.store is not None:
            return "milvus"
        from interactive_ir.retrieval.search_device import gpu_pq_ok, select_device

        wanted = os.environ.get("IIR_SEARCH_DEVICE", self.config.device)
        p, hw = self.index.params, self.hardware
        gpu_ok = p.kind != "ivf-pq" or gpu_pq_ok(p.pq_m, self.index.faiss_index.d, p.pq_bits)
        return select_device(wanted, self.index.kind, hw.torch_cuda, hw.faiss_gpus, gpu_ok)

    def warm(self) -> None:
        """Put the index where it is searched now (the GPU's copy or matrix), not on a user's first query."""
        if self.device == "torch":
            self.torch.ready()
        elif self.device == "faiss-gpu":
            _ = self.faiss

    @property
    def use_torch(self) -> bool:
        return self.device == "torch"

    @cached_property
    def faiss(self):
        """The faiss index searched: the memory-mapped one, or a `GpuFaiss` copy when device is faiss-gpu."""
        if self.device == "faiss-gpu":
            from interactive_ir.index import kinds
            from interactive_ir.retrieval.search_device import GpuFaiss

            return GpuFaiss(self.index.faiss_index, kinds.nprobe(self.index.params), self.hardware)
        return self.index.faiss_index

    @cached_property
    def torch(self):
        """The torch matrix of an exact index: on the GPU (`search_device.TorchMatrix`), or a CPU stand-in
        when "torch" is forced with no GPU (tests)."""
        from interactive_ir.retrieval.search_device import CudaDevice, TorchMatrix

        hw = self.hardware
        cuda = hw.cuda if hw.cuda is not None else (CudaDevice(gpu=hw.gpu) if hw.torch_cuda else _CpuTorch())
        return TorchMatrix(self.index, cuda)

    def torch_search(self, q: np.ndarray, k: int, ex: np.ndarray):
        """(scores, rows) from the torch matrix, or None when it is off (the caller searches with faiss)."""
        return self.torch.search(q, k, ex) if self.torch.ready() else None

    def faiss_search(self, q: np.ndarray, k: int, ex: np.ndarray):
        import faiss

        from interactive_ir.index import kinds

        if getattr(self._local, "threads", None) != self.config.search_threads:
            faiss.omp_set_num_threads(self.config.search_threads)  # per calling thread (OpenMP ICV)
            self._local.threads = self.config.search_threads
        p = self.index.params
        k_fetch = min(kinds.candidates(p, k), len(self.index) - len(ex))
        keep = sel = None
        if len(ex):
            keep = faiss.IDSelectorBatch(ex)  # must outlive the search: IDSelectorNot holds a raw pointer
            sel = faiss.IDSelectorNot(keep)
        params = kinds.search_parameters(p, k_fetch, sel)
        if self.device == "faiss-gpu":
            # GPU indices take no ID selector: fetch extra candidates and drop the excluded ones here; beyond
            # GPU_K_MAX the CPU index answers, with the selector
            d, i = self.faiss.search(q, min(len(self.index), k_fetch + len(ex)), cpu_params=params)
            d, i = d[0], i[0]
            ok = ~np.isin(i, ex)
            return d[ok][:k_fetch], i[ok][:k_fetch]
        d, i = self.faiss.search(q, k_fetch, params=params)
        del keep, sel
        return d[0], i[0]


class _CpuTorch:
    """torch on the CPU, for a forced "torch" search without a GPU (tests): fp32, no memory limit."""

    name = "cpu"
    oom_errors = (MemoryError,)

    def __init__(self):
        import torch

        self.torch = torch

    def free_bytes(self) -> int:
        return 1 << 62

    def empty(self, rows: int, cols: int):
        return self.torch.empty((rows, cols), dtype=self.torch.float32)
