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


# --- issue 38 D4: typing in the search box during a search refines it, unless New search -----------------
def test_typing_in_the_search_box_refines_the_belief_search(started):
    engine, st = started
    seen, n = _seen(st), len(st.session.turns)
    asked = st.session.pending_question
    assert asked  # the belief's question is on the page: what is typed in the search box does not answer it
    h.describe(engine, st, "a red square with a green circle")
    assert len(st.session.turns) == n + 1 and st.session.last.kind == "tell"  # said, not a new search
    assert st.session.last.answered_question == "" and st.session.last.extra.get("added") is True
    assert "a red square with a green circle  (added in the search box)" in render.dialogue_html(st, True)
    assert st.session.last.user_text == "a red square with a green circle" and "New search" in st.notice
    assert not seen & set(st.session.last.shown)  # its seen images are kept (the belief's page: unseen ones)
    assert st.query == "a red square"  # the shared link's first description stays


def test_new_search_filters_or_the_same_words_start_afresh(started):
    engine, st = started
    h.describe(engine, st, "a red square")  # the same words again: run afresh
    assert len(st.session.turns) == 1
    h.describe(engine, st, "a red square -blue")  # a NOT term changes the scope: a new search
    assert len(st.session.turns) == 1 and st.session.not_terms == ["blue"]
    h.new_search(engine, st)
    h.describe(engine, st, "a green circle")
    assert len(st.session.turns) == 1 and st.query == "a green circle"


# --- issue 38 D4: what the person showed stays in view; positions kept --------------------------------------
def test_closest_marks_and_reference_stay_pinned_across_rounds_until_unpinned(started):
    engine, st = started
    chosen = st.current_ids[1]
    h.closest(engine, st, chosen)
    liked = st.current_ids[0]
    st.marks = {liked: True}
    h.feedback(engine, st)  # a round later, both in view, first on the page
    assert render.pinned_ids(st) == [(liked, "liked"), (chosen, "closest")]
    html = render.results_html(engine, st)
    assert html.index(f'data-id="{liked}"') < html.index(f'data-id="{chosen}"') < html.index(
        f'data-id="{st.current_ids[0]}"')  # first on the page, the most recent first
    assert "Your closest" in html and "You liked" in html and 'data-action="unpin"' in html
    h.skip(engine, st)  # two rounds later: still in view, pinned or back among the results (seen is not ruled out)
    assert {liked, chosen} <= set(render.liked_ids(st)) | set(st.current_ids)
    pinned = render.liked_ids(st)[0]
    card_actions.run(engine, st, "unpin", pinned)
    assert pinned not in render.liked_ids(st) and len(st.session.turns) == 4  # no new round
    h.new_search(engine, st)
    assert st.unpinned == set()


def test_results_still_on_the_page_keep_their_positions():
    class Hit:
        def __init__(self, i):
            self.id = i

    hits = [Hit(i) for i in ("d", "b", "e", "a")]  # by rank now
    order = [x.id for x in render.keep_positions(["a", "b", "c", "x"], hits)]
    assert order == ["a", "b", "d", "e"]  # a and b keep places 1 and 2; new ones fill the rest by rank
    assert [x.id for x in render.keep_positions([], hits)] == ["d", "b", "e", "a"]
    assert [x.id for x in render.keep_positions(["e"], hits[:2] + hits[2:])][0] == "e"


# --- issue 38 D3, the page's side: the Questions option reaches the belief's session; picture questions show --------
@pytest.mark.parametrize("kind", ["grounded", "llm"])
def test_the_questions_option_reaches_the_belief_search(tiny_index, kind):
    from interactive_ir.backends.llms import FakeLLM as LLM

    engine = build_engine(tiny_index[0], llm=LLM(), config=EngineConfig(k=K))
    st = h.set_questioner(engine, UIState(), kind)
    h.start(engine, st, "a red square")
    assert st.session.on_belief and st.session.options.questioner == kind  # the belief's question writer reads it
    h.set_questioner(engine, st, "")
    assert st.session.options.questioner == ""  # changed mid-search: from the next question


def test_a_picture_question_on_the_belief_page_shows_its_pictures(started):
    from interactive_ir.types import Option, Question

    engine, st = started
    ids = st.current_ids
    q = Question("Which is closest to your image?", "choice",
                 (*(Option(i, image_id=i) for i in ids[:2]), Option("none of these")), st.session.last.round)
    st.session.set_question(q)
    html = render.dialogue_html(st, True, "", engine)
    assert html.count('class="iir-opt iir-opt-pic"') == 2 and html.count('data-action="choose"') == 3
    assert "Click the closest one" in html


def test_picture_questions_chosen_in_options_appear_on_the_belief_page_and_a_click_on_one_counts(tiny_index):
    """Options, Picture questions, on the default page: the belief's own picture question is shown with its
    pictures, and clicking one is a Closest click on it (kept on the page), not the conversation's answer."""
    engine = build_engine(tiny_index[0], config=EngineConfig(k=K))
    st = h.set_questioner(engine, UIState(), "grounded")
    h.start(engine, st, "a red square")
    q = st.session.question
    assert st.session.on_belief and q is not None and q.kind == "choice"
    html = render.dialogue_html(st, True, "", engine)
    pictures = [o.image_id for o in q.options if o.image_id]
    assert html.count('class="iir-opt iir-opt-pic"') == len(pictures) >= 2
    h.choose(engine, st, 0, q.text)
    last = st.session.last
    assert last.kind == "closest" and last.extra["clicked"] == pictures[0] and pictures[0] in last.extra["kept"]


def test_the_answer_box_says_when_there_is_no_question_now(tiny_index, monkeypatch):
    """While the round's question is due the box promises it; once asked and none was worth asking (the belief
    asks nothing that cannot move it), the box says so, never promising a question that will not come."""
    from interactive_ir.modes.belief import mode as belief_mode
    from interactive_ir.ui import events
    from interactive_ir.ui import work as w

    engine = build_engine(tiny_index[0], config=EngineConfig(k=K))
    ctx = events.page_context(engine)
    st = h.start(engine, UIState(), "a red square", defer_question=True)
    assert st.question_due and events.answer_hint(ctx, st) == "A question is on its way"
    monkeypatch.setattr(belief_mode, "next_question", lambda session, *a, **k: belief_mode.QuestionStep(0, None))
    job = w.claim(st)
    assert w.adopt(engine, st, job, w.run(engine, job))
    assert not st.session.pending_question and events.answer_hint(ctx, st) == "No question this round"
