"""GPU and ZeroGPU paths against fakes that enforce the real limits (tests/fakes): no GPU is needed.

What the fakes cannot show (speed, real memory, real CUDA errors) is bench/gpu_check.py's job on a GPU.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from fakes.cuda import FakeCudaDevice
from fakes.faiss_gpu import FakeFaissGpu
from iir_testutils import query_modes
from test_hf_vision import tiny  # noqa: F401 - the tiny vision models' fixture
from test_index_kinds import write_index

from interactive_ir.index import kinds as K
from interactive_ir.retrieval import search_device as sd
from interactive_ir.retrieval.retriever import Retriever, SearchConfig

ROOT = Path(__file__).resolve().parents[3]
FAKE_SPACES = Path(__file__).resolve().parents[2] / "fakes" / "zerogpu"


@pytest.fixture(scope="module")
def ivfpq(tmp_path_factory):
    r, img, cap = write_index(tmp_path_factory.mktemp("ivfpq") / "idx", "ivf-pq", n=3000)
    return r


@pytest.fixture(scope="module")
def exact_with_ties(tmp_path_factory):
    """An exact index of 600 seeded rows in which rows 5, 77, 300 and 599 are copies of row 42 (exact ties)."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.metadata import IndexRecord
    from interactive_ir.index.writer import IndexWriter

    rng = np.random.default_rng(3)
    n, dim = 600, 32
    img, cap = (rng.standard_normal((2, n, dim)) / np.sqrt(dim)).astype(np.float16)
    for r in (5, 77, 300, 599):
        img[r], cap[r] = img[42], cap[42]
    folder = tmp_path_factory.mktemp("ties") / "idx"
    w = IndexWriter(folder, dim, caption_vectors=True)
    w.add([IndexRecord(f"img{i:04d}.png", [f"caption {i}"]) for i in range(n)], img, cap)
    w.finish("exact", {"embedder": f"fake:{dim}", "has_vision": True, "image_root": "."})
    return load_index(folder), make_embedder(f"fake:{dim}"), img, cap


def cpu(r: Retriever) -> Retriever:
    return Retriever(r.index, r.embedder, SearchConfig(device="faiss"))


def queries(r: Retriever, n: int, seed: int = 1) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal((n, r.index.faiss_index.d)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


# --- faiss-gpu ----------------------------------------------------------------------------------------
def test_an_exact_index_is_never_cloned_to_a_faiss_gpu(exact_with_ties):
    index, emb, _, _ = exact_with_ties
    fake = FakeFaissGpu()
    with pytest.raises(RuntimeError, match="GPU equivalent"):  # what faiss-gpu does with IndexScalarQuantizer
        fake.index_cpu_to_gpu(None, 0, index.faiss_index)
    r = Retriever(index, emb, hardware=sd.Hardware(faiss_gpus=1, faiss=fake))
    assert r.warm().device == "faiss" and fake.clones == []
    assert len(r.search_rows(queries(r, 1)[0], 10)[1]) == 10


def test_ivf_pq_on_the_gpu_searches_with_the_tuned_nprobe_and_finds_what_the_cpu_finds(ivfpq):
    fake = FakeFaissGpu()
    r = Retriever(ivfpq.index, ivfpq.embedder, hardware=sd.Hardware(faiss_gpus=1, faiss=fake))
    assert r.device == "faiss-gpu" and sd.gpu_pq_ok(r.index.params.pq_m, r.index.faiss_index.d)
    r.warm()
    assert fake.clones == [0]  # copied at start-up, not on the first query
    want = K.nprobe(r.index.params)
    assert want > 1
    base = cpu(ivfpq)
    for q in queries(r, 5):
        s, rows = r.search_rows(q, 20, exclude_rows=np.arange(10))
        s0, rows0 = base.search_rows(q, 20, exclude_rows=np.arange(10))
        assert rows.tolist() == rows0.tolist() and not set(rows.tolist()) & set(range(10))
    assert fake.nprobes and set(fake.nprobes) == {want}  # not the file's nprobe of 1


def test_more_candidates_than_the_gpu_returns_are_fetched_from_the_cpu_index(ivfpq):
    fake = FakeFaissGpu()
    r = Retriever(ivfpq.index, ivfpq.embedder, hardware=sd.Hardware(faiss_gpus=1, faiss=fake))
    q = queries(r, 1)[0]
    assert K.candidates(r.index.params, 300) > sd.GPU_K_MAX  # a question turn's 8x re-rank pool
    s, rows = r.search_rows(q, 300)  # the fake raises on k > 2048: this went to the CPU index
    assert rows.tolist() == cpu(ivfpq).search_rows(q, 300)[1].tolist()
    assert fake.nprobes == []
    r.search_rows(q, 10)
    assert len(fake.nprobes) == 1  # small k: the GPU copy


def test_concurrent_searches_take_turns_on_one_gpu_copy(ivfpq):
    fake = FakeFaissGpu(search_s=0.005)
    r = Retriever(ivfpq.index, ivfpq.embedder, hardware=sd.Hardware(faiss_gpus=1, faiss=fake)).warm()
    errors = []

    def worker(seed):
        try:
            for q in queries(r, 10, seed):
                r.search_rows(q, 10)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == [] and fake.concurrent == 0 and len(fake.nprobes) == 60


def test_iir_device_picks_the_gpu(ivfpq, monkeypatch):
    monkeypatch.setenv("IIR_DEVICE", "cuda:1")
    assert sd.device_number() == 1
    fake = FakeFaissGpu(gpus=2)
    Retriever(ivfpq.index, ivfpq.embedder, hardware=sd.Hardware(faiss_gpus=2, faiss=fake, gpu=sd.device_number())).warm()
    assert fake.clones == [1]
    from interactive_ir.backends._torch import gpu_layers, pick_device

    assert pick_device() == "cuda:1" and gpu_layers(pick_device()) == -1


# --- the torch matrix ---------------------------------------------------------------------------------
def torch_retriever(exact_with_ties, cuda) -> Retriever:
    index, emb, _, _ = exact_with_ties
    return Retriever(index, emb, hardware=sd.Hardware(torch_cuda=True, cuda=cuda))


def test_torch_ranks_and_ties_equal_the_cpu_search(exact_with_ties):
    """fp16 scores tie and reorder; the fp32 re-score of the top candidates gives the CPU's rows, scores and
    ranks (ties by row), on the seeded matrix with five identical rows."""
    cuda = FakeCudaDevice(limit_bytes=1 << 30)
    r = torch_retriever(exact_with_ties, cuda)
    base = cpu(r)
    assert r.device == "torch"
    tie = r.query_row(r.index.vectors([42])[0], r.index.vectors([42], "caption")[0])
    for q in [tie, *queries(r, 20)]:
        s, rows = r.search_rows(q, 25)
        s0, rows0 = base.search_rows(q, 25)
        assert rows.tolist() == rows0.tolist()
        np.testing.assert_allclose(s, s0, rtol=1e-6, atol=1e-6)
    top = r.search_rows(tie, 5)[1].tolist()
    assert top == [5, 42, 77, 300, 599]  # the five copies, ties by row, on both devices
    ranks = [r.rank_of(q, r.index.ids[t]) for q in queries(r, 10, 7) for t in (42, 5, 123)]
    assert ranks == [base.rank_of(q, base.index.ids[t]) for q in queries(r, 10, 7) for t in (42, 5, 123)]
    assert r.all_scores(tie).dtype == np.float32 and r.backends.torch.matrix.dtype.is_floating_point


def test_the_matrix_is_filled_in_place_once_at_start_up(exact_with_ties):
    index = exact_with_ties[0]
    size = len(index) * index.faiss_index.d * 2
    cuda = FakeCudaDevice(limit_bytes=int(size * 1.3))  # room for the matrix, not for two copies of it
    r = torch_retriever(exact_with_ties, cuda).warm()
    assert cuda.allocations == [size] and r.backends.torch.failed == ""
    threads = [threading.Thread(target=r.search_rows, args=(q, 10)) for q in queries(r, 8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert cuda.allocations == [size]  # no second copy by concurrent first searches


def test_too_little_free_memory_means_cpu_search_with_one_log_line(exact_with_ties, caplog):
    cuda = FakeCudaDevice(limit_bytes=1000)
    r = torch_retriever(exact_with_ties, cuda)
    caplog.set_level(logging.WARNING, "interactive_ir.retrieval.search_device")
    r.warm()
    for q in queries(r, 3):
        assert r.search_rows(q, 10)[1].tolist() == cpu(r).search_rows(q, 10)[1].tolist()
    assert cuda.allocations == []  # checked first: nothing was tried
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 1 and "GPU search off" in lines[0] and "GiB" in lines[0]


def test_out_of_memory_is_caught_once_and_the_cpu_searches_from_then_on(exact_with_ties, caplog):
    cuda = FakeCudaDevice(limit_bytes=1000, reported_free=1 << 30)  # says more is free than there is
    r = torch_retriever(exact_with_ties, cuda)
    caplog.set_level(logging.WARNING, "interactive_ir.retrieval.search_device")
    for q in queries(r, 4):
        assert r.search_rows(q, 10)[1].tolist() == cpu(r).search_rows(q, 10)[1].tolist()
    assert len(cuda.allocations) == 1  # not retried by every later query
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 1 and "out of GPU memory" in lines[0]
    assert r.rank_of(queries(r, 1)[0], r.index.ids[3]) == cpu(r).rank_of(queries(r, 1)[0], r.index.ids[3])


def full_after_upload(exact_with_ties, **kw) -> FakeCudaDevice:
    """A device that holds the matrix with 64 bytes to spare: the upload fits, a search's scores do not."""
    index = exact_with_ties[0]
    return FakeCudaDevice(limit_bytes=len(index) * index.faiss_index.d * 2 + 64, reported_free=1 << 30, **kw)


@pytest.mark.parametrize("first", ["search_rows", "rank_of"])
def test_out_of_memory_in_a_search_answers_it_on_the_cpu_and_logs_once(exact_with_ties, caplog, first):
    cuda = full_after_upload(exact_with_ties)
    r = torch_retriever(exact_with_ties, cuda).warm()
    assert r.backends.torch.failed == "" and len(cuda.allocations) == 1  # uploaded at start-up
    base = cpu(r)
    caplog.set_level(logging.WARNING, "interactive_ir.retrieval.search_device")
    q = queries(r, 1, 5)[0]
    if first == "rank_of":  # evaluation's every-row scores run out of memory first
        assert r.rank_of(q, r.index.ids[7]) == base.rank_of(q, base.index.ids[7])
    for q in queries(r, 4, 5):  # the search that ran out of memory is answered, and every later one
        s, rows = r.search_rows(q, 10)
        s0, rows0 = base.search_rows(q, 10)
        assert rows.tolist() == rows0.tolist()
        np.testing.assert_allclose(s, s0, rtol=1e-6, atol=1e-6)
    assert r.rank_of(q, r.index.ids[3]) == base.rank_of(q, base.index.ids[3])
    assert len(cuda.workspace) == 1 and cuda.workspace[0] > 64  # tried once; later searches go to the CPU
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 1 and "GPU search off: out of GPU memory" in lines[0], lines
    assert ("in a search" if first == "search_rows" else "scoring every row") in lines[0]
    assert r.backends.torch.matrix is None and cuda.allocations == [cuda.allocations[0]]  # never uploaded again


def test_searches_running_out_of_memory_together_log_one_line_and_are_all_answered(exact_with_ties, caplog):
    class Together(FakeCudaDevice):
        """Every search reaches its allocation before any fails (two tabs searching at once)."""

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.meet = threading.Barrier(3, timeout=20)

        def allocate(self, need, what=""):
            self.meet.wait()
            super().allocate(need, what)

    index = exact_with_ties[0]
    cuda = Together(limit_bytes=len(index) * index.faiss_index.d * 2 + 64, reported_free=1 << 30)
    r = torch_retriever(exact_with_ties, cuda).warm()
    base = cpu(r)
    caplog.set_level(logging.WARNING, "interactive_ir.retrieval.search_device")
    qs, found, errors = queries(r, 3, 9), {}, []

    def search(i):
        try:
            found[i] = r.search_rows(qs[i], 10)[1].tolist()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=search, args=(i,)) for i in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == [] and len(cuda.workspace) == 3
    assert found == {i: base.search_rows(qs[i], 10)[1].tolist() for i in range(3)}
    assert len(caplog.records) == 1, [rec.getMessage() for rec in caplog.records]


def test_a_search_that_finds_the_matrix_dropped_after_its_check_goes_to_the_cpu(exact_with_ties, monkeypatch):
    r = torch_retriever(exact_with_ties, FakeCudaDevice(limit_bytes=1 << 30)).warm()
    tm, ready = r.backends.torch, r.backends.torch.ready

    def ready_then_dropped():
        ok = ready()
        tm._fail("out of GPU memory in another tab's search")  # between this search's check and its use
        return ok

    monkeypatch.setattr(tm, "ready", ready_then_dropped)
    q = queries(r, 1)[0]
    assert r.search_rows(q, 10)[1].tolist() == cpu(r).search_rows(q, 10)[1].tolist()
    assert r.all_scores(q).tolist() == cpu(r).all_scores(q).tolist()


# --- ZeroGPU --------------------------------------------------------------------------------------------
def _web_stack() -> None:
    """Skip a test that needs the page (gradio): a GPU machine may hold only the search stack."""
    pytest.importorskip("gradio", reason="gradio not installed (web stack)")


@pytest.fixture
def fake_spaces(monkeypatch):
    """The fake `spaces`, loaded in this process (which holds torch already) and announced as ZeroGPU."""
    import importlib

    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    monkeypatch.syspath_prepend(str(FAKE_SPACES))
    monkeypatch.delitem(sys.modules, "spaces", raising=False)
    monkeypatch.setattr(sys, "_fake_spaces_lenient", True, raising=False)
    return importlib.import_module("spaces")


def test_the_fake_spaces_refuses_a_process_that_imported_torch_first():
    env = {**os.environ, "PYTHONPATH": str(FAKE_SPACES)}
    done = subprocess.run([sys.executable, "-c", "import torch, spaces"], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "before importing the `spaces` package" in done.stderr


def test_app_imports_spaces_before_anything_touches_cuda(tmp_path):
    from iir_testutils import build_tiny

    _web_stack()  # `app` builds the page

    build_tiny(tmp_path)
    code = ("import sys, app\n"
            f"out = app.start(['--index', {str(tmp_path / 'index')!r}, '--llm', 'none'])\n"
            "assert not isinstance(out, int), out\n"
            "import spaces\n"
            "print('ok', out[1].retriever.device)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKE_SPACES), str(ROOT)]), "SPACES_ZERO_GPU": "1",
           "IIR_ASSUME_CUDA": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok", "faiss"]  # ZeroGPU: searches on the CPU, even with a device node


def test_gpu_presence_is_cuda_or_zero_gpu_not_an_installed_package(monkeypatch):
    from interactive_ir.backends import llms

    monkeypatch.syspath_prepend(str(FAKE_SPACES))  # `spaces` importable, as on a CPU Space
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    monkeypatch.delenv("IIR_DEVICE", raising=False)
    try:  # a machine with a real GPU: as if it had none (the question is what `spaces` alone says)
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    except ImportError:
        pass
    assert llms._gpu_available() is False
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert llms._gpu_available() is True
    assert sd.available_gpus() == (False, 0)  # searches stay on the CPU there


def test_on_zero_gpu_models_take_slots_and_queries_do_not(fake_spaces):
    from interactive_ir.backends._torch import load_options, pick_device
    from interactive_ir.backends.llm_local import llama_gpu_layers
    from interactive_ir.ui.serving import gpu

    assert pick_device() == "cuda" and pick_device(for_queries=True) == "cpu"
    assert llama_gpu_layers() == 0
    import torch

    assert load_options(torch, "cuda") == {"dtype": torch.bfloat16}

    class Local:
        spec = "transformers:Qwen/Qwen2.5-1.5B-Instruct"

        def generate(self, prompts, *, temperature=0.0, max_tokens=256, cancel=None):
            return [f"{p}!" for p in prompts]

    class Remote(Local):
        spec = "openai:gpt-4o-mini"

    assert gpu.gpu_slots(Remote()).__class__ is Remote
    llm = gpu.gpu_slots(Local())
    assert llm.spec == Local.spec
    assert llm.generate(["a"], max_tokens=30) == ["a!"]
    assert llm.generate(["b"] * 20, max_tokens=512) == ["b!"] * 20
    (n1, short), (n2, long) = fake_spaces.calls
    assert n1 == n2 == "generate_in_slot" and gpu.SLOT_MIN_S <= short < long <= gpu.SLOT_MAX_S


def test_the_page_wraps_no_search_in_a_gpu_slot(fake_spaces, tiny_index):
    _web_stack()
    from interactive_ir.engine import build_engine
    from interactive_ir.ui.events import page_context

    r, _, _ = tiny_index
    ctx = page_context(build_engine(r, belief=query_modes()))
    assert fake_spaces.decorated == []
    assert ctx.act_step.__name__ == "act_step"


def test_on_zero_gpu_a_local_captioner_takes_slots_sized_from_its_batches(fake_spaces):
    from PIL import Image

    from interactive_ir.backends.captioners import FakeCaptioner, HFCaptioner
    from interactive_ir.ui.serving import gpu

    forwards = []

    def pipe(images, max_new_tokens):  # the model: one forward batch per call
        forwards.append(len(images))
        return [f"{im.size[0]} wide" for im in images]

    cap = HFCaptioner("Salesforce/blip-image-captioning-base", spec="hf:Salesforce/blip-image-captioning-base",
                      batch_size=8, max_new_tokens=30, pipeline=pipe)
    assert gpu.gpu_slots(FakeCaptioner()).__class__ is FakeCaptioner  # no model here: no slot
    slotted = gpu.gpu_slots(cap)
    assert slotted.spec == cap.spec and isinstance(slotted, gpu.GpuSlotCaptioner)
    images = [Image.new("RGB", (10 + i % 7, 12)) for i in range(1500)]
    assert slotted.caption(images[:1]) == ["10 wide"]
    assert slotted.caption(images) == [f"{im.size[0]} wide" for im in images]  # in order, across slots
    one, *many = fake_spaces.calls
    assert one == ("caption_in_slot", gpu.caption_seconds(images[:1], 8, 30)) and gpu.SLOT_MIN_S < one[1] < 30
    assert len(many) == 3 and all(name == "caption_in_slot" and s <= gpu.SLOT_MAX_S for name, s in many)
    assert many[0][1] > one[1] and sum(forwards) == 1501 and max(forwards) == 8
    assert slotted.caption([]) == [] and len(fake_spaces.calls) == 4  # nothing to do: no slot asked


def test_on_zero_gpu_a_local_vlm_takes_slots_sized_from_its_questions(fake_spaces):
    from PIL import Image

    from interactive_ir.backends.vlms import HFVLM, FakeVLM
    from interactive_ir.ui.serving import gpu

    asked = []

    def vqa(image, question, max_new_tokens):
        asked.append((image.size, max_new_tokens))
        return [{"answer": "yes" if "red" in question else "no"}]

    vlm = HFVLM("dandelin/vilt-b32-finetuned-vqa", "vqa", spec="hf:dandelin/vilt-b32-finetuned-vqa", pipeline=vqa)
    assert gpu.gpu_slots(FakeVLM()).__class__ is FakeVLM
    slotted = gpu.gpu_slots(vlm)
    assert isinstance(slotted, gpu.GpuSlotVLM) and slotted.task == "visual-question-answering"
    red, blue = Image.new("RGB", (8, 8), (200, 0, 0)), Image.new("RGB", (8, 8), (0, 0, 200))
    assert slotted.ask([[red, blue]], ["is it red ?"], max_tokens=16) == ["yes"]
    questions = ["red ?" if i % 3 else "blue ?" for i in range(100)]
    assert slotted.ask([[blue]] * 100, questions, max_tokens=64) == ["yes" if i % 3 else "no" for i in range(100)]
    (n0, short), *rest = fake_spaces.calls
    assert n0 == "ask_in_slot" and short == gpu.ask_seconds([[red, blue]], ["q"], 16) < 20
    assert len(rest) == 3 and all(s <= gpu.SLOT_MAX_S for _, s in rest) and rest[0][1] > 60
    assert len(asked) == 101 and asked[0] == ((776, 384), 16)  # two images side by side, in the slot's process


def test_on_zero_gpu_an_llm_call_longer_than_a_slot_is_split(fake_spaces):
    from interactive_ir.backends.cancel import CancelToken
    from interactive_ir.errors import Cancelled
    from interactive_ir.ui.serving import gpu

    class Local:
        spec = "transformers:Qwen/Qwen2.5-1.5B-Instruct"

        def generate(self, prompts, *, temperature=0.0, max_tokens=256, cancel=None):
            return [p.upper() for p in prompts]

    llm = gpu.gpu_slots(Local())
    prompts = [f"p{i}" for i in range(200)]
    assert llm.generate(prompts, max_tokens=256) == [p.upper() for p in prompts]
    assert len(fake_spaces.calls) == 3 and all(s <= gpu.SLOT_MAX_S for _, s in fake_spaces.calls)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        llm.generate(prompts, cancel=token)
    assert len(fake_spaces.calls) == 3  # a cancelled call asks for no slot


def test_load_app_runs_a_real_transformers_llm_in_zero_gpu_slots(fake_spaces, monkeypatch, tmp_path):
    """ZeroGPU start-up with a tiny random Llama (transformers on the CPU): loaded "on cuda" in half
    precision, as ZeroGPU expects, and a question step's generation runs in a slot sized from its work."""
    pytest.importorskip("transformers")
    import torch
    from iir_testutils import build_tiny, save_tiny_llm

    from interactive_ir.backends.llm_local import load_causal_lm
    from interactive_ir.ui.serving import gpu
    from interactive_ir.ui.startup import app_config, load_app

    fake_spaces.patch_torch(monkeypatch.setattr)  # what `spaces` does to torch: "cuda" waits on the CPU
    build_tiny(tmp_path)
    folder = save_tiny_llm(tmp_path / "llm")
    cfg = app_config(environ={}, index=tmp_path / "index", llm=f"transformers:{folder}", captioner="none", vlm="none")
    try:
        parts = load_app(cfg)
        llm = parts.engine.llm
        assert isinstance(llm, gpu.GpuSlotLLM) and parts.questions_off_reason == ""
        assert llm.loaded.device == "cuda" and llm.loaded.model.dtype == torch.bfloat16
        assert ("LlamaForCausalLM", "cuda") in fake_spaces.moved
        assert fake_spaces.decorated == ["generate_in_slot"] and fake_spaces.calls == []  # start-up took no slot
        assert parts.engine.retriever.device == "faiss"  # searches on the CPU
        session = parts.engine.new_session()
        torch.manual_seed(0)  # the question prompt samples
        turn = parts.engine.start(session, "a red dog on the beach")
        replies = [c["reply"] for c in turn.llm_calls if c["error"] is None]
        assert replies and len(replies) == len(turn.llm_calls) and any(replies)
        assert set(" ".join(replies).split()) <= set("abcdefghijklmnop")  # the tiny model's own words
        assert [n for n, _ in fake_spaces.calls] == ["generate_in_slot"]
        assert gpu.SLOT_MIN_S <= fake_spaces.calls[0][1] < 60
        assert session.question is not None and len(parts.engine.hits_of(turn)) > 0
    finally:
        load_causal_lm.cache_clear()  # the bf16 model "on cuda" is nobody else's


@pytest.mark.integration
def test_load_app_runs_a_real_captioner_and_vlm_in_zero_gpu_slots(fake_spaces, monkeypatch, tmp_path, tiny):  # noqa: F811
    """Tiny random BLIP captioner and ViLT VQA model (transformers on the CPU) loaded by load_app on ZeroGPU:
    "on cuda" in half precision, each call in a slot, images and answers pickled across as the real one does."""
    import torch
    from iir_testutils import build_tiny
    from PIL import Image

    from interactive_ir.ui.serving import gpu
    from interactive_ir.ui.startup import app_config, load_app

    fake_spaces.patch_torch(monkeypatch.setattr)
    build_tiny(tmp_path)
    cfg = app_config(environ={}, index=tmp_path / "index", llm="none", captioner="hf:" + tiny["blip_caption"],
                     vlm="hf:" + tiny["vilt"])
    parts = load_app(cfg)
    cap, vlm = parts.engine.captioner, parts.engine.vlm
    assert isinstance(cap, gpu.GpuSlotCaptioner) and isinstance(vlm, gpu.GpuSlotVLM)
    assert {"BlipForConditionalGeneration", "ViltForQuestionAnswering"} <= {w for w, _ in fake_spaces.moved}
    assert cap.pipe.model.dtype == torch.bfloat16 and fake_spaces.calls == []
    red = Image.new("RGB", (40, 30), (200, 40, 40))
    out = cap.caption([red, red.rotate(90, expand=True)])
    answers = vlm.ask([[red], [red, red]], ["is it red ?", "left or right ?"], max_tokens=4)
    assert len(out) == 2 and all(isinstance(c, str) for c in out) and len(answers) == 2
    assert [n for n, _ in fake_spaces.calls] == ["caption_in_slot", "ask_in_slot"]
