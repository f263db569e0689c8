"""The page's HTML: seen badges, the large view's data, the empty page's examples, clickable options."""

from __future__ import annotations

import re

import pytest

from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import SessionError
from interactive_ir.types import Option, Question
from interactive_ir.ui import handlers as h
from interactive_ir.ui import render, work
from interactive_ir.ui.state import UIState

K = 4


@pytest.fixture
def grounded(tiny_index):
    """No LLM: the engine asks grounded questions (options to click)."""
    return build_engine(tiny_index[0], llm=None, config=EngineConfig(k=K))


def ask(engine, st):
    while (job := work.claim(st)) is not None:
        work.adopt(st, job, work.run(engine, job))
    return st


def test_empty_page_offers_example_searches(grounded):
    html = render.results_html(grounded, UIState(), examples=("a red <b>car</b>", "a dog"))
    assert html.count('class="iir-example"') == 2
    assert 'data-example="a red &lt;b&gt;car&lt;/b&gt;"' in html and "<b>car" not in html
    assert "iir-example" not in render.results_html(grounded, UIState(), examples=())


def test_cards_open_the_large_view_and_say_what_was_seen(grounded):
    st = h.start(grounded, UIState(), "a red dog")
    first = st.current_ids
    st.session.last.seen = first[:2]  # the engine flags hits an earlier round showed
    html = render.results_html(grounded, st)
    assert html.count('data-action="open"') == K and html.count("data-src=") == K
    assert html.count('class="iir-seen"') == 2 and "2 seen before" in html
    cards = re.findall(r'<article class="([^"]+)" data-id="([^"]+)"', html)
    assert [i for c, i in cards if "is-seen" in c] == first[:2]
    labels = re.findall(r'data-action="(?:relevant|irrelevant|reference|found)"[^>]*>([^<]+)<', html)
    assert labels[:4] == ["Relevant", "Not it", "Use as reference", "Found it"]


def test_grounded_question_options_are_clickable_and_a_click_answers(grounded):
    st = ask(grounded, h.start(grounded, UIState(), "a red dog", later=True))
    q = st.session.question
    assert q is not None and q.options, "a grounded question with options"
    html = render.dialogue_html(st, True, "", grounded)
    assert html.count('data-action="choose"') == len(q.options)
    assert f'data-question="{render.esc(q.text)}"' in html
    before = len(st.session.turns)
    h.choose(grounded, st, 0, q.text, later=True)
    assert len(st.session.turns) == before + 1 and st.session.last.kind == "answer"
    assert st.todo == ["ask"]
    assert st.session.last.user_text in render.dialogue_html(st, True, "", grounded)


def test_a_click_on_a_replaced_question_changes_nothing(grounded):
    st = ask(grounded, h.start(grounded, UIState(), "a red dog", later=True))
    old = st.session.question
    h.skip(grounded, st, later=True)
    ask(grounded, st)
    n = len(st.session.turns)
    with pytest.raises(SessionError, match="no longer open"):
        h.choose(grounded, st, 0, old.text + " (an older question)")
    assert len(st.session.turns) == n


def test_yes_no_options_render_as_buttons():
    from interactive_ir.session import Session, Turn

    class Eng:
        index = None

    s = Session(turns=[Turn(round=0, kind="describe", user_text="a dog", shown=["a"])])
    s.set_question(Question("Is it on grass?", "yesno", (Option("yes"), Option("no")), 0))
    html = render.dialogue_html(UIState(session=s), True, "", Eng())
    assert re.findall(r'iir-opt-label">([^<]+)<', html) == ["Yes", "No"] and "iir-opts-yesno" in html
