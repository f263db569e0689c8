"""The rank of a round comes from `Turn.query_row`: for every kind of round (text search, description,
typed and clicked answers, skip, every feedback method, composed with and without a VLM re-rank), the row a
turn notes is exactly the row its results were searched with, as a spy around the retriever sees it (the
last `search_row`/`search_rows` before the round was recorded), so the target's rank over the index is
the same whichever is used."""

from __future__ import annotations

import numpy as np
import pytest
from iir_testutils import build_tiny
from rank_spy import SpyRetriever

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.backends.vlms import FakeVLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.evaluation.protocols import ALL, BELIEF, FIXED, USERS, get_protocol
from interactive_ir.evaluation.queries import Query
from interactive_ir.evaluation.runner import RunConfig, run_query
from interactive_ir.evaluation.simulators import make_user
from interactive_ir.modes.composed.mode import ComposedConfig
from interactive_ir.modes.conversation.plugir.config import plugir_config


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("qrow"), n=24)


def spied_engine(retriever, llm=None, vlm=None, k=5, **modes):
    """An engine on a spy, and {id(turn): the row the spy saw last when the turn was recorded}."""
    spy = SpyRetriever(retriever)
    engine = build_engine(spy, llm=llm, vlm=vlm, config=EngineConfig(k=k, hide_seen=True), **modes)
    seen: dict[int, np.ndarray | None] = {}

    def note(session, turn):
        seen[id(turn)] = spy.last_row
        spy.last_row = None

    engine.add_record_hook(note)
    return engine, seen


def check_turns(retriever, session, seen, kinds):
    """Each turn's own row equals the spied row, and so does every image's rank under it."""
    assert [t.kind for t in session.turns] == kinds
    for turn in session.turns:
        spied = seen[id(turn)]
        assert spied is not None and turn.query_row is not None, (turn.round, turn.kind)
        own = np.asarray(turn.query_row, np.float32)
        assert np.array_equal(own, spied), (turn.round, turn.kind, turn.method)
        for image in retriever.index.ids:
            assert retriever.rank_of(own, image) == retriever.rank_of(spied, image)


def test_text_rounds_and_typed_answers(tiny):
    retriever, ids, caps = tiny
    engine, seen = spied_engine(retriever, llm=FakeLLM(), plugir=plugir_config(method="plugir", questioner="llm"))
    s = engine.new_session(questioner="llm")
    engine.start(s, caps[ids[3]][0])
    engine.answer(s, "it is red")
    engine.skip(s)
    engine.answer(s, "near the beach")
    engine.search_text(s, "a green car", kind="search")
    check_turns(retriever, s, seen, ["describe", "answer", "skip", "answer", "search"])


def test_grounded_clicks_choice_and_yes_no(tiny):
    retriever, ids, caps = tiny
    engine, seen = spied_engine(retriever, plugir=plugir_config(questioner="grounded", grounded_style="alternate"))
    s = engine.new_session(questioner="grounded")
    engine.start(s, "a dog near a park")
    kinds = set()
    for _ in range(4):
        q = s.question or engine.ask(s)
        assert q is not None and q.options
        kinds.add(q.kind)
        engine.answer_choice(s, len(q.options) - 1 if q.kind == "yesno" else 0)
    assert {t.method for t in s.turns[1:5]} == {"grounded"}
    assert kinds == {"choice", "yesno"}
    engine.answer(s, "it is brown") if s.pending_question else engine.skip(s)  # a typed round carries the clicks
    check_turns(retriever, s, seen, ["describe", "answer", "answer", "answer", "answer", s.turns[-1].kind])


@pytest.mark.parametrize("method", ["rocchio", "expand", "summary", "keywords", "cot"])
def test_feedback_methods(tiny, method):
    retriever, ids, caps = tiny
    engine, seen = spied_engine(retriever, llm=FakeLLM())
    s = engine.new_session(ask_questions=False)
    engine.search_text(s, "a red dog on the beach")
    for _ in range(3):
        shown = s.last.shown
        engine.feedback(s, [shown[0]], [shown[-1]], method=method)
    engine.skip(s)  # a skip after feedback carries its row
    check_turns(retriever, s, seen, ["describe", "feedback", "feedback", "feedback", "skip"])


@pytest.mark.parametrize("method, vlm, mean", [("compose", None, True), ("compose", "vlm", False),
                                               ("imagescope", None, True), ("imagescope", "vlm", True)])
def test_composed_with_and_without_a_vlm_rerank(tiny, method, vlm, mean):
    retriever, ids, caps = tiny
    engine, seen = spied_engine(retriever, llm=FakeLLM(), vlm=FakeVLM() if vlm else None,
                                composed=ComposedConfig(rerank_k=6, alpha=6, use_history_mean=mean))
    s = engine.new_session(ask_questions=False)
    engine.search_text(s, "a blue boat")
    engine.relative(s, "but it is red", reference=s.last.shown[0], method=method)
    engine.relative(s, "and on the snow", method=method)
    if vlm:
        assert any(t.why for t in s.turns[1:])  # the VLM re-ranked the top: the results differ from the row's order
    engine.skip(s)
    check_turns(retriever, s, seen, ["describe", "relative", "relative", "skip"])


@pytest.mark.parametrize("name", [p for p in ALL if p not in FIXED and p not in BELIEF and p not in USERS])  # belief and
# the page's users rank by the posterior (test_belief*, test_users)
def test_run_query_ranks_are_the_spied_rows_ranks(tiny, name):
    """Through the evaluation loop: every protocol's recorded ranks are the ranks under the rows the spy saw
    searched last before each round was recorded (what the removed rank probe recorded)."""
    retriever, ids, caps = tiny
    p = get_protocol(name)
    engine, seen = spied_engine(retriever, llm=FakeLLM(), vlm=FakeVLM(), k=5, **p.mode_configs())
    user = make_user(retriever.index, seed=0)
    for target in ids[2:6]:
        q = Query(qid=target, target=target, description=caps[target][0], captions=tuple(caps[target][1:]))
        sessions = []
        res = run_query(engine, p, q, user, RunConfig(rounds=3, k=5, progress=False, stop_on_found=False),
                        sessions.append)
        assert res.stop == "rounds", res.stop
        (session,) = sessions
        assert len(res.ranks) == len(session.turns) == 4
        live = [retriever.rank_of(seen[id(t)], target) for t in session.turns]
        f = res.found_round  # from the found round on, its rank is kept
        assert res.ranks == (live if f is None else live[:f + 1] + [live[f]] * (len(live) - f - 1))
