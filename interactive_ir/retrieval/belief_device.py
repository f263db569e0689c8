"""The belief over the whole collection on a torch device (issue 41: "on a GPU the belief is exact over the whole
collection up to its memory").

On the CPU the belief covers every row only up to `retriever.matrix_rows_max()` (a float32 copy of the collection
in RAM), and a pool above it (`belief_pool.py`). When the retriever searches an exact index's matrix on a GPU
(`search_device.TorchMatrix`, device "torch"), that matrix already holds every row: the belief's products over
the whole collection (the query's and each statement's score of every row, every row's cosines with a page's
images) run there, on the same matrix (no second copy), and the belief covers every row of the collection
whatever its size: the limit is what the device's memory holds (the matrix is uploaded only when it fits,
`search_device.MEMORY_HEADROOM`). A product reads each fp16 row once where torch has an fp16 product with fp32
accumulation and out (`torch.mm(..., out_dtype=float32)`, CUDA), else it upcasts the matrix a chunk at a time.
The belief's per-row state and its update live on the device too (`belief_device_state.py`: the click model's
torch twin, kept equal to the numpy one by a test); only a page's, a question's or a rank's few values come back.

`DeviceRows` is what `Belief.vectors` is then: `rows.times(x)` is the fp32 product of every row as a tensor on
the device, `rows @ x` and `rows[i]` the same read as numpy. A device that fills up in the middle of an update
raises `DeviceFull`; the belief mode then turns the device off for the belief (`BeliefDevice.fail`, one log line)
and makes the round again on the CPU from the session's rounds (the pooled path above the exact limit, numpy below
it): the search goes on.

`belief_device(retriever)` is the backend the engine's belief mode takes: a `BeliefDevice` when the retriever
searches a torch matrix, else None. On a CPU, torch's CPU tensors run the same code (the tests).
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from interactive_ir.errors import IIRError

log = logging.getLogger(__name__)

# the fp16 product's right-hand side is padded to a multiple of this many columns: measured on an H200 (10M x 512 fp16
# rows, torch 2.11, 2026-11-28), 11 columns took 6.25 ms (2.5x one read of the rows), 16 took 2.64 ms, the same values
PAD_COLUMNS = 16
CHUNK_ROWS = 262_144  # rows upcast to fp32 at a time on the device (a 1,024-wide chunk: 1 GiB of fp32)
CLICK_CHUNK_ROWS = 4_194_304  # rows the click model runs over at a time (a float64 temporary: 370 MB for 11 options)


class DeviceFull(IIRError):
    """The device ran out of memory in a belief update (the caller makes the round again on the CPU)."""


class DeviceRows:
    """Every row of a collection as a matrix on a torch device, read as numpy: `rows @ x` (x: d or d x m) is
    the fp32 product of every row (chunk by chunk on the device), `rows[i]` the fp32 rows at positions i;
    `rows[:]` is itself (the belief's `cosines` over every row). DeviceFull when the device's memory runs out."""

    ndim = 2
    dtype = np.dtype(np.float32)

    def __init__(self, matrix, torch, oom_errors: tuple, chunk: int = CHUNK_ROWS):
        self.matrix = matrix  # rows x d, fp16 on a GPU (fp32 on the CPU stand-in)
        self.torch = torch
        self.oom_errors = tuple(oom_errors) + (MemoryError,)
        self.chunk = int(chunk)
        # an fp16 matrix is read once by each product (fp32 accumulation and out: `torch.mm(..., out_dtype=)`, CUDA
        # only); False once this torch or device has no such product: each chunk is then upcast to fp32 first
        self.fp16_products = True
        self.shape = (int(matrix.shape[0]), int(matrix.shape[1]))

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, at):
        if isinstance(at, slice) and at == slice(None):
            return self
        idx = np.asarray(at, np.int64)
        try:
            with self.torch.no_grad():
                got = self.matrix[self.torch.from_numpy(idx.reshape(-1)).to(self.matrix.device)].float()
                return got.cpu().numpy().reshape(idx.shape + (self.shape[1],))
        except self.oom_errors as e:
            raise DeviceFull(f"out of device memory reading rows ({e})") from e

    def __matmul__(self, x) -> np.ndarray:
        return self.times(x).cpu().numpy()

    def times(self, x):
        """The fp32 product of every row with `x` (host, d or d x m) as a tensor on the device (nothing crosses)."""
        x = np.asarray(x, np.float32)
        try:
            with self.torch.no_grad():
                return self.times_t(self.torch.from_numpy(np.ascontiguousarray(x)).to(self.matrix.device))
        except self.oom_errors as e:
            raise DeviceFull(f"out of device memory scoring every row ({e})") from e

    def times_t(self, xt):
        """`times` of a tensor already on the device: every row upcast to fp32 a chunk at a time, times `xt`."""
        try:
            with self.torch.no_grad():
                if self.matrix.dtype == self.torch.float16 and self.fp16_products:
                    got = self._fp16_times(xt)
                    if got is not None:
                        return got
                out = self.torch.empty((self.shape[0],) + tuple(xt.shape[1:]), dtype=self.torch.float32,
                                       device=self.matrix.device)
                for a in range(0, self.shape[0], self.chunk):
                    b = min(self.shape[0], a + self.chunk)
                    self.torch.matmul(self.matrix[a:b].float(), xt, out=out[a:b])  # written in place
        except self.oom_errors as e:
            raise DeviceFull(f"out of device memory scoring every row ({e})") from e
        return out

    def _fp16_times(self, xt):
        """Every row times `xt`, each fp16 row read once, in one product (`torch.mm(..., out_dtype=float32)`: fp32
        accumulation and out, `xt` rounded to fp16; CUDA; no chunks: it makes no copy of the rows). None where this
        torch or device has no such product (the CPU): `fp16_products` is then off and the caller upcasts each
        chunk (a copy written and read again: the GPU model in bench/bench_belief_scale.py counts it)."""
        x16 = xt.half()
        cols = x16.shape[1] if x16.ndim == 2 else 0
        if cols > 1 and cols % PAD_COLUMNS:  # 11 columns: 16 (zeros); the product's kernel reads the rows at full speed
            x16 = self.torch.cat([x16, x16.new_zeros((x16.shape[0], PAD_COLUMNS - cols % PAD_COLUMNS))], dim=1)
        try:
            got = self.torch.mm(self.matrix, x16 if x16.ndim == 2 else x16[:, None], out_dtype=self.torch.float32)
        except self.oom_errors:
            raise
        except (RuntimeError, TypeError, NotImplementedError):  # no fp16 product with fp32 out here
            self.fp16_products = False
            return None
        return got[:, :cols] if xt.ndim == 2 else got[:, 0]

    def norms(self) -> np.ndarray:
        """Every row's length (float32; 1 where a row is zero), computed on the device."""
        out = np.empty(self.shape[0], np.float32)
        try:
            with self.torch.no_grad():
                for a in range(0, self.shape[0], self.chunk):
                    b = min(self.shape[0], a + self.chunk)
                    out[a:b] = self.matrix[a:b].float().norm(dim=1).cpu().numpy()
        except self.oom_errors as e:
            raise DeviceFull(f"out of device memory measuring the rows ({e})") from e
        return np.where(out > 0, out, 1.0).astype(np.float32)


class BeliefDevice:
    """The belief's backend on a device: `rows()` is the collection's `DeviceRows` (None when the device is
    off for the belief: the matrix is not there, or an update ran out of memory: `fail`). `source` is the
    retriever's `search_device.TorchMatrix` (its `matrix`, `ready()`, `cuda.torch`, `cuda.oom_errors`)."""

    def __init__(self, source):
        self.source = source
        self.failed = ""  # why the belief no longer uses the device (empty: it does)
        self._norms = None
        self._device_norms = None  # (norms tensor on the device, one length or None): `device_norms`
        self.click_chunk = CLICK_CHUNK_ROWS  # rows the click model runs over at a time (`DeviceMath.choice`)
        self._lock = threading.Lock()

    def rows(self) -> DeviceRows | None:
        if self.failed or not self.source.ready() or self.source.matrix is None:
            return None
        cuda = self.source.cuda
        return DeviceRows(self.source.matrix, cuda.torch, cuda.oom_errors)

    def norms(self, rows: DeviceRows) -> np.ndarray:
        """The rows' lengths, computed once per backend (the matrix does not change)."""
        if self._norms is None or len(self._norms) != len(rows):
            self._norms = rows.norms()
        return self._norms

    def device_norms(self, rows: DeviceRows) -> tuple:
        """(the rows' lengths as a float32 tensor on the device, their one length when every row is as long
        (within 1e-4, as `Belief` has it) else None), computed once per backend."""
        norms = self.norms(rows)
        if self._device_norms is None or self._device_norms[0].shape[0] != len(norms):
            lo, hi = (float(norms.min()), float(norms.max())) if len(norms) else (1.0, 1.0)
            try:
                on_device = rows.torch.from_numpy(norms).to(rows.matrix.device)
            except rows.oom_errors as e:
                raise DeviceFull(f"out of device memory for the rows' lengths ({e})") from e
            self._device_norms = (on_device, lo if hi - lo <= 1e-4 * hi else None)
        return self._device_norms

    def fail(self, why: str) -> None:
        """Off for the belief from now on, logged once (the searches keep their own device)."""
        with self._lock:
            first = not self.failed
            self.failed = self.failed or why
        if first:
            log.warning("the belief no longer runs on the GPU: %s; it runs on the CPU from now on", why)


def belief_device(retriever) -> BeliefDevice | None:
    """The belief's device backend for `retriever`: a `BeliefDevice` over its torch matrix when it searches one
    (device "torch": an exact index on a GPU), else None (the belief runs on the CPU)."""
    return BeliefDevice(retriever.backends.torch) if retriever.device == "torch" else None
