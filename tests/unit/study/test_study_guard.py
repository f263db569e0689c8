"""Issue 29, item 4: study mode against anonymous clients and odd text: a lone surrogate is stored, not a
crash; one address cannot enrol participants by the dozen; a recruitment id can neither be probed nor locked."""

from __future__ import annotations

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import StudyLog
from interactive_ir.study.page.guard import StudyGuard, study_guard
from interactive_ir.study.page.logic import StudyPage
from interactive_ir.study.page.render import TabState
from interactive_ir.study.ui import make_runner

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def make_page(tiny, tmp_path, guard=None, **changes):
    r, ids, _ = tiny
    d = {"study_id": "h", "rounds": 2, "k": 4, "conditions": {"M": "mixed"}, "tasks": ids[:2]}
    d.update(changes)
    runner = make_runner(build_engine(r, llm=FakeLLM()), parse_study(d), StudyLog(tmp_path / "h.sqlite"))
    return StudyPage(runner, guard=guard)


def test_a_lone_surrogate_in_a_description_is_logged_not_a_crash(tiny, tmp_path):
    page = make_page(tiny, tmp_path)
    tok, tab = page.act("join", "", TabState(), True)
    tok, tab = page.act("start", tok, tab)
    tok, tab = page.act("describe", tok, tab, "a red \ud800 dog")
    assert tab.notice == ""  # was: "Something went wrong (UnicodeEncodeError)", nothing logged
    texts = [e.payload["text"] for e in page.runner.log.events("h", types=("description",))]
    assert texts == ["a red \ufffd dog"]
    tok, tab = page.act("submit", tok, tab, {"q\udfff": "x\ud800"})  # any action's text, also in a form
    assert "UnicodeEncodeError" not in tab.notice


def test_the_log_stores_any_string(tmp_path):
    from interactive_ir.study.log import _json

    assert _json({"t": "a\ud800b"}) == '{"t": "a\\ud800b"}' and _json({"t": "é"}) == '{"t": "é"}'


def test_one_address_cannot_enrol_participants_by_the_dozen(tiny, tmp_path):
    page = make_page(tiny, tmp_path, guard=StudyGuard(joins_per_client=10, join_window_s=600))
    tokens = []
    for _ in range(40):  # the probe of issue 29: one anonymous client, 40 joins in 7.7 s
        tab = TabState(client="203.0.113.7")
        tok, tab = page.act("join", "", tab, True)
        tokens.append(tok)
    assert sum(bool(t) for t in tokens) == 10 and len(page.runner.log.participants("h")) == 10
    assert "try again in 10 min" in tab.notice
    tok, tab = page.act("join", "", TabState(client="198.51.100.3"), True)  # another address is not held back
    assert tok and tab.notice == ""
    unlimited = make_page(tiny, tmp_path / "u", guard=StudyGuard(joins_per_client=0))
    assert all(unlimited.act("join", "", TabState(client="10.0.0.1"), True)[0] for _ in range(12))
    assert study_guard({"IIR_STUDY_JOINS_PER_CLIENT": "50"}).joins_per_client == 50


def test_a_known_recruitment_id_answers_like_an_unknown_one(tiny, tmp_path):
    page = make_page(tiny, tmp_path, recruitment={"platform": "prolific", "completion_code": "C0DE1"})

    def join(pid):
        tab = TabState(client="192.0.2.1")
        page.arrive(tab, {"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": "x"})
        tok, tab = page.act("join", "", tab, True)
        v = page.view(tok, tab)
        return tok, (v.phase, v.status, v.header.replace(page.who(tok) or "-", "P"), v.brief)

    first, _ = join(PID)  # the real participant
    page.act("start", first, TabState())
    seen_before = join(PID)  # an attacker who knows the id pre-enrols it ...
    never_seen = join("0" * 24)
    assert seen_before[1] == never_seen[1] and seen_before[0]  # ... and learns nothing: the same page
    later, page_of_later = join(PID)  # and the person can still take part
    assert later and page_of_later[0] == "briefing"
    repeats = [page.runner.progress(p["participant"]).recruit.get("repeat") for p in page.runner.log.participants("h")]
    assert repeats == [None, True, None, True]  # each attempt is recorded, as a repeat
    assert [r[-1] for r in page.admin_view()[1]] == [PID, PID + " (repeat)", "0" * 24, PID + " (repeat)"]
