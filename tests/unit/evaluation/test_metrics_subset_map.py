"""mAP@K (CIRCO) and Recall_subset@K (CIRR) against hand-computed values, and both reported by a run."""

from __future__ import annotations

import json

import pytest

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.metrics import (
    average_precision_at_k,
    average_precision_from_ranks,
    map_at_k,
    map_at_k_from_ranks,
    recall_subset_at_k,
    subset_rank,
)


def test_average_precision_by_hand():
    # hits at 1, 3, 5: (1/1 + 2/3 + 3/5) / min(5, 4)
    assert average_precision_at_k(["a", "x", "b", "y", "c"], {"a", "b", "c", "d"}, 5) == pytest.approx(
        (1 + 2 / 3 + 3 / 5) / 4)
    assert average_precision_at_k(["x", "a", "y"], {"a"}, 3) == pytest.approx(0.5)
    assert average_precision_at_k(["x", "y", "a"], {"a"}, 2) == 0.0  # beyond K
    assert average_precision_at_k(["a", "b"], {"a", "b"}, 2) == 1.0
    with pytest.raises(BadInputError, match="empty"):
        average_precision_at_k(["a"], set(), 1)


def test_average_precision_from_ranks_by_hand():
    # relevant at ranks 1, 3, 5 of 4: (1/1 + 2/3 + 3/5) / 4, as from the list
    assert average_precision_from_ranks([5, 1, 3, 40], 4, 5) == pytest.approx((1 + 2 / 3 + 3 / 5) / 4)
    assert average_precision_from_ranks([2], 1, 3) == pytest.approx(0.5)
    assert average_precision_from_ranks([3], 1, 2) == 0.0
    assert map_at_k_from_ranks({"q1": [[2], [1]], "q2": [[1, 2]]}, 3) == pytest.approx([0.75, 1.0])


def test_map_by_round_carries_a_stopped_query_forward():
    rankings = {"q1": [["x", "a", "y"], ["a", "x", "y"]], "q2": [["a", "b", "x"]]}
    relevant = {"q1": {"a"}, "q2": {"a", "b"}}
    assert map_at_k(rankings, relevant, 3) == pytest.approx([(0.5 + 1.0) / 2, 1.0])
    with pytest.raises(BadInputError, match="no entry"):
        map_at_k({"q3": [["a"]]}, relevant, 1)


def test_subset_rank_and_recall_subset():
    assert subset_rank({"t": 0.5, "a": 0.9, "b": 0.5, "c": 0.1}, "t") == 2  # a tie counts in its favour
    assert subset_rank({"t": 1.0, "a": 0.2}, "t") == 1
    with pytest.raises(BadInputError, match="not in its subset"):
        subset_rank({"a": 1.0}, "t")
    assert recall_subset_at_k({"q1": [3, 1], "q2": [2]}, 2) == pytest.approx([0.5, 1.0])
    assert recall_subset_at_k({"q1": [3, 1], "q2": [2]}, 1) == pytest.approx([0.0, 0.5])


def test_cirr_img_set_becomes_the_subset(tmp_path):
    from interactive_ir.evaluation.datasets.triplets import load_triplets
    from interactive_ir.evaluation.dialogues import resolve_targets

    rows = [{"pairid": 1, "reference": "r", "target_hard": "t", "caption": "c",
             "img_set": {"id": 1, "members": ["r", "t", "m1", "m2"]}},
            {"pairid": 2, "reference": "r", "target_hard": "t", "caption": "c"}]
    (tmp_path / "c.json").write_text(json.dumps(rows))
    q1, q2 = load_triplets("cirr", tmp_path / "c.json")
    assert q1.subset == ("t", "m1", "m2") and q2.subset == ()
    (found, _), _ = resolve_targets([q1], ["d/r.png", "d/t.png", "d/m1.png"]), None
    assert found[0].subset == ("d/t.png", "d/m1.png")
    assert q1.to_dict()["subset"] == ["t", "m1", "m2"]


def test_a_run_reports_recall_subset_and_map(tmp_path):
    from iir_testutils import build_tiny

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.evaluation.metrics import subset_rank as rank_in
    from interactive_ir.evaluation.protocols import get_protocol
    from interactive_ir.evaluation.queries import Query
    from interactive_ir.evaluation.report import summarise
    from interactive_ir.evaluation.runner import RunConfig, run_query
    from interactive_ir.evaluation.simulators import make_user

    retriever, ids, caps = build_tiny(tmp_path)
    p = get_protocol("none")
    engine = build_engine(retriever, config=EngineConfig(k=5), **p.mode_configs())
    qs = [Query(qid=f"q{i}", target=ids[i], description=caps[ids[i]][0], captions=tuple(caps[ids[i]][1:]),
                subset=(ids[i], *ids[i + 1 : i + 5]), relevant=(ids[i + 1],)) for i in range(4)]
    cfg = RunConfig(rounds=1, k=5, progress=False, stop_on_found=False)
    records = [run_query(engine, p, q, make_user(retriever.index), cfg).to_dict() for q in qs]
    for q, rec in zip(qs, records):  # the subset rank is the target's rank among its group, by the round's scores
        scores = retriever.all_scores(retriever.text_query_row(retriever.encode_text(q.description)))
        row = retriever.index.row_of
        assert rec["subset_ranks"][0] == rank_in({i: scores[row[i]] for i in q.subset}, q.target)
        assert all(1 <= r <= len(q.subset) for r in rec["subset_ranks"])
    _, metrics = summarise(records, len(ids), (1, 5), {q.qid: list(q.relevant) for q in qs}, rounds=1)
    assert metrics["n_subset_queries"] == 4 and metrics["n_map_queries"] == 4
    want = [sum(r["subset_ranks"][t] <= 1 for r in records) / 4 for t in range(2)]
    assert metrics["recall_subset@1"] == pytest.approx(want)
    assert metrics["map@5"] == pytest.approx(map_at_k_from_ranks({r["qid"]: r["relevant_ranks"] for r in records}, 5))
    for q, rec in zip(qs, records):  # round 0's ranks of the target and its other ground truth, over the index
        scores = retriever.all_scores(retriever.text_query_row(retriever.encode_text(q.description)))
        row = retriever.index.row_of
        assert rec["relevant_ranks"][0] == [int((scores > scores[row[i]]).sum()) + 1 for i in (q.target, *q.relevant)]
    # the same AP from the ranks as from the whole ranked list
    order = [retriever.index.records[i].id for i in (-scores).argsort(kind="stable")]
    ap_list = average_precision_at_k(order, {qs[-1].target, *qs[-1].relevant}, 5)
    ap_ranks = average_precision_from_ranks(records[-1]["relevant_ranks"][0], 2, 5)
    assert ap_ranks == pytest.approx(ap_list)
    for r in records:  # an older checkpoint (no relevant ranks): over the shown lists, K up to the page
        del r["relevant_ranks"]
    _, old = summarise(records, len(ids), (1, 5, 10), {q.qid: list(q.relevant) for q in qs}, rounds=1)
    shown = {r["qid"]: [t["shown"] for t in r["turns"]] for r in records}
    rel = {q.qid: {q.target, *q.relevant} for q in qs}
    assert old["map@5"] == pytest.approx(map_at_k(shown, rel, 5)) and "map@10" not in old


def test_eval_prints_the_group_metrics():
    from interactive_ir.commands.eval_cmd import _group_metrics

    m = {"recall_subset@1": [0.2, 0.5], "recall_subset@2": [0.4, 0.75], "n_subset_queries": 4,
         "map@5": [0.1, 0.25], "n_map_queries": 3, "hits@5": [0.0, 1.0]}
    assert _group_metrics(m) == [
        "Recall_subset @1 0.5000, @2 0.7500 at the last round (4 queries with a subset group)",
        "mAP @5 0.2500 at the last round (3 queries with several ground truths)"]
    assert _group_metrics({"hits@5": [1.0]}) == []


def test_subset_rank_from_the_results_follows_the_shown_order(tmp_path):
    from iir_testutils import build_tiny

    from interactive_ir.evaluation.queries import Query
    from interactive_ir.evaluation.runner import _subset_rank

    retriever, ids, caps = build_tiny(tmp_path)
    row = retriever.text_query_row(retriever.encode_text(caps[ids[0]][0]))
    q = Query(qid="q", target=ids[3], description="x", subset=(ids[3], ids[4], ids[5], ids[6]))
    # the re-ranked list shows ids[5] then the target: the target is second in its group, whatever the scores
    assert _subset_rank(retriever, row, q, [ids[9], ids[5], ids[3]]) == 2
    assert _subset_rank(retriever, row, q, [ids[3]]) == 1
