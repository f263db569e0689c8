"""The belief over the whole collection on a torch device (retrieval/belief_device.py), run here on torch's CPU
tensors through the same code path as on a GPU: the same posterior and pages as the numpy belief, every row
covered above the CPU's exact limit, and a device that fills up mid-update moves the belief to the CPU."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from iir_testutils import build_tiny

torch = pytest.importorskip("torch")

from interactive_ir.engine import EngineConfig, build_engine  # noqa: E402
from interactive_ir.modes.belief.mode import BeliefMode  # noqa: E402
from interactive_ir.retrieval import retriever as R  # noqa: E402
from interactive_ir.retrieval.belief import Belief, BeliefConfig  # noqa: E402
from interactive_ir.retrieval.belief_device import BeliefDevice, DeviceRows, belief_device  # noqa: E402
from interactive_ir.retrieval.retriever import Retriever  # noqa: E402
from interactive_ir.retrieval.search_backends import _CpuTorch  # noqa: E402
from interactive_ir.retrieval.search_device import TorchMatrix  # noqa: E402


def _device(index, fail_at: int | None = None, chunk: int = 7) -> BeliefDevice:
    """A belief backend over a torch matrix of `index` on the CPU (the GPU's code path); with `fail_at`, its
    device "fills up" from the `fail_at`-th product over every row on."""
    dev = BeliefDevice(TorchMatrix(index, _CpuTorch()))
    dev.click_chunk = chunk + 4  # the click model in chunks of other sizes than the products'
    calls = {"n": 0}

    def rows():
        got = BeliefDevice.rows(dev)
        if got is None:
            return None
        got.chunk = chunk  # several chunks even on a tiny index: the chunked product is what a GPU runs
        if fail_at is not None:
            product = got.__class__.times_t

            class Filling(DeviceRows):
                def times_t(self, xt):  # every product over every row goes through it (scores, the click model)
                    calls["n"] += 1
                    if calls["n"] >= fail_at:
                        raise MemoryError("out of device memory scoring every row (injected)")
                    return product(self, xt)

            got.__class__ = Filling
        return got

    dev.rows = rows
    return dev


@pytest.fixture
def tiny(tmp_path):
    return build_tiny(tmp_path, n=40)


def _q(r, text):
    return r.text_query_row(r.encode_text(text))


def test_the_device_belief_is_the_numpy_belief(tiny):
    """Same evidence on both: the posterior to float32 rounding, the same pages."""
    whole = tiny[0]
    cfg = BeliefConfig()
    cpu, dev = Belief.over(whole, _q(whole, "a red square"), cfg), Belief.over(
        whole, _q(whole, "a red square"), cfg, device=_device(whole.index))
    assert isinstance(dev.vectors, DeviceRows) and np.array_equal(dev.rows, cpu.rows)
    shown = [3, 7, 11, 19, 23]
    for b in (cpu, dev):
        b.click(shown, 2)
        b.marks(shown, [0, 4])
        b.click(shown, None)
        b.say(_q(whole, "blue circle"), _q(whole, "square"))
        b.answer_word(np.arange(40) % 3 == 0, True)
        b.set_seen(shown, [1, 2, 1, 1, 1])
        b.rule_out([5])
    assert np.allclose(dev.log_posterior(), cpu.log_posterior(), atol=1e-4, equal_nan=False)
    assert np.array_equal(np.isfinite(dev.log_posterior()), np.isfinite(cpu.log_posterior()))
    assert np.array_equal(dev.page(6, shown)[0], cpu.page(6, shown)[0])
    assert np.allclose(dev.cosines(np.array([1, 2]), np.array([4, 9])), cpu.cosines(np.array([1, 2]), np.array([4, 9])),
                       atol=1e-5)


def test_on_a_device_the_belief_covers_every_row_above_the_cpu_limit(tiny, monkeypatch):
    """With the CPU's exact limit below the collection the CPU belief is a pool; the device's is every row."""
    monkeypatch.setenv(R.MATRIX_ROWS_ENV, "0")
    above = Retriever(tiny[0].index, tiny[0].embedder)
    q = _q(above, "a green triangle")
    cfg = BeliefConfig(pool=8)
    assert Belief.over(above, q, cfg).pool is not None
    b = Belief.over(above, q, cfg, device=_device(above.index))
    assert b.pool is None and len(b.rows) == len(above.index) and above._matrix is None  # no float32 copy in RAM


def test_the_engine_pages_alike_on_the_device_and_falls_back_when_it_fills_up(tiny, caplog):
    """A search on the device pages as the numpy one; a device that fills up mid-search moves the belief to the
    CPU (made again from the session's rounds), says so once, and the search goes on with the same pages."""
    retriever = tiny[0]
    engines = []
    for device in (None, _device(retriever.index), _device(retriever.index, fail_at=4)):
        e = build_engine(retriever, config=EngineConfig(k=4, hide_seen=True))
        e.belief_mode = BeliefMode(e.core, e.belief_config, None, device=device)
        engines.append(e)
    pages = []
    with caplog.at_level(logging.WARNING, logger="interactive_ir.retrieval.belief_device"):
        for e in engines:
            s = e.new_session()
            got = [e.search_text(s, "a red square").shown]
            for r in range(4):
                got.append(e.closest(s, got[-1][r % 4] if r != 2 else None, "blue" if r == 1 else None).shown)
            pages.append(got)
    assert pages[1] == pages[0] and pages[2] == pages[0]
    assert engines[2].belief_mode.device.failed and not engines[1].belief_mode.device.failed
    assert sum("no longer runs on the GPU" in r.message for r in caplog.records) == 1


def test_the_backend_is_chosen_from_the_retriever(tiny):
    """No torch matrix (faiss on the CPU): no device; a retriever searching a torch matrix: its backend."""
    retriever = Retriever(tiny[0].index, tiny[0].embedder, R.SearchConfig(device="faiss"))  # the CPU's, on a GPU too
    assert retriever.device == "faiss" and belief_device(retriever) is None
    assert BeliefMode(build_engine(retriever).core, BeliefConfig(), None).device is None


def test_device_rows_read_like_a_float32_matrix(tiny):
    index = tiny[0].index
    rows = _device(index).rows()
    m = index.row_vectors(np.arange(len(index)))
    x = np.random.default_rng(0).standard_normal((m.shape[1], 3)).astype(np.float32)
    assert rows.shape == m.shape and rows[:] is rows
    assert np.allclose(rows @ x, m @ x, atol=1e-4) and np.allclose(rows @ x[:, 0], m @ x[:, 0], atol=1e-4)
    assert np.array_equal(rows[np.array([3, 1])], m[[3, 1]])
    assert np.allclose(rows.norms(), np.linalg.norm(m, axis=1), atol=1e-5)


def test_an_fp16_matrix_is_upcast_where_torch_has_no_fp16_product_with_fp32_out(tiny):
    """An fp16 matrix (a GPU's): where torch has no fp16 product with fp32 out (the CPU) each chunk is upcast and
    the product goes on, and gives the fp32 matrix's products."""
    index = tiny[0].index
    rows = _device(index).rows()
    half = DeviceRows(rows.matrix.half(), torch, (), chunk=7)
    x = np.random.default_rng(1).standard_normal((rows.shape[1], 3)).astype(np.float32)
    got, want = half @ x, rows @ x
    assert got.dtype == np.float32 and np.allclose(got, want, atol=1e-4)  # the index stores fp16 rows already
    assert np.allclose(half @ x[:, 0], want[:, 0], atol=1e-4) and half.fp16_products is False


def test_an_fp16_product_with_fp32_out_reads_each_row_once(tiny):
    """Where torch has `mm(..., out_dtype=float32)` (CUDA; here a stand-in that computes it in fp32) the fp16
    matrix is multiplied as it is, in one product, for a vector and for a matrix of columns; nothing is upcast."""
    seen = []

    class Torch:  # torch with the CUDA product: fp16 in, fp32 accumulation and out
        def __getattr__(self, name):
            return getattr(torch, name)

        def mm(self, a, b, out_dtype=None):
            assert a.dtype == b.dtype == torch.float16 and out_dtype == torch.float32
            seen.append((a.shape[0], b.shape[1]))
            return a.float() @ b.float()

    index = tiny[0].index
    m = torch.from_numpy(index.row_vectors(np.arange(len(index))).astype(np.float16))
    rows = DeviceRows(m, Torch(), (), chunk=7)
    x = np.random.default_rng(2).standard_normal((rows.shape[1], 4)).astype(np.float32)
    want = m.float().numpy() @ x.astype(np.float16).astype(np.float32)
    assert np.allclose(rows @ x, want, atol=1e-4) and np.allclose(rows @ x[:, 1], want[:, 1], atol=1e-4)
    assert rows.fp16_products and [n for n, _ in seen] == [len(index)] * 2  # every row once a product, not upcast
    assert [c for _, c in seen] == [16, 1]  # 4 columns padded to 16 (the GPU's fast kernel; the result keeps 4)
    assert (rows @ x).shape == (len(index), 4)
