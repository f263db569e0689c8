"""`SessionOptions`: a session's behaviour choices as a typed field. Records written when they were keys of
`Session.meta` still load (and behave the same); a session is written with those same keys."""

from __future__ import annotations

import json

import pytest

from interactive_ir.core.options import BELIEF, SessionOptions
from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine

# what the study wrote for a belief condition after a round, and what the page and eval wrote
STUDY_META = {"study_id": "s1", "participant": "p", "task": 0, "task_index": 2, "condition": "B", "target": "x.png",
              "ask_questions": True, "plugir_method": "zs", "belief": True, "question_due": False}
PAGE_META = {"source": "web", "belief": True, "questioner": "grounded", "hide_seen": True}
EVAL_META = {"target": "x.png", "query_id": "q1", "protocol": "mixed", "ask_questions": True, "questioner": "auto"}


@pytest.mark.parametrize("meta, options, data", [
    (STUDY_META, SessionOptions(mode=BELIEF, ask_questions=True, plugir_method="zs", question_due=False),
     ("study_id", "participant", "task", "task_index", "condition", "target")),
    (PAGE_META, SessionOptions(mode=BELIEF, questioner="grounded", hide_seen=True), ("source",)),
    (EVAL_META, SessionOptions(ask_questions=True, questioner="auto"), ("target", "query_id", "protocol")),
    ({"gave_up": True}, SessionOptions(), ("gave_up",)),
])
def test_legacy_meta_keys_load_as_options_and_are_written_back_the_same(meta, options, data):
    record = {"session_id": "abc", "turns": [], "meta": dict(meta)}
    s = Session.from_dict(record)
    assert s.options == options
    assert tuple(s.meta) == data  # only data stays in meta
    assert record["meta"] == meta  # the loaded record is left as it was
    assert s.to_dict()["meta"] == meta and list(s.to_dict()["meta"]) == list(meta)  # same keys, same order
    again = Session.from_json(s.to_json())
    assert again.options == options and again.meta == s.meta and again.to_dict() == s.to_dict()


def test_options_set_in_code_are_written_as_the_meta_keys():
    s = Session(options=SessionOptions(mode=BELIEF, ask_questions=False, hide_seen=False))
    assert s.on_belief and s.meta == {}
    assert s.to_dict()["meta"] == {"ask_questions": False, "belief": True, "hide_seen": False}
    s.options.questioner = ""  # unset: not written
    s.options.mode = ""
    assert s.to_dict()["meta"] == {"ask_questions": False, "hide_seen": False}


def test_new_session_takes_options_and_the_old_keyword_form(tiny_index):
    engine = build_engine(tiny_index[0], config=EngineConfig(k=3))
    old = engine.new_session(ask_questions=False, source="cli")  # `composed_search` and older callers
    new = engine.new_session(SessionOptions(ask_questions=False), source="cli")
    assert old.options == new.options == SessionOptions(ask_questions=False)
    assert old.meta == new.meta == {"source": "cli"}
    given = engine.new_session(SessionOptions(questioner="llm"), questioner="grounded")  # the typed one wins
    assert given.options.questioner == "llm"


def test_an_old_record_behaves_as_it_did(tiny_index):
    """hide_seen and ask_questions read from a record's meta still steer the engine."""
    engine = build_engine(tiny_index[0], config=EngineConfig(k=3, hide_seen=False))
    s = engine.new_session()
    engine.start(s, "a red square")
    record = json.loads(s.to_json())
    record["meta"].update({"hide_seen": True, "ask_questions": False})
    loaded = Session.from_dict(record)
    assert engine.core.hides_seen(loaded) and not engine.core.hides_seen(s)
    engine.skip(loaded)
    assert loaded.pending_question == ""  # no question: the record turned them off
    assert not set(loaded.last.shown) & set(loaded.turns[0].shown)  # hidden: shown before
