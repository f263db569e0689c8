"""A fake CUDA device with a memory limit, for `search_device.TorchMatrix` (hand it as `Hardware(cuda=...)`).

Tensors are torch CPU tensors in fp16 (the GPU's dtype, so fp16 rounding and its ties are real); every
allocation counts against `limit_bytes` and one that does not fit raises `FakeOutOfMemory`, as
torch.cuda.OutOfMemoryError would. `free_bytes` reports the limit minus what is held, or `reported_free`
when set (a device that says more is free than an allocation finds: fragmentation, another process).

The matrix `empty` returns is "on the device": every tensor an operation on it makes (a search's scores,
their fp32 copy, top-k) must fit beside what is held, else the operation raises `FakeOutOfMemory` as a
search on a full GPU does; views and copies back to the host allocate nothing. `workspace` lists the
bytes each such operation asked for. Such results are freed at once (the device holds only `used`).
"""

from __future__ import annotations

import torch


class FakeOutOfMemory(RuntimeError):
    """CUDA out of memory (the fake's torch.cuda.OutOfMemoryError)."""


HOST = {"cpu", "numpy", "tolist", "item", "__repr__", "__format__", "__array__"}  # copies out: no device memory


class _OnDevice(torch.Tensor):
    """A tensor on a `FakeCudaDevice` (the subclass made per device names it in `fake`)."""

    fake: FakeCudaDevice

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        out = super().__torch_function__(func, types, args, kwargs or {})
        if name in HOST:
            return out.as_subclass(torch.Tensor) if isinstance(out, torch.Tensor) else out
        with torch._C.DisableTorchFunctionSubclass():  # the bookkeeping itself is no device operation
            inputs = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
            for t in out if isinstance(out, tuple) else (out,):
                if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in inputs:  # new memory
                    cls.fake.allocate(t.numel() * t.element_size(), what=name)
        return out


class FakeCudaDevice:
    def __init__(self, limit_bytes: int, reported_free: int | None = None, gpu: int = 0):
        self.torch = torch
        self.name = f"cuda:{gpu}"
        self.limit = int(limit_bytes)
        self.used = 0
        self.reported_free = reported_free
        self.allocations: list[int] = []  # bytes asked by each allocation, refused ones too
        self.workspace: list[int] = []  # bytes asked by each operation on the matrix, refused ones too
        self.oom_errors = (FakeOutOfMemory,)
        self._tensor = type("FakeCudaTensor", (_OnDevice,), {"fake": self})

    def free_bytes(self) -> int:
        return self.reported_free if self.reported_free is not None else self.limit - self.used

    def allocate(self, need: int, what: str = "") -> None:
        """A result of an operation on the device: it must fit beside what is held (freed at once)."""
        self.workspace.append(need)
        if self.used + need > self.limit:
            raise FakeOutOfMemory(f"CUDA out of memory. Tried to allocate {need} bytes in {what}; "
                                  f"{self.limit - self.used} free")

    def empty(self, rows: int, cols: int):
        need = rows * cols * 2
        self.allocations.append(need)
        if self.used + need > self.limit:
            raise FakeOutOfMemory(f"CUDA out of memory. Tried to allocate {need} bytes; {self.limit - self.used} free")
        self.used += need
        return torch.empty((rows, cols), dtype=torch.float16).as_subclass(self._tensor)
