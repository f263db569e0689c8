"""Standard instruments against worked examples of their published scoring, and the study-file sections
that use them (questionnaires, recruitment, time limits, practice)."""

from __future__ import annotations

import pytest

from interactive_ir.errors import BadInputError
from interactive_ir.study.config import StudyConfigError, parse_study
from interactive_ir.study.instruments import instrument_items, score_form, sus_score, tlx_raw, ueq_s_scores
from interactive_ir.study.questionnaire import attention_results, check_answers, screened_out
from interactive_ir.study.recruitment import LinkError, end_message, read_arrival


def sus(*answers):
    return {f"sus_{i}": a for i, a in enumerate(answers, 1)}


def test_sus_worked_examples():
    # odd items score answer-1, even items 5-answer; the sum times 2.5
    # 4,1,5,1,4,2,5,1,4,1: odd 3+4+3+4+3 = 17, even 4+4+3+4+4 = 19, (17+19) * 2.5 = 90
    assert sus_score(sus(4, 1, 5, 1, 4, 2, 5, 1, 4, 1)) == 90.0
    # 3,3,...: every item contributes 2: 20 * 2.5 = 50
    assert sus_score(sus(*[3] * 10)) == 50.0
    assert sus_score(sus(5, 1, 5, 1, 5, 1, 5, 1, 5, 1)) == 100.0 and sus_score(sus(1, 5, 1, 5, 1, 5, 1, 5, 1, 5)) == 0.0
    # agreeing with everything: odd 4*5 = 20, even 0: 50 (the classic acquiescence check)
    assert sus_score(sus(*[5] * 10)) == 50.0


def test_raw_tlx_is_the_mean_of_the_six_subscales():
    a = {"tlx_mental": 70, "tlx_physical": 10, "tlx_temporal": 40, "tlx_performance": 25, "tlx_effort": 60,
         "tlx_frustration": 30}
    assert tlx_raw(a) == pytest.approx(235 / 6)
    items = instrument_items("nasa_tlx")
    perf = next(q for q in items if q.id == "tlx_performance")
    assert (perf.low_label, perf.high_label) == ("perfect", "failure")  # higher is worse on every subscale
    assert all(q.minimum == 0 and q.maximum == 100 and q.step == 5 for q in items)


def test_ueq_s_maps_answers_to_minus_3_plus_3():
    a = {f"ueqs_{i}": v for i, v in enumerate([7, 6, 5, 4, 3, 2, 1, 4], 1)}
    # pragmatic: 3, 2, 1, 0 -> 1.5; hedonic: -1, -2, -3, 0 -> -1.5; overall 0
    assert ueq_s_scores(a) == {"ueqs_pragmatic": 1.5, "ueqs_hedonic": -1.5, "ueqs_overall": 0.0}
    assert [q.low_label for q in instrument_items("ueq_s")][:2] == ["obstructive", "complicated"]


def test_a_form_is_checked_then_scored():
    items = instrument_items("sus") + instrument_items("ueq_s")
    answers = {**sus(4, 1, 5, 1, 4, 2, 5, 1, 4, 1), **{f"ueqs_{i}": 4 for i in range(1, 9)}}
    clean = check_answers(items, answers)
    assert score_form(items, clean) == {"sus": 90.0, "ueqs_pragmatic": 0.0, "ueqs_hedonic": 0.0,
                                        "ueqs_overall": 0.0}
    with pytest.raises(BadInputError, match=r"please answer question 3 of 18 \(I thought the system was easy to use\): choose a number from 1"):
        check_answers(items, {**answers, "sus_3": None})
    # a UEQ-S item says which it is and what to do, not only its two words
    with pytest.raises(BadInputError, match=r"question 11 of 18 \(obstructive \.\.\. supportive\): choose a number "
                                            r"from 1 \(obstructive\) to 7 \(supportive\)"):
        check_answers(items, {**answers, "ueqs_1": None})
    with pytest.raises(BadInputError, match="from 1 to 7"):
        check_answers(items, {**answers, "ueqs_1": 8})
    tlx = instrument_items("nasa_tlx")
    with pytest.raises(BadInputError, match="steps of 5"):
        check_answers(tlx, {q.id: 42 for q in tlx})


def base(**changes):
    d = {"study_id": "s", "conditions": {"A": "text", "B": "feedback"}, "tasks": ["a.png", "b.png"]}
    d.update(changes)
    return d


def test_questionnaires_attention_checks_and_screening():
    s = parse_study(base(questionnaires={
        "after_task": [{"id": "effective", "text": "Effective?"}],
        "after_condition": ["sus", "nasa_tlx"],
        "end": ["ueq_s", "demographics",
                {"id": "attn", "text": "To show you read this, choose 2", "answer": 2},
                {"id": "vision", "text": "Normal or corrected vision?", "type": "choice", "options": ["yes", "no"],
                 "screen_out": "no"}]}))
    assert [q.id for q in s.after_condition][:2] == ["sus_1", "sus_2"] and len(s.after_condition) == 16
    assert len(s.end_questions) == 8 + 3 + 2
    assert attention_results(s.end_questions, {"attn": 3}) == {"attn": False}
    assert screened_out(s.end_questions, {"vision": "no"}) == ["vision"]


@pytest.mark.parametrize("changes, message", [
    ({"questionnaires": {"end": ["sus", "sux"]}}, "questionnaires.end[1]: instrument: 'sux' is not one of"),
    ({"questionnaires": {"after_condition": ["sus", "sus"]}}, "sus is listed twice"),
    ({"questionnaires": {"end": []}, "questions": []}, "not both"),
    ({"time_limit_s": 0}, "time_limit_s: 0 is out of range"),
    ({"tasks": [{"target": "a.png", "time_limit_s": 0}, "b.png"]}, "tasks[0].time_limit_s: 0 is out of range"),
    ({"recruitment": {"platform": "prolific"}}, "completion_code: missing"),
    ({"recruitment": {"platform": "prolific", "completion_code": "C1", "completion_url": "http://x.org/?cc={code}"}},
     "not an https URL"),
    ({"recruitment": {"platform": "mturk", "completion_code": "<b>x</b>"}}, "not a valid code"),
    ({"recruitment": {"platform": "upwork"}}, "recruitment.platform: 'upwork' is not one of"),
    ({"practice": "a.png"}, "practice.target: 'a.png' is also a task"),
    ({"closes_at": "next tuesday"}, "closes_at: 'next tuesday' is not a date"),
    ({"questionnaires": {"end": [{"id": "a", "text": "t", "answer": 9}]}}, "answer: t: choose a number from 1 to 5"),
])
def test_bad_sections_name_the_field(changes, message):
    with pytest.raises(StudyConfigError) as e:
        parse_study(base(**changes))
    assert message in str(e.value)


def test_recruitment_links():
    rec = parse_study(base(recruitment={"platform": "prolific", "completion_code": "C1A2", "no_consent_code": "NOC",
                                        "screened_out_code": "SCR"})).recruitment
    a = read_arrival(rec, {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "st", "SESSION_ID": "se",
                           "other": "ignored"})
    assert a.id == "5f1a2b3c4d5e6f7a8b9c0d1e" and a.params == {"PROLIFIC_PID": a.id, "STUDY_ID": "st",
                                                               "SESSION_ID": "se"}
    assert "https://app.prolific.com/submissions/complete?cc=C1A2" in end_message(rec, "completed")
    assert "cc=NOC" in end_message(rec, "no_consent") and "SCR" in end_message(rec, "screened_out")
    with pytest.raises(LinkError, match="PROLIFIC_PID is missing"):
        read_arrival(rec, {})
    for bad in ("<script>alert(1)</script>", "x" * 10_000):
        with pytest.raises(LinkError) as e:
            read_arrival(rec, {"PROLIFIC_PID": bad})
        assert "<" not in str(e.value) and len(str(e.value)) < 300 and "open the study again from Prolific" in str(
            e.value)
    mt = parse_study(base(recruitment={"platform": "mturk", "completion_code": "MT1"})).recruitment
    assert read_arrival(mt, {"workerId": "A1B2C3", "assignmentId": "3X", "hitId": "H1"}).params["hitId"] == "H1"
    with pytest.raises(LinkError, match="previewing this HIT"):
        read_arrival(mt, {"workerId": "A1", "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"})
    assert "into the HIT" in end_message(mt, "completed")
    assert read_arrival(parse_study(base()).recruitment, {"PROLIFIC_PID": "<x>"}).id == ""  # lab study: ignored
