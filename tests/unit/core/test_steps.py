"""A round as named steps: RETRIEVE at once, then REFINE and ASK, each droppable when a newer action came."""

from __future__ import annotations

import pytest
from test_conversation import Responder

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.session import Session
from interactive_ir.core.steps import QuestionStep, Refinement
from interactive_ir.core.text_search import TextSearch
from interactive_ir.engine import Engine, EngineConfig, build_engine
from interactive_ir.errors import BackendError, SessionError
from interactive_ir.modes.composed.mode import Composed
from interactive_ir.modes.conversation.asking import Asker
from interactive_ir.modes.conversation.mode import Conversation
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
from interactive_ir.modes.conversation.plugir.prompts import concat_dialogue
from interactive_ir.modes.feedback.mode import Feedback


def engine_for(r, llm, k=4, **cfg):
    return build_engine(r, llm=llm, config=EngineConfig(k=k), plugir=PlugIRConfig(**cfg))


def test_the_engine_owns_plain_mode_objects_that_share_one_core(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM())
    assert type(eng) is Engine and isinstance(eng.core, TextSearch) and isinstance(eng.asker, Asker)
    assert isinstance(eng.conversation_mode, Conversation) and isinstance(eng.feedback_mode, Feedback)
    assert isinstance(eng.composed_mode, Composed)
    assert eng.conversation_mode.core is eng.feedback_mode.core is eng.composed_mode.core is eng.core
    assert eng.mode_configs["plugir"] is eng.plugir_config and eng.retriever is r
    with pytest.raises(TypeError, match="unknown mode config"):
        build_engine(r, plugr=PlugIRConfig())


def test_an_answer_shows_the_typed_dialogue_at_once_then_refine_and_ask_equal_the_one_call_round(tiny_index):
    r, ids, caps = tiny_index
    now, later = engine_for(r, FakeLLM(responder=Responder())), engine_for(r, FakeLLM(responder=Responder()))
    s1, s2 = now.new_session(), later.new_session()
    now.start(s1, "a red dog on the beach")
    later.start(s2, "a red dog on the beach")
    one = now.answer(s1, "yes, it is")

    fast = later.answer(s2, "yes, it is", refine=False, ask=False)
    assert fast.llm_calls == [] and s2.question is None
    assert fast.query == concat_dialogue("a red dog on the beach", s2.dialogue())
    assert fast.extra["plugir"]["refine_due"] and not fast.extra["plugir"]["reformulated"]
    typed_shown = list(fast.shown)

    r1 = later.refine(s2)
    assert isinstance(r1, Refinement) and r1.query == one.query == "a brown dog running on the beach"
    assert fast.query == one.query and fast.shown == one.shown == [h.id for h in r1.hits]
    info = fast.extra["plugir"]
    assert info["refined"] and info["reformulated"] and not info["refine_due"] and info["unrefined_query"]
    assert [c["stage"] for c in fast.llm_calls] == ["reformulate"]
    assert fast.timings["refine_retrieve"] >= 0 and typed_shown  # (the typed dialogue ranked its own page first)
    assert later.refine(s2) is None  # nothing left to refine

    q = later.ask(s2)
    assert q is not None and q == s2.question and q.text == one.question == s1.pending_question
    assert fast.extra["plugir"]["rce"] == one.extra["plugir"]["rce"]
    assert Session.from_json(s2.to_json()).turns[1].extra["plugir"]["refined"]


def test_refine_and_question_results_for_a_superseded_round_are_refused_and_change_nothing(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM(responder=Responder()))
    s = eng.new_session()
    eng.start(s, "a red dog on the beach")
    eng.answer(s, "yes", refine=False, ask=False)
    pending_refine = eng.prepare_refine(s)
    pending_question = eng.prepare_question(s)
    assert isinstance(pending_question, QuestionStep) and pending_question.question is not None
    assert s.question is None and s.last.llm_calls == []  # preparing changed nothing
    eng.skip(s, ask=False)  # a newer action
    before = s.to_json()
    with pytest.raises(SessionError, match="moved on"):
        eng.apply_refine(s, pending_refine)
    with pytest.raises(SessionError, match="moved on"):
        eng.apply_question(s, pending_question)
    assert s.to_json() == before
    assert eng.ask(s) is not None  # the newer round gets its own question


def test_a_failing_rewrite_keeps_the_typed_results_and_says_so(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM(responder=Responder(fail={"reformulate": BackendError("server down")})))
    s = eng.new_session()
    eng.start(s, "a red dog on the beach")
    t = eng.answer(s, "yes", refine=False, ask=False)
    shown, query = list(t.shown), t.query
    r1 = eng.refine(s)
    assert r1 is not None and not r1.reformulated and "server down" in r1.error
    assert t.query == query and t.shown == shown and "server down" in t.error
    assert t.extra["plugir"]["refined"] and t.extra["plugir"]["reformulate_fallback"]


def test_without_an_llm_or_with_zs_there_is_nothing_to_refine(tiny_index):
    r, ids, caps = tiny_index
    for eng in (engine_for(r, None), engine_for(r, FakeLLM(responder=Responder()), method="zs")):
        s = eng.new_session()
        eng.start(s, "a red dog on the beach", ask=False)
        s.set_question(None)
        s.pending_question = "Is it big?"
        t = eng.answer(s, "yes", refine=False)
        assert "refine_due" not in t.extra["plugir"] and eng.refine(s) is None


def test_ask_false_leaves_the_question_to_ask_for_every_action(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, None)  # grounded questions
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach", ask=False)
    assert s.question is None and t0.candidates  # S_R fetched with the results, for the question
    q = eng.ask(s)
    assert q.kind == "choice" and t0.asked == q
    t1 = eng.feedback(s, [t0.shown[0]], ask=False)
    assert s.question is None  # a new round leaves the old question
    assert eng.ask(s).round == t1.round
    eng.answer_choice(s, 0, ask=False)
    assert s.question is None and eng.ask(s) is not None
