"""The belief's questions written by an LLM about its candidate groups (modes/belief/llm_questions.py): the
prompt, the parser on junk, and the engine's wiring with a scripted fake LLM (answers are evidence)."""

from __future__ import annotations

import copy

import numpy as np

from interactive_ir.backends.fence import DATA_RULE, inside_fences
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.options import SessionOptions
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BackendError
from interactive_ir.modes.belief.llm_questions import build_prompt, parse_question, written_question


def test_the_prompt_shows_both_groups_and_the_word():
    p = build_prompt("beach", ["a dog on the beach", "kids on a beach"], ["a dog in the snow"])
    assert "<<<word>>>beach<<</word>>>" in p and "1. a dog on the beach" in p and "1. a dog in the snow" in p
    for data in ("beach", "a dog on the beach", "kids on a beach", "a dog in the snow"):
        assert inside_fences(p, data), data
    assert DATA_RULE in p and "(no captions)" in build_prompt("beach", ["a"], [])


def test_the_parser_takes_a_yes_no_question_naming_the_word_and_survives_junk():
    assert parse_question("Is the dog on a beach?", "beach") == "Is the dog on a beach?"
    assert parse_question("Sure! Here it is:\n1. \"is it at the beach? I think\"", "beach") == "Is it at the beach?"
    assert parse_question("Question: Are there waves on the beach?", "beaches") == "Are there waves on the beach?"
    for junk in ("", "beach", "What is on the beach?", "Is it snowing?", None, 42, "Is " + "very " * 30 + "beach?"):
        assert parse_question(junk, "beach") is None


def test_a_failing_backend_gives_no_question():
    assert written_question(FakeLLM(script=[BackendError("down")]), "beach", ["a"], ["b"]) is None


def _search(engine, questioner):
    s = engine.new_session(belief=True)
    s.options.merge(SessionOptions(questioner=questioner))
    engine.search_text(s, "a shape")
    for _ in range(6):  # past the open questions
        q = s.question
        if q is None or q.kind == "yesno":
            return s, q
        engine.tell(s, "not sure")
    return s, s.question


def test_with_written_questions_the_llm_words_the_yes_no_question_and_its_answer_is_evidence(tiny_index):
    asked = {}

    def responder(prompt):
        word = prompt.split('mention <<<word>>>', 1)[1].split('<<<', 1)[0]
        asked["word"] = word
        return f"Sure.\nDoes your picture show a {word}, perhaps?"

    llm = FakeLLM(responder=responder)
    engine = build_engine(tiny_index[0], llm=llm, config=EngineConfig(k=2))
    s, q = _search(engine, "llm")
    assert q is not None and q.kind == "yesno" and q.text == f"Does your picture show a {asked['word']}, perhaps?"
    word = asked["word"]
    assert s.last.extra["asked"] == word and any("Group A" in p for p in llm.prompts)
    yes = engine.tell(sy := copy.deepcopy(s), "yes")
    no = engine.tell(sn := copy.deepcopy(s), "no")
    assert yes.extra["answer"] == {"word": word, "yes": True} and no.extra["answer"] == {"word": word, "yes": False}
    assert not np.allclose(engine.belief_mode.ranking(sy), engine.belief_mode.ranking(sn))  # the answer moved the belief


def test_junk_from_the_llm_falls_back_to_the_rule_question(tiny_index):
    engine = build_engine(tiny_index[0], llm=FakeLLM(responder=lambda p: "I cannot help with that."),
                          config=EngineConfig(k=2))
    s, q = _search(engine, "llm")
    assert q is not None and q.kind == "yesno" and q.text.endswith("in the picture?")
    quiet = FakeLLM(responder=lambda p: "Is it?")
    plain, q2 = _search(build_engine(tiny_index[0], llm=quiet, config=EngineConfig(k=2)), "grounded")
    assert q2 is not None and q2.kind == "choice" and not quiet.prompts  # picture questions chosen: no LLM asked
