"""The belief's per-row state and update on a torch device (retrieval/belief_device_state.py), on torch's CPU
tensors (the GPU's code path): its click model is the twin of the numpy one in belief.py (the reference), a whole
sequence of actions gives the same pages and ranks as the numpy belief, and nothing per row comes to the host."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from iir_testutils import build_tiny

torch = pytest.importorskip("torch")

from interactive_ir.engine import EngineConfig, build_engine  # noqa: E402
from interactive_ir.errors import SessionError  # noqa: E402
from interactive_ir.modes.belief.mode import BeliefMode  # noqa: E402
from interactive_ir.retrieval.belief import Belief, BeliefConfig  # noqa: E402
from interactive_ir.retrieval.belief_device import BeliefDevice  # noqa: E402
from interactive_ir.retrieval.belief_device_state import log_choice  # noqa: E402
from interactive_ir.retrieval.search_backends import _CpuTorch  # noqa: E402
from interactive_ir.retrieval.search_device import TorchMatrix  # noqa: E402


def _device(index, chunk: int = 7) -> BeliefDevice:
    """A belief backend over a torch matrix of `index` on the CPU, in chunks of `chunk` rows (as on a GPU)."""
    dev = BeliefDevice(TorchMatrix(index, _CpuTorch()))
    dev.click_chunk = chunk - 2  # the click model in chunks too
    make = dev.rows

    def rows():
        got = make()
        got.chunk = chunk
        return got

    dev.rows = rows
    return dev


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), n=60, seed=3)


def _q(r, text):
    return r.text_query_row(r.encode_text(text))


# --- one click model --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("temperature", [0.23, 0.01], ids=["usual", "very low: the max shift"])
@pytest.mark.parametrize("click_error", [0.0, 0.1, 0.37])
@pytest.mark.parametrize("cols", [[2], [0, 3, 4], [5], [1, 5]], ids=["click", "marks", "none of these", "mixed"])
def test_the_torch_click_model_is_the_numpy_one(click_error, cols, temperature):
    """Same cosines in: the same log-choice values out as the numpy reference (1e-5 relative), the error term
    included, for a click, marks, "none of these" and a mixed choice."""
    rng = np.random.default_rng(7)
    cfg = BeliefConfig(click_error=click_error, click_temperature=temperature, none_similarity=0.35)
    ref = Belief(np.arange(4), rng.standard_normal((4, 8)).astype(np.float32), cfg)  # the numpy reference
    cos = rng.uniform(-1, 1, (200, 5)).astype(np.float32)  # 200 rows x 5 shown (option 5: none of these)
    want = ref._log_choice(ref._click_logits(cos), cols)
    got = log_choice(torch, torch.from_numpy(cos.copy()), cols, cfg)
    assert got.dtype == torch.float64 and got.shape == want.shape
    assert np.allclose(got.numpy(), want, rtol=1e-5, atol=0)
    assert np.all(want <= 0) and want.std() > 0.01  # a real spread of values, not a constant both get right


# --- a whole search on both -------------------------------------------------------------------------------------
def _run(b: Belief, whole, n: int) -> list:
    """A sequence of every kind of action on `b`, with the page, the ranks of every row and the top rows read
    after each step."""
    cfg = b.config
    out = []
    shown = []

    def read(tag):
        logp = b.log_posterior()
        rows, lp, n_best = b.page(6, shown[-6:])
        at, p = b.top(logp, 10)
        order = np.argsort(-p, kind="stable")
        ranks = [b.rank_of(r, logp) for r in range(n)]
        out.append((tag, list(rows), np.round(lp, 6).tolist(), n_best, ranks, list(at[order]),
                    np.round(p[order], 9).tolist(), b.live(logp), list(b.best_unshown(logp, 5, shown[-3:]))))
        shown.extend(int(r) for r in rows)
        return list(rows)

    page = read("query")
    b.click(page, 2)
    page = read("click")
    b.marks(page, [0, 3, 4])
    page = read("marks")
    b.click(page, None)
    page = read("none")
    b.answer_word(np.arange(n) % 3 == 0, True)
    page = read("yes")
    b.answer_word(np.arange(n) % 4 == 1, False)
    page = read("no")
    b.say(_q(whole, "blue circle"), _q(whole, "square"))
    page = read("statement")
    b.set_seen(shown, np.arange(len(shown)) % 2 + 1)
    b.rule_out(shown[:2])
    page = read("seen")
    b.set_query(_q(whole, "a green triangle"))
    b.keep_only(np.arange(5, n))
    read("new query, filter")
    assert cfg.explore > 0  # the learning images (informative) were chosen on both
    return out


def test_a_whole_search_pages_and_ranks_alike_on_the_device(tiny):
    """Query, clicks, marks, none of these, yes and no answers, statements, seen, ruled out, a new query and a
    filter: the numpy belief and the device belief show the same pages and give every row the same rank."""
    whole = tiny[0]
    n = len(whole.index)
    cfg = BeliefConfig(explore=2, info_depth=30, explore_depth=12)
    q = _q(whole, "a red square")
    cpu = _run(Belief.over(whole, q, cfg), whole, n)
    dev_belief = Belief.over(whole, q, cfg, device=_device(whole.index))
    assert dev_belief.dev is not None and isinstance(dev_belief.actions, torch.Tensor)
    dev = _run(dev_belief, whole, n)
    assert len(cpu) == len(dev) == 9
    for a, b in zip(cpu, dev):
        assert a[0] == b[0]
        assert a[1] == b[1], f"page after {a[0]}"
        assert np.allclose(a[2], b[2], atol=1e-4) and a[3] == b[3]
        assert a[4] == b[4], f"ranks after {a[0]}"
        assert a[5] == b[5] and np.allclose(a[6], b[6], atol=1e-5) and a[7] == b[7] and a[8] == b[8]
    assert len({tuple(x[1]) for x in cpu}) > 5  # the pages moved with the evidence


def test_the_device_state_stays_on_the_device_and_copies_are_its_own(tiny):
    """text, actions, seen and the log-posterior are float64 tensors; a copy's evidence is its own; ranking
    (every row, on demand) is the numpy one's; a posterior with nothing left says so."""
    whole = tiny[0]
    cfg = BeliefConfig()
    q = _q(whole, "a red square")
    cpu, dev = Belief.over(whole, q, cfg), Belief.over(whole, q, cfg, device=_device(whole.index))
    for b in (cpu, dev):
        b.click([1, 2, 3], 0)
    assert all(isinstance(a, torch.Tensor) and a.dtype == torch.float64 for a in (dev.text, dev.actions, dev.seen))
    assert isinstance(dev.log_posterior(), torch.Tensor)
    other = copy.deepcopy(dev)
    other.click([4, 5, 6], 1)
    assert not torch.equal(other.actions, dev.actions) and other.dev is dev.dev
    assert np.allclose(dev.ranking(len(whole.index)), cpu.ranking(len(whole.index)), atol=1e-4)
    assert np.allclose(dev.click_information([1, 2, 3]), cpu.click_information([1, 2, 3]), rtol=1e-4)
    hidden = [b.without(b.log_posterior(), np.array([4, 9])) for b in (cpu, dev)]  # the page left out
    assert np.allclose(dev.dev.host(hidden[1]), hidden[0]) and np.isneginf(hidden[0][[4, 9]]).all()
    assert dev.live(hidden[1]) == cpu.live(hidden[0]) == len(whole.index) - 2
    for b in (cpu, dev):
        b.rule_out(np.arange(len(whole.index)))
        with pytest.raises(SessionError):
            b.log_posterior()


def test_the_engine_runs_every_action_alike_on_the_device(tiny):
    """Through the engine's belief mode: search, closest with words, marks, the belief's questions answered (open
    ones, yes and no on words), skip, a picture question: the same pages, questions, pictures, target ranks and rankings on the
    device as on the CPU."""
    retriever = tiny[0]
    runs = []
    for device in (None, _device(retriever.index)):
        e = build_engine(retriever, config=EngineConfig(k=5, hide_seen=True))
        e.belief_mode = BeliefMode(e.core, e.belief_config, None, device=device)
        s = e.new_session()
        pages = [e.search_text(s, "a red square", ask=False).shown]
        pages.append(e.closest(s, pages[-1][1], "blue", ask=False).shown)
        pages.append(e.marks(s, pages[-1][:2], pages[-1][3:], ask=False).shown)
        for i in range(6):  # the belief's questions (open ones, then yes/no on words), answered
            q = e.ask_belief(s)
            reply = ("yes" if i % 2 else "no") if q is not None and q.kind == "yesno" else "a red circle"
            pages.append(e.tell(s, reply, ask=False).shown)
        ctx = e.belief_mode.question_context(s)
        pages.append(e.skip_belief(s, ask=False).shown)
        pictures = e.belief_mode.picture_options(s)
        asked = [t.answered_question for t in s.turns]
        answers = [t.extra.get("answer") for t in s.turns]
        ranks = [e.belief_mode.target_rank(s, r) for r in range(0, len(retriever.index), 7)]
        runs.append((pages, asked, answers, list(ctx.captions), ctx.p, pictures, ranks, e.belief_mode.ranking(s)))
    (p0, a0, w0, c0, q0, pic0, r0, k0), (p1, a1, w1, c1, q1, pic1, r1, k1) = runs
    assert p0 == p1 and a0 == a1 and w0 == w1 and c0 == c1 and pic0 == pic1 and r0 == r1
    assert np.allclose(q0, q1, atol=1e-6) and np.allclose(k0, k1, atol=1e-4)
    assert sum(isinstance(w, dict) for w in w0) >= 2, "yes/no answers on words (the has-word mask) were applied"
    assert len(pic0) >= 2 and len(set(map(tuple, p0))) == len(p0)


def test_an_answer_is_the_numpy_update_in_float64(tiny):
    """A yes and a no with probabilities float32 cannot hold exactly: the same float64 action terms."""
    whole = tiny[0]
    cfg = BeliefConfig(word_yes=0.49, word_yes_absent=0.23)
    q = _q(whole, "a red square")
    cpu, dev = Belief.over(whole, q, cfg), Belief.over(whole, q, cfg, device=_device(whole.index))
    has = np.arange(len(whole.index)) % 3 == 0
    for b in (cpu, dev):
        b.answer_word(has, True)
        b.answer_word(~has, False)
    assert np.allclose(dev.actions.numpy(), cpu.actions, rtol=1e-12, atol=0)


def test_running_out_of_memory_anywhere_in_the_update_is_device_full(tiny):
    """Not only the products: an op of the state's update (here the page's top rows) that finds the device full
    raises DeviceFull, which the belief mode answers on the CPU."""
    from interactive_ir.retrieval.belief_device import DeviceFull

    whole = tiny[0]
    b = Belief.over(whole, _q(whole, "a red square"), BeliefConfig(), device=_device(whole.index))

    class Full:
        def __getattr__(self, name):
            return getattr(torch, name)

        def topk(self, *a, **k):
            raise MemoryError("injected: the device is full")

    b.dev.torch = Full()
    b.click([1, 2, 3], 0)  # no topk in the click: it goes through
    with pytest.raises(DeviceFull, match="top rows"):
        b.page(5)


@pytest.mark.parametrize("liked", [[2], [0, 3], []], ids=["click", "marks", "none of these"])
def test_a_click_and_words_together_are_one_read_of_the_matrix_and_the_numpy_update(tiny, liked):
    """`Belief.update` (a Closest click with "but a blue circle, not a square"): on the device the click model and
    the statement come from ONE product over every row, and the action terms equal numpy's `marks` then `say`."""
    whole = tiny[0]
    cfg = BeliefConfig(click_error=0.1)
    q = _q(whole, "a red square")
    cpu, dev = Belief.over(whole, q, cfg), Belief.over(whole, q, cfg, device=_device(whole.index))
    shown = [4, 9, 17, 23, 31]
    said = (_q(whole, "a blue circle"), _q(whole, "square"))
    cpu.marks(shown, liked)
    cpu.say(*said)
    rows = dev.vectors
    calls = []
    times_t = rows.times_t
    rows.times_t = lambda xt: calls.append(tuple(xt.shape)) or times_t(xt)  # count the products over every row
    dev.dev.rows = rows
    dev.update(shown, liked, *said)
    assert calls == [(cpu.vectors.shape[1], len(shown) + 2)]  # one product: the shown rows and both statements
    assert np.allclose(dev.actions.numpy(), cpu.actions, rtol=1e-5, atol=1e-6)
    assert np.std(cpu.actions) > 0.1  # the terms moved, not a constant both get right
