"""Results first, model work after: the "refine" and "ask" steps, superseded by a newer action of the tab."""

from __future__ import annotations

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.ui import handlers as h
from interactive_ir.ui import render, work
from interactive_ir.ui.state import UIState

K = 4


@pytest.fixture
def engine(tiny_index):
    return build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=K), belief=query_modes())


def finish(engine, st: UIState) -> list[str]:
    """Run every model step due, as the page does; returns the steps applied."""
    done = []
    while (job := work.claim(st)) is not None:
        if work.adopt(engine, st, job, work.run(engine, job)):
            done.append(job.step)
    return done


def asked(engine):
    st = h.start(engine, UIState(), "a red dog on the beach", later=True)
    assert st.todo == ["ask"] and not st.session.pending_question
    assert finish(engine, st) == ["ask"]
    assert st.session.pending_question and not st.pending
    return st


def test_an_answer_shows_the_plain_dialogue_then_the_llms_rewrite(engine):
    st = asked(engine)
    calls = len(engine.llm.calls)
    h.answer(engine, st, "it is a big brown dog", later=True)
    plain = st.session.last
    assert len(engine.llm.calls) == calls  # no model call before the results are shown
    assert plain.kind == "answer" and plain.extra["plugir"]["refine_due"] and "big brown dog" in plain.query
    plain_query, plain_ids = plain.query, list(plain.shown)
    assert st.todo == ["refine", "ask"] and not st.refined
    assert "Quick results" in render.results_html(engine, st)
    assert "rewriting the dialogue" in render.status_md(st)
    job = work.claim(st)
    assert job.step == "refine" and st.working == "refine"
    assert work.adopt(engine, st, job, work.run(engine, job))
    refined = st.session.last
    assert refined.round == plain.round and refined.llm_calls and refined.extra["plugir"]["refined"]
    assert refined.query != plain_query and refined.query.startswith("a photo of")
    assert st.refined and len(st.session.turns) == 2 and "Refined" in render.results_html(engine, st)
    assert plain_ids  # the quick results were there before the rewrite replaced them
    assert finish(engine, st) == ["ask"] and st.session.pending_question


def test_without_a_rewrite_an_answer_is_final_at_once(tiny_index):
    eng = build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=K), belief=query_modes())
    st = asked(eng)
    st.session.options.plugir_method = "zs"  # the method does not rewrite
    h.answer(eng, st, "brown", later=True)
    assert st.todo == ["ask"] and st.redo is None


def test_feedback_and_relative_refine_with_the_llm_method(engine):
    st = asked(engine)
    h.toggle_mark(engine, st, st.current_ids[0], True)
    h.feedback(engine, st, "summary", later=True)
    assert st.session.last.method == "expand" and st.todo[0] == "refine"
    assert finish(engine, st) == ["refine", "ask"]
    assert st.session.last.method == "summary" and st.session.last.kind == "feedback"
    h.relative(engine, st, "the same but at night", later=True)
    assert st.session.last.method == "compose" and st.todo == ["refine", "ask"]
    assert finish(engine, st) == ["refine", "ask"]
    assert st.session.last.method == "imagescope" and len(st.session.turns) == 3


def test_a_newer_action_supersedes_the_pending_step(engine):
    st = asked(engine)
    h.answer(engine, st, "it is brown", later=True)
    job = work.claim(st)  # the rewrite is running ...
    result = work.run(engine, job)
    h.skip(engine, st, later=True)  # ... when the user skips: the plain answer round stands, a skip round follows
    skip_round = st.session.last
    assert not work.adopt(engine, st, job, result)  # the rewrite lands nowhere
    assert st.session.last is skip_round and skip_round.kind == "skip" and not st.refined
    assert finish(engine, st) == ["ask"]

    job = work.claim(st)
    assert job is None
    st2 = asked(engine)
    h.skip(engine, st2, later=True)
    job = work.claim(st2)
    h.new_search(engine, st2)  # a new search while the question is written
    assert not work.adopt(engine, st2, job, work.run(engine, job)) and st2.session is None and not st2.pending


def test_found_and_new_search_drop_what_is_due(engine):
    st = asked(engine)
    h.skip(engine, st, later=True)
    assert st.todo == ["ask"]
    h.found(engine, st, st.current_ids[1])
    assert st.todo == [] and work.claim(st) is None


def test_marks_during_model_work_do_not_supersede_it(engine):
    st = asked(engine)
    h.answer(engine, st, "brown", later=True)
    job = work.claim(st)
    keep, gone = st.current_ids[0], st.current_ids[1]
    h.toggle_mark(engine, st, keep, True)
    h.use_reference(engine, st, gone)
    session = work.run(engine, job)
    assert work.adopt(engine, st, job, session)
    # marks stay on the images still on the page; the others go with the replaced results
    assert set(st.marks) <= set(st.current_ids) and st.reference in ("", *st.current_ids)
    assert (keep in st.marks) == (keep in st.current_ids)


def test_a_failed_step_keeps_the_results_and_says_so(tiny_index):
    eng = build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=K), belief=query_modes())
    st = asked(eng)
    h.skip(eng, st, later=True)
    shown = st.current_ids
    job = work.claim(st)
    assert work.failed(st, job, "⚠ The model could not write a question")
    assert st.current_ids == shown and not st.pending and "could not write" in render.status_md(st)


def test_fake_llm_sleeps_as_asked():
    import time

    from interactive_ir.backends import make_llm
    from interactive_ir.errors import BadInputError

    llm = make_llm("fake:sleep=0.2")
    t = time.perf_counter()
    llm.generate(["a question about dogs"])
    assert time.perf_counter() - t >= 0.2
    with pytest.raises(BadInputError, match="fake:sleep=SECONDS"):
        make_llm("fake:slow")
    with pytest.raises(BadInputError, match="number of seconds"):
        make_llm("fake:sleep=soon")
