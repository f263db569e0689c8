"""Share a search (issue 25, deliverable 6): the link's query, its settings, and a search saved and reopened
as JSON (the CLI's `chat --save` format)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.ui import handlers as h
from interactive_ir.ui.state import UIState


@pytest.fixture
def engine(tiny_index):
    r, _, _ = tiny_index
    return build_engine(r, llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())


def test_share_query_carries_the_first_description_and_settings(engine):
    st = UIState()
    assert h.share_query(st) == ""
    h.set_hide_seen(engine, st, True)
    h.set_questioner(engine, st, "grounded")
    h.start(engine, st, "a red dog & a cat")
    q = parse_qs(h.share_query(st)[1:])
    assert q == {"q": ["a red dog & a cat"], "hide_seen": ["1"], "questioner": ["grounded"]}


def test_shared_settings_apply_and_ignore_what_they_cannot_use(engine):
    st = UIState()
    assert h.shared_settings(engine, st, {"q": "a dog", "hide_seen": "1", "questioner": "grounded"}) == "a dog"
    assert (st.hide_seen, st.questioner) == (True, "grounded")
    st2 = UIState()
    assert h.shared_settings(engine, st2, {"q": "x", "hide_seen": "maybe", "questioner": "nonsense"}) == "x"
    assert (st2.hide_seen, st2.questioner) == (None, "")


def test_a_shared_link_opens_the_same_search(engine):
    st = UIState()
    h.start(engine, st, "a red dog")
    other = UIState()
    q = h.shared_settings(engine, other, {k: v[0] for k, v in parse_qs(h.share_query(st)[1:]).items()})
    h.start(engine, other, q)
    assert other.current_ids == st.current_ids


def test_an_over_long_shared_description_is_refused(engine):
    st = UIState()
    q = h.shared_settings(engine, st, {"q": "dog " * 10_000})
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
