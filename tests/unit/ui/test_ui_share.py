"""Share a search (issue 25, deliverable 6): the link's query, its settings, and a search saved and reopened
as JSON (the CLI's `chat --save` format)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode

import pytest
from iir_testutils import build_tiny, query_modes

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.ui import handlers as h
from interactive_ir.ui import share
from interactive_ir.ui.state import UIState


@pytest.fixture
def engine(tiny_index):
    r, _, _ = tiny_index
    return build_engine(r, llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())


def test_share_query_carries_the_first_description_and_settings(engine):
    st = UIState()
    assert share.share_query(st) == ""
    h.set_hide_seen(engine, st, True)
    h.set_questioner(engine, st, "grounded")
    h.start(engine, st, "a red dog & a cat")
    q = parse_qs(share.share_query(st)[1:])
    assert q == {"q": ["a red dog & a cat"], "hide_seen": ["1"], "questioner": ["grounded"]}


def test_shared_settings_apply_and_ignore_what_they_cannot_use(engine):
    st = UIState()
    assert share.shared_settings(engine, st, {"q": "a dog", "hide_seen": "1", "questioner": "grounded"}) == "a dog"
    assert (st.hide_seen, st.questioner) == (True, "grounded")
    st2 = UIState()
    assert share.shared_settings(engine, st2, {"q": "x", "hide_seen": "maybe", "questioner": "nonsense"}) == "x"
    assert (st2.hide_seen, st2.questioner) == (None, "")


def test_a_shared_link_opens_the_same_search(engine):
    st = UIState()
    h.start(engine, st, "a red dog")
    other = UIState()
    q = share.shared_settings(engine, other, {k: v[0] for k, v in parse_qs(share.share_query(st)[1:]).items()})
    h.start(engine, other, q)
    assert other.current_ids == st.current_ids


def test_an_over_long_shared_description_is_refused(engine):
    st = UIState()
    q = share.shared_settings(engine, st, {"q": "dog " * 10_000})
    with pytest.raises(BadInputError):
        h.start(engine, st, q)
    assert not st.started


def test_save_then_open_restores_the_rounds(engine, tmp_path):
    st = UIState()
    h.set_hide_seen(engine, st, True)
    h.start(engine, st, "a red dog")
    h.skip(engine, st)
    path = h.save_search(st, tmp_path)
    assert Session.from_json(path.read_text()).to_dict() == st.session.to_dict()  # the CLI's format
    other = UIState()
    h.open_search(engine, other, path)
    assert len(other.session.turns) == 2
    assert other.current_ids == st.current_ids
    assert other.hide_seen is True
    assert [x.id for x in engine.hits_of(other.session.last)] == st.current_ids
    assert h.save_search(UIState(), tmp_path) is None


def test_open_refuses_files_that_are_not_saved_searches(engine, tmp_path):
    st = UIState()
    h.start(engine, st, "a red dog")
    before = st.current_ids
    bad = {"notjson.json": "not json {", "list.json": "[1, 2]", "empty.json": json.dumps({"turns": []}),
           "noresults.json": json.dumps({"turns": [{"round": 0, "kind": "describe"}]})}
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(BadInputError, match="not a saved search"):
            h.open_search(engine, st, tmp_path / name)
    big = tmp_path / "big.json"
    big.write_text(" " * (h.MAX_SAVED_BYTES + 1))
    with pytest.raises(BadInputError, match="over 2 MB"):
        h.open_search(engine, st, big)
    data = json.loads(st.session.to_json())
    data["turns"][0]["shown"][0] = "elsewhere/not-here.jpg"
    (tmp_path / "other.json").write_text(json.dumps(data))
    with pytest.raises(BadInputError, match="another gallery"):
        h.open_search(engine, st, tmp_path / "other.json")
    assert st.current_ids == before  # nothing changed


# --- issue 38 D6: a shared link replays the search: NOT terms, phrases, filters and every round ------------
@pytest.fixture
def belief_engine(tmp_path):
    r, _, _ = build_tiny(tmp_path, n=80)  # 20 images in sub/: a filtered search of 6 rounds of 3
    return build_engine(r, llm=FakeLLM(), config=EngineConfig(k=3))  # the defaults: the belief on the page


def _opened(engine, link: str) -> UIState:
    params = {k: v[0] for k, v in parse_qs(link[1:]).items()}
    other = UIState()
    q = share.shared_settings(engine, other, params)
    return share.replay(engine, other, q, params.get("rounds", ""))


def _played(engine) -> UIState:
    st = UIState()
    h.start(engine, st, 'a red dog "on the" -blue folder:sub')
    h.closest(engine, st, st.current_ids[1])
    h.answer(engine, st, "yes")
    st.marks = {st.current_ids[0]: True, st.current_ids[2]: False}
    h.feedback(engine, st)
    h.closest(engine, st, st.current_ids[0], "but green")
    h.skip(engine, st)
    h.describe(engine, st, 'a red dog "on the" with a ball -blue folder:sub')  # words added in the search box
    return st


def test_a_shared_link_carries_not_terms_phrases_filters_and_every_round(belief_engine):
    st = _played(belief_engine)
    q = parse_qs(share.share_query(st)[1:])
    assert q["q"] == ['a red dog "on the" -blue folder:sub']
    rounds = json.loads(q["rounds"][0])
    assert [r[0] for r in rounds] == ["c", "t", "m", "c", "s", "w"]
    assert rounds[3][2] == "but green" and rounds[2][1] == [st.session.turns[3].extra["relevant"][0]]


def test_a_shared_link_replays_to_the_same_page(belief_engine):
    st = _played(belief_engine)
    other = _opened(belief_engine, share.share_query(st))
    assert other.session.not_terms == st.session.not_terms and other.session.not_terms
    assert other.session.filters == st.session.filters and other.session.filters
    assert [t.kind for t in other.session.turns] == [t.kind for t in st.session.turns]
    assert [t.shown for t in other.session.turns] == [t.shown for t in st.session.turns]
    assert "6 of 6 later rounds" in other.notice
    assert other.session.last.answered_question == "" and other.session.last.extra.get("added")  # not an answer
    assert share.share_query(other) == share.share_query(st)  # the replayed search shares the same link


def test_a_link_naming_an_image_no_longer_there_replays_the_rest_and_says_so(belief_engine):
    st = _played(belief_engine)
    q = parse_qs(share.share_query(st)[1:])
    rounds = json.loads(q["rounds"][0])
    rounds[0][1] = "gone.png"  # an image removed from the gallery since
    link = "?" + urlencode({"q": q["q"][0], "rounds": json.dumps(rounds)})
    other = _opened(belief_engine, link)
    assert "Round 2 of the link was left out" in other.notice and "gone.png is not in this gallery" in other.notice
    assert len(other.session.turns) >= 2 and other.started  # the search went on with the other rounds


def test_a_link_whose_filter_no_longer_parses_searches_without_it(belief_engine):
    other = _opened(belief_engine, "?" + urlencode({"q": "a red square date:2019..banana"}))
    assert other.started and "date:2019..banana" in other.notice and "searched without it" in other.notice
    assert not other.session.filters


def test_unreadable_rounds_are_left_out_and_said(belief_engine):
    other = _opened(belief_engine, "?" + urlencode({"q": "a red square", "rounds": "{not json"}))
    assert other.started and len(other.session.turns) == 1 and "could not be read" in other.notice
    other = _opened(belief_engine, "?" + urlencode({"q": "a red square", "rounds": '[["s"], ["zz"], 5]'}))
    assert len(other.session.turns) == 2 and "2 unreadable round(s)" in other.notice


def test_a_replayed_link_asks_no_model_on_the_quick_path(tiny_index):
    # the page replays a link on its quick path: the engine's own LLM (the Space owner's) is never called there;
    # the last round's question is left to the model step, which runs with the visitor's model (issue 38)
    llm = FakeLLM()
    engine = build_engine(tiny_index[0], llm=llm, config=EngineConfig(k=4), belief=query_modes())
    first = h.start(engine, UIState(), "a red square").current_ids  # off the page: asks at once, with the LLM
    assert llm.calls
    llm.calls.clear()
    st = UIState()
    share.replay(engine, st, "a red square", json.dumps([["l", first[0]], ["l", first[1]]]), later=True)
    assert len(st.session.turns) == 3 and "ask" in st.todo and "left out" not in st.notice
    assert llm.calls == []
