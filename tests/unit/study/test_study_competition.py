"""Competition mode (issue 28, D4): the organiser opens and closes tasks for everyone at once (a fake clock), the
task's clock and KIS time run from the opening, the locked organiser description, expert and novice sessions."""

from __future__ import annotations

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.study.analysis.report import expertise_lines, read_sessions
from interactive_ir.study.analysis.scoreboard import scoreboard, scoreboard_html
from interactive_ir.study.config import StudyConfigError, parse_study
from interactive_ir.study.flow.competition import CompetitionError, TaskNotOpen
from interactive_ir.study.log import StudyLog
from interactive_ir.study.page.logic import StudyPage
from interactive_ir.study.page.render import TabState
from interactive_ir.study.runner import DescriptionLocked, StudyRunner


class Clock:
    def __init__(self):
        self.t = 1_800_000_000.0

    def __call__(self):
        return self.t


def _runner(tmp_path, **extra):
    r, ids, caps = build_tiny(tmp_path / "tiny")
    spec = {"study_id": "vbs", "rounds": 3, "k": 24, "time_limit_s": 120, "counterbalance": "none",
            "competition": True, "conditions": {"A": {"mode": "text"}},
            "tasks": [{"target": ids[0], "prompt": caps[ids[0]][0]}, {"target": ids[1], "prompt": caps[ids[1]][0]}],
            **extra}
    clock = Clock()
    log = StudyLog(tmp_path / "vbs.sqlite")
    return StudyRunner(parse_study(spec), build_engine(r, llm=FakeLLM()), log, clock=clock), clock, log, caps


def _join(runner, pid, expert=None):
    runner.enrol(pid, meta={} if expert is None else {"expert": expert})
    return runner.consent(pid, True)


def test_tasks_start_only_while_the_organiser_has_them_open(tmp_path):
    runner, clock, log, caps = _runner(tmp_path)
    _join(runner, "early")
    assert runner.competition_state().open_task is None
    with pytest.raises(TaskNotOpen, match="not been opened"):
        runner.start_task("early")
    assert runner.progress("early").phase == "briefing"  # nothing logged, still waiting
    with pytest.raises(CompetitionError, match="no task 3"):
        runner.open_task(3)
    opened = clock.t
    runner.open_task(1)
    with pytest.raises(CompetitionError, match="task 1 is still open"):
        runner.open_task(2)
    clock.t += 7.0  # the page noticed a few seconds later: the clock still runs from the opening
    p = runner.start_task("early")
    assert p.phase == "search" and p.started_at == opened and p.time_left(clock.t) == pytest.approx(113.0)
    _join(runner, "late")
    clock.t += 20.0
    assert runner.start_task("late").time_left(clock.t) == pytest.approx(93.0)  # same deadline for everyone
    target = runner.progress("late").current.task.target
    runner.describe("late", caps[target][0])
    runner.pick("late", target)
    assert runner.progress("late").phase == "questionnaire"
    n, ended = runner.close_task()
    assert (n, ended) == (1, ["early"])  # the running search ended; the solved one is untouched
    early = runner.progress("early")
    assert early.ended == "timeout"
    end = [e for e in log.events("vbs", "early") if e.type == "timeout"][-1]
    assert end.payload["closed_by_organiser"] is True
    runner.submit_questionnaire("early", {"effective": 3, "efficient": 3})
    with pytest.raises(TaskNotOpen):  # task 2 waits for the organiser
        runner.start_task("early")
    assert runner.competition_state().closed == (1,)
    teams = {t.participant: t for t in scoreboard(log)}
    assert teams["late"].tasks[1].time_s == pytest.approx(27.0)  # KIS time since the task opened, not since start
    assert teams["early"].tasks[1].score == 0 and teams["early"].tasks[1].ended == "timeout"
    with pytest.raises(CompetitionError, match="no task is open"):
        runner.close_task()


def test_the_open_task_survives_a_restart(tmp_path):
    runner, clock, log, _ = _runner(tmp_path)
    runner.open_task(2)
    again = StudyRunner(runner.study, runner.engine, log, clock=clock)
    s = again.competition_state()
    assert (s.open_task, s.opened_at) == (2, clock.t)


def test_a_page_waits_then_gets_the_task_when_it_opens(tmp_path):
    runner, clock, _, _ = _runner(tmp_path)
    page = StudyPage(runner)
    tab = TabState()
    page.arrive(tab, {"expert": "1"})
    token, tab = page.act("join", "", tab, True)
    v = page.view(token, tab)
    assert v.phase == "briefing" and v.waiting and "Waiting for the next task" in v.brief
    token, tab, what = page.poll(token, tab)
    assert what == "all" and page.view(token, tab).phase == "briefing"  # the first draw; no task yet
    assert page.poll(token, tab)[2] == ""  # nothing changed: nothing drawn
    runner.open_task(1)
    assert "Task 1 of 2 is open" in page.competition_md()
    token, tab, what = page.poll(token, tab)
    v = page.view(token, tab)
    assert what == "all" and v.phase == "search" and not v.waiting and "Time left" in v.budget
    assert runner.progress(page.who(token, tab)).expert is True


def test_the_locked_description_runs_first_and_keeps_typing_shut(tmp_path):
    runner, clock, log, caps = _runner(tmp_path, lock_description_s=45)
    _join(runner, "t1", expert=False)
    runner.open_task(1)
    p = runner.start_task("t1")
    assert p.described and p.session.turns[0].query == p.current.task.prompt  # the organiser's text ran
    first = [e for e in log.events("vbs", "t1") if e.type == "description"][0]
    assert first.payload == {"text": p.current.task.prompt, "by": "organiser"}
    clock.t += 10.0
    assert p.lock_left(clock.t) == pytest.approx(35.0)
    with pytest.raises(DescriptionLocked, match="35 more second"):
        runner.search("t1", "my own words")
    clock.t += 35.0  # 45 s after the opening
    assert p.lock_left(clock.t) == 0.0
    runner.search("t1", "my own words")
    assert [e.type for e in log.events("vbs", "t1")].count("error") == 1  # the locked try was logged


def test_the_page_says_the_lock_counts_down(tmp_path):
    runner, clock, _, _ = _runner(tmp_path, lock_description_s=30)
    page = StudyPage(runner)
    tab = TabState()
    page.arrive(tab, {})
    token, tab = page.act("join", "", tab, True)
    runner.open_task(1)
    token, tab, what = page.poll(token, tab)
    v = page.view(token, tab)
    assert what == "all" and v.locked_s == 30 and "30 more second" in v.status and v.show_text
    clock.t += 12.5
    token, tab, what = page.poll(token, tab)
    assert what == "lock" and page.view(token, tab).locked_s == 18
    clock.t += 18.0
    token, tab, what = page.poll(token, tab)
    v = page.view(token, tab)
    assert what == "lock" and v.locked_s == 0 and "🔒" not in v.status
    token, tab = page.act("search", token, tab, "my words")
    assert not tab.notice.startswith("⚠️")


def test_expert_and_novice_sessions_are_split(tmp_path):
    runner, clock, log, caps = _runner(tmp_path)
    runner.open_task(1)
    for pid, expert in (("pro", True), ("new", False), ("anon", None)):
        _join(runner, pid, expert)
        target = runner.start_task(pid).current.task.target
        runner.describe(pid, caps[target][0])
        runner.pick(pid, target)
    assert [e.payload.get("expert") for e in log.events("vbs", "pro") if e.type in ("enrol", "task_start")] == [True] * 2
    html = scoreboard_html(scoreboard(log))
    assert html.index("Expert sessions") < html.index("Novice sessions") < html.index("not marked")
    assert "iir-scoreboard-experts" in html and "pro" in html.split("Novice sessions")[0]
    assert "new" not in html.split("Novice sessions")[0]
    sessions = read_sessions(log, "vbs")
    assert {s.participant: s.expert for s in sessions} == {"pro": True, "new": False, "anon": None}
    from interactive_ir.study.analysis.report import expertise_split

    rows = expertise_split(sessions, ["A"])
    assert [(r["group"], r["n_sessions"]) for r in rows] == [("expert", 1), ("novice", 1), ("not said", 1)]
    assert "| A | expert | 1 | 1 | 1.000 |" in "\n".join(expertise_lines(rows))
    assert expertise_split([s for s in sessions if s.expert is None], ["A"]) == []  # nobody marked: no split


def test_the_study_file_checks_competition_and_lock():
    base = {"study_id": "s", "conditions": {"A": "feedback", "B": "text"}, "tasks": ["a.jpg", "b.jpg"]}
    with pytest.raises(StudyConfigError, match="counterbalance 'latin' reorders them"):
        parse_study({**base, "competition": True})
    assert parse_study({**base, "competition": True, "counterbalance": "none"}).competition is True
    with pytest.raises(StudyConfigError, match="lock_description_s"):
        parse_study({**base, "lock_description_s": -1})
    from interactive_ir.study.config import resolve_tasks

    study = parse_study({**base, "tasks": [{"target": "a.jpg", "lock_description_s": 20}, "b.jpg"]})
    with pytest.raises(StudyConfigError, match="give the task a prompt"):
        resolve_tasks(study, ["a.jpg", "b.jpg"])
    study = parse_study({**base, "lock_description_s": 45,
                         "tasks": [{"target": "a.jpg", "prompt": "a dog", "lock_description_s": 0},
                                   {"target": "b.jpg", "prompt": "a cat"}]})
    assert [t.lock_description_s for t in resolve_tasks(study, ["a.jpg", "b.jpg"])] == [0, 45]
