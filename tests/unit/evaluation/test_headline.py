"""The headline metrics (evaluation.headline): found within the budget of images viewed, the rank at each round,
the log-ratio, paired with paging; and `eval` / `tables` print them before BRI, which is labelled as being for
comparison with the papers."""

from __future__ import annotations

import json
import math

import pytest
from eval_fixtures import build_bench

from interactive_ir.cli import main
from interactive_ir.evaluation import headline
from interactive_ir.evaluation.report import summarise


def _rec(qid, target, pages, unseen=None, ranks=None):
    turns = [{"shown": list(p), "llm_calls": 0} for p in pages]
    r = {"qid": qid, "target": target, "turns": turns, "ranks": ranks or [50] * len(pages),
         "shown_ranks": [p.index(target) + 1 if target in p else None for p in pages], "stop": "rounds",
         "seconds": 0.0, "engine_llm_seconds": 0.0, "sim_seconds": 0.0}
    if unseen is not None:
        r["unseen_ranks"] = unseen
    return r


def test_found_counts_only_the_first_budget_of_distinct_images():
    pages = [["a", "b"], ["a", "c"], ["d", "t"]]  # "a" shown twice counts once
    assert headline.found_within("t", pages, 5) == (True, 5)
    assert headline.found_within("t", pages, 4) == (False, 4)  # a protocol showing more per round gains nothing
    assert headline.found_within("x", pages, 10) == (False, 5)


def test_outcomes_pad_the_rank_and_fall_back_to_index_ranks_for_old_records():
    new = [_rec("q1", "t", [["a", "b"], ["t", "c"]], unseen=[7, 1]), _rec("q2", "u", [["a", "b"]], unseen=[2])]
    rows = headline.outcomes(new, k=2, rounds=3)
    assert rows["q1"].ranks == (7, 1, 1, 1) and rows["q1"].found and rows["q1"].hard and rows["q1"].viewed == 3
    assert rows["q1"].log_ratio == pytest.approx(math.log(1 / 7))
    assert rows["q2"].ranks == (2, 2, 2, 2) and not rows["q2"].found and not rows["q2"].hard
    assert headline.rank_source(new) == "unseen"
    old = [_rec("q1", "t", [["a"], ["b"]], ranks=[9, 3])]
    assert headline.rank_source(old) == "index" and headline.outcomes(old, 1, 1)["q1"].ranks == (9, 3)


def test_paired_differences_are_on_the_target_and_hard_means_paging_missed_it_at_round_0():
    base = {"q1": headline.TargetOutcome(True, (20, 10), 20, True), "q2": headline.TargetOutcome(False, (3, 3), 20, False)}
    same = headline.versus(base, base)
    assert same["all"]["found"] == {"mean": 0.0, "ci": [0.0, 0.0]} and same["all"]["log_ratio"]["mean"] == 0.0
    worse = {"q1": headline.TargetOutcome(False, (20, 40), 20, True), "q2": base["q2"], "q9": base["q2"]}
    d = headline.versus(worse, base)
    assert d["all"]["n"] == 2 and d["hard"]["n"] == 1  # q9 has no paging run to pair with
    assert d["hard"]["found"]["mean"] == -1.0 and d["hard"]["log_ratio"]["mean"] == pytest.approx(math.log(4))
    assert headline.versus(worse, base, seed=0) == headline.versus(worse, base, seed=0)  # seeded


def test_summarise_adds_the_headline_and_keeps_the_records_fields():
    recs = [_rec("q1", "t", [["a", "b"], ["t", "c"]], unseen=[3, 1], ranks=[3, 3]),
            _rec("q2", "u", [["a", "b"], ["c", "d"]], unseen=[9, 7], ranks=[9, 9])]
    _, m = summarise(recs, n_images=20, ks=(1, 2), rounds=1, page=2)
    h = m["headline"]
    assert h["budget_images"] == 4 and h["all"]["found"] == 0.5 and h["all"]["median_rank"] == [6.0, 4.0]
    assert h["hard"]["n"] == 2 and set(m[headline.TARGETS]) == {"q1", "q2"}
    assert "papers" in m["labels"]["bri, best_rank, hits@K"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return build_bench(tmp_path_factory.mktemp("headline"))


def test_eval_prints_the_headline_first_and_bri_under_the_papers_heading(bench, tmp_path, capsys):
    out = tmp_path / "runs" / "pass"
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--protocol",
            "none,oracle,shuffled-page", "--limit", "12", "--rounds", "2", "-k", "3", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    text = capsys.readouterr().out
    first, papers = text.index("## Headline"), text.index("for comparison with the papers")
    assert first < papers < text.index("BRI [95% CI]")
    assert "| none (paging, the baseline) | 12 |" in text and "| oracle | 12 |" in text
    assert "found within 2 rounds (9 images)" in text
    targets = json.loads((out / "shuffled-page" / "targets.json").read_text())
    assert len(targets) == 12 and all(len(o["ranks"]) == 3 for o in targets.values())
    metrics = json.loads((out / "oracle" / "metrics.json").read_text())
    assert headline.TARGETS not in metrics and metrics["headline"]["rank_source"] == "unseen"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["oracle"]["headline"]["vs_paging"]["all"]["n"] == 12
    records = [json.loads(line) for line in (out / "none" / "checkpoint.jsonl").read_text().splitlines()[1:]]
    assert all({"target", "turns", "ranks", "unseen_ranks"} <= set(r) and "shown" in r["turns"][0] for r in records)

    from interactive_ir.evaluation.tables import main as tables

    assert tables([str(tmp_path / "runs"), "pass", "--rounds", "2"]) == 0
    text = capsys.readouterr().out
    assert text.index("## Headline") < text.index("#### BRI and Hits@10: for comparison with the papers")
    assert "| oracle | 12 |" in text and ("(+" in text or "(-" in text)  # paired with paging

    # a later eval into the same folder without paging still pairs with the paging run stored there
    assert main([*args[:6], "oracle", *args[7:]]) == 0
    assert "(no paging run" not in capsys.readouterr().out
