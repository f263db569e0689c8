"""The belief's robust user model and informative displays (retrieval/belief.py): a wrong click does not sink
the target, an overlooked target comes back, pages chosen by expected information, answers about words."""

from __future__ import annotations

import numpy as np

from interactive_ir.retrieval.belief import Belief, BeliefConfig, _information, word_information


def _unit(rng, n, d):
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _belief(n=60, d=8, seed=0, **cfg):
    rng = np.random.default_rng(seed)
    V = _unit(rng, n, d)
    b = Belief(np.arange(n), V, BeliefConfig(**cfg))
    b.set_query(_unit(rng, 1, d)[0])
    return b, V


def test_one_wrong_click_costs_the_target_at_most_log_of_the_error_share():
    for eps in (0.0, 0.2):
        b, V = _belief(click_error=eps, click_temperature=0.05)
        target = 7
        shown = [int(i) for i in np.argsort(V @ V[target])[:5]]  # the five images least like the target
        wrong = shown[0]
        before = b.log_posterior()[target]
        b.click(shown, 0)  # the person clicked the least alike: a slip
        drop = before - b.log_posterior()[target]
        if eps:
            assert drop <= -np.log(eps / 6) + 1e-9  # no worse than a random pick among 5 + none
        else:
            assert drop > -np.log(0.2 / 6)  # without the error term one slip costs more than that bound
        assert np.isfinite(b.log_posterior()[wrong])


def test_an_overlooked_target_comes_back_when_the_evidence_points_at_it():
    b, V = _belief(overlook=0.05, click_temperature=0.05, text_temperature=1.0)
    target = int(np.argmax(b.log_posterior()))
    b.set_seen([target])  # shown once and looked past
    rows, _, _ = b.page(5)
    assert target not in rows.tolist()  # at first the unseen come first
    b.say(V[target])  # the person says what the target shows: the evidence points at it again
    assert target in b.page(5)[0].tolist()
    b.set_seen([target], [40])  # shown forty times: now it stays away
    assert target not in b.page(5)[0].tolist()


def test_learning_images_raise_the_expected_information_of_the_click():
    b, V = _belief(n=200, d=6, seed=2, explore=4, explore_depth=80, click_error=0.1)
    logp = b.log_posterior()
    rows, _, n_best = b.page(10, logp=logp)
    assert n_best == 6 and len(set(rows.tolist())) == 10
    top10 = np.argsort(-logp, kind="stable")[:10]
    assert b.click_information(rows, logp) > b.click_information(top10, logp)


def test_information_is_zero_for_an_answer_that_does_not_depend_on_the_target():
    p = np.array([0.5, 0.3, 0.2])
    same = np.tile(np.array([0.7, 0.3]), (3, 1))[:, None, :]
    assert abs(_information(p, same)[0]) < 1e-12
    sure = np.eye(3)[:, None, :]
    assert np.isclose(_information(p, sure)[0], -(p * np.log(p)).sum())


def test_word_information_peaks_where_the_word_splits_the_mass_and_vanishes_at_the_ends():
    p = np.full(4, 0.25)
    has = np.array([[1, 1, 0, 1], [1, 0, 0, 1], [1, 0, 0, 0], [1, 0, 0, 0]], bool)  # all, quarter, none, half
    info = word_information(p, has, 0.9, 0.1)  # a symmetric answer model: the half split tells most
    assert abs(info[0]) < 1e-12 and abs(info[2]) < 1e-12 and info[3] > info[1] > 0


def test_a_yes_and_a_no_about_a_word_move_the_images_that_have_it():
    b, _ = _belief(word_yes=0.9, word_yes_absent=0.2)
    has = np.zeros(60, bool)
    has[:10] = True
    before = b.log_posterior()
    b.answer_word(has, True)
    gain = b.log_posterior() - before
    assert np.allclose(gain[:10] - gain[10:].mean(), np.log(0.9 / 0.2))
    b.answer_word(has, False)
    both = b.log_posterior() - before
    assert np.allclose(both[:10] - both[10:].mean(), np.log(0.9 / 0.2) + np.log(0.1 / 0.8))
