"""The participant state machine driven through the real engine (fake embedder and LLM) into SQLite."""

from __future__ import annotations

import threading

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.study.config import StudyConfigError, parse_study
from interactive_ir.study.log import StudyLog
from interactive_ir.study.runner import StaleQuestionError, StudyRunner

QUESTIONS = [{"id": "effective", "text": "The system was effective"},
             {"id": "efficient", "text": "The system was efficient"},
             {"id": "comments", "text": "Comments", "type": "text", "required": False}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def make_study(ids, **changes):
    d = {"study_id": "t", "rounds": 2, "k": 5, "questions": QUESTIONS,
         "conditions": {"A": {"mode": "plugir"}, "B": {"mode": "feedback", "feedback_method": "rocchio"},
                        "C": {"mode": "composed", "composed_method": "compose"}, "D": {"mode": "text"}},
         "tasks": ids[:8]}
    d.update(changes)
    return parse_study(d)


def make_runner(tiny, tmp_path, llm="fake", **changes):
    r, ids, caps = tiny
    engine = build_engine(r, llm=FakeLLM() if llm == "fake" else llm)
    log = StudyLog(tmp_path / "t.sqlite")
    return StudyRunner(make_study(ids, **changes), engine, log), log, caps


def simulate(runner, pid, caps, ratings=(4, 3)):
    """A participant who describes the target with its caption, searches by the condition's mode, picks the
    target when it is shown, and gives up when the budget is used."""
    runner.consent(pid, True)
    outcomes = []
    while runner.progress(pid).phase == "briefing":
        p = runner.start_task(pid)
        target = p.current.task.target
        mode = runner.condition_of(p).modes[0]
        turn = runner.describe(pid, caps[target][0])
        while target not in runner.progress(pid).session.shown_ids() and runner.progress(pid).can_search:
            if mode == "conversation":
                runner.answer(pid, "yes, " + caps[target][1])
            elif mode == "feedback":
                runner.feedback(pid, [turn.shown[0]], turn.shown[1:3])
            elif mode == "composed":
                runner.relative(pid, caps[target][1])
            else:
                runner.search(pid, caps[target][1])
        if target in runner.progress(pid).session.shown_ids():
            assert runner.pick(pid, target) is True
            outcomes.append("found")
        else:
            outcomes.append(runner.give_up(pid).ended)
        runner.submit_questionnaire(pid, {"effective": ratings[0], "efficient": str(ratings[1]), "comments": "ok"})
    return outcomes


def test_full_simulated_participant_run(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path)
    p = runner.enrol("alice")
    assert p.phase == "consent" and p.number == 0 and p.total == 8
    outcomes = simulate(runner, "alice", caps)
    assert runner.progress("alice").phase == "done"
    assert set(outcomes) <= {"found", "give_up", "budget_exhausted"} and len(outcomes) == 8

    events = log.events("t", "alice")
    types = [e.type for e in events]
    assert types[:2] == ["enrol", "consent"] and types[-1] == "study_end"
    assert types.count("task_start") == types.count("questionnaire") == 8
    assert sum(types.count(t) for t in ("found", "give_up", "budget_exhausted")) == 8
    # every task: its condition from the plan, and rounds 0..n logged in order with the target's rank
    plan = {a.position: a for a in runner.progress("alice").plan}
    for pos in range(1, 9):
        task_events = [e for e in events if e.task == pos]
        assert {e.condition for e in task_events} == {plan[pos].condition}
        assert {e.target for e in task_events} == {plan[pos].task.target}
        results = [e for e in task_events if e.type == "results"]
        assert [e.round for e in results] == list(range(len(results))) and 1 <= len(results) <= 3
        for e in results:
            rank = e.payload["target_rank"]
            assert isinstance(rank, int) and 1 <= rank <= 24 and len(e.payload["shown"]) == 5
            assert "retrieve" in e.payload["timings"] and "total" in e.payload["timings"]
        r0 = results[0].payload  # round 0 excludes nothing: the page is the top of the collection ranking
        if r0["target_position"] is not None:
            assert r0["target_rank"] == r0["target_position"]
        else:
            assert r0["target_rank"] > 5
    # conversation tasks show questions and log the LLM calls with latencies
    conv = [e for e in events if e.condition == "A"]
    assert any(e.type == "question_shown" and e.payload["question"] for e in conv)
    llm = [m for e in conv if e.type == "results" for m in e.payload["model_latencies"]]
    assert llm and all(m["latency_s"] is not None for m in llm)
    q = [e for e in events if e.type == "questionnaire"]
    assert all(e.payload["answers"] == {"effective": 4, "efficient": 3, "comments": "ok"} for e in q)
    found = [e for e in events if e.type == "found"]
    for e in found:
        assert e.payload["time_s"] >= 0 and e.payload["position"] >= 1


def test_feedback_and_composed_inputs_are_logged(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path, conditions={"B": {"mode": "mixed"}}, tasks=tiny[1][:2])
    runner.enrol("bob")
    runner.consent("bob", True)
    runner.start_task("bob")
    t0 = runner.describe("bob", "a red dog")
    runner.click("bob", t0.shown[2], "open")
    runner.feedback("bob", [t0.shown[0]], [t0.shown[1]])
    runner.relative("bob", "but blue", reference=t0.shown[2])
    ev = {e.type: e for e in log.events("t", "bob")}
    assert ev["click"].payload == {"image_id": t0.shown[2], "action": "open",
                                   "is_target": t0.shown[2] == tiny[1][0]}
    assert ev["feedback"].payload == {"relevant": [t0.shown[0]], "irrelevant": [t0.shown[1]]}
    assert ev["reference"].payload == {"reference": t0.shown[2], "default": False}
    assert ev["relative_caption"].payload == {"text": "but blue"} and ev["relative_caption"].round == 2
    with pytest.raises(SessionError, match="round budget \\(2\\) is used up"):
        runner.answer("bob", "anything")
    assert log.events("t", "bob")[-1].type == "error"
    assert runner.give_up("bob").ended == "budget_exhausted"


def test_budget_and_picks(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path, rounds=1, conditions={"D": "text"}, tasks=tiny[1][:1])
    runner.enrol("c")
    runner.consent("c", True)
    p = runner.start_task("c")
    target = p.current.task.target
    with pytest.raises(SessionError, match="describe the image"):
        runner.search("c", "anything")
    turn = runner.describe("c", "zzz unrelated words")
    with pytest.raises(SessionError, match="first description was already given"):
        runner.describe("c", "again")
    runner.search("c", "more unrelated words")
    assert runner.progress("c").rounds_used == 1 and not runner.progress("c").can_search
    with pytest.raises(SessionError, match="budget \\(1\\) is used up"):
        runner.search("c", "one more")
    wrong = next(i for i in runner.progress("c").session.shown_ids() if i != target)
    assert runner.pick("c", wrong) is False
    with pytest.raises(SessionError, match="was not shown"):
        runner.pick("c", "never-shown.png")
    assert runner.progress("c").wrong_picks == 1
    ended = runner.give_up("c")
    assert ended.ended == "budget_exhausted" and ended.phase == "questionnaire"
    with pytest.raises(SessionError, match="not available now"):
        runner.search("c", "x")
    types = [e.type for e in log.events("t", "c")]
    assert types.count("error") == 3 and "wrong_pick" in types and types[-1] == "budget_exhausted"
    assert turn.round == 0


def test_engine_errors_leave_the_session_unchanged(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path)
    runner.enrol("d")
    runner.consent("d", True)
    runner.start_task("d")
    with pytest.raises(BadInputError, match="description is empty"):
        runner.describe("d", "   ")
    p = runner.progress("d")
    assert p.session.turns == [] and p.phase == "search"
    err = log.events("t", "d")[-1]
    assert err.type == "error" and err.payload["action"] == "description" and "empty" in err.payload["message"]
    assert runner.describe("d", "a dog").round == 0  # still usable


def test_llm_failure_is_logged_and_the_task_goes_on(tiny, tmp_path):
    def responder(text):
        raise RuntimeError("model server down")

    runner, log, caps = make_runner(tiny, tmp_path, llm=FakeLLM(responder=responder), conditions={"A": "plugir"},
                                    tasks=tiny[1][:1])
    runner.enrol("e")
    runner.consent("e", True)
    runner.start_task("e")
    turn = runner.describe("e", "a dog")
    assert turn.shown and turn.error
    errors = [e for e in log.events("t", "e") if e.type == "error"]
    assert errors and "model server down" in errors[0].payload["message"]


def test_resume_after_restart(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path)
    runner.enrol("f")
    runner.consent("f", True)
    runner.start_task("f")
    runner.describe("f", "a green dog")
    before = runner.progress("f")
    pending = before.session.pending_question
    assert pending  # the plugir condition comes first for participant 0
    # a new server process: a fresh runner over the same database
    runner2 = StudyRunner(runner.study, runner.engine, StudyLog(tmp_path / "t.sqlite"))
    p = runner2.enrol("f")
    assert (p.phase, p.index, p.number) == ("search", 0, 0)
    assert p.session.to_dict() == before.session.to_dict() and p.session.pending_question == pending
    assert p.started_at == before.started_at
    runner2.answer("f", "yes")
    runner2.give_up("f")
    runner3 = StudyRunner(runner.study, runner.engine, StudyLog(tmp_path / "t.sqlite"))
    p = runner3.progress("f")
    assert p.phase == "questionnaire" and p.ended == "give_up" and len(p.session.turns) == 2
    runner3.submit_questionnaire("f", {"effective": 1, "efficient": 2})
    p = StudyRunner(runner.study, runner.engine, StudyLog(tmp_path / "t.sqlite")).progress("f")
    assert (p.phase, p.index, p.session) == ("briefing", 1, None)
    assert [e.type for e in log.events("t", "f")].count("resume") == 1


def test_questionnaire_validation(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path, conditions={"D": "text"}, tasks=tiny[1][:1])
    runner.enrol("g")
    runner.consent("g", True)
    runner.start_task("g")
    runner.give_up("g")
    for answers, msg in [({"efficient": 3}, "please answer question 1 of 3 \\(The system was effective\\): choose a number"),
                         ({"effective": 6, "efficient": 3}, "choose a number from 1 to 5"),
                         ({"effective": "great", "efficient": 3}, "choose a number from 1 to 5"),
                         ({"effective": 3, "efficient": 3, "colour": 1}, "unknown question 'colour'")]:
        with pytest.raises(BadInputError, match=msg):
            runner.submit_questionnaire("g", answers)
    assert runner.progress("g").phase == "questionnaire"
    p = runner.submit_questionnaire("g", {"effective": "5 (strongly agree)", "efficient": 1})
    assert p.phase == "done"
    q = [e for e in log.events("t", "g") if e.type == "questionnaire"][0]
    assert q.payload["answers"] == {"effective": 5, "efficient": 1, "comments": ""}
    assert q.payload["ended"] == "give_up"


def test_consent_declined(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path)
    runner.enrol("h")
    assert runner.consent("h", False).phase == "declined"
    with pytest.raises(SessionError, match="not available now"):
        runner.start_task("h")
    assert runner.enrol("h").phase == "declined"


def test_participants_ids_and_numbers(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path)
    a = runner.enrol()
    b = runner.enrol(None)
    assert a.participant != b.participant and a.participant.startswith("P") and (a.number, b.number) == (0, 1)
    assert runner.enrol(a.participant).number == 0
    with pytest.raises(BadInputError, match="not valid"):
        runner.enrol("has space")
    with pytest.raises(SessionError, match="unknown participant"):
        runner.progress("nobody")
    # plans follow the Latin square by enrolment number
    assert [x.condition for x in a.plan][::2] != [x.condition for x in b.plan][::2]


def test_condition_checks(tiny, tmp_path):
    r, ids, caps = tiny
    log = StudyLog(tmp_path / "t.sqlite")
    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig

    no_llm = build_engine(r, plugir=PlugIRConfig(questioner="llm"))  # LLM questions chosen, and no LLM
    with pytest.raises(StudyConfigError, match="conditions.A: the conversation mode asks questions with an LLM"):
        StudyRunner(make_study(ids), no_llm, log)
    with pytest.raises(StudyConfigError, match="conditions.C.composed_method: imagescope needs an LLM"):
        StudyRunner(make_study(ids, conditions={"C": {"mode": "composed", "composed_method": "imagescope"}}),
                    no_llm, log)
    with pytest.raises(StudyConfigError, match="conditions.B.feedback_method: cot needs an LLM"):
        StudyRunner(make_study(ids, conditions={"B": {"mode": "feedback", "feedback_method": "cot"}}), no_llm, log)
    with pytest.raises(StudyConfigError, match="conditions.D.settings.plugir.n_qestions: unknown setting"):
        StudyRunner(make_study(ids, conditions={"D": {"mode": "text", "settings": {"plugir": {"n_qestions": 2}}}}),
                    no_llm, log)
    with pytest.raises(StudyConfigError, match="tasks: 1 target"):
        StudyRunner(make_study(ids, conditions={"D": "text"}, tasks=["nope.png"]), no_llm, log)
    run = StudyRunner(make_study(ids, conditions={"D": {"mode": "text", "k": 3},
                                                  "E": {"mode": "text", "settings": {"plugir": {"n_questions": 2}}}}),
                      no_llm, log)
    d, e = run.study.conditions
    assert run.engine_of(d).config.k == 3 and run.engine_of(e).config.k == 5
    assert run.engine_of(e).mode_configs["plugir"].n_questions == 2
    assert no_llm.config.k == 10  # the shared engine is untouched


def test_concurrent_participants(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path, conditions={"B": {"mode": "feedback", "feedback_method": "rocchio"},
                                                                "D": "text"}, tasks=tiny[1][:4])
    pids = [f"u{i}" for i in range(4)]
    for pid in pids:
        runner.enrol(pid)
    errors, results = [], {}

    def go(pid):
        try:
            results[pid] = simulate(runner, pid, caps)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=go, args=(pid,)) for pid in pids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for pid in pids:
        types = [e.type for e in log.events("t", pid)]
        assert types.count("task_start") == 4 and types[-1] == "study_end"
        assert runner.progress(pid).phase == "done"
    assert sorted(p["number"] for p in log.participants("t")) == [0, 1, 2, 3]


def test_noted_rows_are_the_searched_rows_and_match_the_rebuilt_rows(tiny, tmp_path):
    """The rank uses the row the engine searched with (`Turn.query_row`, as a spy around the retriever sees
    it); the rebuild from the turn (the fallback) agrees, the answer after a relative round included (it
    carries that round's row)."""
    import numpy as np
    from rank_spy import SpyRetriever

    from interactive_ir.study.ranks import query_row, target_rank

    runner, log, caps = make_runner(tiny, tmp_path, rounds=3, conditions={"M": "mixed", "D": "text"},
                                    tasks=tiny[1][:2])
    runner.enrol("z")
    runner.consent("z", True)
    runner.start_task("z")
    p = runner.progress("z")
    engine = runner.engine_of(runner.condition_of(p))
    spy = SpyRetriever(engine.core.retriever)
    engine.core.retriever = spy
    spied = {}
    engine.add_record_hook(lambda session, turn: spied.__setitem__(id(turn), spy.last_row))
    target = p.current.task.target
    turns = [runner.describe("z", "a red dog on the beach")]
    turns.append(runner.feedback("z", [turns[0].shown[0]], [turns[0].shown[1]]))
    turns.append(runner.relative("z", "but in the snow", reference=turns[1].shown[0]))
    turns.append(runner.answer("z", "yes, a horse"))
    session = runner.progress("z").session
    ranks = [e.payload["target_rank"] for e in log.events("t", "z", types=["results"])]
    assert len(ranks) == len(turns)
    for turn, logged in zip(turns, ranks):
        searched = spied[id(turn)]
        assert searched is not None and logged == spy.rank_of(searched, target)
        assert np.array_equal(query_row(engine, session, turn), searched)  # the row the turn noted
        turn.query_row = None  # now rebuilt from the turn (one relative round: its history is its row)
        assert query_row(engine, session, turn) is not None
        assert target_rank(engine, session, turn, target) == logged


def test_concurrent_sessions_keep_their_own_rows(tiny):
    """One engine shared by threads: each turn notes the row of its own search (what the per-thread rank
    probe kept apart before)."""
    import numpy as np

    r, ids, caps = tiny
    engine = build_engine(r)
    texts = {t: f"a {['red', 'blue', 'green', 'white'][t]} dog number {t}" for t in range(4)}
    barrier = threading.Barrier(4)
    got = {}

    def work(t):
        session = engine.new_session()
        barrier.wait()  # every thread searches at once
        got[t] = engine.search_text(session, texts[t]).query_row

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in range(4):
        assert np.array_equal(got[t], r.text_query_row(r.encode_text(texts[t])))


def test_choose_an_option_of_a_grounded_question(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path, conditions={
        "G": {"mode": "plugir", "settings": {"plugir": {"questioner": "grounded"}}}})
    pid = "gina"
    runner.enrol(pid)
    runner.consent(pid, True)
    p = runner.start_task(pid)
    runner.describe(pid, caps[p.current.task.target][0])
    q = runner.progress(pid).session.question
    assert q is not None and q.kind in ("choice", "yesno") and len(q.options) >= 2
    with pytest.raises(StaleQuestionError):  # a question other than the pending one: refused, nothing changes
        runner.choose(pid, 0, "Is it a different question?")
    assert runner.progress(pid).rounds_used == 0
    turn = runner.choose(pid, 0, q.text)
    p = runner.progress(pid)
    assert turn.round == 1 and p.rounds_used == 1 and len(p.session.turns) == 2
    assert p.session.turns[-1].answered_question == q.text
    answers = [e for e in log.events("t", p.participant) if e.type == "answer"]
    assert answers[-1].payload["text"] == q.options[0].label and answers[-1].payload["option"] == 0
    assert answers[-1].payload["question"] == q.text and answers[-1].round == 1
    with pytest.raises(StaleQuestionError):  # the answered question (round 0) is no longer pending
        runner.choose(pid, 0, q.text, question_round=q.round)
    assert runner.progress(pid).rounds_used == 1
    with pytest.raises(BadInputError):
        runner.choose(pid, 99, runner.progress(pid).session.question.text)
    assert log.events("t", p.participant)[-1].type == "error" and runner.progress(pid).rounds_used == 1


def test_a_participant_moving_between_two_processes_is_never_served_a_stale_state(tiny, tmp_path):
    """Two replicas (two runners, each with its own connection to one study database): a participant
    served by A, then B, then A again sees on A what B logged."""
    a, log_a, caps = make_runner(tiny, tmp_path)
    r, ids, _ = tiny
    b = StudyRunner(make_study(ids), build_engine(r, llm=FakeLLM()), StudyLog(tmp_path / "t.sqlite"))
    pid = a.enrol().participant
    a.consent(pid, True)
    assert a.progress(pid).phase == "briefing"
    b.start_task(pid)  # on the other replica
    target = b.progress(pid).current.task.target
    assert a.progress(pid).phase == b.progress(pid).phase != "briefing"
    a.describe(pid, caps[target][0])  # back on A: no "not available now", no second task_start
    assert len(b.progress(pid).session.turns) == len(a.progress(pid).session.turns) == 1
    assert [e.type for e in log_a.events("t", pid)].count("task_start") == 1
