"""Issue 40, item 6: a participant's page shows what the log holds whichever process serves it, and the study
refuses (and logs as refusals) the actions its condition does not offer."""

from __future__ import annotations

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.study.config import parse_study
from interactive_ir.study.flow.state import ActionRefused
from interactive_ir.study.log import StudyLog
from interactive_ir.study.page.logic import StudyPage
from interactive_ir.study.page.render import TabState
from interactive_ir.study.ui import make_runner


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    return folder, build_tiny(folder)


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    return tiny_dir[1]


def _page(tiny, db, conditions):
    r, ids, _ = tiny
    return StudyPage(make_runner(build_engine(r, llm=FakeLLM()), _study(ids, conditions), StudyLog(db)))


def _study(ids, conditions):
    return parse_study({"study_id": "integ", "rounds": 3, "k": 4, "conditions": conditions, "tasks": ids[:1]})


# process B of the two-process test, a separate Python: resume with the token, unmark shown[0], mark shown[2]
OTHER_PROCESS = """
import sys
from interactive_ir.backends import make_embedder
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.index import load_index
from interactive_ir.retrieval.retriever import Retriever
from interactive_ir.study.log import StudyLog
from interactive_ir.study.page.logic import StudyPage
from interactive_ir.study.page.render import TabState
from interactive_ir.study.ui import make_runner
from test_study_integrity import _study

folder, db, tok, first, third = sys.argv[1:]
index = load_index(folder + "/index")
page = StudyPage(make_runner(build_engine(Retriever(index, make_embedder("fake:32")), llm=FakeLLM()),
                             _study(sorted(index.ids), {"F": "feedback"}), StudyLog(db)))
tok, tab = page.act("resume", tok, TabState())
for image in (first, third):
    tok, tab = page.act("card", tok, tab, "relevant", image)
    assert tab.notice == "", tab.notice
print(sorted(tab.marks))
"""


def _searching(page: StudyPage):
    tok, tab = "", TabState()
    for name, args in (("join", (True,)), ("start", ()), ("describe", ("a dog on grass",))):
        tok, tab = page.act(name, tok, tab, *args)
        assert tab.notice == "", tab.notice
    return tok, tab


def _pressed(results: str) -> set[str]:
    """The ids whose relevant button shows pressed on the page."""
    return {chunk.split('data-id="')[1].split('"')[0] for chunk in results.split("<button")
            if 'data-action="relevant"' in chunk and 'aria-pressed="true"' in chunk}


def test_two_processes_on_one_log_show_what_the_log_holds(tiny, tmp_path):
    """The issue's case: marks 0, 1 on process A; the participant moves to B, unmarks 0 and marks 2; back on A,
    which still holds its old tab, the page shows 1, 2 (not 0, 1) and a mark on 3 makes 1, 2, 3 on the page,
    in the log and in the feedback round."""
    db = tmp_path / "shared.sqlite"
    a = _page(tiny, db, {"F": "feedback"})
    b = _page(tiny, db, {"F": "feedback"})  # a second process: its own runner and pages over the same file
    tok, tab_a = _searching(a)
    pid = a.who(tok)
    shown = a.runner.progress(pid).session.last.shown
    for i in (0, 1):
        tok, tab_a = a.act("card", tok, tab_a, "relevant", shown[i])
    assert _pressed(a.view(tok, tab_a).results) == {shown[0], shown[1]}

    tok, tab_b = b.act("resume", tok, TabState())
    assert _pressed(b.view(tok, tab_b).results) == {shown[0], shown[1]}  # B reads A's marks from the log
    tok, tab_b = b.act("card", tok, tab_b, "relevant", shown[0])  # unmark
    tok, tab_b = b.act("card", tok, tab_b, "relevant", shown[2])
    assert b.runner.current_marks(pid)[0] == {shown[1]: True, shown[2]: True}

    assert _pressed(a.view(tok, tab_a).results) == {shown[1], shown[2]}  # before rendering: A reloads
    tok, tab_a = a.act("card", tok, tab_a, "relevant", shown[3])  # before acting too
    want = {shown[1]: True, shown[2]: True, shown[3]: True}
    assert tab_a.marks == want and a.runner.current_marks(pid)[0] == want
    assert _pressed(a.view(tok, tab_a).results) == set(want)
    tok, tab_b = b.act("card", tok, tab_b, "irrelevant", shown[0])  # B, behind by A's last mark, acts on the log
    assert b.runner.current_marks(pid)[0] == {**want, shown[0]: False}
    tok, tab_a = a.act("feedback", tok, tab_a)  # the round A runs uses the log's marks, B's included
    fb = [e for e in a.runner.log.events("integ", pid) if e.type == "feedback"][-1]
    assert sorted(fb.payload["relevant"]) == sorted(want) and fb.payload["irrelevant"] == [shown[0]]
    assert b.view(tok, tab_b).results.count('aria-pressed="true"') == 0  # a new round on A: B's page has no marks
    assert a.runner.progress(pid).rounds_used == b.runner.progress(pid).rounds_used == 1
    tok, tab_b = b.act("give_up", tok, tab_b)
    tok, tab_b = b.act("give_up_yes", tok, tab_b)
    assert a.view(tok, tab_a).phase == "questionnaire"  # B ended the task: A shows it


def test_the_text_only_condition_refuses_marks_references_and_other_rounds(tiny, tmp_path):
    page = _page(tiny, tmp_path / "t.sqlite", {"T": "text"})
    tok, tab = _searching(page)
    pid = page.who(tok)
    shown = page.runner.progress(pid).session.last.shown
    before = [e.type for e in page.runner.log.events("integ", pid)]
    for action in ("relevant", "irrelevant", "reference", "open", "mark_relevant", "x" * 10_000):
        tok, tab = page.act("card", tok, tab, action, shown[0])
        assert tab.notice.startswith("⚠️ ") and "\n" not in tab.notice and len(tab.notice) < 200
        assert tab.marks == {} and tab.reference == ""
    for name, args in (("feedback", ()), ("relative", ("but red",)), ("answer", ("yes",)), ("skip", ())):
        tok, tab = page.act(name, tok, tab, *args)
        assert "does not offer" in tab.notice and "\n" not in tab.notice
    events = page.runner.log.events("integ", pid)[len(before):]
    assert [e.type for e in events] == ["refused"] * 10  # refusals only: no click, round or error event
    assert events[0].payload["click"] == "mark_relevant" and "feedback" in events[0].payload["message"]
    assert len(events[5].payload["card"]) <= 500  # what was sent, cut
    assert {e.payload["action"] for e in events[6:]} == {"feedback", "relative_caption", "answer", "skip"}
    with pytest.raises(ActionRefused, match="does not offer feedback"):  # the runner's own API refuses too
        page.runner.click(pid, shown[0], "mark_relevant")
    with pytest.raises(ActionRefused, match="not a click this page offers"):
        page.runner.click(pid, shown[0], "delete_everything")
    page.runner.click(pid, shown[0], "open")  # a click every condition offers is logged
    tok, tab = page.act("search", tok, tab, "a dog in snow")  # the condition's own round still runs
    assert tab.notice == "" and page.runner.progress(pid).rounds_used == 1
    types = [e.type for e in page.runner.log.events("integ", pid)]
    assert types.count("click") == 1 and "error" not in types and types.count("refused") == 12
    assert page.export("csv")  # the export reads refusals, the replay names them
    html = open(page.replay(pid), encoding="utf-8").read()
    assert "refused (not offered)" in html and "does not offer feedback in this task" in html


def test_the_feedback_condition_refuses_references_and_keeps_its_marks(tiny, tmp_path):
    page = _page(tiny, tmp_path / "f.sqlite", {"F": "feedback"})
    tok, tab = _searching(page)
    shown = page.runner.progress(page.who(tok)).session.last.shown
    tok, tab = page.act("card", tok, tab, "relevant", shown[1])
    tok, tab = page.act("card", tok, tab, "reference", shown[2])
    assert "does not offer composed" in tab.notice and tab.marks == {shown[1]: True} and tab.reference == ""
    types = [e.type for e in page.runner.log.events("integ", page.who(tok))]
    assert types[-2:] == ["click", "refused"]


def test_the_marks_are_read_back_only_when_the_log_moved_on(tiny, tmp_path, monkeypatch):
    page = _page(tiny, tmp_path / "r.sqlite", {"F": "feedback"})
    tok, tab = _searching(page)
    shown = page.runner.progress(page.who(tok)).session.last.shown
    tok, tab = page.act("card", tok, tab, "relevant", shown[0])
    reads = []
    real = page.runner.current_marks
    monkeypatch.setattr(page.runner, "current_marks", lambda pid: reads.append(pid) or real(pid))
    page.view(tok, tab)
    assert len(reads) == 1  # the mark moved the log on: read back once
    for _ in range(3):
        page.view(tok, tab)
        page.act("give_up_no", tok, tab)  # writes nothing
    assert len(reads) == 1
    page.runner.click(page.who(tok), shown[1], "mark_irrelevant")  # another process's write
    assert _pressed(page.view(tok, tab).results) == {shown[0]} and len(reads) == 2
    assert tab.marks == {shown[0]: True, shown[1]: False}


def test_a_participant_moved_to_another_os_process_and_back_sees_the_logs_marks(tiny_dir, tmp_path):
    """The same, with process B a separate Python process over the same SQLite file (WAL)."""
    import ast
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder, tiny = tiny_dir
    db = tmp_path / "shared.sqlite"
    a = _page(tiny, db, {"F": "feedback"})
    tok, tab = _searching(a)
    pid = a.who(tok)
    shown = a.runner.progress(pid).session.last.shown
    for i in (0, 1):
        tok, tab = a.act("card", tok, tab, "relevant", shown[i])
    here = Path(__file__).resolve()
    paths = [str(here.parents[3]), str(here.parents[2]), str(here.parent), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    done = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(folder), str(db), tok, shown[0], shown[2]],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted([shown[1], shown[2]]) == ast.literal_eval(done.stdout.strip())  # B's page
    assert _pressed(a.view(tok, tab).results) == {shown[1], shown[2]}  # A: what the log holds, not 0, 1
    tok, tab = a.act("card", tok, tab, "relevant", shown[3])
    want = {shown[1]: True, shown[2]: True, shown[3]: True}
    assert tab.marks == want and a.runner.current_marks(pid)[0] == want
