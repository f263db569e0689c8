"""Paradata: the study page's focus, visibility and idle events, per task in the report (clock skew handled),
flagged tasks and the analysis with and without them."""

from __future__ import annotations

import time

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.study.analysis.paradata import task_paradata
from interactive_ir.study.analysis.report import write_report
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import Event, StudyLog
from interactive_ir.study.page.logic import StudyPage
from interactive_ir.study.page.render import TabState
from interactive_ir.study.ui import make_runner

NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def test_the_page_logs_paradata_and_drops_junk(tiny, tmp_path):
    r, ids, caps = tiny
    d = {"study_id": "pd", "rounds": 2, "k": 4, "conditions": {"F": {"mode": "feedback"}}, "tasks": ids[:2]}
    page = StudyPage(make_runner(build_engine(r, llm=FakeLLM()), parse_study(d), StudyLog(tmp_path / "pd.sqlite")), [])
    skew = 1000.0  # the browser's clock runs ahead

    def now():
        return time.time() + skew

    pid, tab = page.act("join", "", TabState(), True)
    t0 = now()
    page.act("paradata", pid, tab, [{"kind": "blur", "at": t0 - 0.2}, {"kind": "focus", "at": t0 - 0.1}],
             client_ts=t0)  # before any task
    pid, tab = page.act("start", pid, tab)
    t1 = now()
    items = [{"kind": "hidden", "at": t1}, {"kind": "visible", "at": str(t1 + 0.001)}, {"kind": "explode", "at": t1},
             {"kind": "focus", "at": "soon"}, {"kind": "focus", "at": float("inf")}, {"kind": "focus", "at": 5.0},
             "junk"]
    page.act("paradata", pid, tab, items, client_ts=t1 + 0.002)
    page.act("paradata", pid, tab, "not a list", client_ts=now())
    page.act("paradata", pid, tab, [{"kind": "idle", "at": now()}] * 80, client_ts=now())  # at most 50 a call
    evs = page.runner.log.events("pd", page.who(pid), types=["paradata"])
    assert [(e.payload["kind"], e.client_ts, e.task) for e in evs[:4]] == [
        ("blur", t0 - 0.2, None), ("focus", t0 - 0.1, None), ("hidden", t1, 1), ("visible", t1 + 0.001, 1)]
    assert len(evs) == 4 + 50 and evs[2].payload["sent_at"] == t1 + 0.002 and tab.notice == ""
    from interactive_ir.study.analysis.timeline import study_replay

    (task,) = study_replay(page.runner.log, page.who(pid)).tasks  # the replay shows them, and the count
    assert [s.text for s in task.steps[:2]] == ["tab hidden", "tab visible"]
    assert task.paradata["defocus_count"] == 1 and task.paradata["idle_count"] == 1
    assert abs(task.paradata["clock_offset_s"] + skew) < 1


def _log(tmp_path, skew: float) -> StudyLog:
    """Participant P1's task 1 from server time S to S+100 (found); the browser's clock runs `skew` s ahead."""
    log = StudyLog(tmp_path / f"skew{skew}.sqlite")
    log.enrol("s", "P1")
    log.append(Event("task_start", "P1", "s", task=1, target="t", condition="A"))
    s = log.events("s")[-1].server_ts
    log._conn.execute("UPDATE events SET server_ts=? WHERE type='task_start'", (s,))

    def para(kind, at, sent):  # at: seconds after the task start by the server's clock
        log.append(Event("paradata", "P1", "s", task=1, target="t", condition="A",
                         payload={"kind": kind, "sent_at": s + sent + skew}, client_ts=s + at + skew))

    for kind, at in (("blur", -5.0), ("focus", 2.0), ("hidden", 40.0), ("visible", 55.0), ("idle", 60.0),
                     ("active", 70.0), ("blur", 90.0)):
        para(kind, at, at)
    log.append(Event("found", "P1", "s", task=1, target="t", condition="A", payload={"time_s": 100}))
    # the server's times of the logged events as if they had arrived when sent
    rows = log._conn.execute("SELECT id, payload FROM events WHERE type='paradata' ORDER BY id").fetchall()
    import json

    for i, payload in rows:
        log._conn.execute("UPDATE events SET server_ts=? WHERE id=?", (json.loads(payload)["sent_at"] - skew, i))
    log._conn.execute("UPDATE events SET server_ts=? WHERE type='found'", (s + 100.0,))
    return log


@pytest.mark.parametrize("skew", [0.0, 3600.0, -250.0])
def test_time_away_per_task_whatever_the_browsers_clock(tmp_path, skew):
    with _log(tmp_path, skew) as log:
        (row,) = task_paradata(log.events("s"), max_away_s=20.0)
    assert row.clock_offset_s == pytest.approx(-skew, abs=0.01)
    # away: 0-2 s (the blur began before the task), 40-55 s, 90-100 s (still away at the end): 27 s, 2 defocus
    assert row.time_away_s == pytest.approx(27.0, abs=0.01) and row.defocus_count == 2
    assert (row.idle_count, row.idle_s) == (1, pytest.approx(10.0, abs=0.01))
    assert row.flagged  # 27 s > 20 s
    with _log(tmp_path / "b", skew) if (tmp_path / "b").mkdir() is None else None as log:
        assert not task_paradata(log.events("s"), max_away_s=30.0)[0].flagged
        assert task_paradata(log.events("s"), max_defocus=1)[0].flagged


def test_the_report_flags_away_tasks_and_shows_the_analysis_both_ways(tiny, tmp_path):
    pytest.importorskip("statsmodels")
    from interactive_ir.study.dry_run import dry_run

    r, ids, caps = tiny
    study = tmp_path / "s.yaml"
    study.write_text("study_id: sim\nrounds: 2\nk: 4\nconditions:\n  A: {mode: plugir}\n  B: {mode: feedback}\n"
                     f"tasks: [{', '.join(ids[:4])}]\n")
    dry_run(study, 2, db=tmp_path / "sim.sqlite", out=tmp_path / "r0", engine=build_engine(r, llm=FakeLLM()),
            plots=False)
    with StudyLog(tmp_path / "sim.sqlite") as log:
        start = log.events("sim", types=["task_start"])[0]
        end = next(e for e in log.events("sim", start.participant) if e.task == start.task and e.type in
                   ("found", "give_up", "budget_exhausted"))
        w = end.server_ts - start.server_ts  # the dry run's task took this long by the server's clock
        for kind, at in (("hidden", 0.1), ("visible", 0.9)):  # away for 80% of the first task
            log.append(Event("paradata", start.participant, "sim", task=start.task, target=start.target,
                             condition=start.condition, payload={"kind": kind, "sent_at": time.time()},
                             client_ts=start.server_ts + at * w))
        kept = write_report(log, tmp_path / "kept", plots=False, away=(0.5 * w, 0))
        left = write_report(log, tmp_path / "left", plots=False, exclude_away=True, away=(0.5 * w, 0))
    key = f"{start.participant}#{start.task}"
    assert kept["paradata"]["flagged"] == [key] and left["paradata"]["excluded"]
    cond = start.condition
    assert left["conditions"][cond]["n_sessions"] == kept["conditions"][cond]["n_sessions"] - 1
    assert left["paradata"]["other_analysis"][cond]["n_sessions"] == kept["conditions"][cond]["n_sessions"]
    assert kept["paradata"]["other_analysis"][cond]["n_sessions"] == left["conditions"][cond]["n_sessions"]
    md = (tmp_path / "left" / "summary.md").read_text()
    assert "## Time on the page (paradata)" in md and key in md and "With the flagged tasks in:" in md
    assert "Time on the page" in (tmp_path / "kept" / "report.html").read_text()
