"""`study replay`: timelines of study tasks (people, dry runs) and eval searches, and the static replay page."""

from __future__ import annotations

import json

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.cli import main
from interactive_ir.engine import build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.study.analysis.replay_html import replay_html
from interactive_ir.study.analysis.timeline import UNFINISHED, eval_replay, load_replay, study_replay
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import Event, StudyLog
from interactive_ir.study.page.logic import StudyPage
from interactive_ir.study.page.render import TabState
from interactive_ir.study.ui import make_runner


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def make_page(tiny, tmp_path):
    r, ids, caps = tiny
    d = {"study_id": "rp", "rounds": 3, "k": 4, "conditions": {"F": {"mode": "feedback", "feedback_method": "rocchio"}},
         "tasks": ids[:2]}
    runner = make_runner(build_engine(r, llm=FakeLLM()), parse_study(d), StudyLog(tmp_path / "rp.sqlite"))
    return StudyPage(runner, [])


def test_a_participants_task_replays_round_by_round_with_marks_and_ranks(tiny, tmp_path):
    page = make_page(tiny, tmp_path)
    pid, tab = page.act("join", "", TabState(), True)
    pid, tab = page.act("start", pid, tab)
    pid, tab = page.act("describe", pid, tab, "a red dog")
    p = page.runner.progress(page.who(pid))
    shown0 = list(p.session.last.shown)
    first, second = shown0[:2]
    logged_rank = [e for e in page.runner.log.events("rp", types=["results"])][0].payload["target_rank"]
    pid, tab = page.act("card", pid, tab, "relevant", first)
    pid, tab = page.act("card", pid, tab, "irrelevant", second)
    pid, tab = page.act("feedback", pid, tab)
    pid, tab = page.act("give_up", pid, tab)
    pid, tab = page.act("give_up_yes", pid, tab)
    pid, tab = page.act("submit", pid, tab, {"effective": 3, "efficient": 2, "comments": ""})
    pid, tab = page.act("start", pid, tab)  # task 2 is left mid-way: the tab is closed
    pid, tab = page.act("describe", pid, tab, "a blue car")

    rep = study_replay(page.runner.log, page.who(pid))
    assert [(t.task, t.status) for t in rep.tasks] == [(1, "give_up"), (2, UNFINISHED)]
    assert rep.notes and "task 2" in rep.notes[0] and "mid-task" in rep.notes[0]
    steps = rep.tasks[0].steps
    kinds = [s.type for s in steps]
    assert kinds[:2] == ["description", "results"] and "feedback" in kinds and kinds[-1] == "give_up"
    assert steps[0].text == "a red dog" and steps[1].shown == shown0
    assert steps[1].target_rank == logged_rank
    # the marks given after round 0's results are drawn on those results
    assert steps[1].marks == {first: True, second: False}
    assert all(b.t >= a.t for a, b in zip(steps, steps[1:])) and all(s.dt >= 0 for s in steps)
    assert rep.tasks[1].steps[0].text == "a blue car"

    page_html = replay_html(rep)
    assert page_html.count('class="task"') == 2 and "a red dog" in page_html and "<script>" in page_html
    assert f'class="tile rel" title="1. {first}' in page_html and "marked not relevant" in page_html
    assert "http" not in page_html.replace("http-equiv", "")  # nothing fetched
    path = page.replay(page.who(pid))  # the admin page's download
    assert path.endswith(".replay.html") and "a blue car" in open(path).read()
    assert page.replay("") and "a red dog" in open(page.replay("")).read()  # blank: everyone


def test_logs_of_older_versions_and_odd_events_replay_without_loss(tmp_path):
    with StudyLog(tmp_path / "old.sqlite") as log:
        log.enrol("old", "P1")
        ev = [Event("task_start", "P1", "old", task=1, target="t.jpg", condition="A"),
              Event("description", "P1", "old", task=1, target="t.jpg", condition="A", round=0,
                    payload={"text": "<b>a dog</b>"}),
              # an early version: results with no rank, no elapsed time, the question as a plain string
              Event("results", "P1", "old", task=1, target="t.jpg", condition="A", round=0,
                    payload={"shown": ["a.jpg", "t.jpg"]}),
              Event("question_shown", "P1", "old", task=1, target="t.jpg", condition="A", round=0,
                    payload={"question": "Which one?", "options": [{"label": "a dog", "image_id": "a.jpg"},
                                                                   {"label": "none of these"}]}),
              Event("found", "P1", "old", task=1, target="t.jpg", condition="A", round=0, payload={})]
        for e in ev:
            log.append(e)
        rep = study_replay(log, "P1", 1)
        with pytest.raises(BadInputError, match="participants: P1"):
            study_replay(log, "nobody")
        with pytest.raises(BadInputError, match="no events of task 7"):
            study_replay(log, "P1", 7)
    (t,) = rep.tasks
    assert t.status == "found" and [s.type for s in t.steps] == ["description", "results", "question_shown", "found"]
    res = t.steps[1]
    assert res.target_rank is None and res.target_position == 2 and t.steps[2].options == ["a dog", "none of these"]
    page = replay_html(rep)
    assert "target rank not logged, shown at 2" in page and "&lt;b&gt;a dog&lt;/b&gt;" in page
    assert 'class="tile target"' in page


def test_times_follow_the_tasks_own_clock_and_never_run_backwards(tmp_path):
    """A dry run's events carry the simulated clock in their payloads; the server's gaps fill the rest."""
    with StudyLog(tmp_path / "t.sqlite") as log:
        log.enrol("s", "P1")
        log.append(Event("task_start", "P1", "s", task=1, target="t"))
        log.append_many([Event("description", "P1", "s", task=1, target="t", round=0, payload={"text": "x"}),
                         Event("results", "P1", "s", task=1, target="t", round=0,
                               payload={"shown": ["t"], "elapsed_s": 30.0})])
        log.append(Event("click", "P1", "s", task=1, target="t", round=0, payload={"action": "open", "image_id": "t"}))
        log.append(Event("found", "P1", "s", task=1, target="t", round=0, payload={"time_s": 12.0}))  # a skewed clock
        (t,) = study_replay(log, "P1").tasks
    times = [s.t for s in t.steps]
    assert times[0] == times[1] == 30.0  # the input takes its results' time (one write)
    assert times[2] >= 30.0 and times[3] == times[2]  # 12 s would run backwards: held at the last time
    assert t.steps[1].dt == 0.0


def test_the_same_viewer_opens_eval_runs_and_dry_runs(tiny, tmp_path):
    r, ids, caps = tiny
    run = tmp_path / "run" / "plugir"
    run.mkdir(parents=True)
    rec = {"qid": ids[1], "target": ids[1], "stop": "found", "found_round": 1,
           "turns": [{"round": 0, "kind": "describe", "query": "a dog", "rank": 7, "shown": ids[2:5], "question":
                      "What colour?", "seconds": 0.5},
                     {"round": 1, "kind": "answer", "query": "a dog, brown", "rank": 2, "shown": [ids[3], ids[1]],
                      "seconds": 0.25}]}
    run.joinpath("checkpoint.jsonl").write_text(json.dumps({"header": {"format": 1}}) + "\n" + json.dumps(rec)
                                                + "\n" + '{"qid": "cut off', encoding="utf-8")
    rep = eval_replay(tmp_path / "run")
    (t,) = rep.tasks
    assert (t.participant, t.target, t.status) == ("plugir", ids[1], "found")
    results = [s for s in t.steps if s.type == "results"]
    assert [s.target_rank for s in results] == [7, 2] and results[1].target_position == 2
    assert [s.t for s in results] == [0.5, 0.75] and any(s.text == "What colour?" for s in t.steps)
    assert any("not JSON" in n for n in rep.notes)
    with pytest.raises(BadInputError, match="no search matches"):
        eval_replay(tmp_path / "run", protocol="rocchio")
    with pytest.raises(BadInputError, match="no eval run here"):
        eval_replay(tmp_path)

    out = tmp_path / "e.html"
    assert main(["study", "replay", "--db", str(tmp_path / "run"), "--task", ids[1], "--out", str(out)]) == 0
    assert out.read_text().count('class="step results"') == 2

    from interactive_ir.study.dry_run import dry_run

    study = tmp_path / "s.yaml"
    study.write_text(f"study_id: sim\nrounds: 2\nk: 4\nconditions:\n  A: {{mode: plugir}}\ntasks: [{ids[0]}, {ids[1]}]\n")
    dry_run(study, 1, db=tmp_path / "sim.sqlite", out=tmp_path / "rep", engine=build_engine(r, llm=FakeLLM()),
            plots=False)
    rep = load_replay(tmp_path / "sim.sqlite", task="2")
    assert len(rep.tasks) == 1 and rep.tasks[0].task == 2 and rep.tasks[0].status != UNFINISHED
    assert any(s.type == "question_shown" for s in rep.tasks[0].steps) or rep.tasks[0].status == "found"
    with pytest.raises(BadInputError, match="task's number"):
        load_replay(tmp_path / "sim.sqlite", task="first")
    assert main(["study", "replay", "--db", str(tmp_path / "sim.sqlite")]) == 0
    assert (tmp_path / "sim.replay.html").read_text().count('class="task"') == 2
