"""Grounded questions (no LLM): the pure parts on tiny vectors, then the engine's ask / answer_choice."""

from __future__ import annotations

import numpy as np
import pytest

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.modes.conversation.plugir import grounded
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig, resolve_questioner
from interactive_ir.retrieval import query_updates
from interactive_ir.types import NONE_OF_THESE, Option, Question


def _cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _clusters(seed=0, dim=16):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((3, dim))
    rows = [c + 0.1 * rng.standard_normal((4, dim)) for c in centres]
    query = centres.mean(axis=0) + 0.1 * rng.standard_normal(dim)
    return query.astype(np.float32), [r.astype(np.float32) for r in rows]


# --- pure functions ------------------------------------------------------------------------------
@pytest.mark.parametrize("chosen", [0, 1, 2])
def test_the_chosen_option_pulls_and_the_others_push(chosen):
    q, rows = _clusters()
    out = query_updates.reshape(q, [*rows, None], chosen, pull=0.6, push=0.2)
    mine = rows[chosen].mean(axis=0)
    assert _cos(out, mine) > _cos(q, mine) + 0.05
    for i, r in enumerate(rows):
        if i != chosen:
            assert _cos(out, r.mean(axis=0)) < _cos(q, r.mean(axis=0))
    assert np.linalg.norm(out) == pytest.approx(np.linalg.norm(q), rel=1e-5)  # the length is kept


def test_none_of_these_pushes_away_from_every_option():
    q, rows = _clusters(seed=1)
    out = query_updates.reshape(q, [*rows, None], 3)
    everything = np.concatenate(rows).mean(axis=0)
    assert _cos(out, everything) < _cos(q, everything)
    assert np.allclose(query_updates.reshape(q, [*rows, None], 3, push=0.0), q, atol=1e-6)  # no push: unchanged


def test_the_pull_favours_the_chosen_members_the_query_already_ranks_high():
    q = np.array([1.0, 0.0, 0.0], np.float32)
    rows = np.array([[0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    assert np.allclose(query_updates.pull_target(q, rows, 0.0), rows.mean(axis=0))
    sharp = query_updates.pull_target(q, rows, 0.05)
    assert np.allclose(sharp, rows[0], atol=1e-4)  # almost all weight on the member nearest the query
    soft = query_updates.pull_target(q, rows, 0.5)
    assert _cos(soft, rows[0]) > _cos(rows.mean(axis=0), rows[0])
    out = query_updates.reshape(q, [rows, None], 0, pull=0.6, push=0.0, temperature=0.05)
    assert _cos(out, rows[0]) > _cos(query_updates.reshape(q, [rows, None], 0, pull=0.6, push=0.0), rows[0])


def test_reshape_survives_empty_options_and_a_zero_query():
    q, rows = _clusters()
    assert np.allclose(query_updates.reshape(q, [None, np.zeros((0, 16))], 0), q, atol=1e-6)
    assert not np.any(query_updates.reshape(np.zeros(16, np.float32), rows, 0))


def test_choice_question_has_one_option_per_cluster_in_rank_order_then_none():
    ids = ["a", "b", "c", "d", "e"]
    labels = [1, 0, 1, 2, 0]
    q = grounded.choice_question(ids, labels, [0, 1, 3], ["a red dog. ", "", "x" * 30 + " " + "y" * 40], round=2)
    assert q.kind == "choice" and q.text == grounded.CHOICE_TEXT and q.round == 2 and q.grounded
    assert [o.image_id for o in q.options] == ["a", "b", "d", ""]
    assert [o.members for o in q.options] == [("a", "c"), ("b", "e"), ("d",), ()]
    assert q.options[0].label == "a red dog" and q.options[1].label == "b"  # no caption: the file name
    assert q.options[2].label.endswith("\u2026") and len(q.options[2].label) <= grounded.LABEL_CHARS + 1
    assert q.options[-1].label == NONE_OF_THESE


def test_yesno_picks_the_word_that_best_splits_the_candidates():
    ids = ["1", "2", "3", "4"]
    caps = ["a red car on a street", "a red car on a beach", "a blue car on a street", "a red car in a park"]
    q = grounded.yesno_question(ids, caps)
    # car is in every caption (splits nothing); street is in 2 of 4, red in 3, the rest in 1
    assert q.text == "Is there a street in the image?" and q.kind == "yesno"
    assert [o.label for o in q.options] == ["yes", "no"] and q.options[0].members == ("1", "3")
    assert q.options[1].members == ("2", "4")
    # what the dialogue already says, or what was asked, is not asked again
    assert grounded.yesno_question(ids, caps, known="on a street").text != q.text
    assert grounded.yesno_question(ids, caps, asked=[q.text]).text != q.text
    assert grounded.yesno_question(ids, ["a car", "a car"]) is None  # nothing splits them


def test_answer_text_is_what_the_dialogue_records():
    choice = Question("Which?", "choice", (Option("a dog on the grass", "x", ("x",)), Option(NONE_OF_THESE)))
    assert grounded.answer_text(choice, choice.options[0]) == "closest to: a dog on the grass"
    assert grounded.answer_text(choice, choice.options[1]) == "none of these"
    yn = Question("Is there a dog?", "yesno", (Option("yes"), Option("no")))
    assert grounded.answer_text(yn, yn.options[1]) == "no"


def test_questioner_auto_is_grounded_without_an_llm_or_with_smollm2():
    assert resolve_questioner("auto", None) == "grounded"
    assert resolve_questioner("auto", FakeLLM(spec="transformers:smollm2")) == "grounded"
    assert resolve_questioner("auto", FakeLLM()) == "llm"
    assert resolve_questioner("llm", None) == ""  # no questions
    assert resolve_questioner("grounded", FakeLLM()) == "grounded"
    with pytest.raises(BadInputError, match="questioner"):
        resolve_questioner("oracle", None)
    with pytest.raises(BadInputError, match="questioner"):
        PlugIRConfig(questioner="oracle")


# --- the engine --------------------------------------------------------------------------------------
def engine_for(r, llm=None, k=4, **cfg):
    return build_engine(r, llm=llm, config=EngineConfig(k=k), plugir=PlugIRConfig(**cfg))


def test_without_an_llm_the_engine_asks_a_choice_and_a_click_answers_it(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r)
    assert eng.questions_enabled
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    q = s.question
    assert q.kind == "choice" and t0.asked == q and t0.question == q.text == s.pending_question
    assert 3 <= len(q.options) <= 5 and q.options[-1].label == NONE_OF_THESE and t0.llm_calls == []
    assert all(o.image_id in o.members for o in q.options[:-1])
    t1 = eng.answer_choice(s, 1, question=q)
    assert t1.kind == "answer" and t1.method == "grounded" and t1.answered_question == q.text
    assert t1.user_text == f"closest to: {q.options[1].label}" and t1.extra["choice"]["image_id"] == q.options[1].image_id
    assert s.dialogue() == [(q.text, t1.user_text)]
    # the query row moved towards the chosen cluster
    members = grounded.search_rows(r, [r.index.row_of[i] for i in q.options[1].members]).mean(axis=0)
    assert _cos(t1.query_row, members) > _cos(t0.query_row, members)
    assert s.question is not None and s.question.round == 1  # and the next question is asked


def test_a_click_on_a_replaced_question_is_refused_and_changes_nothing(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r)
    s = eng.new_session()
    eng.start(s, "a red dog on the beach")
    old = s.question
    eng.skip(s)  # a newer action: another question
    before = s.to_json()
    with pytest.raises(SessionError, match="no longer open"):
        eng.answer_choice(s, 0, question=Question("Is there a tree in the image?", "yesno",
                                                  (Option("yes"), Option("no"))))
    with pytest.raises(SessionError, match="no longer open"):
        eng.answer_choice(s, 0, question=Question(old.text, old.kind, old.options[:1] + old.options[1:][::-1], 0))
    with pytest.raises(BadInputError, match="no option 9"):
        eng.answer_choice(s, 8)
    assert s.to_json() == before
    eng.answer_choice(s, 0)  # without `question`: the pending one
    s.set_question(None)
    with pytest.raises(SessionError, match="no question with options"):
        eng.answer_choice(s, 0)


def test_a_typed_question_has_no_options_to_click(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM())
    s = eng.new_session()
    eng.start(s, "a red dog")
    assert s.question.kind in ("llm", "fallback") and not s.question.options
    with pytest.raises(SessionError, match="type an answer"):
        eng.answer_choice(s, 0)


def test_the_questioner_is_a_session_choice(tiny_index):
    r, ids, caps = tiny_index
    llm = FakeLLM()
    eng = engine_for(r, llm)
    s = eng.new_session(questioner="grounded")
    eng.start(s, "a red dog")
    assert s.question.kind == "choice" and llm.calls == []
    s2 = eng.new_session()
    eng.start(s2, "a red dog")
    assert s2.question.kind == "llm" and llm.calls
    none = engine_for(r, questioner="llm")  # LLM questions chosen, no LLM: no questions
    assert not none.questions_enabled and none.start(none.new_session(), "a dog").question == ""
    yn = engine_for(r, grounded_style="alternate")
    s3 = yn.new_session()
    yn.start(s3, "a dog")
    yn.answer_choice(s3, 0)
    assert [t.asked.kind for t in s3.turns] == ["choice", "yesno"]


def test_a_pending_choice_survives_json_and_can_be_answered_after(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r)
    s = eng.new_session()
    eng.start(s, "a red dog on the beach")
    back = Session.from_json(s.to_json())
    assert back.question == s.question and back.turns[0].asked == s.turns[0].asked
    assert back.turns[0].query_row is None  # transient: not serialised
    t1 = eng.answer_choice(back, 0, question=s.question.text)
    t1_live = eng.answer_choice(s, 0)
    assert t1.shown == t1_live.shown  # the row rebuilt from the query text is the one the turn ranked with


def test_old_code_setting_pending_question_text_still_works(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM())
    s = eng.new_session()
    eng.start(s, "a red dog")
    s.pending_question = "Is it big?"  # as the fixed-dialogue replay does
    assert s.question == Question("Is it big?", "llm", (), 0)
    assert eng.answer(s, "yes").answered_question == "Is it big?"


def test_clicking_the_cluster_with_the_target_improves_its_rank(tmp_path):
    """Sanity check (not the benchmark): on 96 generated images, a simulated user who clicks the option
    whose cluster holds the target (else the representative that looks most like it, by image vectors)
    ranks the target better after one click, on average, than the description alone does."""
    from iir_testutils import build_tiny

    r, ids, caps = build_tiny(tmp_path, n=96)
    eng = engine_for(r, k=5, n_candidates=30)
    img = r.index.vectors(list(range(len(ids))), "image")
    before, after = [], []
    for target in ids[::3]:
        s = eng.new_session()
        t0 = eng.start(s, caps[target][1])  # "dog near a beach number 7": a partial description
        before.append(r.rank_of(t0.query_row, target))
        q = s.question
        pick = next((i for i, o in enumerate(q.options) if target in o.members), None)
        if pick is None:
            t_vec = img[r.index.row_of[target]]
            pick = max(range(len(q.options) - 1), key=lambda i: float(img[r.index.row_of[q.options[i].image_id]] @ t_vec))
        t1 = eng.answer_choice(s, pick)
        after.append(r.rank_of(t1.query_row, target))
    assert np.mean(after) < np.mean(before)
    assert sum(a < b for a, b in zip(after, before)) > sum(a > b for a, b in zip(after, before))


def test_the_plugir_evaluation_protocols_keep_llm_questions():
    """`auto` would ask grounded questions with SmolLM2; the PlugIR protocols measure PlugIR's questioner."""
    from interactive_ir.evaluation.protocols import get_protocol

    for name in ("plugir", "zs", "mixed"):
        assert get_protocol(name).mode_configs()["plugir"].questioner == "llm"


def test_the_questioner_is_a_study_condition(tiny_index):
    """A study condition chooses its questioner through its plugir settings (dataclasses.replace)."""
    from types import SimpleNamespace

    from interactive_ir.study.config import Condition
    from interactive_ir.study.engines import condition_engine

    r, ids, caps = tiny_index
    base = build_engine(r, llm=FakeLLM())
    study = SimpleNamespace(k=4)  # condition_engine reads only the study's k
    cond = Condition("G", "conversation", ("conversation",), settings={"plugir": {"questioner": "grounded"}})
    eng = condition_engine(base, study, cond)
    s = eng.new_session()
    eng.start(s, "a red dog")
    assert eng.questioner_for(s) == "grounded" and s.question.kind == "choice"
    assert base.questioner_for(base.new_session()) == "llm"
