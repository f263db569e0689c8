"""One session mixing modes turn by turn with fakes: describe -> answer -> mark images -> relative captions."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from interactive_ir.backends.llms import FakeLLM, fake_reply
from interactive_ir.backends.vlms import FakeVLM
from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine

COT = "Keywords: dog, beach\nDescription: A red dog runs on a sunny beach."
STAGE1 = json.dumps({"step1": [["Modification", "Make it darker."]],
                     "step2": ["A dark dog.", "A dark red dog.", "A dark red dog on the beach."]})
STAGE2 = json.dumps({"step1": ["The dog is dark."], "step2": [["Is the dog dark?", "True"]]})


def responder(prompt: str) -> str:
    if prompt.startswith("Given the image descriptions"):
        return COT
    if "Atomic Proposition Generation" in prompt:
        return STAGE2
    if "Instruction Classification" in prompt:
        return STAGE1
    return fake_reply(prompt)  # the conversation mode's questions, filter answers and reformulations


def _all_disjoint(session: Session) -> bool:
    shown = [i for t in session.turns for i in t.shown]
    return len(shown) == len(set(shown))


def test_describe_answer_feedback_relative_in_one_session(tiny_index):
    r, ids, caps = tiny_index
    llm, vlm = FakeLLM(responder=responder), FakeVLM()
    eng = build_engine(r, llm=llm, vlm=vlm, config=EngineConfig(k=3, hide_seen=True))
    s = eng.new_session(participant="p1")

    eng.start(s, "a red dog on the beach")
    assert s.pending_question  # the conversation mode asked something
    t1 = eng.answer(s, "it is running")
    t2 = eng.feedback(s, [t1.shown[0]], [t1.shown[1]])
    assert t2.method == "cot" and t2.query == "A red dog runs on a sunny beach."
    t3 = eng.relative(s, "make it darker")  # reference: the previous round's top-1
    assert t3.reference == t2.shown[0] and t3.method == "imagescope"
    assert t3.extra["descriptions"][-1] == "A dark red dog on the beach." and t3.why
    upload = Image.new("RGB", (40, 32), (200, 40, 40))
    t4 = eng.relative(s, "with a ball", image=upload)
    assert t4.reference_upload and t4.extra["history_rounds"] == 2
    t5 = eng.feedback(s, [t4.shown[0]], method="rocchio")
    assert t5.extra["rocchio_base"] == "current query" and t5.query == t4.query

    assert [t.kind for t in s.turns] == ["describe", "answer", "feedback", "relative", "relative", "feedback"]
    assert [t.round for t in s.turns] == list(range(6))
    assert _all_disjoint(s)  # every page showed only new images
    assert s.marked() == ([t1.shown[0], t4.shown[0]], [t1.shown[1]])
    assert len(s.composed_history) == 2 and len(s.feedback_query) == r.index.dim
    assert all("total" in t.timings for t in s.turns)
    stages = {c["stage"] for t in s.turns for c in t.llm_calls}
    assert {"rewrite", "reason", "propose", "verify", "evaluate"} <= stages

    # the session survives a JSON round trip and goes on from where it was
    s2 = Session.from_json(s.to_json())
    assert s2.to_json() == s.to_json()
    t6 = eng.relative(s2, "smaller")
    assert t6.reference == t5.shown[0] and t6.extra["history_rounds"] == 3 and len(s.turns) == 6


def test_mixed_session_without_any_model(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=4, hide_seen=True))
    s = eng.new_session()
    t0 = eng.search_text(s, "a dog in the park")
    t1 = eng.feedback(s, [t0.shown[1]])
    t2 = eng.relative(s, "on the snow", reference=t1.shown[2])
    t3 = eng.feedback(s, [t2.shown[0]], [t2.shown[3]], method="rocchio")
    t4 = eng.relative(s, "make it blue")
    assert [t.method for t in s.turns] == ["text", "expand", "compose", "rocchio", "compose"]
    assert t4.reference == t3.shown[0] and _all_disjoint(s)
    assert t3.query == t2.query == "on the snow"  # Rocchio starts from the current query's embedding
    np.testing.assert_allclose(
        s.feedback_query,
        r.encode_text("on the snow") + 0.75 * r.row_vector(r.index.row_of[t2.shown[0]])
        - 0.15 * r.row_vector(r.index.row_of[t2.shown[3]]), atol=1e-5)
    assert not any(t.llm_calls for t in s.turns) and not any(t.error for t in s.turns)


def test_carry_mix_keeps_length_and_weights():
    from interactive_ir.modes.conversation.plugir.pipeline import carry_mix

    r = np.array([3.0, 4.0, 0.0], np.float32)  # |r| = 5
    c = np.array([0.0, 0.0, 2.0], np.float32)  # direction z
    np.testing.assert_allclose(carry_mix(r, c, 0.5), [1.5, 2.0, 2.5], atol=1e-6)  # 0.5 r + 0.5 * 5 * z
    np.testing.assert_allclose(carry_mix(r, c, 0.0), r)
    np.testing.assert_allclose(carry_mix(r, None, 0.5), r)
    np.testing.assert_allclose(carry_mix(r, np.zeros(3, np.float32), 0.5), r)  # a zero carry is ignored
    rows = np.stack([r, 2 * r])
    np.testing.assert_allclose(carry_mix(rows, c, 1.0), [[0, 0, 5], [0, 0, 10]], atol=1e-6)


def test_answer_after_feedback_keeps_the_feedback_effect(tiny_index):
    """The answer's row mixes the feedback round's row (carry_weight); a typed search drops it."""
    from interactive_ir.modes.conversation.plugir.config import plugir_config
    from interactive_ir.modes.conversation.plugir.pipeline import carry_mix

    r, ids, caps = tiny_index
    for weight in (0.0, 0.5):
        eng = build_engine(r, llm=FakeLLM(responder=responder), config=EngineConfig(k=3),
                           plugir=plugir_config(method="zs", carry_weight=weight))
        s = eng.new_session()
        t0 = eng.start(s, "a red dog on the beach")
        t1 = eng.feedback(s, [t0.shown[0]], method="rocchio")
        feedback_row = t1.query_row
        np.testing.assert_allclose(s.carry_row, feedback_row)
        t2 = eng.answer(s, "it is running")
        text_row = r.text_query_row(r.encode_text(t2.query))
        want = carry_mix(text_row, feedback_row, weight)
        np.testing.assert_allclose(t2.query_row, want, atol=1e-6)
        exact = [h.id for h in r.search_row(want, 3)]  # the whole collection (EngineConfig.hide_seen is off)
        assert t2.shown == exact
        if weight == 0.0:
            np.testing.assert_allclose(want, text_row)
        else:
            assert not np.allclose(want, text_row)
        eng.search_text(s, "a blue car", kind="search")
        assert s.carry_row == []
        t4 = eng.skip(s)
        np.testing.assert_allclose(t4.query_row, r.text_query_row(r.encode_text(t4.query)), atol=1e-6)
