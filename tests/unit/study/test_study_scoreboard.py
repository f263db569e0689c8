"""The competition scoreboard (issue 28, D4 in part): KIS scores as DRES computes them, per participant and task,
from the study log; a clear message before any task; `study scoreboard`."""

from __future__ import annotations

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.cli import main
from interactive_ir.engine import build_engine
from interactive_ir.study.analysis.scoreboard import KisScoring, kis_score, scoreboard, scoreboard_html
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import StudyLog
from interactive_ir.study.page.scoreboard import scoreboard_page_html
from interactive_ir.study.runner import StudyRunner


def test_kis_score_follows_dres():
    assert kis_score(0.0, 0, 300) == 1000.0 and kis_score(300.0, 0, 300) == 500.0
    assert kis_score(150.0, 2, 300) == pytest.approx(550.0)  # 500 + 500 * 0.5 - 2 * 100
    assert kis_score(290.0, 6, 300) == 0.0 and kis_score(None, 0, 300) == 0.0  # clamped; never solved
    assert kis_score(30.0, 1, 60, KisScoring(100, 50, 10)) == pytest.approx(65.0)  # VBS's older 100/50/10


class Clock:
    def __init__(self):
        self.t = 1_800_000_000.0

    def __call__(self):
        return self.t


def test_the_scoreboard_of_a_competition(tmp_path, capsys):
    r, ids, caps = build_tiny(tmp_path / "tiny")
    study = parse_study({"study_id": "vbs", "rounds": 3, "k": 24, "time_limit_s": 120, "counterbalance": "none",
                         "conditions": {"A": {"mode": "text"}}, "tasks": ids[:2], "practice": ids[7]})
    clock = Clock()
    log = StudyLog(tmp_path / "vbs.sqlite")
    runner = StudyRunner(study, build_engine(r, llm=FakeLLM()), log, clock=clock)
    assert scoreboard(log) == [] and "No task has started yet" in scoreboard_page_html(log)
    for pid, wrongs, secs in (("team1", 1, 30.0), ("team2", 0, 60.0)):
        runner.enrol(pid)
        runner.consent(pid, True)
        runner.start_task(pid)  # the practice task does not count
        runner.give_up(pid)
        p = runner.start_task(pid)
        target = p.current.task.target
        shown = [i for i in runner.describe(pid, caps[target][0]).shown if i != target]
        for i in range(wrongs):
            runner.pick(pid, shown[i])
        clock.t += secs
        runner.pick(pid, target)
        runner.submit_questionnaire(pid, {"effective": 4, "efficient": 3, "comments": ""})
        runner.start_task(pid)  # task 2: one wrong pick, still running
        runner.describe(pid, "something")
        runner.pick(pid, [i for i in runner.progress(pid).session.shown_ids() if i != runner.progress(pid).current.task.target][0])
    teams = scoreboard(log)
    assert [t.participant for t in teams] == ["team1", "team2"]
    t1 = teams[0].tasks
    assert t1[1].correct and t1[1].wrong == 1 and t1[1].time_s == pytest.approx(30.0)
    assert t1[1].score == pytest.approx(500 + 500 * (1 - 30 / 120) - 100)  # 775
    assert teams[1].tasks[1].score == pytest.approx(500 + 500 * 0.5)  # 750
    assert not t1[2].correct and t1[2].wrong == 1 and t1[2].score == 0 and t1[2].ended == ""
    assert sorted(t1) == [1, 2]  # the practice task is not on the board
    page = scoreboard_html(teams)
    assert page.count("<tr>") == 3 and "775" in page and "running" in page and ids[0] not in page  # no target shown
    log.close()
    assert main(["study", "scoreboard", "--db", str(tmp_path / "vbs.sqlite"), "--out", str(tmp_path / "b.html")]) == 0
    out = capsys.readouterr().out
    assert "1. team1 (A) 775: task 1: correct 775 (1 wrong, 30 s), task 2: not found 0 (1 wrong)" in out
    assert "iir-scoreboard" in (tmp_path / "b.html").read_text()


def test_the_scoreboard_is_served_only_when_the_study_asks_for_it():
    from interactive_ir.study.config import StudyConfigError

    base = {"study_id": "s", "conditions": {"A": "feedback"}, "tasks": ["a.jpg"]}
    assert parse_study(base).scoreboard is False and parse_study({**base, "scoreboard": True}).scoreboard is True
    with pytest.raises(StudyConfigError, match="scoreboard: expected true or false"):
        parse_study({**base, "scoreboard": "yes"})
