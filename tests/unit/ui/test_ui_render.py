"""The page's HTML: seen badges, the large view's data, the empty page's examples, clickable options."""

from __future__ import annotations

import re

import pytest
from iir_testutils import query_modes

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
    return build_engine(tiny_index[0], llm=None, config=EngineConfig(k=K), belief=query_modes())


def ask(engine, st):
    while (job := work.claim(st)) is not None:
        work.adopt(engine, st, job, work.run(engine, job))
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


def test_an_image_liked_before_and_on_the_page_again_says_so_not_just_seen(tiny_index):
    """A result the person marked relevant (or chose as the closest) in an earlier round that the page shows
    again carries "You liked" ("Your closest"), not the plain "Seen" of an image they only looked at."""
    from interactive_ir.ui import card_actions

    engine = build_engine(tiny_index[0], config=EngineConfig(k=K))  # the belief on the page
    st = h.start(engine, UIState(), "a red square")
    first = st.current_ids
    card_actions.run(engine, st, "relevant", first[0])
    h.feedback(engine, st)
    st.session.last.shown = [first[0], *st.session.last.shown[1:]]  # the liked image shown again
    st.session.last.seen = [first[0]]
    html = render.results_html(engine, st)
    cards = dict((i, c) for c, i in re.findall(r'<article class="([^"]+)" data-id="([^"]+)"', html))
    assert "is-seen" in cards[first[0]]
    assert 'title="You marked it relevant">You liked</span>' in html and html.count('class="iir-seen"') == 0


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
    assert render.esc(render.answer_words(st.session.last)) in render.dialogue_html(st, True, "", grounded)


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
    from interactive_ir.core.session import Session, Turn

    class Eng:
        index = None

    s = Session(turns=[Turn(round=0, kind="describe", user_text="a dog", shown=["a"])])
    s.set_question(Question("Is it on grass?", "yesno", (Option("yes"), Option("no")), 0))
    html = render.dialogue_html(UIState(session=s), True, "", Eng())
    assert re.findall(r'iir-opt-label">([^<]+)<', html) == ["Yes", "No"] and "iir-opts-yesno" in html


def test_options_have_plain_names_and_hide_what_needs_a_missing_llm(grounded):
    from interactive_ir.ui.handlers import FEEDBACK_CHOICES, QUESTIONER_CHOICES, choices

    with_llm = choices(FEEDBACK_CHOICES, True)
    assert [v for _, v in with_llm] == ["", "summary", "keywords", "cot", "expand", "rocchio"]
    assert all(":" in label and label.split(":")[0] not in {"summary", "cot", "rocchio"} for label, _ in with_llm)
    assert [v for _, v in choices(FEEDBACK_CHOICES, False)] == ["", "expand", "rocchio"]
    assert "llm" not in [v for _, v in choices(QUESTIONER_CHOICES, False)]


def test_the_chosen_kind_of_question_holds_for_this_and_later_searches(grounded, tiny_index):
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.errors import BadInputError

    st = h.set_questioner(grounded, UIState(), "grounded")
    st = h.start(grounded, st, "a red dog")
    assert st.session.options.questioner == "grounded"
    with pytest.raises(BadInputError, match="need a language model"):
        h.set_questioner(grounded, st, "llm")
    eng = build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=K), belief=query_modes())
    st = h.set_questioner(eng, st, "llm")
    assert st.session.options.questioner == "llm"
    h.new_search(eng, st)
    assert h.start(eng, st, "a cat").session.options.questioner == "llm"
    assert "questioner" not in h.set_questioner(eng, st, "").session.meta


def test_hide_seen_option_holds_for_this_tab_and_its_next_searches(tiny_index):
    eng = build_engine(tiny_index[0], config=EngineConfig(k=K), belief=query_modes())
    other = h.start(eng, UIState(), "a red dog on the beach")
    st = h.start(eng, UIState(), "a red dog on the beach")
    assert "hide_seen" not in st.session.meta  # the engine's default until the option is touched
    st = h.set_hide_seen(eng, st, True)
    assert st.session.options.hide_seen is True and "only images not shown before" in st.notice
    first = set(st.session.last.shown)
    t = eng.search_text(st.session, "a red dog on the beach in the sun")
    assert not set(t.shown) & first and t.seen == []
    t_other = eng.search_text(other.session, "a red dog on the beach in the sun")  # another tab: unchanged
    assert t_other.seen
    h.new_search(eng, st)
    st = h.start(eng, st, "a cat")
    assert st.session.options.hide_seen is True
    st = h.set_hide_seen(eng, st, False)
    assert st.session.options.hide_seen is False and "marked as seen" in st.notice


def test_a_clicked_picture_option_reads_in_plain_words_in_the_dialogue_and_its_tooltip():
    """The session records the index caption of a clicked option ("closest to: clipart of Bulldog Puppy;
    keywords: ..."): the "You:" line, the strip and the option's tooltip show the caption in plain words."""
    from interactive_ir.core.session import Session, Turn

    class Eng:
        index = None

    raw = "clipart of Bulldog Puppy; keywords: mammal, dog, puppy"
    q = Question("Which is closest to your image?", "choice", (Option(raw, "img1"), Option("none of these")), 0)
    s = Session(turns=[Turn(round=0, kind="describe", user_text="a dog", shown=["img1"], asked=q,
                            question=q.text)])
    s.set_question(q)
    tip = re.findall(r'data-action="choose"[^>]*title="([^"]+)"', render.dialogue_html(UIState(session=s), True, "",
                                                                                         Eng()))
    assert tip == ["Bulldog puppy", "none of these"]
    s.turns.append(Turn(round=1, kind="answer", user_text=f"closest to: {raw}", answered_question=q.text,
                        shown=["img2"], extra={"choice": {"index": 0, "label": raw, "image_id": "img1"}}))
    s.set_question(None)
    html = render.dialogue_html(UIState(session=s), True, "", Eng())
    assert "closest to: Bulldog puppy" in html and "keywords" not in html and "clipart" not in html
    s.turns.append(Turn(round=2, kind="answer", user_text="clipart of dogs; keywords: typed", shown=["img3"]))
    assert "clipart of dogs; keywords: typed" in render.dialogue_html(UIState(session=s), True, "", Eng())
    assert "answered “closest to: Bulldog puppy”" in render.strip_html(
        type("E", (), {"hits_of": lambda self, t: [], "index": None})(), UIState(session=s))


def test_the_results_list_the_keyboard_shortcuts_until_the_search_ends(grounded):
    st = h.start(grounded, UIState(), "a red dog")
    html = render.results_html(grounded, st)
    assert html.count('class="iir-keys"') == 1
    keys = re.findall(r"<kbd>([^<]+)</kbd>", html)
    assert keys == ["← → ↑ ↓", "j / k", "Enter", "Esc", "r / n", "f", "x", "?"]
    h.found(grounded, st, st.current_ids[0])
    assert "iir-keys" not in render.results_html(grounded, st)
