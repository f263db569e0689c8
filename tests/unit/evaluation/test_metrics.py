"""Metrics against PlugIR's Appendix B tables and small hand-computed cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation import (
    accumulated_recall,
    best_rank,
    best_rank_so_far,
    bri,
    bri_per_query,
    compute_all,
    hits_at_k,
    mrr_at_k,
    ndcg_at_k,
    rank_matrix,
    rank_percentile,
    recall_at_k,
    rounds_to_success,
)

# ---------------------------------------------------------------- PlugIR Appendix B
# Each case: method -> ranks by round (Tables 6, 8, 10) and the metrics the paper reports at the
# last round with K = 10 (Tables 7, 9, 11), rounded to one decimal as printed.
APPENDIX_B = {
    "table6/7 A": ([100, 100, 100], {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0, "hits": 0.0, "bri": 4.6}),
    "table6/7 B": ([100, 10, 100], {"recall": 0.0, "mrr": 0.0, "ndcg": 0.0, "hits": 1.0, "bri": 2.9}),
    "table8/9 A": ([100, 100, 10], {"recall": 1.0, "mrr": 0.1, "ndcg": 0.3, "hits": 1.0, "bri": 4.0}),
    "table8/9 B": ([100, 10, 10], {"recall": 1.0, "mrr": 0.1, "ndcg": 0.3, "hits": 1.0, "bri": 2.9}),
    "table10/11 A": ([100, 10], {"recall": 1.0, "mrr": 0.1, "ndcg": 0.3, "hits": 1.0, "bri": 3.5}),
    "table10/11 B": ([100, 5], {"recall": 1.0, "mrr": 0.2, "ndcg": 0.4, "hits": 1.0, "bri": 3.1}),
}


@pytest.mark.parametrize("case", sorted(APPENDIX_B))
def test_plugir_appendix_b_tables(case):
    by_round, expected = APPENDIX_B[case]
    ranks = {"target": by_round}
    assert round(bri(ranks), 1) == expected["bri"]
    assert round(recall_at_k(ranks, 10)[-1], 1) == expected["recall"]
    assert round(mrr_at_k(ranks, 10)[-1], 1) == expected["mrr"]
    assert round(ndcg_at_k(ranks, 10)[-1], 1) == expected["ndcg"]
    assert round(hits_at_k(ranks, 10)[-1], 1) == expected["hits"]


def test_bri_exact_values_use_natural_log_and_trapezoid_weights():
    # Definition 2 with T = 2: ln(pi0 * pi2) / 4 + ln(pi1) / 2
    assert bri({"a": [100, 100, 100]}) == pytest.approx(math.log(100))  # 4.605
    # best ranks 100, 10, 10 -> ln(1000)/4 + ln(10)/2 = 1.25 ln 10
    assert bri({"b": [100, 10, 100]}) == pytest.approx(1.25 * math.log(10))
    # T = 1: ln(pi0 * pi1) / 2
    assert bri({"c": [100, 5]}) == pytest.approx(math.log(500) / 2)
    # T = 3: ln(pi0 pi3)/6 + (ln pi1 + ln pi2)/3 with best ranks 8, 4, 2, 1
    assert bri({"d": [8, 4, 2, 1]}) == pytest.approx(math.log(8) / 6 + (math.log(4) + math.log(2)) / 3)
    # rank 1 at every round: ln 1 = 0, the best possible BRI
    assert bri({"e": [1, 1, 1]}) == 0.0


def test_bri_single_round_is_log_of_rank():
    assert bri({"a": [50]}) == pytest.approx(math.log(50))


def test_bri_is_mean_over_queries():
    ranks = {"a": [100, 100, 100], "b": [100, 10, 100]}
    assert bri(ranks) == pytest.approx((math.log(100) + 1.25 * math.log(10)) / 2)
    per_query = bri_per_query(ranks)
    assert per_query["a"] == pytest.approx(math.log(100))
    assert per_query["b"] == pytest.approx(1.25 * math.log(10))


def test_best_rank_so_far_is_running_minimum():
    assert best_rank_so_far([100, 10, 100, 3]) == [100.0, 10.0, 10.0, 3.0]
    assert best_rank({"a": [9, 3, 5], "b": [1, 7, 7]}) == [5.0, 2.0, 2.0]


# ---------------------------------------------------------------- a hand-computed mixed case
# q1 found at round 1 then lost; q2 not retrieved at round 0 and stopped after round 1 (ragged).
MIXED = {"q1": [20, 3, 7], "q2": [None, 8]}
N_IMAGES = 50  # so q2's round-0 rank counts as 51; padded q2 = [51, 8, 8]


def test_hits_is_cumulative_and_recall_is_per_round():
    assert hits_at_k(MIXED, 5) == [0.0, 0.5, 0.5]  # q1 saw rank 3 at round 1: stays a hit
    assert recall_at_k(MIXED, 5) == [0.0, 0.5, 0.0]  # q1 back at rank 7 in round 2
    assert hits_at_k(MIXED, 10) == [0.0, 1.0, 1.0]
    assert recall_at_k(MIXED, 10) == [0.0, 1.0, 1.0]  # q2's rank 8 carried to round 2
    assert hits_at_k(MIXED, 1) == [0.0, 0.0, 0.0]


def test_mrr_and_ndcg_by_round():
    assert mrr_at_k(MIXED, 10) == pytest.approx([0.0, (1 / 3 + 1 / 8) / 2, (1 / 7 + 1 / 8) / 2])
    # 1/log2(3+1) = 1/2, 1/log2(7+1) = 1/3, 1/log2(8+1)
    assert ndcg_at_k(MIXED, 10) == pytest.approx([0.0, (1 / 2 + 1 / math.log2(9)) / 2, (1 / 3 + 1 / math.log2(9)) / 2])
    assert mrr_at_k(MIXED, 5) == pytest.approx([0.0, 1 / 6, 0.0])


def test_rank_percentile_counts_images_above_target():
    # 1 - (R-1)/50: q1 -> .62, .96, .88 ; q2 -> 0 (unretrieved = 51), .86, .86
    assert rank_percentile(MIXED, N_IMAGES) == pytest.approx([0.31, 0.91, 0.87])
    assert rank_percentile({"a": [1, 50]}, 50) == pytest.approx([1.0, 0.02])


def test_rank_percentile_needs_n_images():
    with pytest.raises(BadInputError, match="n_images"):
        rank_percentile({"a": [1]})


def test_paper_003_top_100_of_4658_is_about_97_percent():
    # Guo et al.'s appendix (Dialog-based Interactive Image Retrieval): "final ranking within the top 100 images (about 97% in ranking percentile)"
    assert rank_percentile({"a": [100]}, 4658)[0] == pytest.approx(1 - 99 / 4658)
    assert 0.97 < rank_percentile({"a": [100]}, 4658)[0] < 0.98


def test_rounds_to_success():
    s5 = rounds_to_success(MIXED, 5)
    assert s5.first_round == {"q1": 1, "q2": None}
    assert s5.mean_rounds == 1.0 and s5.success_rate == 0.5
    s = rounds_to_success({"a": [30, 9, 2], "b": [4, 4], "c": [50, 40, 30, 20]}, 10)
    assert s.first_round == {"a": 1, "b": 0, "c": None}
    assert s.mean_rounds == pytest.approx(0.5)
    assert s.success_rate == pytest.approx(2 / 3)
    none = rounds_to_success(MIXED, 1)
    assert none.mean_rounds is None and none.success_rate == 0.0


def test_unretrieved_without_n_images_is_infinite():
    assert best_rank(MIXED)[0] == math.inf
    assert bri(MIXED) == math.inf
    assert hits_at_k(MIXED, 10) == [0.0, 1.0, 1.0]


def test_bri_with_unretrieved_uses_n_plus_one():
    # q1 best 20, 3, 3 ; q2 best 51, 8, 8
    q1 = (math.log(20) + math.log(3)) / 4 + math.log(3) / 2
    q2 = (math.log(51) + math.log(8)) / 4 + math.log(8) / 2
    assert bri(MIXED, N_IMAGES) == pytest.approx((q1 + q2) / 2)


def test_ragged_rows_carry_last_rank_forward():
    m = rank_matrix({"a": [5], "b": [9, 8, 7]})
    np.testing.assert_array_equal(m.ranks, [[5, 5, 5], [9, 8, 7]])
    assert m.lengths == (1, 3) and m.n_rounds == 3 and m.n_queries == 2


def test_compute_all_mixed_case():
    out = compute_all(MIXED, ks=(1, 5, 10), n_images=N_IMAGES)
    json.dumps(out, allow_nan=False)  # strictly JSON-able
    assert out["n_queries"] == 2 and out["n_rounds"] == 3
    assert out["n_ended_early"] == 1 and out["n_not_retrieved"] == 1
    assert out["best_rank"] == [35.5, 5.5, 5.5]
    q1 = (math.log(20) + math.log(3)) / 4 + math.log(3) / 2
    q2 = (math.log(51) + math.log(8)) / 4 + math.log(8) / 2
    assert out["bri"] == pytest.approx((q1 + q2) / 2)
    assert out["hits@5"] == [0.0, 0.5, 0.5]
    assert out["recall@5"] == [0.0, 0.5, 0.0]
    assert out["mrr@10"] == pytest.approx([0.0, (1 / 3 + 1 / 8) / 2, (1 / 7 + 1 / 8) / 2])
    assert out["rank_percentile"] == pytest.approx([0.31, 0.91, 0.87])
    assert out["rounds_to_success@5"] == 1.0 and out["success_rate@5"] == 0.5
    assert out["rounds_to_success@1"] is None and out["success_rate@1"] == 0.0
    assert {f"{m}@{k}" for m in ("hits", "recall", "mrr", "ndcg") for k in (1, 5, 10)} <= set(out)


def test_compute_all_without_n_images_reports_null_not_infinity():
    out = compute_all(MIXED, ks=(10,))
    json.dumps(out, allow_nan=False)
    assert out["bri"] is None
    assert out["best_rank"] == [None, 5.5, 5.5]
    assert "rank_percentile" not in out
    assert any("n_images" in note for note in out["notes"])


# ---------------------------------------------------------------- accumulated recall (Zhu et al., eq. 2)


def test_accumulated_recall_counts_distinct_relevant_images():
    shown = {
        "q1": [["a", "x"], ["y", "b"], ["a", "c"]],  # a re-shown at round 2 counts once
        "q2": [["n"], []],  # ended after round 1: stays at 1/2
    }
    relevant = {"q1": {"a", "b", "c", "d"}, "q2": {"m", "n"}}
    # q1: 1/4, 2/4, 3/4 ; q2: 1/2, 1/2, 1/2
    assert accumulated_recall(shown, relevant) == pytest.approx([0.375, 0.5, 0.625])


def test_accumulated_recall_errors():
    with pytest.raises(BadInputError, match="empty"):
        accumulated_recall({}, {})
    with pytest.raises(BadInputError, match="relevant"):
        accumulated_recall({"q": [["a"]]}, {})
    with pytest.raises(BadInputError, match="empty"):
        accumulated_recall({"q": [["a"]]}, {"q": set()})
    with pytest.raises(BadInputError, match="round 0"):
        accumulated_recall({"q": ["abc"]}, {"q": {"a"}})


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "ranks, match",
    [
        ({}, "no queries"),
        ({"q": []}, "no rounds"),
        ({"q": [0]}, "below 1"),
        ({"q": [-3]}, "below 1"),
        ({"q": [2.5]}, "whole number"),
        ({"q": ["3"]}, "whole number"),
        ({"q": [True]}, "whole number"),
        ({"q": 5}, "list of ranks"),
        ({"q": "5"}, "list of ranks"),
        ([[1, 2]], "must map"),
    ],
)
def test_bad_ranks_raise_bad_input(ranks, match):
    with pytest.raises(BadInputError, match=match):
        compute_all(ranks)


def test_error_names_query_and_round():
    with pytest.raises(BadInputError, match=r"query 'q7', round 2"):
        bri({"q7": [4, 3, 0]})


def test_rank_above_index_size_is_rejected():
    with pytest.raises(BadInputError, match="exceeds the index size"):
        compute_all({"q": [11]}, n_images=10)


@pytest.mark.parametrize("ks", [(), (0,), (5, -1), ("5",)])
def test_bad_cutoffs(ks):
    with pytest.raises(BadInputError, match="K"):
        compute_all({"q": [1]}, ks=ks)


@pytest.mark.parametrize("n", [0, -5, 2.0, True])
def test_bad_n_images(n):
    with pytest.raises(BadInputError, match="n_images"):
        compute_all({"q": [1]}, n_images=n)


def test_numpy_integer_ranks_are_accepted():
    assert bri({"a": np.array([100, 10], dtype=np.int64)}) == pytest.approx(math.log(1000) / 2)


def test_integral_float_ranks_are_accepted():
    assert bri({"q": [3.0, 1.0]}) == bri({"q": [3, 1]})


def test_round_budget_makes_a_query_score_independent_of_the_others():
    """With the budget T given, a query that stopped early scores the same whatever else is in the run."""
    alone = bri_per_query({"a": [100, 1]}, rounds=5)["a"]
    with_long = bri_per_query({"a": [100, 1], "b": [5] * 6}, rounds=5)["a"]
    assert alone == with_long == pytest.approx(math.log(100) / 10)  # (ln 100 + ln 1)/2T + 4 ln 1 / T, T = 5
    # without the budget, T is the longest query's: 1 alone, 5 beside b
    assert bri_per_query({"a": [100, 1]})["a"] == pytest.approx(math.log(100) / 2)
    m = compute_all({"a": [100, 1]}, ks=(10,), rounds=3)
    assert m["n_rounds"] == 4 and m["hits@10"] == [0.0, 1.0, 1.0, 1.0] and m["n_ended_early"] == 1
    with pytest.raises(BadInputError, match="round budget"):
        compute_all({"a": [1]}, rounds=-1)


# --- intervals and paired differences (evaluation.report) -------------------------------------------------

def test_bootstrap_interval_covers_the_mean_and_shrinks_with_more_queries():
    from interactive_ir.evaluation.report import bootstrap_ci

    rng = np.random.default_rng(1)
    small, large = rng.normal(2.0, 1.0, 30), rng.normal(2.0, 1.0, 3000)
    lo_s, hi_s = bootstrap_ci(small)
    lo_l, hi_l = bootstrap_ci(large)
    assert lo_s < small.mean() < hi_s and lo_l < large.mean() < hi_l
    assert (hi_l - lo_l) < (hi_s - lo_s) / 5
    assert bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)


def test_paired_difference_sees_a_consistent_small_gain_and_no_gain():
    from interactive_ir.evaluation.report import intervals, paired_difference

    base = {f"q{i}": [10 + i % 7, 10 + i % 7] for i in range(200)}
    better = {q: [r[0], max(1, r[1] - 3)] for q, r in base.items()}
    d = paired_difference(better, base, 1000, 1)
    assert d["n"] == 200 and d["bri"]["mean"] < 0 and d["bri"]["ci"][1] < 0  # every query gained: CI below 0
    same = paired_difference(base, base, 1000, 1)
    assert same["bri"] == {"mean": 0.0, "ci": [0.0, 0.0]}
    ci = intervals(base, 1000, 1, (1, 5, 10))
    share = sum(1 for r in base.values() if r[-1] <= 10) / len(base)  # ranks 10..16: one in seven hits
    assert set(ci) == {"bri", "hits@10", "at_round@10"} and ci["hits@10"][0] < share < ci["hits@10"][1]
