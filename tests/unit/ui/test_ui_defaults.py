"""Defaults that help (issue 25): no LLM in place of the tiny SmolLM2 fallback, and the model's refined
round offered, not swapped in, once the person acts on the quick results."""

from __future__ import annotations

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import SessionError
from interactive_ir.ui import card_actions, render, work
from interactive_ir.ui import handlers as h
from interactive_ir.ui.state import UIState


# --- start-up: no LLM rather than SmolLM2 -----------------------------------------------------------
def test_the_app_loads_no_llm_when_only_smollm2_could_run(tiny_index, monkeypatch):
    from interactive_ir.assembly.llm_choice import LLMChoice, choose_llm
    from interactive_ir.ui import startup

    index = tiny_index[0].index.path
    monkeypatch.delenv("IIR_LLM", raising=False)
    monkeypatch.setattr("interactive_ir.backends.llms.default_llm_spec", lambda environ=None: "transformers:smollm2")
    built = []
    monkeypatch.setattr("interactive_ir.backends.make_llm", lambda spec, **kw: built.append(spec) or FakeLLM())
    parts = startup.load_app(startup.app_config(environ={}, index=index))
    assert built == [] and parts.engine.llm is None  # nothing loaded: the page serves once the index is ready
    assert parts.engine.questions_enabled and parts.questions_off_reason == ""  # picture questions
    assert any("picture questions" in n and "--llm transformers:smollm2" in n for n in parts.notes)
    # named, it is loaded: by flag, or by IIR_LLM
    parts = startup.load_app(startup.app_config(environ={}, index=index, llm="transformers:smollm2"))
    assert built == ["transformers:smollm2"] and parts.engine.llm is not None
    monkeypatch.setenv("IIR_LLM", "transformers:smollm2")
    assert choose_llm() == LLMChoice("transformers:smollm2")
    # a capable default is loaded as before
    monkeypatch.delenv("IIR_LLM")
    monkeypatch.setattr("interactive_ir.backends.llms.default_llm_spec", lambda environ=None: "hf-router:org/m")
    assert choose_llm() == LLMChoice("hf-router:org/m")


# --- the refined round: an offer once the person has acted -------------------------------------------
class MovingLLM(FakeLLM):
    """A fake LLM whose rewrite of an answer finds other images than the plain dialogue."""

    def generate(self, prompts, **kw):
        return ["a completely different picture of a bicycle in a city street at night" for _ in prompts]


@pytest.fixture
def engine(tiny_index):
    return build_engine(tiny_index[0], llm=MovingLLM(), config=EngineConfig(k=4), belief=query_modes())


def _answered(engine) -> UIState:
    """A search, its question, and an answer shown from retrieval alone, its rewrite still due."""
    st = h.start(engine, UIState(), "a red dog on the beach", later=True)
    while (j := work.claim(st)) is not None:
        work.settle(engine, st, j, work.run(engine, j))
    h.answer(engine, st, "it is brown", later=True)
    return st


def _refine(engine, st: UIState) -> bool:
    job = work.claim(st)
    assert job.step == "refine"
    return work.settle(engine, st, job, work.run(engine, job))


def test_untouched_quick_results_are_replaced_by_the_refined_ones(engine):
    st = _answered(engine)
    quick = st.current_ids
    assert _refine(engine, st)
    assert st.offer is None and st.refined and st.current_ids != quick


def test_a_refined_round_is_offered_once_the_person_acted_and_shown_on_request(engine):
    st = _answered(engine)
    quick = st.current_ids
    h.toggle_mark(engine, st, quick[1], True)  # the person works on the quick results meanwhile
    assert _refine(engine, st)
    assert st.current_ids == quick and st.offer is not None and not st.refined  # nothing moved under the cursor
    html = render.results_html(engine, st)
    assert 'data-action="refined"' in html and "Refined results ready: show" in html
    while (j := work.claim(st)) is not None:  # the next question comes about the results on the page
        work.settle(engine, st, j, work.run(engine, j))
    question = st.session.pending_question
    card_actions.run(engine, st, "refined", "")  # "show"
    assert st.offer is None and st.refined and st.current_ids != quick
    assert st.session.pending_question == question  # the question stays
    assert all(i in st.current_ids for i in st.marks)  # marks only on images still shown
    assert 'data-action="refined"' not in render.results_html(engine, st)
    with pytest.raises(SessionError):
        work.show_offer(engine, st)  # nothing more to show


def test_a_newer_action_drops_the_offer(engine):
    st = _answered(engine)
    h.toggle_mark(engine, st, st.current_ids[0], True)
    assert _refine(engine, st) and st.offer is not None
    h.skip(engine, st, later=True)
    assert st.offer is None
