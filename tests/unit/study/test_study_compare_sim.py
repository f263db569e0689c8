"""`study compare-sim` (issue 28, D5): the simulator's condition ranking against people's (Kendall's tau with a
bootstrap interval, the same winner or not) and distances between their distributions."""

from __future__ import annotations

import json

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.cli import main
from interactive_ir.engine import build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.study.analysis.compare_sim import (
    TaskRow,
    compare,
    kendall_tau,
    ks_statistic,
    task_rows,
    wasserstein,
)
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import StudyLog, open_readonly
from interactive_ir.study.runner import StudyRunner


def test_the_statistics_on_known_values():
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0 and kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / (3 * 2) ** 0.5)  # tau-b with a tie
    assert kendall_tau([1, 1], [2, 3]) is None and kendall_tau([5], [5]) is None
    assert ks_statistic([0, 1], [1, 2]) == 0.5 and ks_statistic([0, 1], [0, 1]) == 0.0
    assert wasserstein([0, 1], [1, 2]) == pytest.approx(1.0) and wasserstein([1, 1, 1], [4]) == pytest.approx(3.0)
    assert ks_statistic([], [1]) is None and wasserstein([1], []) is None


def rows(cond: str, found: int, n: int, rounds: int, depth: int, time_s: float) -> list[TaskRow]:
    return [TaskRow(cond, i < found, 1.0 + (0 if i < found else 1), rounds, time_s + i if i < found else None,
                    [depth, depth + i % 2]) for i in range(n)]


def test_a_simulator_that_reverses_the_people_s_order_is_caught():
    human = rows("A", 9, 10, 1, 1, 20) + rows("B", 5, 10, 2, 3, 40) + rows("C", 1, 10, 3, 5, 60)
    sim = rows("A", 1, 10, 3, 1, 20) + rows("B", 5, 10, 2, 1, 20) + rows("C", 9, 10, 1, 1, 20)
    rep = compare(human, sim, n_boot=200, seed=1)
    found = rep["metrics"]["found_rate"]
    assert found["human_ranking"] == ["A", "B", "C"] and found["simulated_ranking"] == ["C", "B", "A"]
    assert found["kendall_tau"] == -1.0 and found["same_winner"] is False and found["human_winner"] == "A"
    lo, hi = found["tau_ci95"]
    assert -1.0 <= lo <= hi <= 1.0 and lo == -1.0
    assert rep["metrics"]["rounds_used"]["kendall_tau"] == -1.0
    d = rep["distances"]
    assert d["click_depth"]["all"]["ks"] > 0.3 and d["click_depth"]["A"]["wasserstein"] == 0.0
    assert d["rounds_used"]["all"]["wasserstein"] == 0.0  # the same mix of 1, 2 and 3 rounds overall ...
    assert d["rounds_used"]["A"]["wasserstein"] == pytest.approx(2.0)  # ... but not per condition
    same = compare(human, human, n_boot=50)
    assert all(m["same_winner"] and m["kendall_tau"] in (1.0, None) for m in same["metrics"].values())
    with pytest.raises(BadInputError, match="share no condition"):
        compare(rows("A", 1, 2, 1, 1, 1), rows("Z", 1, 2, 1, 1, 1))


def play(db, tiny, finder: str):
    """Two participants; in condition `finder` they pick the target when shown, elsewhere they give up."""
    r, ids, caps = tiny
    study = parse_study({"study_id": "cs", "rounds": 2, "k": 24, "tasks": ids[:4],
                         "conditions": {"F": {"mode": "feedback", "feedback_method": "rocchio"}, "T": {"mode": "text"}}})
    with StudyLog(db) as log:
        runner = StudyRunner(study, build_engine(r, llm=FakeLLM()), log)
        for pid in ("P1", "P2"):
            runner.enrol(pid)
            runner.consent(pid, True)
            while runner.progress(pid).phase == "briefing":
                p = runner.start_task(pid)
                target, cond = p.current.task.target, p.current.condition
                turn = runner.describe(pid, caps[target][0])
                runner.click(pid, turn.shown[1], "mark_relevant" if cond == "F" else "open")  # T offers no marks
                if cond == finder:
                    runner.pick(pid, target)
                else:
                    runner.give_up(pid)
                runner.submit_questionnaire(pid, {"effective": 4, "efficient": 3, "comments": ""})


def test_compare_sim_on_two_study_logs(tmp_path, capsys):
    tiny = build_tiny(tmp_path / "tiny")
    play(tmp_path / "people.sqlite", tiny, finder="F")
    play(tmp_path / "sim.sqlite", tiny, finder="T")
    with open_readonly(tmp_path / "people.sqlite") as log:
        got = task_rows(log)
    assert len(got) == 8 and all(2 in r.depths for r in got)  # the mark on the second tile: depth 2
    assert {r.condition for r in got if r.found} == {"F"}
    capsys.readouterr()
    assert main(["study", "compare-sim", "--db", str(tmp_path / "people.sqlite"), "--sim", str(tmp_path / "sim.sqlite"),
                 "--out", str(tmp_path / "cmp"), "--boot", "100"]) == 0
    text = capsys.readouterr().out
    assert "| found_rate | F (1) > T (0) | T (1) > F (0) | -1.00" in text and "**no**" in text
    rep = json.loads((tmp_path / "cmp" / "compare_sim.json").read_text())
    assert rep["metrics"]["found_rate"]["same_winner"] is False and rep["conditions"] == ["F", "T"]
    assert rep["notes"] and "two conditions" in rep["notes"][0]
    assert (tmp_path / "cmp" / "compare_sim.md").read_text().startswith("# Simulator against people")
    # the study report carries the comparison too
    assert main(["study", "report", "--db", str(tmp_path / "people.sqlite"), "--out", str(tmp_path / "rep"),
                 "--no-plots", "--compare-sim", str(tmp_path / "sim.sqlite")]) == 0
    assert json.loads((tmp_path / "rep" / "compare_sim.json").read_text())["metrics"]["found_rate"]["kendall_tau"] == -1.0
