"""Parsers against a corpus of junk replies of the kind small local models give."""

from __future__ import annotations

import pytest

from interactive_ir.modes.conversation.plugir.parsers import (
    ANSWERED,
    EMPTY,
    UNCERTAIN,
    classify_answer,
    parse_caption,
    parse_questions,
)
from interactive_ir.modes.conversation.plugir.questioner import collect_questions, fallback_question

QUESTION_CASES = [
    # (reply, expected questions)
    ("What color is the dog?", ["What color is the dog?"]),
    ("what is the man holding?\nExplanation: I used candidates 0 and 3. What else?", ["What is the man holding?"]),
    ("1. What color is the dog?\n2) Where is the dog?\n- Is the dog wearing a collar?",
     ["What color is the dog?", "Where is the dog?", "Is the dog wearing a collar?"]),
    ("Is the dog black? Is the dog small? Does it have a collar?",
     ["Is the dog black?", "Is the dog small?", "Does it have a collar?"]),
    ("1. What breed is it? 2. Where is it running?", ["What breed is it?", "Where is it running?"]),
    ("Sure! Here is a question: what is the man holding?", ["What is the man holding?"]),
    ("Question: is it sunny", ["Is it sunny?"]),  # no question mark, but a question
    ('**Question:** "What time of day is it?"', ["What time of day is it?"]),
    ("Q1: What breed is the dog?\nQ2: What breed is the dog?", ["What breed is the dog?"]),  # duplicates
    ("In which room is the table?", ["In which room is the table?"]),
    # a caption instead of a question
    ("a black dog runs through the snow", []),
    ("The dog is brown?", []),  # a statement with a question mark
    ("a dog running is not mentioned in the description of the walker.", []),
    # the prompt or its example echoed
    ("[Description] a man is doing a trick\n[Dialogue] Question:", []),
    ("what is the outfit of the man performing the jump trick at a skate park?", []),
    ("You are a proficient question generator tasked with aiding in the retrieval of a target image?", []),
    # the question only inside the explanation
    ("the dog running\nExplanation: blah. The question is: what is the dog chasing?", ["What is the dog chasing?"]),
    ("", []),
    ("   \n  ", []),
    ("Why?", []),  # too short
    ("?", []),
]


@pytest.mark.parametrize("reply,expected", QUESTION_CASES)
def test_parse_questions_junk_corpus(reply, expected):
    assert parse_questions(reply) == expected


def test_parse_questions_skips_asked_and_respects_limit():
    reply = "1. What color is the dog?\n2. Where is it?\n3. Is it a puppy?"
    assert parse_questions(reply, asked=["WHAT COLOR is the dog", "where is it?"]) == ["Is it a puppy?"]
    assert parse_questions(reply, asked=["What color is the dog?"]) == ["Where is it?", "Is it a puppy?"]
    assert parse_questions(reply, limit=2) == ["What color is the dog?", "Where is it?"]


def test_collect_questions_merges_sampled_replies_without_duplicates():
    replies = ["What color is the dog?", "what color is the dog?", "a dog", "", "Is it outside? Is it day?"]
    assert collect_questions(replies, asked=["Is it day?"], limit=5) == ["What color is the dog?", "Is it outside?"]
    assert collect_questions(replies, asked=[], limit=1) == ["What color is the dog?"]


ANSWER_CASES = [
    ("Uncertain", UNCERTAIN),
    ("Uncertain.", UNCERTAIN),
    ('"uncertain"', UNCERTAIN),
    ("UNCERTAIN!", UNCERTAIN),
    ("The answer is uncertain.", UNCERTAIN),
    ("I cannot determine that from the context.", UNCERTAIN),
    ("It is not mentioned in the context.", UNCERTAIN),
    ("Unknown", UNCERTAIN),
    ("I don't know", UNCERTAIN),
    ("yes", ANSWERED),
    ("No, it is red.", ANSWERED),
    ("brown", ANSWERED),
    ("The dog is a black dog.", ANSWERED),
    ("", EMPTY),
    ("  ...  ", EMPTY),
    ("[Context] a dog running", EMPTY),  # the prompt echoed
    ("What colour is the dog?", EMPTY),  # the question echoed
]


@pytest.mark.parametrize("reply,expected", ANSWER_CASES)
def test_classify_answer_junk_corpus(reply, expected):
    assert classify_answer(reply, "What colour is the dog?") == expected


CAPTION_CASES = [
    ("a black dog running in the snow", "a black dog running in the snow"),
    ("[New Caption]: a black dog running in the snow", "a black dog running in the snow"),
    ('New Caption: "a black dog running"\nThe dialogue says more.', "a black dog running"),
    ("Sure, here is the new caption: a black dog. It runs.", "a black dog"),
    # rambling with a clause copied from the few-shot example
    ("a dog running in the snow, with a slightly worn guitar, is a classic example. the story is",
     "a dog running in the snow, is a classic example"),
    # a model in a loop, cut by the token limit (SmolLM2-135M, seen in the integration test)
    ("the dog is in the snow, the dog is black, the dog is in the snow, the dog is black, the dog is in the sn",
     "the dog is in the snow, the dog is black"),
    ("", None),
    ("dog", None),  # too short
    ("What colour is the dog?", None),  # a question
    ("[Caption]: a dog [Dialogue]: what colour? black [New Caption]:", None),  # echo
    ("a woman with pretty long hair sits alone on a grassy bench in a park on a sunny day", None),  # the example
]


@pytest.mark.parametrize("reply,expected", CAPTION_CASES)
def test_parse_caption_junk_corpus(reply, expected):
    assert parse_caption(reply, source="a dog running, what colour? black, where? in the snow") == expected


def test_parse_caption_keeps_example_words_the_user_said():
    assert parse_caption("a man playing a guitar on a bench", source="a man with a guitar, where? on a bench") == \
        "a man playing a guitar on a bench"


def test_fallback_question_asks_about_the_word_that_splits_the_candidates():
    caps = ["a dog on a beach", "a dog near a car", "a cat on a beach", "a dog in a park"]
    # known words: dog. beach is in 2 of 4 captions (exactly half): the best split
    assert fallback_question(caps, known="a dog") == "Is there a beach in the image?"
    # once asked, the next best: car/cat/park are in 1 of 4; "car" comes first in the captions
    assert fallback_question(caps, known="a dog", asked=["Is there a beach in the image?"]) == \
        "Is there a car in the image?"
    # word forms: colours, -ing words and plurals
    assert fallback_question(["a red kite", "a blue kite"], known="a kite") == "Is there something red in the image?"
    assert fallback_question(["dogs running", "dogs sleeping"], known="dogs") == "Is anyone running in the image?"
    assert fallback_question(["two dogs", "one cat"], known="") == "Are there dogs in the image?"


def test_fallback_question_without_captions_is_generic_and_not_repeated():
    q1 = fallback_question([], known="a dog")
    assert q1 == "What is the main subject of the image?"
    assert fallback_question([], known="a dog", asked=[q1]) == "Where was the photo taken?"
