"""The web app on the belief over the collection (its default, `BeliefConfig.on_page`): every action on the
page is evidence, and each new page comes from the belief (issue 23, D1-D3)."""

from __future__ import annotations

import pytest

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import SessionError
from interactive_ir.ui import card_actions, render
from interactive_ir.ui import handlers as h
from interactive_ir.ui.state import UIState

K = 3


@pytest.fixture
def started(tiny_index):
    engine = build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=K))  # the defaults: belief on the page
    st = h.start(engine, UIState(), "a red square")
    return engine, st


def _seen(st) -> set[str]:
    return {i for t in st.session.turns for i in t.shown}


def test_a_search_runs_on_the_belief_and_asks_its_own_question(started):
    engine, st = started
    s = st.session
    assert s.on_belief and s.to_dict()["meta"]["belief"] is True and len(s.last.shown) == K
    assert s.question is not None and s.question.kind == "open"  # no LLM question, though an LLM is there
    html = render.results_html(engine, st)
    assert 'data-action="like"' in html  # "More like this": on the belief, a click on the closest


def test_each_action_is_a_belief_round_with_a_new_page(started):
    engine, st = started
    before = _seen(st)
    h.answer(engine, st, "a red square on a table")
    assert st.session.last.kind == "tell" and not set(st.session.last.shown) & before
    pick = st.session.last.shown[0]
    card_actions.run(engine, st, "closest", pick)
    assert st.session.last.kind == "closest" and st.session.last.extra["clicked"] == pick
    card_actions.run(engine, st, "like", st.session.last.shown[2])
    assert st.session.last.kind == "closest" and st.session.last.extra["clicked"] == st.session.turns[-2].shown[2]
    page = st.session.last.shown
    card_actions.run(engine, st, "relevant", page[0])
    card_actions.run(engine, st, "irrelevant", page[1])
    h.feedback(engine, st)
    assert st.session.last.kind == "marks" and st.session.last.extra["relevant"] == [page[0]]
    ref = st.session.last.shown[1]
    h.use_reference(engine, st, ref)
    h.relative(engine, st, "but blue instead of red")
    last = st.session.last
    assert last.kind == "closest" and last.extra["clicked"] == ref and last.extra["said"] == "but blue instead of red"
    assert st.reference == ""
    h.skip(engine, st)
    assert st.session.last.kind == "skip"
    for before_page, page_after in zip(st.session.turns, st.session.turns[1:]):  # issue 38: seen is unlikely,
        assert not set(before_page.shown) & set(page_after.shown)  # not ruled out; never the page just looked at
    lines = render.dialogue_html(st, True)
    assert "this one is the closest" in lines and "a red square on a table" in lines


def test_a_yes_or_no_click_answers_the_belief_question(started):
    engine, st = started
    s = st.session
    while s.question is not None and s.question.kind == "open":
        h.answer(engine, st, "not sure")
    assert s.question is not None and s.question.kind == "yesno"
    word = s.last.extra["asked"]
    text = s.question.text
    h.choose(engine, st, 1, text)
    assert s.last.kind == "tell" and s.last.extra["said"] == f"no {word}" and s.last.answered_question == text
    with pytest.raises(SessionError, match="not among the results"):
        card_actions.run(engine, st, "closest", "nope.png")


def test_the_images_shown_to_learn_from_say_so(tiny_index):
    from interactive_ir.retrieval.belief import BeliefConfig

    engine = build_engine(tiny_index[0], config=EngineConfig(k=4), belief=BeliefConfig(explore=2, explore_depth=12))
    st = h.start(engine, UIState(), "a red square")
    card_actions.run(engine, st, "like", st.session.last.shown[0])
    learn = st.session.last.extra["learn"]
    assert len(learn) == 2
    html = render.results_html(engine, st)
    cards = html.split('<article class="')[1:]
    marked = [c for c in cards if "To learn</span>" in c]
    assert len(marked) == 2 and all(f'data-id="{i}"' in "".join(marked) for i in learn)
