"""Superseded model work stops: a cancel token handed with the work reaches the LLM backend, which stops
within a step, frees its lock and raises `Cancelled`; the page never counts or shows that as a failure."""

from __future__ import annotations

import copy
import pickle
import sys
import threading
import types

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.base import LLM
from interactive_ir.backends.cancel import CancellableLLM, CancelToken, check, holding
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.model_calls import MeteredLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BackendError, Cancelled, IIRError
from interactive_ir.ui import handlers as h
from interactive_ir.ui import work
from interactive_ir.ui.state import UIState

JOIN_S = 20.0  # a generous bound on a thread that should end at once (only so a broken build cannot hang)


class StepLLM:
    """A slow local model: one token per `step_s`, each step under the model lock, checking the token
    between steps (as the transformers backend's StoppingCriteria does)."""

    batch_capable = True

    def __init__(self, step_s: float = 0.01, tokens: int = 0, spec: str = "steps"):
        self.spec = spec
        self.step_s = step_s
        self.tokens = tokens  # tokens per call (0: max_tokens); set high, a call never ends by itself
        self.lock = threading.Lock()
        self.steps = 0  # tokens generated, over all calls
        self.started = threading.Event()  # set once a call is generating
        self.cancels: list = []  # the token each call received

    def generate(self, prompts, *, temperature=0.0, max_tokens=256, cancel=None):
        self.cancels.append(cancel)
        with holding(self.lock, cancel, self.spec):
            for _ in range(self.tokens or max_tokens):
                check(cancel, self.spec)
                self.steps += 1
                self.started.set()
                threading.Event().wait(self.step_s)
        return ["1. What colour is the dog?\n2. Is it on a beach?" for _ in prompts]


def in_thread(fn, *args, **kw):
    """Run `fn` in a thread; returns (thread, box) where box gets "result" or "error"."""
    box: dict = {}

    def go():
        try:
            box["result"] = fn(*args, **kw)
        except BaseException as e:  # handed to the test
            box["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, box


def test_a_token_is_set_once_and_checked():
    token = CancelToken()
    check(token)
    check(None)
    assert not token.wait(0.0)
    token.cancel()
    assert token.cancelled and token.wait(5.0)  # returns at once once set
    with pytest.raises(Cancelled, match="superseded") as info:
        check(token, "the question")
    assert isinstance(info.value, IIRError) and not isinstance(info.value, BackendError)
    # a copy for another process (a ZeroGPU worker) is a fresh token: cancelling does not cross processes
    assert not pickle.loads(pickle.dumps(token)).cancelled and not copy.deepcopy(token).cancelled


def test_a_call_waiting_for_the_model_lock_leaves_when_cancelled():
    lock, token = threading.Lock(), CancelToken()
    lock.acquire()  # another generation holds the model

    def wait_for_model():
        with holding(lock, token):
            return "generated"

    t, box = in_thread(wait_for_model)
    t.join(0.2)
    assert t.is_alive()  # queued behind the other generation
    token.cancel()
    t.join(JOIN_S)
    assert not t.is_alive() and isinstance(box.get("error"), Cancelled)
    lock.release()
    with holding(lock, CancelToken()):  # nothing left it held
        assert lock.locked()
    assert not lock.locked()


def test_a_slow_generation_stops_within_a_step_and_frees_its_lock():
    llm, token = StepLLM(), CancelToken()
    cancellable = CancellableLLM(llm, token)
    assert isinstance(cancellable, LLM) and cancellable.spec == "steps" and cancellable.batch_capable
    t, box = in_thread(MeteredLLM(cancellable).generate, ["write five questions"], stage="question",
                       max_tokens=100_000)
    assert llm.started.wait(JOIN_S)
    token.cancel()
    at_cancel = llm.steps
    t.join(JOIN_S)
    assert not t.is_alive() and isinstance(box.get("error"), Cancelled)  # not wrapped into a BackendError
    assert llm.steps <= at_cancel + 1 < 100_000  # at most the step under way when cancelled
    assert llm.cancels == [token] and not llm.lock.locked()
    with pytest.raises(Cancelled):  # a cancelled call is not started at all
        cancellable.generate(["another"])
    assert llm.cancels == [token]


def test_fake_llm_sleep_ends_when_cancelled():
    llm, token = FakeLLM(sleep_s=600), CancelToken()
    t, box = in_thread(llm.generate, ["a question about dogs"], cancel=token)
    t.join(0.1)
    token.cancel()
    t.join(JOIN_S)
    assert not t.is_alive() and isinstance(box.get("error"), Cancelled)
    assert llm.calls[0]["cancel"] is token
    assert FakeLLM().generate(["a photo"], cancel=CancelToken()) == ["a photo of a photo"]


def test_an_engine_with_another_llm_shares_everything_else(tiny_index):
    engine = build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())
    hooks = []
    engine.add_record_hook(lambda s, t: hooks.append(t.round))
    other = engine.with_llm(CancellableLLM(engine.llm, CancelToken()))
    assert other.llm.llm is engine.llm and other.core is engine.core and other.vlm is engine.vlm
    assert other.asker.llm is other.llm and other.feedback_mode.llm is other.llm and other.composed_mode.llm is other.llm
    assert other.mode_configs == engine.mode_configs and engine.asker.llm is engine.llm  # the original is unchanged
    s = other.new_session()
    other.start(s, "a red dog on the beach")
    assert hooks == [0] and s.pending_question  # the shared core's record hooks ran


# --- the page: a newer action cancels the tab's pending model step ---------------------------------


@pytest.fixture
def slow(tiny_index):
    llm = StepLLM(step_s=0.01, tokens=1_000_000)  # writes for hours unless cancelled
    return build_engine(tiny_index[0], llm=llm, config=EngineConfig(k=4), belief=query_modes()), llm


def test_a_newer_action_cancels_the_question_being_written(slow):
    engine, llm = slow
    st = h.start(engine, UIState(), "a red dog on the beach", later=True)
    job = work.claim(st)
    assert job.step == "ask" and not job.cancel.cancelled
    t, box = in_thread(work.run, engine, job)  # the question is being written ...
    assert llm.started.wait(JOIN_S)
    with st.lock:
        h.skip(engine, st, later=True)  # ... when the user skips
    assert not work.current(st, job)
    work.drop(st, job)  # what the page does when it sees the step superseded
    assert job.cancel.cancelled
    t.join(JOIN_S)
    assert not t.is_alive() and isinstance(box.get("error"), Cancelled)
    assert llm.cancels and all(c is not None and c.cancelled for c in llm.cancels)  # the token reached the model
    assert not llm.lock.locked()  # the model is free for the skip's own question at once
    notice = st.notice
    assert not work.settle(engine, st, job, error=box["error"])  # superseded: dropped, not a failure
    assert st.notice == notice and "⚠" not in st.notice and st.working == ""
    nxt = work.claim(st)  # the skip's question runs with a fresh token
    assert nxt.step == "ask" and not nxt.cancel.cancelled


def test_cancelled_refine_steps_raise_and_a_real_failure_still_says_so(tiny_index):
    eng = build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())
    st = h.start(eng, UIState(), "a red dog on the beach", later=True)
    while (j := work.claim(st)) is not None:
        work.settle(eng, st, j, work.run(eng, j))
    h.toggle_mark(eng, st, st.current_ids[0], True)
    h.feedback(eng, st, "summary", later=True)  # the LLM's rewrite is made again in the "refine" step
    job = work.claim(st)
    assert job.step == "refine" and job.redo.action == "feedback"
    job.cancel.cancel()  # e.g. the tab closed while it was due
    with pytest.raises(Cancelled):
        work.run(eng, job)
    work.drop(st, job)
    while (j := work.claim(st)) is not None:  # the question still due
        work.settle(eng, st, j, work.run(eng, j))
    h.answer(eng, st, "it is brown", later=True)  # an answer's rewrite, by the engine's own step
    job = work.claim(st)
    assert job.step == "refine" and job.redo.action == "engine"
    job.cancel.cancel()
    with pytest.raises(Cancelled):
        work.run(eng, job)
    # a real failure of a current step is still shown
    assert work.settle(eng, st, job, error=BackendError("server down"), note=lambda e: f"⚠ failed: {e}")
    assert st.notice == "⚠ failed: server down"


def test_a_step_that_was_not_superseded_is_not_cancelled(slow):
    engine, llm = slow
    llm.step_s, llm.tokens = 0.0, 1
    st = h.start(engine, UIState(), "a red dog on the beach", later=True)
    job = work.claim(st)
    assert work.settle(engine, st, job, work.run(engine, job))
    assert st.session.pending_question and not job.cancel.cancelled and llm.cancels[0] is job.cancel
    assert not pickle.loads(pickle.dumps(job)).cancel.cancelled  # a step can go to a ZeroGPU worker


def test_llama_cpp_stops_streaming_when_cancelled(monkeypatch, tmp_path):
    token = CancelToken()
    closed = []

    class Llama:
        def __init__(self, model_path, n_ctx, verbose, n_gpu_layers=0):
            pass

        def create_chat_completion(self, messages, temperature, max_tokens, stream):
            assert stream

            def chunks():
                try:
                    yield {"choices": [{"delta": {"role": "assistant"}}]}
                    for i in range(max_tokens):
                        if i == 3:
                            token.cancel()  # superseded while it streams
                        yield {"choices": [{"delta": {"content": f" w{i}"}}]}
                finally:
                    closed.append(True)

            return chunks()

    from interactive_ir.backends import llm_local, make_llm

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=Llama))
    llm_local._load_llama.cache_clear()
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    llm = make_llm(f"llama-cpp:{path}")
    assert llm.generate(["one"], max_tokens=3) == ["w0 w1 w2"]
    with pytest.raises(Cancelled):
        llm.generate(["two"], max_tokens=100_000, cancel=token)
    assert closed == [True, True] and not llm._lock.locked()
    llm_local._load_llama.cache_clear()


def test_transformers_generation_stops_at_the_next_token_when_cancelled():
    """The transformers backend's StoppingCriteria, on a tiny random model (no download)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from interactive_ir.backends.llm_local import LoadedModel, TransformersLLM
    from interactive_ir.backends.llms import LLMConfig

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096)
    model = transformers.LlamaForCausalLM(config).eval()
    model.generation_config.eos_token_id = None  # never ends by itself: only max_tokens or a cancel stop it

    class Tokenizer:
        chat_template = None
        pad_token_id = 0

        def __call__(self, texts, **kw):
            ids = torch.tensor([[5, 6, 7, 8]] * len(texts))
            return transformers.BatchEncoding({"input_ids": ids, "attention_mask": torch.ones_like(ids)})

        def decode(self, row, skip_special_tokens=True):
            return " ".join(f"t{int(i)}" for i in row)

    llm = object.__new__(TransformersLLM)
    llm.spec, llm.config = "transformers:tiny", LLMConfig()
    llm.loaded = LoadedModel(Tokenizer(), model, "cpu", 0.0, threading.Lock())
    forwards, token = [], CancelToken()

    def count(*_):
        forwards.append(1)
        if len(forwards) == 5:
            token.cancel()  # superseded while it generates

    hook = model.register_forward_hook(count)
    try:
        assert len(llm.generate(["a prompt"], max_tokens=3)[0].split()) == 3  # no token: runs to max_tokens
        forwards.clear()
        with pytest.raises(Cancelled):
            llm.generate(["a prompt"], max_tokens=2000, cancel=token)
        assert 5 <= len(forwards) <= 6  # stopped at the next token, not after 2000
        assert not llm.loaded.lock.locked()
        forwards.clear()
        llm.loaded.lock.acquire()  # another generation holds the model: a cancelled call does not wait for it
        try:
            with pytest.raises(Cancelled):
                llm.generate(["a prompt"], max_tokens=2000, cancel=token)
        finally:
            llm.loaded.lock.release()
        assert forwards == []
    finally:
        hook.remove()
