"""Search device selection with no GPU present (untested on a real GPU: see search_device.py)."""

from __future__ import annotations

import pytest

from interactive_ir.retrieval import search_device as sd


@pytest.mark.parametrize("wanted,kind,torch_cuda,faiss_gpus,expect", [
    ("auto", "exact", False, 0, "faiss"),
    ("auto", "exact", True, 0, "torch"),
    ("auto", "exact", False, 1, "faiss"),  # faiss cannot clone IndexScalarQuantizer(fp16) to a GPU
    ("faiss-gpu", "exact", True, 1, "torch"),
    ("auto", "ivf-pq", True, 0, "faiss"),  # torch runs exact search only
    ("auto", "ivf-pq", True, 1, "faiss-gpu"),
    ("faiss-gpu", "ivf-pq", False, 1, "faiss-gpu"),
    ("auto", "hnsw", True, 1, "faiss"),  # no GPU HNSW in faiss
    ("faiss", "exact", True, 1, "faiss"),
    ("torch", "exact", False, 0, "torch"),  # forced: runs on the CPU too (tests)
    ("torch", "ivf-pq", False, 0, "faiss"),
    ("faiss-gpu", "exact", False, 0, "faiss"),  # asked for but absent: the CPU, with a warning
    ("bogus", "exact", False, 0, "faiss"),
])
def test_selection(wanted, kind, torch_cuda, faiss_gpus, expect):
    assert sd.select_device(wanted, kind, torch_cuda, faiss_gpus) == expect


@pytest.mark.parametrize("wanted", ["auto", "faiss-gpu"])
def test_an_ivf_pq_size_the_gpu_refuses_stays_on_the_cpu(wanted):
    assert not sd.gpu_pq_ok(128, 1024)  # the old choice for CLIP image + caption rows
    assert sd.select_device(wanted, "ivf-pq", True, 1, gpu_ok=False) == "faiss"


def test_no_device_node_means_no_gpu_and_no_torch_import(monkeypatch):
    monkeypatch.setattr(sd, "cuda_device_present", lambda: False)
    assert sd.available_gpus() == (False, 0)


def test_retriever_falls_back_to_the_cpu_without_a_gpu(tiny_index, monkeypatch):
    from interactive_ir.retrieval.retriever import Retriever

    monkeypatch.setattr(sd, "cuda_device_present", lambda: False)
    r, ids, caps = tiny_index
    for wanted in ("auto", "faiss-gpu"):
        monkeypatch.setenv("IIR_SEARCH_DEVICE", wanted)
        fresh = Retriever(r.index, r.embedder)
        assert fresh.device == "faiss"
        assert [h.id for h in fresh.search_text("a red dog", k=5)] == [h.id for h in r.search_text("a red dog", k=5)]
