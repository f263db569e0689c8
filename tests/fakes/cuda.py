"""A fake CUDA device with a memory limit, for `search_device.TorchMatrix` (hand it as `Hardware(cuda=...)`).

Tensors are torch CPU tensors in fp16 (the GPU's dtype, so fp16 rounding and its ties are real); every
allocation counts against `limit_bytes` and one that does not fit raises `FakeOutOfMemory`, as
torch.cuda.OutOfMemoryError would. `free_bytes` reports the limit minus what is held, or `reported_free`
when set (a device that says more is free than an allocation finds: fragmentation, another process).
"""

from __future__ import annotations

import torch


class FakeOutOfMemory(RuntimeError):
    """CUDA out of memory (the fake's torch.cuda.OutOfMemoryError)."""


class FakeCudaDevice:
    def __init__(self, limit_bytes: int, reported_free: int | None = None, gpu: int = 0):
        self.torch = torch
        self.name = f"cuda:{gpu}"
        self.limit = int(limit_bytes)
        self.used = 0
        self.reported_free = reported_free
        self.allocations: list[int] = []  # bytes asked by each allocation, refused ones too
        self.oom_errors = (FakeOutOfMemory,)

    def free_bytes(self) -> int:
        return self.reported_free if self.reported_free is not None else self.limit - self.used

    def empty(self, rows: int, cols: int):
        need = rows * cols * 2
        self.allocations.append(need)
        if self.used + need > self.limit:
            raise FakeOutOfMemory(f"CUDA out of memory. Tried to allocate {need} bytes; {self.limit - self.used} free")
        self.used += need
        return torch.empty((rows, cols), dtype=torch.float16)
