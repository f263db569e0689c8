"""Study mode in headless Chromium: `python app.py --study FILE` on the demo gallery with fake models.

A participant goes through consent, two tasks (a mixed condition and a text condition), reloads the page
mid-task and resumes (the browser keeps the participant's token), fills the questionnaires; another
browser sees only the consent page; then the admin page lists them and exports the log.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from app_server import app_process

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 30_000
TARGETS = ["animals_bee_0145.png", "food_cake_0122.png"]
ADMIN_PASSWORD = "browser-Test-pw-7731"


def expect(locator):
    from playwright.sync_api import expect as _expect

    return _expect(locator)


def _serve_study(app_env, tmp: Path, study_yaml: str, study_id: str):
    """`python app.py --study` on `study_yaml`; yields (url, the study's sqlite log)."""
    study = tmp / "study.yaml"
    study.write_text(study_yaml)
    env = {**app_env, "IIR_STUDY_DIR": str(tmp / "data"), "IIR_STUDY_ADMIN_PASSWORD": ADMIN_PASSWORD}
    with app_process(["--study", str(study)], env, tmp / "app.log", timeout=180) as url:
        yield url, tmp / "data" / f"{study_id}.sqlite"


@pytest.fixture(scope="module")
def study_app(browser, app_env, tmp_path_factory):
    yield from _serve_study(
        app_env, tmp_path_factory.mktemp("study"),
        "study_id: browser-study\ntitle: Browser study\nrounds: 2\nk: 6\ncounterbalance: none\nscoreboard: true\n"
        "conditions:\n  A: {mode: mixed, label: System A}\n  B: {mode: text, label: System B}\n"
        f"tasks: [{TARGETS[0]}, {TARGETS[1]}]\n", "browser-study")


@pytest.fixture(scope="module")
def grounded_app(browser, app_env, tmp_path_factory):
    yield from _serve_study(
        app_env, tmp_path_factory.mktemp("grounded"),
        "study_id: grounded-study\ntitle: Grounded study\nrounds: 2\nk: 6\n"
        "conditions:\n  G: {mode: plugir, label: System G, settings: {plugir: {questioner: grounded}}}\n"
        f"tasks: [{TARGETS[0]}]\n", "grounded-study")


def _caption(image_id: str) -> str:
    for line in (ROOT / "assets" / "demo" / "manifest.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["image"] == image_id:
            return row["captions"][0]
    raise KeyError(image_id)


def _card_ids(page) -> list[str]:
    return page.locator("#iir-results .iir-card").evaluate_all("els => els.map(e => e.dataset.id)")


def _finish_task(page, target: str, shot, name: str) -> str:
    """Pick the target if it is on the page, else give up; then answer the questionnaire."""
    if target in _card_ids(page):
        page.locator(f'#iir-results .iir-card[data-id="{target}"] button[data-action="pick"]').click()
        how = "found"
    else:
        page.click("#iir-give-up")
        expect(page.locator("#iir-give-up-yes")).to_be_visible(timeout=TIMEOUT_MS)  # asks first
        page.click("#iir-give-up-yes")
        how = "gave up"
    expect(page.locator("#iir-submit")).to_be_visible(timeout=TIMEOUT_MS)
    shot(page, f"{name}-questionnaire")
    page.locator("#iir-q-effective label").filter(has_text="4").first.click()
    page.locator("#iir-q-efficient label").filter(has_text="3").first.click()
    page.fill("#iir-q-comments textarea", "fine")
    page.click("#iir-submit")
    return how


def test_participant_runs_the_study_and_admin_exports(browser, study_app, shot):
    url, db = study_app
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(url)
    expect(page.locator("#iir-agree")).to_be_visible(timeout=TIMEOUT_MS)  # the consent page comes first
    shot(page, "start")
    page.click("#iir-agree")
    expect(page.locator("#iir-study-header")).to_contain_text("Participant", timeout=TIMEOUT_MS)
    pid = re.search(r"Participant (\S+)", page.locator("#iir-study-header").inner_text()).group(1)

    # task 1: mixed condition (questions, marks, reference)
    expect(page.locator("#iir-start-task")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#iir-study-header")).to_contain_text("Task 1 of 2")
    expect(page.locator("#iir-study-brief-target img")).to_be_visible()
    shot(page, "brief")
    page.click("#iir-start-task")
    page.evaluate("""() => { window.iirBusySeen = false; new MutationObserver(() => {
        if (document.body.classList.contains('iir-busy')) window.iirBusySeen = true; })
        .observe(document.body, {attributes: true}); }""")
    page.fill("#iir-desc textarea", "a cartoon insect")
    page.press("#iir-desc textarea", "Enter")
    expect(page.locator("#iir-results .iir-card")).to_have_count(6, timeout=TIMEOUT_MS)  # results first
    assert page.evaluate("window.iirBusySeen")  # the page's own working state showed while searching
    expect(page.locator("#iir-dialogue")).to_contain_text("System asks", timeout=TIMEOUT_MS)  # then the question
    expect(page.locator("body")).not_to_have_class(re.compile("iir-busy"))
    expect(page.locator("#iir-desc")).to_be_hidden()
    first = _card_ids(page)[0]
    page.locator(f'#iir-results .iir-card[data-id="{first}"] button[data-action="relevant"]').click()
    expect(page.locator(f'#iir-results .iir-card[data-id="{first}"]')).to_have_class("iir-card is-rel",
                                                                                     timeout=TIMEOUT_MS)
    shot(page, "marked")

    page.reload()  # the participant's token is in localStorage: the page resumes mid-task
    expect(page.locator("#iir-results .iir-card")).to_have_count(6, timeout=TIMEOUT_MS)
    expect(page.locator("#iir-study-header")).to_contain_text("Task 1 of 2")
    other = browser.new_context().new_page()  # another browser knows nothing of this participant
    other.goto(url)
    expect(other.locator("#iir-agree")).to_be_visible(timeout=TIMEOUT_MS)
    expect(other.locator("#iir-results .iir-card")).to_have_count(0)
    other.context.close()
    # the mark made before the reload was logged when clicked: it is still there
    expect(page.locator(f'#iir-results .iir-card[data-id="{first}"]')).to_have_class("iir-card is-rel",
                                                                                     timeout=TIMEOUT_MS)
    page.click("#iir-feedback")
    expect(page.locator("#iir-study-budget")).to_contain_text("1 of 2 rounds after your description used", timeout=TIMEOUT_MS)
    page.fill("#iir-caption textarea", "but bigger")
    page.press("#iir-caption textarea", "Enter")
    shot(page, "searching")  # the page's own working note, no overlay on the components
    expect(page.locator("#iir-give-up")).to_have_text("End task", timeout=TIMEOUT_MS)
    expect(page.locator("#iir-earlier")).to_be_attached()  # earlier rounds stay pickable
    expect(page.locator("#iir-study-budget")).to_contain_text("All rounds used")
    shot(page, "budget-used")
    first_how = _finish_task(page, TARGETS[0], shot, "task1")

    # task 2: text condition, described by the target's own caption
    expect(page.locator("#iir-study-header")).to_contain_text("Task 2 of 2", timeout=TIMEOUT_MS)
    page.click("#iir-start-task")
    page.fill("#iir-desc textarea", _caption(TARGETS[1]))
    page.press("#iir-desc textarea", "Enter")
    expect(page.locator("#iir-results .iir-card").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#iir-query")).to_be_visible()
    expect(page.locator("#iir-feedback")).to_be_hidden()
    shot(page, "task2")
    second_how = _finish_task(page, TARGETS[1], shot, "task2")
    expect(page.locator("#iir-study-done")).to_contain_text("Thank you", timeout=TIMEOUT_MS)
    shot(page, "done")
    ctx.close()

    con = sqlite3.connect(db)
    rows = con.execute("SELECT type, task, condition, client_ts FROM events WHERE participant=? ORDER BY id",
                       (pid,)).fetchall()
    con.close()
    types = [r[0] for r in rows if r[0] != "paradata"]  # closing the tab logs it hidden, after the study's end
    assert types[:2] == ["enrol", "consent"] and types[-1] == "study_end"
    assert types.count("resume") >= 1 and types.count("questionnaire") == 2
    assert ("found" if first_how == "found" else "budget_exhausted") in types
    assert {r[2] for r in rows if r[1] == 1} == {"A"} and {r[2] for r in rows if r[1] == 2} == {"B"}
    assert all(r[3] is not None and r[3] > 1e9 for r in rows if r[0] in ("description", "click", "feedback"))
    # task 2 ended as the participant ended it: one end event, of the kind the page was used for
    ends = [r[0] for r in rows if r[1] == 2 and r[0] in ("found", "give_up", "budget_exhausted", "timeout")]
    assert len(ends) == 1 and ends[0] in ({"found"} if second_how == "found" else {"give_up", "budget_exhausted"}), \
        (second_how, ends)

    # the admin page
    admin = browser.new_page()
    admin.goto(url + "admin")
    admin.fill("#iir-admin-password input", "wrong")
    admin.click("#iir-admin-login")
    expect(admin.locator(".toast-body").filter(has_text="Wrong password").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(admin.locator("#iir-admin-summary")).to_be_hidden()
    admin.fill("#iir-admin-password input", ADMIN_PASSWORD)
    admin.click("#iir-admin-login")
    expect(admin.locator("#iir-admin-summary")).to_contain_text("1 finished", timeout=TIMEOUT_MS)
    expect(admin.locator("#iir-admin-table")).to_contain_text(pid)
    admin.click("#iir-admin-export")
    link = admin.locator("#iir-admin-file a").first
    expect(link).to_have_attribute("href", re.compile(r"browser-study\.events\.csv$"), timeout=TIMEOUT_MS)
    href = urllib.parse.urljoin(url + "admin", link.get_attribute("href"))
    with pytest.raises(urllib.error.HTTPError, match="404"):  # another client with the URL: refused (issue 40)
        urllib.request.urlopen(href, timeout=10)
    got = admin.request.get(href)  # the admin's browser holds the sign-in's download cookie
    assert got.status == 200
    lines = got.text().splitlines()
    assert admin.request.get(href).status == 404  # once: the link is no public URL (issue 29)
    assert lines[0].startswith("id,study_id,participant,participant_number,task,target,condition,round,type")
    # one row per event (this participant is the only one); paradata: the participant's page loses focus when the
    # admin page opens, and logs it whenever it arrives
    assert len([x for x in lines[1:] if ",paradata," not in x]) == len([r for r in rows if r[0] != "paradata"])
    shot(admin, "admin")
    admin.close()


def test_a_question_with_options_is_answered_by_a_click(browser, grounded_app, shot):
    url, db = grounded_app
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(url)
    expect(page.locator("#iir-agree")).to_be_visible(timeout=TIMEOUT_MS)
    page.click("#iir-agree")
    expect(page.locator("#iir-start-task")).to_be_visible(timeout=TIMEOUT_MS)
    pid = re.search(r"Participant (\S+)", page.locator("#iir-study-header").inner_text()).group(1)
    page.click("#iir-start-task")
    page.fill("#iir-desc textarea", "a cartoon insect")
    page.press("#iir-desc textarea", "Enter")
    expect(page.locator("#iir-results .iir-card")).to_have_count(6, timeout=TIMEOUT_MS)
    options = page.locator('#iir-dialogue button[data-action="choose"]')
    expect(options.first).to_be_visible(timeout=TIMEOUT_MS)  # the question comes with its options
    expect(options.nth(1)).to_be_attached()
    expect(page.locator("#iir-answer")).to_be_hidden()  # a click answers it: no answer box
    shot(page, "grounded-question")
    question = options.first.get_attribute("data-question")
    label = options.first.get_attribute("title")
    options.first.click()
    expect(page.locator("#iir-study-budget")).to_contain_text("1 of 2 rounds after your description used",
                                                              timeout=TIMEOUT_MS)
    expect(page.locator("#iir-dialogue .iir-you")).to_contain_text(label[:20], timeout=TIMEOUT_MS)
    expect(page.locator('#iir-dialogue button[data-action="choose"]').first).to_be_visible(timeout=TIMEOUT_MS)
    shot(page, "grounded-answered")
    ctx.close()

    con = sqlite3.connect(db)
    rows = con.execute("SELECT payload FROM events WHERE participant=? AND type='answer' ORDER BY id",
                       (pid,)).fetchall()
    con.close()
    assert len(rows) == 1
    payload = json.loads(rows[0][0])
    from interactive_ir.ui.captions import plain_caption

    # the log keeps the option's caption as indexed; the tooltip showed it in plain words
    assert plain_caption(payload["text"]) == label and payload["question"] == question and payload["option"] == 0


def test_the_page_logs_leaving_and_coming_back(browser, study_app, shot):
    """paradata.js: the window's blur and focus and a hidden tab reach the study log with the browser's time."""
    from interactive_ir.study.log import open_readonly

    url, db = study_app
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(url)
    page.click("#iir-agree")
    expect(page.locator("#iir-start-task")).to_be_visible(timeout=TIMEOUT_MS)
    pid = re.search(r"Participant (\S+)", page.locator("#iir-study-header").inner_text()).group(1)
    page.click("#iir-start-task")
    expect(page.locator("#iir-desc textarea")).to_be_visible(timeout=TIMEOUT_MS)
    before = time.time()
    page.evaluate("""() => { window.dispatchEvent(new Event('blur'));
        Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});
        document.dispatchEvent(new Event('visibilitychange'));
        Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true});
        document.dispatchEvent(new Event('visibilitychange'));
        window.dispatchEvent(new Event('focus')); }""")
    kinds: list = []
    for _ in range(40):
        with open_readonly(db) as log:
            evs = log.events("browser-study", pid, types=["paradata"])
        kinds = [e.payload["kind"] for e in evs]
        if len(kinds) >= 4:
            break
        time.sleep(0.25)  # wait-ok: polling the study log until the page's events arrive
    assert kinds == ["blur", "hidden", "visible", "focus"]
    assert all(e.task == 1 and abs(e.client_ts - before) < 30 for e in evs)
    shot(page, "paradata")
    ctx.close()


def test_the_scoreboard_page_is_read_only_and_refreshes(browser, study_app, shot):
    """/scoreboard: the KIS scoreboard, no sign-in, no inputs; a participant who starts a task appears on it
    without a reload (it refreshes every few seconds)."""
    url, db = study_app
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    board = ctx.new_page()
    board.goto(url + "scoreboard")
    expect(board.locator("#iir-scoreboard-box")).to_be_visible(timeout=TIMEOUT_MS)
    rows = board.locator("#iir-scoreboard tbody tr")
    from interactive_ir.study.analysis.scoreboard import scoreboard
    from interactive_ir.study.log import open_readonly

    with open_readonly(db) as log:  # the participants of the module's earlier tests: counted once the page has
        before = len(scoreboard(log))  # loaded them (the HTML first drawn is the one from the server's start)
    if before:
        expect(rows).to_have_count(before, timeout=TIMEOUT_MS)
    assert board.locator("#iir-scoreboard-box input, #iir-scoreboard-box textarea").count() == 0
    other = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    other.goto(url)
    other.click("#iir-agree")
    expect(other.locator("#iir-start-task")).to_be_visible(timeout=TIMEOUT_MS)
    pid = re.search(r"Participant (\S+)", other.locator("#iir-study-header").inner_text()).group(1)
    other.click("#iir-start-task")
    expect(board.locator("#iir-scoreboard")).to_contain_text(pid, timeout=TIMEOUT_MS)
    expect(rows).to_have_count(before + 1)
    shot(board, "scoreboard")
    other.context.close()
    ctx.close()


@pytest.fixture(scope="module")
def competition_app(browser, app_env, tmp_path_factory):
    prompt = _caption(TARGETS[0]).replace('"', "'")
    yield from _serve_study(
        app_env, tmp_path_factory.mktemp("competition"),
        "study_id: comp-study\ntitle: Competition\nrounds: 3\nk: 6\ncounterbalance: none\ncompetition: true\n"
        "time_limit_s: 120\nlock_description_s: 8\nscoreboard: true\n"
        "conditions:\n  T: {mode: text, label: System T}\n"
        f'tasks:\n  - {{target: {TARGETS[0]}, prompt: "{prompt}"}}\n  - {{target: {TARGETS[1]}, prompt: "a cake"}}\n',
        "comp-study")


def test_the_organiser_opens_a_task_for_a_waiting_participant(browser, competition_app, shot):
    """Competition mode: a participant (an expert, from the URL) waits; the organiser opens task 1 on /admin; the
    participant's page shows it by itself with the countdown, the organiser's description's results and the text
    box locked, which unlocks after lock_description_s."""
    from interactive_ir.study.log import open_readonly

    url, db = competition_app
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(url + "?expert=1")
    page.click("#iir-agree")
    expect(page.locator("#iir-waiting")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#iir-start-task")).to_be_hidden()
    shot(page, "competition-waiting")
    admin = ctx.new_page()
    admin.goto(url + "admin")
    admin.fill("#iir-admin-password input", ADMIN_PASSWORD)
    admin.click("#iir-admin-login")
    expect(admin.locator("#iir-admin-competition-state")).to_contain_text("No task is open", timeout=TIMEOUT_MS)
    admin.click("#iir-admin-open")
    expect(admin.locator("#iir-admin-competition-state")).to_contain_text("Task 1 of 2 is open", timeout=TIMEOUT_MS)
    shot(admin, "competition-admin")
    expect(page.locator("#iir-study-search")).to_be_visible(timeout=TIMEOUT_MS)  # no click: the task came to it
    expect(page.locator("#iir-study-budget .iir-timer")).to_contain_text("Time left")
    expect(page.locator("#iir-results .iir-card").first).to_be_visible(timeout=TIMEOUT_MS)  # the organiser's text ran
    box = page.locator("#iir-query textarea")
    expect(box).to_be_disabled(timeout=TIMEOUT_MS)
    expect(page.locator("#iir-status")).to_contain_text("only query")
    shot(page, "competition-locked")
    expect(box).to_be_enabled(timeout=TIMEOUT_MS)  # 8 s after the opening
    expect(page.locator("#iir-status")).not_to_contain_text("only query")
    box.fill("a bee on a flower")
    box.press("Enter")
    expect(page.locator("#iir-study-budget")).to_contain_text("1 of 3 rounds", timeout=TIMEOUT_MS)
    shot(page, "competition-unlocked")
    with open_readonly(db) as log:
        starts = log.events("comp-study", types=["task_start"])
        texts = [(e.type, e.payload.get("by")) for e in log.events("comp-study", types=["description", "search"])]
    assert [e.payload["expert"] for e in starts] == [True]
    assert texts == [("description", "organiser"), ("search", None)]
    admin.click("#iir-admin-close")
    expect(admin.locator("#iir-admin-competition-state")).to_contain_text("Closed task 1: 1 running", timeout=TIMEOUT_MS)
    expect(page.locator("#iir-study-form-task")).to_be_visible(timeout=TIMEOUT_MS)  # the task ended on its page too
    ctx.close()
