"""The study page's logic (`StudyPage`, no browser) and the Gradio page it builds."""

from __future__ import annotations

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import StudyLog
from interactive_ir.study.page.admin import LoginLimiter, check_password, check_password_strength
from interactive_ir.study.page.logic import StudyPage, _clock
from interactive_ir.study.page.render import TabState
from interactive_ir.study.ui import make_runner

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
    assert v.phase == "start" and v.can_join and "Welcome" in v.status and "My &lt;study&gt;" in v.header
    pid, tab = page.act("join", "", tab, True, client_ts=NOW)  # pid: the participant's token from here on
    assert len(pid) >= 40 and tab.notice == ""
    v = page.view(pid, tab)
    assert v.phase == "briefing" and "Task 1 of 2" in v.header and "You will use **System F**." in v.brief
    assert "<img" in v.brief_target
    pid, tab = page.act("start", pid, tab)
    v = page.view(pid, tab)
    assert v.phase == "search" and v.show_describe and not v.show_feedback and "Describe" in v.results
    pid, tab = page.act("describe", pid, tab, "a red dog", client_ts=NOW + 1)
    v = page.view(pid, tab)
    assert not v.show_describe and v.show_feedback and not v.show_conversation and not v.show_composed
    assert v.results.count('data-action="pick"') == 4 and v.results.count('data-action="relevant"') == 4
    assert 'data-action="reference"' not in v.results  # feedback only
    p = page.runner.progress(page.who(pid))
    first, second = p.session.last.shown[:2]
    # marks toggle in the tab and are logged as clicks
    pid, tab = page.act("card", pid, tab, "relevant", first)
    pid, tab = page.act("card", pid, tab, "irrelevant", second)
    pid, tab = page.act("card", pid, tab, "irrelevant", second)  # unmark
    assert tab.marks == {first: True}
    assert 'aria-pressed="true"' in page.view(pid, tab).results
    pid, tab = page.act("feedback", pid, tab)
    assert tab.notice == "" and page.runner.progress(page.who(pid)).rounds_used == 1
    assert page.view(pid, tab) and tab.marks == {}  # a new round drops the marks
    target = p.current.task.target
    wrong = next(i for i in page.runner.progress(page.who(pid)).session.last.shown if i != target)
    pid, tab = page.act("card", pid, tab, "pick", wrong)
    assert "not the image" in tab.notice
    pid, tab = page.act("give_up", pid, tab)  # asks first
    v = page.view(pid, tab)
    assert v.phase == "search" and v.confirm_give_up
    pid, tab = page.act("give_up_no", pid, tab)
    assert not page.view(pid, tab).confirm_give_up
    pid, tab = page.act("give_up", pid, tab)
    pid, tab = page.act("feedback", pid, tab)  # searching on instead: the question goes away
    assert "Mark at least one" in tab.notice and page.view(pid, tab).confirm_give_up
    extra = page.runner.progress(page.who(pid)).session.last.shown[0]
    page.act("card", pid, tab, "relevant", extra)
    pid, tab = page.act("feedback", pid, tab)
    assert not page.view(pid, tab).confirm_give_up
    pid, tab = page.act("give_up", pid, tab)
    pid, tab = page.act("give_up_yes", pid, tab)
    v = page.view(pid, tab)
    assert v.phase == "questionnaire" and "rate the system" in v.status
    pid, tab = page.act("submit", pid, tab, {"effective": None, "efficient": 2})
    assert tab.notice.startswith("⚠️ Please answer question 1 of 3 (The system was effective): choose a number")
    pid, tab = page.act("submit", pid, tab, {"effective": 3, "efficient": 2, "comments": ""})
    v = page.view(pid, tab)
    assert v.phase == "briefing" and "Task 2 of 2" in v.header

    events = page.runner.log.events("ui", page.who(pid))
    clicks = [(e.payload["action"], e.payload["image_id"]) for e in events if e.type == "click"]
    assert clicks == [("mark_relevant", first), ("mark_irrelevant", second), ("unmark", second),
                      ("mark_relevant", extra)]
    assert events[1].type == "consent" and events[1].client_ts == NOW and [e for e in events if e.type == "description"][0].client_ts == NOW + 1
    assert [e for e in events if e.type == "task_start"][0].client_ts is None  # not sent


def test_give_ups_are_not_called_completed(tiny, tmp_path):
    """The end page and the admin page count give-ups as what they are (issue 25, item 10)."""
    page, caps = make_page(tiny, tmp_path)
    pid, tab = page.act("join", "", TabState(), True)
    for _ in range(2):
        for name, args in (("start", ()), ("describe", ("a dog",)), ("give_up", ()), ("give_up_yes", ()),
                           ("submit", ({"effective": 3, "efficient": 2, "comments": ""},))):
            pid, tab = page.act(name, pid, tab, *args)
    v = page.view(pid, tab)
    assert v.phase == "done" and "completed all" not in v.done
    assert "You found the image in 0 of 2 tasks; 2 ended without it (2 you ended yourself)" in v.done
    text, rows = page.admin_view()
    assert rows[0][3:6] == [0, 2, 2] and "2 task(s) ended: 0 found, 2 given up" in text


def test_mixed_condition_views_and_reference(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path, conditions={"M": "mixed"}, tasks=tiny[1][:1])
    tab, pid = TabState(), ""
    for name, args in (("join", (True,)), ("start", ()), ("describe", ("a dog",))):
        pid, tab = page.act(name, pid, tab, *args)
    v = page.view(pid, tab)
    assert v.show_conversation and v.show_feedback and v.show_composed and not v.show_text
    assert "System asks" not in v.question and v.results.count("data-action=\"pick\"") == 4  # results first
    pid, tab = page.act("ask", pid, tab)  # then the question
    v = page.view(pid, tab)
    assert "System asks" in v.question and "top result of the last round" in v.reference
    shown = page.runner.progress(page.who(pid)).session.last.shown
    pid, tab = page.act("card", pid, tab, "reference", shown[2])
    assert tab.reference == shown[2] and "your chosen result" in page.view(pid, tab).reference
    pid, tab = page.act("relative", pid, tab, "but blue")
    ev = [e for e in page.runner.log.events("ui", page.who(pid)) if e.type == "reference"][0]
    assert ev.payload == {"reference": shown[2], "default": False}
    pid, tab = page.act("ask", pid, tab)
    pid, tab = page.act("answer", pid, tab, "yes")
    v = page.view(pid, tab)
    assert "earlier rounds" in v.results.lower() and 'id="iir-earlier"' in v.results
    sess = page.runner.progress(page.who(pid)).session
    earlier = next(i for i in sess.turns[0].shown if i not in sess.last.shown)
    assert f'data-action="pick" data-id="{earlier}"' in v.results  # a passed-over image can still be picked
    pid, tab = page.act("card", pid, tab, "pick", earlier)
    target = page.runner.progress(page.who(pid)).current.task.target
    assert ("not the image" in tab.notice) == (earlier != target)
    assert not v.can_search and v.give_up_label == "End task" and not v.show_conversation
    assert "All rounds used" in v.budget


def test_errors_become_the_status_line_and_are_logged(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    tab = TabState()
    tok, tab = page.act("start", "", tab)  # no token: nothing happens, the visitor is told to read the consent
    assert tok == "" and "does not know you" in tab.notice
    tok, tab = page.act("join", "", tab, True)
    pid = page.who(tok)
    tok, tab = page.act("give_up_yes", tok, tab)  # not searching
    assert "not available now" in tab.notice
    err = page.runner.log.events("ui", pid)[-1]
    assert err.type == "error" and err.payload["action"] == "give_up_yes"
    tok, tab = page.act("start", tok, tab)
    tok, tab = page.act("describe", tok, tab, "")
    assert "empty" in tab.notice
    tok, tab = page.act("feedback", tok, tab)
    assert "Mark at least one result" in tab.notice
    tok, tab = page.act("card", tok, tab, "relevant", "not-on-page.png")
    assert "not among the results" in tab.notice
    # a token unknown to this database (e.g. kept by the browser from an old study) sees the consent page
    tok2, tab2 = page.act("resume", "x" * 43, TabState())
    assert page.view(tok2, tab2).phase == "start"


def test_resume_logs_and_keeps_the_place(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    tok, tab = page.act("join", "", TabState(), True)
    for name, args in (("start", ()), ("describe", ("a cat",))):
        tok, tab = page.act(name, tok, tab, *args)
    shown = page.runner.progress(page.who(tok)).session.last.shown
    for action, image in (("relevant", shown[0]), ("irrelevant", shown[1]), ("relevant", shown[2]),
                          ("relevant", shown[2])):  # the last click unmarks
        tok, tab = page.act("card", tok, tab, action, image)
    before = page.view(tok, tab).results
    # a restarted server (a fresh runner over the same database) and a reloaded page (a fresh tab)
    fresh = StudyPage(make_runner(page.engine, page.study, StudyLog(tmp_path / "ui.sqlite")))
    tok2, tab2 = fresh.act("resume", tok, TabState(), client_ts=NOW)
    assert tab2.marks == {shown[0]: True, shown[1]: False}  # marks were logged at click time: none lost
    assert tok2 == tok and fresh.view(tok2, tab2).results == before
    assert fresh.runner.log.events("ui", fresh.who(tok))[-1].type == "resume"


def test_another_client_with_a_participant_id_sees_and_does_nothing(tiny, tmp_path):
    """Issue 15 item 4: the participant id is no credential; only the token is."""
    page, caps = make_page(tiny, tmp_path, recruitment={"platform": "prolific", "completion_code": "C0DE1"})
    tab = TabState()
    page.arrive(tab, {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "s1", "SESSION_ID": "x9"})
    tok, tab = page.act("join", "", tab, True)
    pid = page.who(tok)
    tok, tab = page.act("start", tok, tab)
    target = page.runner.progress(pid).current.task.target
    n_events = page.runner.log.count()
    # an attacker sends the participant id, the recruitment id, or a guessed token in every slot a call has
    for fake in (pid, "5f1a2b3c4d5e6f7a8b9c0d1e", tok[:-1] + ("A" if tok[-1] != "A" else "B"), "", None, 42):
        t2 = TabState()
        page.arrive(t2, {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e"})
        v = page.view(fake, t2)
        assert v.phase == "start" and target not in (v.brief_target + v.search_target + v.results)
        for name, args in (("give_up_yes", ()), ("card", ("pick", target)), ("describe", ("x",)), ("start", ())):
            _, t2 = page.act(name, fake, t2, *args)
            assert "does not know you" in t2.notice
    assert page.runner.progress(pid).phase == "search" and page.runner.log.count() == n_events
    # the same recruitment id from another browser gets the same page as a new one (issue 29: an id neither
    # tells whether it took part nor can be locked); the attempt is recorded as a repeat; the first goes on
    t3 = TabState()
    page.arrive(t3, {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e"})
    tok3, t3 = page.act("join", "", t3, True)
    assert tok3 and t3.notice == "" and page.view(tok3, t3).phase == "briefing"
    assert len(page.runner.log.participants("ui")) == 2
    assert page.runner.progress(page.who(tok3)).recruit["repeat"] is True
    assert "repeat" not in page.runner.progress(pid).recruit and page.runner.progress(pid).phase == "search"
    # the database keeps the token's hash, never the token
    import sqlite3

    dump = "\n".join(sqlite3.connect(tmp_path / "ui.sqlite").iterdump())
    assert tok not in dump and pid in dump
    # the recruitment parameters are recorded as data
    assert page.runner.progress(pid).recruit["params"]["STUDY_ID"] == "s1"


def test_tokens_are_unguessable():
    from interactive_ir.study.runner import TOKEN_BYTES

    assert TOKEN_BYTES * 8 >= 128


def test_admin_view_and_export(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    a, tab = page.act("join", "", TabState(), True)
    b, _ = page.act("join", "", TabState(), False)
    text, rows = page.admin_view()
    assert "2 participant(s)" in text and "1 declined" in text
    assert [r[:6] for r in rows] == [[page.who(a), 0, "briefing", 0, 0, 2], [page.who(b), 1, "declined", 0, 0, 2]]
    path = page.export("jsonl")
    assert path.endswith("ui.events.jsonl") and len(open(path).read().splitlines()) == page.runner.log.count()


def test_admin_passwords_are_checked_and_failures_slow_down():
    for weak in ("change-me", "CHANGE-ME", "letmein", "short1!", "aaaaaaaaaaaaaaaa", "password123"):
        with pytest.raises(BadInputError, match="IIR_STUDY_ADMIN_PASSWORD"):
            check_password_strength(weak)
    check_password_strength("Vq8-2mZr!xT4pL")  # fine
    check_password_strength("")  # no password: the admin page is off
    now = [0.0]
    lim = LoginLimiter(free=3, base_s=2, max_s=60, surge_sources=4, window_s=600, clock=lambda: now[0])
    for _ in range(3):
        assert lim.wait_s("1.2.3.4") == 0
        lim.failed("1.2.3.4")
    assert lim.wait_s("1.2.3.4") == 0
    lim.failed("1.2.3.4")  # the 4th failure: wait 2 s, then 4, 8, ...
    assert lim.wait_s("1.2.3.4") == 2 and lim.wait_s("5.6.7.8") == 0
    now[0] += 2
    lim.failed("1.2.3.4")
    assert lim.wait_s("1.2.3.4") == 4
    lim.succeeded("1.2.3.4")
    assert lim.wait_s("1.2.3.4") == 0
    for i in range(5):  # many failing clients: no one else waits, but a new one's first failure now slows it
        lim.failed(f"10.0.0.{i}")
    assert lim.wait_s("9.9.9.9") == 0 and lim.wait_s("10.0.0.4") == 2


def test_passwords_and_clock():
    assert check_password("s3cret", "s3cret") and not check_password("s3cre", "s3cret")
    assert not check_password("", "") and not check_password("x", None)
    assert _clock("1800000000.5") == 1800000000.5 and _clock(0) is None and _clock("abc") is None


def test_build_study_demo_builds_the_gradio_page(tiny, tmp_path, monkeypatch):
    pytest.importorskip("gradio")
    import gradio as gr

    from interactive_ir.study.ui import build_study_demo

    monkeypatch.setenv("IIR_STUDY_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("IIR_STUDY_ADMIN_PASSWORD", "Vq8-2mZr!xT4pL")
    r, ids, caps = tiny
    study_file = tmp_path / "s.yaml"
    study_file.write_text(f"study_id: built\nconditions: {{A: text, B: feedback}}\ntasks: [{ids[0]}, {ids[1]}]\n")
    engine = build_engine(r)
    demo = build_study_demo(engine, ["note"], study_file)  # the order app.py uses
    assert isinstance(demo, gr.Blocks) and (tmp_path / "data" / "built.sqlite").is_file()
    demo2 = build_study_demo(engine, study_file, ["note"])  # the order of the brief
    assert isinstance(demo2, gr.Blocks)
    # a closed tab's records go at once (issue 29: Gradio kept them an hour, its queue's for ever)
    assert any(t[1] == "unload" for fn in demo.fns.values() for t in fn.targets)
    monkeypatch.setenv("IIR_STUDY_ADMIN_PASSWORD", "change-me")  # the old README example
    with pytest.raises(BadInputError, match="example password"):
        build_study_demo(engine, ["note"], study_file)


def test_the_question_panel_keeps_the_dialogue_in_view():
    from interactive_ir.core.session import Session, Turn
    from interactive_ir.study.page.render import question_html
    from interactive_ir.study.runner import Progress

    s = Session(description="a dog", turns=[
        Turn(round=0, kind="describe", user_text="a dog", question="Is it <b>big</b>?"),
        Turn(round=1, kind="answer", user_text="yes, huge", answered_question="Is it <b>big</b>?")],
        pending_question="What colour is it?")
    html = question_html(Progress(participant="p1", number=0, plan=[], session=s))
    assert html.index("Is it &lt;b&gt;big&lt;/b&gt;?") < html.index("yes, huge") < html.index("What colour is it?")


def test_the_study_dialogue_shows_a_clicked_pictures_caption_in_plain_words():
    """A picture answer is recorded with the index's caption; the participant reads plain words (issue 39)."""
    from interactive_ir.core.session import Session, Turn
    from interactive_ir.study.page.render import question_html
    from interactive_ir.study.runner import Progress

    raw = "clipart of mosquito; keywords: animals, bugs"
    s = Session(description="a bug", turns=[
        Turn(round=0, kind="describe", user_text="a bug"),
        Turn(round=1, kind="answer", user_text=f"closest to: {raw}", answered_question="Which is closest to your image?",
             extra={"choice": {"image_id": "m.png", "label": raw}})])
    html = question_html(Progress(participant="p1", number=0, plan=[], session=s))
    assert "closest to: Mosquito" in html or "closest to: mosquito" in html, html
    assert "keywords" not in html and "clipart of" not in html


def test_a_closed_study_and_the_next_participant_button(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path)
    tok, tab = page.act("join", "", TabState(), True)
    tok, tab = page.act("leave", tok, tab)  # lab study: "Next participant" forgets this browser's token
    assert tok == "" and page.view(tok, tab).phase == "start"
    closed, _ = make_page(tiny, tmp_path / "closed", closes_at="2020-01-01T00:00:00Z")
    v = closed.view("", TabState())
    assert v.phase == "start" and not v.can_join and "closed and takes no new participants" in v.status
    _, tab = closed.act("join", "", TabState(), True)
    assert "closed" in tab.notice and closed.runner.log.participants("ui") == []
    # someone enrolled before the study closed comes back after it: told their answers are saved and what to do
    later, _ = make_page(tiny, tmp_path / "later", closes_at="2030-01-01T00:00:00Z")
    tok, tab = later.act("join", "", TabState(), True)
    later.runner.clock = lambda: 1_900_000_000.0  # 2030-03
    v = later.view(tok, TabState())
    assert v.phase == "briefing" and "closed: your answers so far are saved" in v.status
    tok, tab = later.act("start", tok, TabState())
    assert "answers so far are saved" in tab.notice and later.runner.progress(later.who(tok)).phase == "briefing"


def test_question_options_are_clicked_on_the_page(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path, tasks=tiny[1][:1], conditions={
        "G": {"mode": "plugir", "settings": {"plugir": {"questioner": "grounded"}}}})
    pid, tab = page.act("join", "", TabState(), True, client_ts=NOW)
    pid, tab = page.act("start", pid, tab)
    pid, tab = page.act("describe", pid, tab, "a red dog", client_ts=NOW + 1)
    assert "writing a question" in page.view(pid, tab).question  # results first, the question step after
    pid, tab = page.act("ask", pid, tab, client_ts=NOW + 2)
    p = page.runner.progress(page.who(pid))
    q = p.session.question
    assert q.kind in ("choice", "yesno") and q.options
    v = page.view(pid, tab)
    assert v.question.count('data-action="choose"') == len(q.options) and not v.show_answer
    assert f'data-question="{q.text}"' in v.question.replace("&#x27;", "'")
    if q.kind == "choice":
        assert v.question.count("<img") == sum(bool(o.image_id) for o in q.options) > 0
    pid, tab = page.act("choose", pid, tab, "0", q.text, str(q.round), client_ts=NOW + 3)
    p = page.runner.progress(page.who(pid))
    assert tab.notice == "" and p.rounds_used == 1 and p.session.turns[-1].answered_question == q.text
    assert "writing a question" in page.view(pid, tab).question
    pid, tab = page.act("ask", pid, tab, client_ts=NOW + 4)
    assert page.view(pid, tab).question.count('data-action="choose"') >= 2
    # a click on the question already answered: a plain message, nothing changes
    pid, tab = page.act("choose", pid, tab, "0", q.text, str(q.round), client_ts=NOW + 5)
    assert "no longer open" in tab.notice and not tab.notice.startswith("⚠️")
    assert page.runner.progress(page.who(pid)).rounds_used == 1


def test_llm_questions_keep_the_answer_box(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path, tasks=tiny[1][:1], conditions={
        "L": {"mode": "plugir", "settings": {"plugir": {"questioner": "llm"}}}})
    pid, tab = page.act("join", "", TabState(), True, client_ts=NOW)
    pid, tab = page.act("start", pid, tab)
    pid, tab = page.act("describe", pid, tab, "a red dog", client_ts=NOW + 1)
    pid, tab = page.act("ask", pid, tab, client_ts=NOW + 2)
    v = page.view(pid, tab)
    assert page.runner.progress(page.who(pid)).session.pending_question
    assert v.show_answer and 'data-action="choose"' not in v.question


def test_a_yes_no_question_is_two_buttons(tiny, tmp_path):
    page, caps = make_page(tiny, tmp_path, tasks=tiny[1][:1], conditions={
        "Y": {"mode": "plugir", "settings": {"plugir": {"questioner": "grounded", "grounded_style": "yesno"}}}})
    pid, tab = page.act("join", "", TabState(), True, client_ts=NOW)
    pid, tab = page.act("start", pid, tab)
    pid, tab = page.act("describe", pid, tab, "a red dog", client_ts=NOW + 1)
    pid, tab = page.act("ask", pid, tab, client_ts=NOW + 2)
    q = page.runner.progress(page.who(pid)).session.question
    # the tiny index's captions always share words to split on: no yes/no question is a bug, not a skip
    assert q is not None and q.kind == "yesno", q
    v = page.view(pid, tab)
    assert v.question.count('data-action="choose"') == 2 and "<img" not in v.question and not v.show_answer
    assert ">Yes<" in v.question and ">No<" in v.question
    pid, tab = page.act("choose", pid, tab, "1", q.text, str(q.round), client_ts=NOW + 3)
    p = page.runner.progress(page.who(pid))
    assert tab.notice == "" and p.rounds_used == 1 and p.session.turns[-1].user_text == q.options[1].label
    pid, tab = page.act("choose", pid, tab, "7", "", "", client_ts=NOW + 4)  # no question pending yet
    assert "no longer open" in tab.notice and page.runner.progress(page.who(pid)).rounds_used == 1


def test_the_served_study_logs_with_an_fsync_per_event(tiny, tmp_path, monkeypatch):
    """`make_runner` without a log (what the served study page does) opens the study database with
    synchronous=FULL: an acknowledged event survives a power loss (issue 31, item 3)."""
    monkeypatch.setenv("IIR_STUDY_DIR", str(tmp_path / "studies"))
    monkeypatch.delenv("IIR_STUDY_SYNCHRONOUS", raising=False)
    r, ids, _ = tiny
    runner = make_runner(build_engine(r, llm=FakeLLM()), parse_study({"study_id": "durable", "rounds": 1, "k": 4,
                                                                       "conditions": {"F": "feedback"},
                                                                       "tasks": ids[:1]}))
    assert runner.log.synchronous == "FULL"
    assert runner.log._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # 2 = FULL in SQLite


def test_an_age_out_of_range_gets_the_pages_sentence_not_gradios_error():
    """Gradio's own range check answered an age of 12 with "Error: Value 12 is less than minimum value 16."; the
    page's number input leaves the range to the questionnaire's check, which says what to do (issue 39)."""
    import gradio as gr

    from interactive_ir.errors import BadInputError
    from interactive_ir.study.config_types import Question
    from interactive_ir.study.page.layout import _form_input
    from interactive_ir.study.questionnaire import check_one

    q = Question(id="age", text="Your age", type="number", minimum=16, maximum=120)
    box = _form_input(gr, q)
    assert box.preprocess(12) == 12  # no Gradio error before the page's handler
    assert "16" in box.info and "120" in box.info
    with pytest.raises(BadInputError, match="Your age: give a number from 16 to 120"):
        check_one(q, 12)
