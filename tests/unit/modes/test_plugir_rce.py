"""Retrieval context extraction (Algorithm 1) against a hand-computed example."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interactive_ir.modes.conversation.plugir import rce

# Six candidates, best first, in two tight groups: A in the (e1, e2) plane, B in the (e3, e4) plane.
a1, a2, a3 = (1, 0, 0, 0), (0.96, 0.28, 0, 0), (0.8, -0.6, 0, 0)
b1, b2, b3 = (0, 0, 1, 0), (0, 0, 0.96, 0.28), (0, 0, 0.8, -0.6)
ORDER = ["a1", "b1", "a2", "b2", "a3", "b3"]
VECS = np.array([a1, b1, a2, b2, a3, b3], np.float32)

# Dot products worked out by hand (each vector against the OTHER five, in ORDER); across groups all are 0.
#   a1.a2 = .96, a1.a3 = .8, a2.a3 = .96*.8 - .28*.6 = .768 - .168 = .6 (and the same for b)
HAND_SIMS = {
    "a1": [0, .96, 0, .8, 0], "b1": [0, 0, .96, 0, .8], "a2": [.96, 0, 0, .6, 0],
    "b2": [0, .96, 0, 0, .6], "a3": [.8, 0, .6, 0, 0], "b3": [0, .8, 0, .6, 0],
}


def entropy_of(sims, scale):
    """H of softmax(scale * sims), written out from the definition (independent of the code under test)."""
    w = [math.exp(scale * s) for s in sims]
    z = sum(w)
    return -sum((x / z) * math.log(x / z) for x in w)


@pytest.mark.parametrize("scale", [1.0, 10.0])
def test_entropies_match_the_hand_computation(scale):
    got = rce.similarity_entropies(VECS, scale)
    want = [entropy_of(HAND_SIMS[name], scale) for name in ORDER]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_uniform_similarities_give_log_of_the_number_of_others():
    # three orthonormal vectors: each sees two others at similarity 0 -> H = log 2
    np.testing.assert_allclose(rce.similarity_entropies(np.eye(3)), [math.log(2)] * 3, rtol=1e-6)


def test_clusters_and_representatives():
    ctx = rce.extract(ORDER, VECS, m=2, seed=0, scale=10.0)
    labels = dict(zip(ORDER, ctx.labels))
    # clusters: {a1, a2, a3} and {b1, b2, b3}
    assert labels["a1"] == labels["a2"] == labels["a3"] != labels["b1"] == labels["b2"] == labels["b3"]
    # at scale 10, a2 sees 9.6 (a1) vs 6 (a3): p ~ (.97, .03), the most peaked of group A; a1 sees 9.6 vs 8
    # (p ~ (.83, .17)) and a3 8 vs 6 (p ~ (.88, .12)). Likewise b2 in group B.
    h = {n: entropy_of(HAND_SIMS[n], 10.0) for n in ORDER}
    assert min(("a1", "a2", "a3"), key=h.get) == "a2" and min(("b1", "b2", "b3"), key=h.get) == "b2"
    assert [ORDER[i] for i in ctx.representatives] == ["a2", "b2"]  # in rank order (positions 2, 3)
    assert ctx.representatives == [2, 3]
    s = ctx.summary()
    assert s["n_candidates"] == 6 and s["n_clusters"] == 2 and s["representatives"] == ["a2", "b2"]


def test_representative_ties_go_to_the_better_ranked_candidate():
    labels = np.array([0, 0, 1, 1])
    assert rce.pick_representatives(labels, np.array([0.5, 0.5, 0.9, 0.2])) == [0, 3]


def test_m_is_lowered_to_the_distinct_candidates():
    v = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    labels = rce.kmeans_labels(v, m=10)
    assert len(set(labels)) == 2 and labels[0] == labels[1] != labels[2]
    assert list(rce.kmeans_labels(v[:1], m=10)) == [0]
    assert len(rce.kmeans_labels(np.zeros((0, 2), np.float32), m=3)) == 0


def test_kmeans_is_seeded():
    v = np.random.default_rng(1).standard_normal((200, 16)).astype(np.float32)
    assert list(rce.kmeans_labels(v, 10, seed=3)) == list(rce.kmeans_labels(v, 10, seed=3))


@pytest.mark.parametrize("size,n", [(100_000, 1000), (30_000, 300), (500, 20), (10, 10), (0, 0)])
def test_default_n_is_one_percent_but_at_least_20(size, n):
    assert rce.default_n_candidates(size) == n


def test_kmeans_is_seeded_and_numbers_clusters_by_first_appearance():
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((4, 16)).astype(np.float32) * 5
    v = np.concatenate([c + 0.1 * rng.standard_normal((25, 16)).astype(np.float32) for c in centres])
    v = v[rng.permutation(len(v))]
    first = rce.kmeans_labels(v, 4, seed=7)
    assert np.array_equal(first, rce.kmeans_labels(v, 4, seed=7))  # the same rows and seed: the same labels
    assert first[0] == 0 and sorted(set(first.tolist())) == [0, 1, 2, 3]
    appearance = list(dict.fromkeys(first.tolist()))
    assert appearance == [0, 1, 2, 3]
    # the four well-separated groups are found exactly, whatever the seed
    truth = np.argmin(((v[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    for seed in (0, 1, 2):
        got = rce.kmeans_labels(v, 4, seed=seed)
        assert len({(a, b) for a, b in zip(got.tolist(), truth.tolist())}) == 4
