"""Relevance feedback: prompt builders and parsers, Rocchio, caption expansion, unseen-only paging, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from interactive_ir.backends.captioners import FakeCaptioner
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BackendError, BadInputError, SessionError
from interactive_ir.modes.feedback.mode import FeedbackConfig, rocchio
from interactive_ir.modes.feedback.prompts import (
    PAPER_EXAMPLE_CAPTIONS,
    PAPER_EXAMPLE_OUTPUTS,
    PAPER_SUBTASKS,
    build_prompt,
    keywords_query,
    parse_cot,
    parse_keywords,
    parse_rewrite,
    parse_summary,
    split_keywords,
)

INPUTS = ["a dog on a beach", "a brown dog runs on the sand"]


# --- prompt builders ---------------------------------------------------------------------------------

@pytest.mark.parametrize("method,label", [("summary", "Topic:"), ("keywords", "Taggings:"), ("cot", "Keywords:")])
def test_prompt_has_the_paper_subtask_the_example_and_the_numbered_expansion(method, label):
    p = build_prompt(method, INPUTS)
    assert p.startswith(PAPER_SUBTASKS[method].replace("video", "image"))
    assert PAPER_EXAMPLE_CAPTIONS[0] in p  # the worked example of Table 1
    tail = p.split("Now the descriptions to use.")[1]
    assert "1. a dog on a beach\n2. a brown dog runs on the sand" in tail
    assert p.rstrip().endswith(label)


def test_prompt_builder_refuses_unknown_methods():
    with pytest.raises(ValueError, match="unknown query-editing method"):
        build_prompt("poem", INPUTS)


# --- parsers -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply,expected", [
    ("Topic: A brown dog running on a sandy beach", "A brown dog running on a sandy beach"),
    ("Sure! Here is the topic:\n\nA dog running on the beach.", "A dog running on the beach."),
    ("Topic:\n**A dog and a ball**", "A dog and a ball"),
    ("1. a dog on a beach\nTopic: Dog playing at the seaside", "Dog playing at the seaside"),
    ('"A wet dog shakes off water"', "A wet dog shakes off water"),
    ('The topic of this image is "dogs playing in the snow"', "dogs playing in the snow"),
])
def test_parse_summary_reads_the_topic(reply, expected):
    assert parse_summary(reply, INPUTS) == expected


@pytest.mark.parametrize("reply", ["", "   ", "1.", "???", "Topic:", "a dog on a beach",
                                   "Topic: " + PAPER_EXAMPLE_OUTPUTS["summary"],
                                   'The topic of this image is "a brown dog runs on the sand."'])
def test_parse_summary_rejects_junk_and_echoes(reply):
    assert parse_summary(reply, INPUTS) is None


@pytest.mark.parametrize("reply,expected", [
    ("Taggings: dog, beach, sand, running", ["dog", "beach", "sand", "running"]),
    ("Image of Dog, beach, sand.", ["dog", "beach", "sand"]),
    ("- dog\n- beach\n- Dog\n- ball", ["dog", "beach", "ball"]),
    ("Sure, here are the tags:\ndog, beach\nThese tags describe the image really well.\nsky, sea", ["dog", "beach"]),
    ("Tags: video or image of kids; bus; fire truck", ["kids", "bus", "fire truck"]),
    ("Taggings:\ndog, a dog that is running very fast on the beach today, sand", ["dog", "sand"]),
])
def test_parse_keywords(reply, expected):
    assert parse_keywords(reply) == expected


@pytest.mark.parametrize("reply", ["", "I think the picture is nice and wonderful to look at", "tags: a, b", "!!!"])
def test_parse_keywords_junk_gives_nothing(reply):
    assert parse_keywords(reply) == []


def test_plain_expansion_joins_texts_as_sentences():
    from interactive_ir.modes.feedback.mode import plain_expansion

    assert plain_expansion(["a dog", "A kid slides into a pool .", "  ", "Two dogs."]) == \
        "a dog. A kid slides into a pool. Two dogs."


def test_split_keywords_limit_and_keywords_query():
    assert split_keywords("a1, bb, cc, dd", limit=2) == ["a1", "bb"]
    assert keywords_query(["dog", "beach"]) == "image of dog, beach"
    assert keywords_query([]) == ""


@pytest.mark.parametrize("reply,keywords,description", [
    ("Keywords: dog, beach, sand\nDescription: A brown dog runs across a sandy beach.",
     ["dog", "beach", "sand"], "A brown dog runs across a sandy beach."),
    # the paper's own layout: keywords and the sentence on one line
    ("keywords: kids, bus, Firefighter, Fire truck, hat A red bus parks near a school with kids.",
     ["kids", "bus", "firefighter", "fire truck", "hat"], "A red bus parks near a school with kids."),
    ("Keywords: dog, beach\nA brown dog plays on the beach at sunset.", ["dog", "beach"],
     "A brown dog plays on the beach at sunset."),
    ("Keywords: dog, beach", ["dog", "beach"], None),
    ("A dog runs on the beach with a ball.", [], "A dog runs on the beach with a ball."),
    ("Keywords: dog\nDescription: a dog on a beach", ["dog"], None),  # an echo of the input is no rewrite
    ("???", [], None),
])
def test_parse_cot(reply, keywords, description):
    r = parse_cot(reply, INPUTS)
    assert (r.keywords, r.description) == (keywords, description)


def test_parse_rewrite_per_method():
    assert parse_rewrite("summary", "Topic: A dog at the sea", INPUTS) == "A dog at the sea"
    assert parse_rewrite("keywords", "Taggings: dog, sea", INPUTS) == "image of dog, sea"
    assert parse_rewrite("keywords", "Taggings: dog, sea", INPUTS, prefix="photo of") == "photo of dog, sea"
    assert parse_rewrite("cot", "Keywords: dog, sea", INPUTS) == "image of dog, sea"
    assert parse_rewrite("cot", "", INPUTS) is None
    with pytest.raises(ValueError):
        parse_rewrite("expand", "x", INPUTS)


# --- Rocchio ---------------------------------------------------------------------------------------------

def test_rocchio_against_a_hand_computed_vector():
    q = np.array([1.0, 0.0, 0.0])
    rel = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    irr = np.array([[1.0, 1.0, 0.0]])
    # 1*[1,0,0] + 0.75*[0,.5,.5] - 0.15*[1,1,0] = [0.85, 0.225, 0.375]
    np.testing.assert_allclose(rocchio(q, rel, irr), [0.85, 0.225, 0.375], atol=1e-6)
    np.testing.assert_allclose(rocchio(q, rel, None), [1.0, 0.375, 0.375], atol=1e-6)
    np.testing.assert_allclose(rocchio(q, None, irr, alpha=2, gamma=0.5), [1.5, -0.5, 0.0], atol=1e-6)


def _top_unseen(retriever, qrow, exclude, k):
    scores = retriever.all_scores(qrow)
    order = [int(i) for i in np.argsort(-scores, kind="stable")]
    return [retriever.index.ids[i] for i in order if retriever.index.ids[i] not in exclude][:k]


def test_rocchio_turn_moves_the_query_as_computed_by_hand(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=5))
    s = eng.new_session()
    t0 = eng.search_text(s, "a red dog on the beach")
    a, b = t0.shown[0], t0.shown[3]
    t1 = eng.feedback(s, [a], [b], method="rocchio")
    row = r.index.row_of
    expected = (r.encode_text("a red dog on the beach") + 0.75 * r.row_vector(row[a]) - 0.15 * r.row_vector(row[b]))
    np.testing.assert_allclose(s.feedback_query, expected, atol=1e-5)
    assert t1.kind == "feedback" and t1.method == "rocchio" and t1.relevant == [a] and t1.irrelevant == [b]
    assert t1.shown == _top_unseen(r, r.text_query_row(expected), set(t0.shown), 5)
    # a second Rocchio round starts from the stored vector
    c = t1.shown[1]
    eng.feedback(s, [c], method="rocchio")
    np.testing.assert_allclose(s.feedback_query, expected + 0.75 * r.row_vector(row[c]), atol=1e-5)
    assert s.turns[-1].extra["rocchio_base"] == "previous Rocchio vector"


def test_rocchio_weights_come_from_the_config(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=3),
                       feedback=FeedbackConfig(method="rocchio", rocchio_alpha=0.5, rocchio_beta=2.0))
    s = eng.new_session()
    t0 = eng.search_text(s, "a blue cat")
    eng.feedback(s, [t0.shown[2]])
    expected = 0.5 * r.encode_text("a blue cat") + 2.0 * r.row_vector(r.index.row_of[t0.shown[2]])
    np.testing.assert_allclose(s.feedback_query, expected, atol=1e-5)


# --- caption expansion ---------------------------------------------------------------------------------

def test_expand_adds_the_captions_of_at_most_two_relevant_images(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=4))
    s = eng.new_session()
    t0 = eng.search_text(s, "a dog")
    t1 = eng.feedback(s, t0.shown[:3])
    c0, c1 = caps[t0.shown[0]][0], caps[t0.shown[1]][0]
    assert t1.method == "expand"  # the default without an LLM
    assert t1.extra["expanded"] == ["a dog", c0, c1]
    assert t1.query == f"a dog. {c0}. {c1}."
    assert t1.shown == _top_unseen(r, r.text_query_row(r.encode_text(t1.query)), set(t0.shown), 4)
    # the next feedback round grows C^t; a caption already in it is not added twice
    t2 = eng.feedback(s, [t1.shown[0], t0.shown[0]])
    assert t2.extra["expanded"] == ["a dog", c0, c1, caps[t1.shown[0]][0]]


def test_next_page_shows_only_unseen_images_even_when_the_engine_repeats_results(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=5, hide_seen=False))
    s = eng.new_session()
    t0 = eng.search_text(s, "a green car on the street")
    seen = set(t0.shown)
    for method in ("expand", "rocchio", "expand"):
        t = eng.feedback(s, [s.last.shown[0]], method=method)
        assert not seen & set(t.shown) and len(t.shown) == 5
        seen |= set(t.shown)
    assert len(seen) == 20


def test_captions_come_from_the_captioner_when_the_index_has_none(tmp_path):
    from iir_testutils import build_tiny

    r, ids, _ = build_tiny(tmp_path, captions=False)
    eng = build_engine(r, captioner=FakeCaptioner(), config=EngineConfig(k=3))
    s = eng.new_session()
    t0 = eng.search_text(s, "something colourful")
    t1 = eng.feedback(s, [t0.shown[0]])
    assert t1.extra["captions_added"][0].startswith("a mostly ") and t1.method == "expand"


def test_without_any_caption_text_feedback_falls_back_to_rocchio(tmp_path):
    from iir_testutils import build_tiny

    r, ids, _ = build_tiny(tmp_path, captions=False)
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t0 = eng.search_text(s, "something")
    t1 = eng.feedback(s, [t0.shown[0]])
    assert t1.method == "rocchio" and "Rocchio" in t1.extra["fallback"]
    assert s.feedback_query


def test_only_not_relevant_marks_use_rocchio(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t0 = eng.search_text(s, "a red dog")
    t1 = eng.feedback(s, [], [t0.shown[0]])
    np.testing.assert_allclose(s.feedback_query, r.encode_text("a red dog") - 0.15 * r.row_vector(
        r.index.row_of[t0.shown[0]]), atol=1e-5)
    assert t1.method == "rocchio"


# --- LLM rewriting ------------------------------------------------------------------------------------

def test_cot_is_the_default_with_an_llm_and_its_description_becomes_the_query(tiny_index):
    r, ids, caps = tiny_index
    llm = FakeLLM(script=["Keywords: dog, beach\nDescription: A red dog plays on a sunny beach."])
    eng = build_engine(r, llm=llm, config=EngineConfig(k=3))
    s = eng.new_session(ask_questions=False)
    t0 = eng.search_text(s, "a dog")
    t1 = eng.feedback(s, [t0.shown[0]])
    assert t1.method == "cot" and t1.query == "A red dog plays on a sunny beach."
    assert caps[t0.shown[0]][0] in llm.prompts[0] and "generate a list of keywords" in llm.prompts[0]
    assert [c["stage"] for c in t1.llm_calls] == ["rewrite"] and t1.extra["llm_round_trips"] == 1
    assert t1.timings["llm"] >= 0 and t1.timings["total"] >= t1.timings["llm"]


def test_rewrite_from_round_two_as_paper_001(tiny_index):
    """rewrite_from=2: the first feedback round only expands with captions; the LLM edits from the second."""
    r, ids, caps = tiny_index
    llm = FakeLLM(script=["Topic: Dogs playing ball by the sea"])
    eng = build_engine(r, llm=llm, config=EngineConfig(k=3), feedback=FeedbackConfig(rewrite_from=2))
    s = eng.new_session(ask_questions=False)
    t0 = eng.search_text(s, "a dog")
    t1 = eng.feedback(s, [t0.shown[0]], method="summary")
    assert t1.query == f"a dog. {caps[t0.shown[0]][0]}." and not t1.llm_calls and "round 1" in t1.extra["rewrite"]
    t2 = eng.feedback(s, [t1.shown[0]], method="summary")
    assert t2.query == "Dogs playing ball by the sea" and len(llm.prompts) == 1
    assert caps[t0.shown[0]][0] in llm.prompts[0] and caps[t1.shown[0]][0] in llm.prompts[0]


def test_keywords_and_summary_methods(tiny_index):
    r, ids, caps = tiny_index
    llm = FakeLLM(script=["Taggings: dog, beach, ball", "Topic: Dogs playing ball by the sea"])
    eng = build_engine(r, llm=llm, config=EngineConfig(k=3))
    s = eng.new_session(ask_questions=False)
    t0 = eng.search_text(s, "a dog")
    assert eng.feedback(s, [t0.shown[0]], method="keywords").query == "image of dog, beach, ball"
    assert eng.feedback(s, [s.last.shown[0]], method="summary").query == "Dogs playing ball by the sea"


def test_a_junk_reply_falls_back_to_the_plain_expansion(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, llm=FakeLLM(script=["..."]), config=EngineConfig(k=3))
    s = eng.new_session(ask_questions=False)
    t0 = eng.search_text(s, "a dog")
    t1 = eng.feedback(s, [t0.shown[0]], method="summary")
    assert t1.query == f"a dog. {caps[t0.shown[0]][0]}." and "plain expansion" in t1.extra["fallback"]
    assert not t1.error


def test_a_failing_llm_leaves_a_usable_session(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, llm=FakeLLM(script=[BackendError("server down")]), config=EngineConfig(k=3))
    s = eng.new_session(ask_questions=False)
    t0 = eng.search_text(s, "a dog")
    t1 = eng.feedback(s, [t0.shown[0]], method="cot")
    assert "server down" in t1.error and t1.query == f"a dog. {caps[t0.shown[0]][0]}."
    assert len(t1.shown) == 3 and t1.llm_calls[0]["error"]
    eng.feedback(s, [t1.shown[0]], method="rocchio")  # still usable
    assert len(s.turns) == 3


# --- bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("relevant,irrelevant,method,error,match", [
    (["img999.png"], [], None, SessionError, "never shown"),
    ([], [], None, BadInputError, "mark at least one"),
    (["SHOWN0"], ["SHOWN0"], None, BadInputError, "both relevant and not relevant"),
    (["SHOWN0"], [], "magic", BadInputError, "unknown feedback method"),
    (["SHOWN0"], [], "cot", BadInputError, "needs an LLM"),
])
def test_bad_feedback_is_refused_and_the_session_is_unchanged(tiny_index, relevant, irrelevant, method, error, match):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t0 = eng.search_text(s, "a dog")
    sub = lambda xs: [t0.shown[0] if x == "SHOWN0" else x for x in xs]  # noqa: E731
    before = s.to_json()
    with pytest.raises(error, match=match):
        eng.feedback(s, sub(relevant), sub(irrelevant), method=method)
    assert s.to_json() == before


def test_an_id_never_shown_is_refused_even_if_indexed(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t0 = eng.search_text(s, "a dog")
    unseen = next(i for i in ids if i not in t0.shown)
    before = s.to_json()
    with pytest.raises(SessionError, match="never shown"):
        eng.feedback(s, [unseen])
    assert s.to_json() == before


def test_feedback_after_the_search_ended_is_refused(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t0 = eng.search_text(s, "a dog")
    eng.found(s, t0.shown[0])
    with pytest.raises(SessionError, match="ended"):
        eng.feedback(s, [t0.shown[1]])


def test_env_var_sets_the_default_method(tiny_index, monkeypatch):
    r, ids, caps = tiny_index
    monkeypatch.setenv("IIR_FEEDBACK_METHOD", "rocchio")
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t0 = eng.search_text(s, "a dog")
    assert eng.feedback(s, [t0.shown[0]]).method == "rocchio"
