"""The engine's generic actions go to the mode the session is on (`SessionOptions.mode`): on the belief every
one reaches `modes/belief` (closest, tell, marks, its skip and questions); otherwise each reaches its own mode
(the conversation, feedback, composed search). The web page and the study call only the generic actions."""

from __future__ import annotations

import pytest

from interactive_ir.core.options import BELIEF, SessionOptions
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import SessionError
from interactive_ir.types import Option, Question

K = 3
SPIED = {  # engine attribute -> the mode methods a generic action may reach
    "belief_mode": ("closest", "tell", "marks", "skip", "choose"),
    "conversation_mode": ("start", "answer", "skip", "answer_choice"),
    "feedback_mode": ("feedback",),
    "composed_mode": ("relative",),
    "core": ("search_text", "more_like"),
}


@pytest.fixture
def engine(tiny_index, monkeypatch):
    """An engine (no LLM: grounded questions) whose mode methods note each call in `engine.calls`."""
    eng = build_engine(tiny_index[0], config=EngineConfig(k=K))
    eng.calls = []
    for attr, names in SPIED.items():
        target = getattr(eng, attr)
        for name in names:
            real = getattr(target, name)

            def spy(*args, _real=real, _where=f"{attr}.{name}", **kwargs):
                eng.calls.append(_where)
                return _real(*args, **kwargs)

            monkeypatch.setattr(target, name, spy)
    return eng


def started(engine, mode: str):
    s = engine.new_session(SessionOptions(mode=mode))
    engine.describe(s, "a red square on the beach")
    first = engine.calls[0]
    engine.calls.clear()
    return s, first


def test_describe_is_a_text_search_on_the_belief_and_the_conversation_s_start_otherwise(engine):
    s, first = started(engine, BELIEF)
    assert first == "core.search_text" and s.last.kind == "describe" and not s.last.extra.get("plugir")
    assert s.question is not None and s.question.kind == "open"  # the belief's own question, no LLM
    s, first = started(engine, "")
    assert first == "conversation_mode.start" and s.last.kind == "describe"


@pytest.mark.parametrize("mode, reached", [
    (BELIEF, ["belief_mode.tell", "belief_mode.skip", "belief_mode.marks", "belief_mode.closest",
              "belief_mode.closest"]),
    ("", ["conversation_mode.answer", "conversation_mode.skip", "feedback_mode.feedback",
          "composed_mode.relative", "core.more_like"]),
])
def test_each_generic_action_reaches_the_session_s_mode(engine, mode, reached):
    s, _ = started(engine, mode)
    engine.reply(s, "it is red")
    engine.skip(s)
    engine.mark(s, [s.last.shown[0]], [s.last.shown[1]])
    engine.reference(s, "but at night", reference=s.last.shown[1])
    engine.more_like(s, s.last.shown[0])
    assert engine.calls == reached
    kinds = [t.kind for t in s.turns[1:]]
    if mode == BELIEF:
        assert kinds == ["tell", "skip", "marks", "closest", "closest"]
        assert all(t.method == "belief" for t in s.turns[1:])
        assert s.turns[4].extra["clicked"] == s.turns[3].shown[1] and s.turns[4].extra["said"]  # "like this, but"
    else:
        assert kinds[:4] == ["answer", "skip", "feedback", "relative"]


def test_a_reference_on_the_belief_without_one_given_is_the_top_result(engine):
    s, _ = started(engine, BELIEF)
    top = s.last.shown[0]
    engine.reference(s, "but at night")
    assert engine.calls == ["belief_mode.closest"] and s.last.extra["clicked"] == top


def test_a_click_on_the_belief_s_yes_or_no_question_is_what_is_said(engine):
    s, _ = started(engine, BELIEF)
    s.set_question(Question("Is there a dog?", "yesno", (Option("yes"), Option("no")), s.round))
    s.last.extra["asked"] = "dog"
    with pytest.raises(SessionError, match="replaced by a newer one"):
        engine.choose(s, 0, "Is there a cat?")
    engine.choose(s, 1, "Is there a dog?")
    assert engine.calls == ["belief_mode.choose", "belief_mode.choose", "belief_mode.tell"]
    assert s.last.kind == "tell" and s.last.extra["said"] == "no dog"


def test_a_click_on_an_option_in_the_conversation_is_its_clicked_answer(engine):
    s, _ = started(engine, "")
    q = s.question
    assert q is not None and q.options  # a grounded question: pick the closest image
    engine.choose(s, 0, q)
    assert engine.calls == ["conversation_mode.answer_choice"]
    assert "belief_mode.choose" not in engine.calls


def test_the_web_page_and_the_study_call_only_the_generic_actions():
    """Their belief branches are gone: neither names the belief's own actions."""
    import inspect

    from interactive_ir.study import engines as study_engines
    from interactive_ir.ui import handlers

    study = inspect.getsource(study_engines)
    assert "tell(" not in study and "marks(" not in study and "skip_belief" not in study and "closest(" not in study
    page = inspect.getsource(handlers)
    assert "engine.tell(" not in page and "engine.marks(" not in page and "skip_belief" not in page
    assert "meta[" not in page and "meta.get(" not in page
