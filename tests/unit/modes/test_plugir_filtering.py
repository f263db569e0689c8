"""Filtering (Algorithm 2): the KL choice against a hand-computed example, and the filter prompts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interactive_ir.modes.conversation.plugir import filtering
from interactive_ir.modes.conversation.plugir.parsers import ANSWERED, EMPTY, UNCERTAIN

E = math.e


def test_kl_of_shifted_softmaxes_by_hand():
    # p = softmax(1, 0, 0) = (e, 1, 1)/(e+2); q = softmax(0, 1, 0) = (1, e, 1)/(e+2)
    # KL(p||q) = p0 log(e) + p1 log(1/e) + p2 log 1 = (e - 1)/(e + 2)
    kls = filtering.kl_scores(np.array([1.0, 0, 0]), np.array([[0, 1.0, 0]]))
    assert kls[0] == pytest.approx((E - 1) / (E + 2), rel=1e-12)


def test_kl_choice_by_hand():
    base = np.array([1.0, 0.0, 0.0])  # sim(c, x) over three candidates
    questions = np.array([
        [0.0, 1.0, 0.0],  # q0 moves the mass to candidate 1: KL = (e-1)/(e+2) = 0.3641
        [1.5, 0.5, 0.5],  # q1 = base + 0.5 everywhere: the same distribution, KL = 0
        [2.0, 0.0, 0.0],  # q2 sharpens it: KL = p0 log(p0/q0) + 2 p1 log(p1/q1), see below
    ])
    p0, p1 = E / (E + 2), 1 / (E + 2)
    q0, q1 = E**2 / (E**2 + 2), 1 / (E**2 + 2)
    kl2 = p0 * math.log(p0 / q0) + 2 * p1 * math.log(p1 / q1)  # = 0.1035...
    kls = filtering.kl_scores(base, questions)
    np.testing.assert_allclose(kls, [(E - 1) / (E + 2), 0.0, kl2], atol=1e-12)
    assert filtering.choose_by_kl(kls, [0, 1, 2]) == 1
    assert filtering.choose_by_kl(kls, [0, 2]) == 2  # the filter dropped q1
    assert filtering.choose_by_kl(kls, [0]) == 0
    with pytest.raises(ValueError):
        filtering.choose_by_kl(kls, [])


def test_scale_multiplies_the_similarities():
    # scale 2 on (0.5, 0, 0) vs (0, 0.5, 0) is the first example again
    kls = filtering.kl_scores(np.array([0.5, 0, 0]), np.array([[0, 0.5, 0]]), scale=2.0)
    assert kls[0] == pytest.approx((E - 1) / (E + 2), rel=1e-12)


def test_ties_go_to_the_earlier_question():
    assert filtering.choose_by_kl([0.2, 0.1, 0.1], [0, 1, 2]) == 1


def test_filter_keeps_uncertain_and_empty_drops_answered():
    qs = ["What colour is the dog?", "Is it sunny?", "Where is it?"]
    v = filtering.verdicts(["brown", "The answer is uncertain.", ""], qs)
    assert v == [ANSWERED, UNCERTAIN, EMPTY]
    assert filtering.kept_positions(v) == [1, 2]


def test_filter_prompts_one_per_question_with_the_context():
    ps = filtering.filter_prompts("a dog\nQuestion: where? Answer: beach", ["Is it sunny?", "Is it wet?"])
    assert len(ps) == 2
    assert ps[1][1]["content"] == ("[Context] <<<context>>>a dog\nQuestion: where? Answer: beach<<</context>>>\n"
                                   "[Question] <<<question>>>Is it wet?<<</question>>>\n[Answer]")


def test_concat_query_cuts_the_context_not_the_question():
    assert filtering.concat_query("a dog on a beach", "Is it sunny?", 2000) == "a dog on a beach Is it sunny?"
    cut = filtering.concat_query("x" * 50, "Is it sunny?", 30)
    assert cut.endswith(" Is it sunny?") and len(cut) <= 30
