"""Issue 25, deliverable 8 on the study's pages: axe-core (vendored) finds no serious or critical accessibility
violation on the consent page, a task's briefing, its search page with results and a question, a
questionnaire, the end page, /admin signed out and signed in, and /scoreboard.

The study server is test_study_browser.py's (the same `python app.py --study` on the demo gallery, fake models)."""

from __future__ import annotations

import pytest
from test_axe_browser import _say, axe_violations
from test_study_browser import ADMIN_PASSWORD, TIMEOUT_MS, _serve_study, expect

pytestmark = pytest.mark.browser

TASKS = ["animals_bee_0145.png"]


@pytest.fixture(scope="module")
def axe_study(browser, app_env, tmp_path_factory):
    """One task in the mixed condition (a question, marks, a reference), a scoreboard, an admin password."""
    yield from _serve_study(
        app_env, tmp_path_factory.mktemp("axe-study"),
        "study_id: axe-study\ntitle: Accessibility study\nrounds: 1\nk: 6\ncounterbalance: none\nscoreboard: true\n"
        f"conditions:\n  A: {{mode: mixed, label: System A}}\ntasks: [{TASKS[0]}]\n", "axe-study")


def settle(page) -> None:
    """Nothing drawn as pending (Gradio fades a component to 30% while its event runs) and no colour half-way
    through a transition: axe judges the page a person reads."""
    expect(page.locator(".pending")).to_have_count(0, timeout=TIMEOUT_MS)  # a loaded machine: events take longer
    page.wait_for_function("() => document.getAnimations().every((a) => a.playState !== 'running')",
                           timeout=TIMEOUT_MS)


def check(page, state: str, shot) -> None:
    settle(page)
    bad = axe_violations(page)
    shot(page, state)
    assert not bad, f"{state}:\n" + _say(bad)


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    yield ctx.new_page()
    ctx.close()


def test_no_serious_accessibility_violation_on_the_study_pages(page, axe_study, shot):
    url, _ = axe_study
    page.goto(url)
    expect(page.locator("#iir-agree")).to_be_visible(timeout=TIMEOUT_MS)
    check(page, "consent", shot)

    page.click("#iir-agree")
    expect(page.locator("#iir-start-task")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#iir-study-brief-target img")).to_be_visible()
    check(page, "briefing", shot)

    page.click("#iir-start-task")
    expect(page.locator("#iir-desc textarea")).to_be_visible(timeout=TIMEOUT_MS)
    check(page, "search-empty", shot)
    page.fill("#iir-desc textarea", "a cartoon insect")
    page.press("#iir-desc textarea", "Enter")
    expect(page.locator("#iir-results .iir-card")).to_have_count(6, timeout=TIMEOUT_MS)
    expect(page.locator("#iir-dialogue")).to_contain_text("System asks", timeout=TIMEOUT_MS)
    page.locator('#iir-results .iir-card button[data-action="relevant"]').first.click()
    expect(page.locator("#iir-results .iir-card.is-rel")).to_have_count(1, timeout=TIMEOUT_MS)
    check(page, "search-results", shot)

    page.click("#iir-give-up")
    expect(page.locator("#iir-give-up-yes")).to_be_visible(timeout=TIMEOUT_MS)
    check(page, "give-up-confirm", shot)
    page.click("#iir-give-up-yes")
    expect(page.locator("#iir-submit")).to_be_visible(timeout=TIMEOUT_MS)
    check(page, "questionnaire", shot)

    page.locator("#iir-q-effective label").filter(has_text="4").first.click()
    page.locator("#iir-q-efficient label").filter(has_text="3").first.click()
    page.click("#iir-submit")
    expect(page.locator("#iir-study-done")).to_contain_text("Thank you", timeout=TIMEOUT_MS)
    check(page, "end", shot)


def test_no_serious_accessibility_violation_on_admin_and_scoreboard(page, axe_study, shot):
    url, _ = axe_study
    page.goto(url + "admin")
    expect(page.locator("#iir-admin-login")).to_be_visible(timeout=TIMEOUT_MS)
    check(page, "admin-signed-out", shot)
    page.fill("#iir-admin-password input", ADMIN_PASSWORD)
    page.click("#iir-admin-login")
    expect(page.locator("#iir-admin-summary")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#iir-admin-table")).to_be_visible(timeout=TIMEOUT_MS)
    check(page, "admin-signed-in", shot)

    page.goto(url + "scoreboard")
    expect(page.locator("#iir-scoreboard-box")).to_be_visible(timeout=TIMEOUT_MS)
    check(page, "scoreboard", shot)
