"""The study page's logic (`StudyPage`, no browser) and the Gradio page it builds."""

from __future__ import annotations

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.study.admin_ui import check_password
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import StudyLog
from interactive_ir.study.pages import TabState
from interactive_ir.study.ui import StudyPage, _clock, make_runner

NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def make_page(tiny, tmp_path, **changes):
    r, ids, caps = tiny
    d = {"study_id": "ui", "rounds": 2, "k": 4, "title": "My <study>",
         "conditions": {"F": {"mode": "feedback", "feedback_method": "rocchio", "label": "System F"},
                        "M": "mixed"},
         "tasks": ids[:2]}
    d.update(changes)
    runner = make_runner(build_engine(r, llm=FakeLLM()), parse_study(d), StudyLog(tmp_path / "ui.sqlite"))
    return StudyPage(runner, ["note"]), caps


def test_a_participant_through_the_page(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    tab = TabState()
    v = page.view("", tab)
    assert v.phase == "start" and "participant id" in v.status and "My &lt;study&gt;" in v.header
    pid, tab = page.act("new", "", tab, client_ts=NOW)
    assert pid.startswith("P") and pid in tab.notice
    assert page.view(pid, tab).phase == "consent"
    pid, tab = page.act("consent", pid, tab, True, client_ts=NOW)
    v = page.view(pid, tab)
    assert v.phase == "briefing" and "Task 1 of 2" in v.header and "System F" in v.brief and "<img" in v.brief_target
    pid, tab = page.act("start", pid, tab)
    v = page.view(pid, tab)
    assert v.phase == "search" and v.show_describe and not v.show_feedback and "Describe" in v.results
    pid, tab = page.act("describe", pid, tab, "a red dog", client_ts=NOW + 1)
    v = page.view(pid, tab)
    assert not v.show_describe and v.show_feedback and not v.show_conversation and not v.show_composed
    assert v.results.count('data-action="pick"') == 4 and v.results.count('data-action="relevant"') == 4
    assert 'data-action="reference"' not in v.results  # feedback only
    p = page.runner.progress(pid)
    first, second = p.session.last.shown[:2]
    # marks toggle in the tab and are logged as clicks
    pid, tab = page.act("card", pid, tab, "relevant", first)
    pid, tab = page.act("card", pid, tab, "irrelevant", second)
    pid, tab = page.act("card", pid, tab, "irrelevant", second)  # unmark
    assert tab.marks == {first: True}
    assert 'aria-pressed="true"' in page.view(pid, tab).results
    pid, tab = page.act("feedback", pid, tab)
    assert tab.notice == "" and page.runner.progress(pid).rounds_used == 1
    assert page.view(pid, tab) and tab.marks == {}  # a new round drops the marks
    target = p.current.task.target
    wrong = next(i for i in page.runner.progress(pid).session.last.shown if i != target)
    pid, tab = page.act("card", pid, tab, "pick", wrong)
    assert "not the image" in tab.notice
    pid, tab = page.act("give_up", pid, tab)
    v = page.view(pid, tab)
    assert v.phase == "questionnaire" and "rate the system" in v.status
    pid, tab = page.act("submit", pid, tab, {"effective": None, "efficient": 2})
    assert tab.notice.startswith("⚠️ Please answer: The system was effective")
    pid, tab = page.act("submit", pid, tab, {"effective": 3, "efficient": 2, "comments": ""})
    v = page.view(pid, tab)
    assert v.phase == "briefing" and "Task 2 of 2" in v.header

    events = page.runner.log.events("ui", pid)
    clicks = [(e.payload["action"], e.payload["image_id"]) for e in events if e.type == "click"]
    assert clicks == [("mark_relevant", first), ("mark_irrelevant", second), ("unmark", second)]
    assert events[0].client_ts == NOW and [e for e in events if e.type == "description"][0].client_ts == NOW + 1
    assert [e for e in events if e.type == "task_start"][0].client_ts is None  # not sent


def test_mixed_condition_views_and_reference(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path, conditions={"M": "mixed"}, tasks=tiny[1][:1])
    tab = TabState()
    pid, tab = page.act("enter", "", tab, "lab-07")
    assert pid == "lab-07"
    for name, args in (("consent", (True,)), ("start", ()), ("describe", ("a dog",))):
        pid, tab = page.act(name, pid, tab, *args)
    v = page.view(pid, tab)
    assert v.show_conversation and v.show_feedback and v.show_composed and not v.show_text
    assert "System asks" in v.question and "top result of the last round" in v.reference
    shown = page.runner.progress(pid).session.last.shown
    pid, tab = page.act("card", pid, tab, "reference", shown[2])
    assert tab.reference == shown[2] and "your chosen result" in page.view(pid, tab).reference
    pid, tab = page.act("relative", pid, tab, "but blue")
    ev = [e for e in page.runner.log.events("ui", pid) if e.type == "reference"][0]
    assert ev.payload == {"reference": shown[2], "default": False}
    pid, tab = page.act("answer", pid, tab, "yes")
    v = page.view(pid, tab)
    assert not v.can_search and v.give_up_label == "End task" and not v.show_conversation
    assert "All rounds used" in v.budget


def test_errors_become_the_status_line_and_are_logged(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    tab = TabState()
    pid, tab = page.act("enter", "", tab, "   ")
    assert pid == "" and "Type your participant id" in tab.notice
    pid, tab = page.act("enter", "", tab, "bad id!")
    assert pid == "" and "is not valid" in tab.notice
    pid, tab = page.act("new", "", tab)
    pid, tab = page.act("start", pid, tab)  # before consent
    assert "not available now" in tab.notice
    err = page.runner.log.events("ui", pid)[-1]
    assert err.type == "error" and err.payload["action"] == "start"
    for name, args in (("consent", (True,)), ("start", ())):
        pid, tab = page.act(name, pid, tab, *args)
    pid, tab = page.act("describe", pid, tab, "")
    assert "empty" in tab.notice
    assert [e.type for e in page.runner.log.events("ui", pid)].count("error") == 2  # the runner logged it once
    pid, tab = page.act("feedback", pid, tab)
    assert "Mark at least one result" in tab.notice
    pid, tab = page.act("card", pid, tab, "relevant", "not-on-page.png")
    assert "not among the results" in tab.notice
    # a participant unknown to this database (e.g. an old id kept by the browser) sees the start page
    pid2, tab2 = page.act("resume", "ghost", TabState())
    assert pid2 == "" and page.view(pid2, tab2).phase == "start"


def test_resume_logs_and_keeps_the_place(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    pid, tab = page.act("new", "", TabState())
    for name, args in (("consent", (True,)), ("start", ()), ("describe", ("a cat",))):
        pid, tab = page.act(name, pid, tab, *args)
    before = page.view(pid, tab).results
    fresh = StudyPage(make_runner(page.engine, page.study, StudyLog(tmp_path / "ui.sqlite")))
    pid2, tab2 = fresh.act("resume", pid, TabState(), client_ts=NOW)
    assert pid2 == pid and fresh.view(pid2, tab2).results == before
    assert fresh.runner.log.events("ui", pid)[-1].type == "resume"


def test_admin_view_and_export(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    a, tab = page.act("new", "", TabState())
    page.act("consent", a, tab, True)
    b, _ = page.act("new", "", TabState())
    page.act("consent", b, TabState(), False)
    text, rows = page.admin_view()
    assert "2 participant(s)" in text and "1 declined" in text
    assert [r[:5] for r in rows] == [[a, 0, "briefing", 0, 2], [b, 1, "declined", 0, 2]] and rows[0][5]
    path = page.export("jsonl")
    assert path.endswith("ui.events.jsonl") and len(open(path).read().splitlines()) == page.runner.log.count()


def test_passwords_and_clock():
    assert check_password("s3cret", "s3cret") and not check_password("s3cre", "s3cret")
    assert not check_password("", "") and not check_password("x", None)
    assert _clock("1800000000.5") == 1800000000.5 and _clock(0) is None and _clock("abc") is None


def test_build_study_demo_builds_the_gradio_page(tiny, tmp_path, monkeypatch):
    pytest.importorskip("gradio")
    import gradio as gr

    from interactive_ir.study.ui import build_study_demo

    monkeypatch.setenv("IIR_STUDY_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("IIR_STUDY_ADMIN_PASSWORD", "pw")
    r, ids, caps = tiny
    study_file = tmp_path / "s.yaml"
    study_file.write_text(f"study_id: built\nconditions: {{A: text, B: feedback}}\ntasks: [{ids[0]}, {ids[1]}]\n")
    engine = build_engine(r)
    demo = build_study_demo(engine, ["note"], study_file)  # the order app.py uses
    assert isinstance(demo, gr.Blocks) and (tmp_path / "data" / "built.sqlite").is_file()
    demo2 = build_study_demo(engine, study_file, ["note"])  # the order of the brief
    assert isinstance(demo2, gr.Blocks)


def test_the_question_panel_keeps_the_dialogue_in_view():
    from interactive_ir.session import Session, Turn
    from interactive_ir.study.pages import question_html
    from interactive_ir.study.runner import Progress

    s = Session(description="a dog", turns=[
        Turn(round=0, kind="describe", user_text="a dog", question="Is it <b>big</b>?"),
        Turn(round=1, kind="answer", user_text="yes, huge", answered_question="Is it <b>big</b>?")],
        pending_question="What colour is it?")
    html = question_html(Progress(participant="p1", number=0, plan=[], session=s))
    assert html.index("Is it &lt;b&gt;big&lt;/b&gt;?") < html.index("yes, huge") < html.index("What colour is it?")
