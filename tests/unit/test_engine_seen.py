"""Seen, not hidden: by default a round ranks the whole collection and marks what earlier rounds showed."""

from __future__ import annotations

import dataclasses

from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine, engine_config


def _exact(r, text, k, exclude=()):
    return [h.id for h in r.search_row(r.text_query_row(r.encode_text(text)), len(r.index)) if h.id not in exclude][:k]


def test_a_new_query_shows_the_top_k_of_the_whole_collection_with_seen_ones_marked(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=5))
    s = eng.new_session()
    t0 = eng.search_text(s, "a red dog on the beach")
    t1 = eng.search_text(s, "a red dog on the beach in the sun")
    assert t1.shown == _exact(r, "a red dog on the beach in the sun", 5)  # nothing hidden
    assert t1.seen and t1.seen == [i for i in t1.shown if i in t0.shown]
    hits = eng.hits_of(t1)
    assert [h.id for h in hits if h.seen] == t1.seen and not any(h.seen for h in eng.hits_of(t0))
    assert Session.from_json(s.to_json()).turns[1].seen == t1.seen


def test_more_like_my_marks_and_skip_page_through_unseen_images(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=4))
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    t1 = eng.feedback(s, [t0.shown[0]], method="rocchio")
    assert not set(t1.shown) & set(t0.shown) and t1.seen == []
    t2 = eng.skip(s)
    assert not set(t2.shown) & (set(t0.shown) | set(t1.shown))


def test_hide_seen_shows_only_unseen_images_in_every_round(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=5, hide_seen=True))
    s = eng.new_session()
    t0 = eng.search_text(s, "a red dog on the beach")
    t1 = eng.search_text(s, "a red dog on the beach in the sun")
    assert t1.shown == _exact(r, "a red dog on the beach in the sun", 5, set(t0.shown)) and t1.seen == []


def test_hide_seen_from_env_and_the_old_name(monkeypatch):
    assert not EngineConfig().hide_seen
    monkeypatch.setenv("IIR_HIDE_SEEN", "1")
    assert engine_config().hide_seen and not engine_config(hide_seen=False).hide_seen
    assert engine_config(environ={}).hide_seen is False
    monkeypatch.delenv("IIR_HIDE_SEEN")
    monkeypatch.setenv("IIR_EXCLUDE_SHOWN", "1")  # the old name, in an environment set up before the rename
    assert engine_config().hide_seen and engine_config(environ={"IIR_EXCLUDE_SHOWN": "yes"}).hide_seen
    assert engine_config(environ={"IIR_EXCLUDE_SHOWN": "1", "IIR_HIDE_SEEN": "0"}).hide_seen is False  # new name wins
    assert not hasattr(EngineConfig(), "exclude_shown")
    assert dataclasses.replace(engine_config(), hide_seen=False).hide_seen is False


def test_a_session_can_hide_seen_images_while_others_keep_the_engine_default(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=5))  # the engine-wide default: seen images come back, marked
    hiding, default = eng.new_session(hide_seen=True), eng.new_session()
    texts = ["a red dog on the beach", "a red dog on the beach in the sun", "a red dog on the sand"]
    shown: set[str] = set()
    for text in texts:
        t = eng.search_text(hiding, text)
        assert not set(t.shown) & shown and t.seen == [] and len(t.shown) == 5
        assert t.shown == _exact(r, text, 5, shown)
        shown |= set(t.shown)
    for text in texts:
        eng.search_text(default, text)
    assert default.turns[1].shown == _exact(r, texts[1], 5) and default.turns[1].seen  # shown again, marked seen
    assert any(h.seen for h in eng.hits_of(default.turns[1]))
    # the other way round: an engine that hides seen images, and a session that asks to see them again
    eng2 = build_engine(r, config=EngineConfig(k=5, hide_seen=True))
    s = eng2.new_session(hide_seen=False)
    eng2.search_text(s, texts[0])
    assert eng2.search_text(s, texts[1]).shown == _exact(r, texts[1], 5)
