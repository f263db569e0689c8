"""A PlugIR question step's shortcuts (issue 16, per-turn engine cost) give exactly what the plain
computation gives: the candidates' vectors are read once and shared by RCE and KL, the thread limit
is set through a cached controller, and the entropies are those of the definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.model_calls import MeteredLLM
from interactive_ir.modes.conversation.plugir import pipeline, rce
from interactive_ir.modes.conversation.plugir import prompts as P
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
from interactive_ir.modes.conversation.plugir.pipeline import (
    CandidateVectors,
    QuestionState,
    candidate_matrix,
    next_question,
)


@pytest.mark.parametrize("captions", [True, False])
def test_candidate_vectors_are_the_index_rows(tmp_path, captions):
    retriever, _, _ = build_tiny(tmp_path, captions=captions)
    qrow = retriever.text_query_row(retriever.encode_text("a red dog"))
    scores, rows = retriever.search_rows(qrow, 15)
    cv = CandidateVectors.read(retriever, rows)
    assert np.array_equal(cv.image, retriever.index.vectors(rows, "image"))
    if captions:
        assert np.array_equal(cv.caption, retriever.index.vectors(rows, "caption"))
    else:
        assert cv.caption is None
    for start in (0, 4):
        assert np.array_equal(cv.matrix(start), candidate_matrix(retriever, rows[start:]))
    assert cv.image.flags.c_contiguous and (cv.caption is None or cv.caption.flags.c_contiguous)
    # the shared matrix is the search's own rows: its scores are the search's (exact kNN over fp16 vectors)
    np.testing.assert_allclose(cv.matrix() @ qrow, scores, rtol=1e-5, atol=1e-6)


class Questions:
    """Three different questions (one per questioner prompt), and "Uncertain" from the filter: KL chooses."""

    def __init__(self):
        self.n = 0

    def __call__(self, text: str) -> str:
        if text.startswith((P.QUESTIONER_RCE_SYSTEM, P.QUESTIONER_BASELINE_SYSTEM)):
            self.n += 1
            return ["Is the sky blue?", "How many birds fly over the lake?", "Is it a red dog?"][(self.n - 1) % 3]
        return "Uncertain"


@pytest.mark.parametrize("skip", [0, 5])
def test_a_question_step_reads_the_candidates_once_and_its_kl_is_the_plain_one(tmp_path, monkeypatch, skip):
    retriever, _, _ = build_tiny(tmp_path, n=30)
    cands = retriever.search_text("a red dog", 20)
    rows = [h.row for h in cands]
    reads = []
    cls = type(retriever.index)
    real_vectors, real_rows = cls.vectors, cls.row_vectors

    def vectors(self, rows_, kind="image"):
        reads.append(kind)
        return real_vectors(self, rows_, kind)

    def row_vectors(self, rows_):
        reads.append("rows")
        return real_rows(self, rows_)

    monkeypatch.setattr(cls, "vectors", vectors)
    monkeypatch.setattr(cls, "row_vectors", row_vectors)
    cfg = PlugIRConfig(n_questions=3, kl_skip_top=skip)
    res = next_question(MeteredLLM(FakeLLM(responder=Questions())), retriever, lambda ids: ["c"] * len(ids), cfg,
                        QuestionState("a red dog", [], "a red dog", candidates=cands))
    assert reads == ["rows"]  # one read of the [image | caption] rows, shared by RCE and KL
    assert len(res.extra["questions"]) == 3 and len(res.extra["kl"]) == 3
    # the reference: KL over rows read afresh from the index (the code before the shortcut)
    want = pipeline.question_kls(retriever, rows[skip:], "a red dog", res.extra["questions"], cfg.sim_scale, 2000)
    assert res.extra["kl"] == [round(k, 8) for k in want]
    # and from the definition: KL(p_c || p_{c,q}) with p = softmax of exact scores over those candidates
    m = candidate_matrix(retriever, rows[skip:]).astype(np.float64)
    texts = ["a red dog"] + [f"a red dog {q}" for q in res.extra["questions"]]
    q = np.stack([retriever.text_query_row(v) for v in retriever.encode_texts(texts)]).astype(np.float64)
    s = m @ q.T
    p = np.exp(s - s.max(0)) / np.exp(s - s.max(0)).sum(0)
    ref = [float(np.sum(p[:, 0] * (np.log(p[:, 0]) - np.log(p[:, j])))) for j in range(1, 4)]
    np.testing.assert_allclose(res.extra["kl"], ref, rtol=1e-4, atol=1e-7)
    assert res.question == res.extra["questions"][int(np.argmin(ref))]


def test_cluster_runs_single_threaded_and_gives_the_plain_result(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    rng = np.random.default_rng(5)
    v = rng.standard_normal((300, 32)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    with threadpool_limits(limits=1):  # the reference: the code before the cached controller
        labels = rce.kmeans_labels(v, 6, 0, 1)
        ent = rce.similarity_entropies(v, 5.0)
    threads = {}

    def spy(name, real):
        def wrapped(*a, **kw):
            threads[name] = [p["num_threads"] for p in threadpool_info()]
            return real(*a, **kw)
        return wrapped

    monkeypatch.setattr(rce, "similarity_entropies", spy("entropies", rce.similarity_entropies))
    monkeypatch.setattr(rce, "kmeans_labels", spy("kmeans", rce.kmeans_labels))
    assert len(v) >= rce.BESIDE_MIN  # KMeans runs in its own thread beside the entropies
    rce.cluster(v[:50], 4, 0, 5.0)  # the pools are found here ...
    import sklearn.cluster  # noqa: F401 - ... and then a library with pools of its own is loaded
    found = rce.cluster(v, 6, 0, 5.0)
    # every BLAS and OpenMP pool runs one thread, in the calling thread and in KMeans's thread
    assert set(threads) == {"entropies", "kmeans"} and all(set(t) == {1} for t in threads.values()), threads
    assert np.array_equal(found.labels, labels) and np.array_equal(found.entropies, ent)
    assert found.representatives == rce.pick_representatives(labels, ent)
    small = rce.cluster(v[:50], 4, 0, 5.0)  # below BESIDE_MIN: one thread, in order; the same result
    with threadpool_limits(limits=1):
        assert np.array_equal(small.labels, rce.kmeans_labels(v[:50], 4, 0, 1))


def test_entropies_match_the_definition_on_a_seeded_set():
    rng = np.random.default_rng(11)
    v = rng.standard_normal((40, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for scale in (1.0, 7.5):
        got = rce.similarity_entropies(v, scale)
        want = []
        for i in range(len(v)):
            w = [math.exp(scale * float(np.dot(v[i].astype(np.float64), v[j].astype(np.float64))))
                 for j in range(len(v)) if j != i]
            z = sum(w)
            want.append(-sum(x / z * math.log(x / z) for x in w))
        np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("prompt", [
    "a plain prompt",
    [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a question?"}],
    [{"role": "user", "content": [{"type": "text", "text": "what is it?"}, {"type": "image", "id": 3}]}],
    ("a", ["tuple", {"k": 1.5}]),
])
def test_llm_call_records_are_what_asdict_gives(prompt):
    from dataclasses import asdict

    from interactive_ir.core.model_calls import LLMCall

    call = LLMCall("question", prompt, "reply", 0.25, "fake", 0.7, None)
    got = call.to_dict()
    assert got == asdict(call) and list(got) == list(asdict(call))
    if not isinstance(prompt, str):  # a copy: the record does not change when the prompt object does
        assert got["prompt"] is not prompt
        if isinstance(prompt, list):
            prompt[0]["role"] = "changed"
            assert got["prompt"][0]["role"] != "changed"


@pytest.mark.parametrize("size,cap,n", [(10_000_000, 1000, 1000), (1_000_000, 1000, 1000), (100_000, 1000, 1000),
                                        (50_000, 1000, 500), (1_000_000, 0, 10_000), (500, 1000, 20)])
def test_n_is_one_percent_capped(size, cap, n):
    assert rce.default_n_candidates(size, 0.01, 20, cap) == n


def test_the_engine_caps_its_candidates(tmp_path):
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.errors import BadInputError

    retriever, _, _ = build_tiny(tmp_path, n=40)
    assert PlugIRConfig().max_candidates == 1000  # the default leaves every index up to 100,000 images as it was
    for cap, want in ((25, 25), (0, 40)):  # 100% of 40 images, capped at 25 / not capped
        cfg = PlugIRConfig(candidate_fraction=1.0, max_candidates=cap, n_clusters=3)
        eng = build_engine(retriever, llm=FakeLLM(responder=Questions()), config=EngineConfig(k=4), plugir=cfg)
        turn = eng.start(eng.new_session(), "a red dog")
        assert turn.extra["plugir"]["rce"]["n_candidates"] == want
    with pytest.raises(BadInputError, match="max_candidates"):
        PlugIRConfig(max_candidates=10)  # below min_candidates (20)


def _entropies_before(vectors, scale):
    """`similarity_entropies` as it was before issue 16 (the reference for bit-for-bit equality)."""
    v = np.asarray(vectors, np.float32)
    s = (v @ v.T) * np.float32(scale)
    np.fill_diagonal(s, -np.inf)
    s -= s.max(axis=1, keepdims=True)
    e = np.exp(s)
    np.fill_diagonal(s, 0.0)
    z = e.sum(axis=1)
    return (np.log(z) - np.einsum("ij,ij->i", e, s) / z).astype(np.float64)


@pytest.mark.parametrize("scale", [1.0, 7.5])
def test_entropies_are_bit_for_bit_those_of_before(scale):
    v = np.random.default_rng(2).standard_normal((300, 64)).astype(np.float16).astype(np.float32)
    assert np.array_equal(rce.similarity_entropies(v, scale), _entropies_before(v, scale))
