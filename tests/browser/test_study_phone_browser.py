"""Issue 39 on the study's pages: on a phone (390x844) a result is on the first screen after a search (the first
was at y=916), a warning toast does not stay on the next page, and axe-core finds no serious or critical violation
after a warning toast and on the next page, at phone and desktop widths."""

from __future__ import annotations

import pytest
from test_axe_browser import _say, axe_violations
from test_axe_study_browser import settle
from test_study_browser import TIMEOUT_MS, _serve_study, expect

pytestmark = pytest.mark.browser

SIZES = {"phone": (390, 844), "desktop": (1440, 900)}


@pytest.fixture(scope="module")
def phone_study(browser, app_env, tmp_path_factory):
    yield from _serve_study(
        app_env, tmp_path_factory.mktemp("phone-study"),
        "study_id: phone-study\ntitle: Phone study\nrounds: 1\nk: 6\ncounterbalance: none\n"
        "conditions:\n  A: {mode: mixed, label: System A}\ntasks: [animals_bee_0145.png, food_cake_0122.png]\n",
        "phone-study")


def _axe(page, state: str, shot) -> None:
    settle(page)
    shot(page, state)
    bad = axe_violations(page)
    assert not bad, f"{state}:\n" + _say(bad)


@pytest.mark.parametrize("size", list(SIZES))
def test_the_study_on_a_phone_and_its_warnings(browser, phone_study, shot, size):
    url, _ = phone_study
    width, height = SIZES[size]
    ctx = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = ctx.new_page()
        page.goto(url)
        page.click("#iir-agree")
        page.click("#iir-start-task", timeout=TIMEOUT_MS)
        page.fill("#iir-desc textarea", "a cartoon insect")
        page.press("#iir-desc textarea", "Enter")
        cards = page.locator("#iir-results .iir-card")
        expect(cards).to_have_count(6, timeout=TIMEOUT_MS)
        settle(page)
        page.evaluate("() => window.scrollTo(0, 0)")
        top = cards.first.bounding_box()
        shot(page, f"results-first-screen-{size}")
        above = page.evaluate("""() => [...document.querySelectorAll('#iir-study-search > *, #iir-study-search > * > *')]
            .map((e) => [e.id || e.className.slice(0, 40), Math.round(e.getBoundingClientRect().top),
                         Math.round(e.getBoundingClientRect().height)]).filter((x) => x[2] > 0)""")
        assert top["y"] < height - 100, f"the first result starts at y={top['y']:.0f} of {height}: {above}"  # in view
        _axe(page, f"results-{size}", shot)

        page.click("#iir-give-up")
        page.click("#iir-give-up-yes", timeout=TIMEOUT_MS)
        expect(page.locator("#iir-submit")).to_be_visible(timeout=TIMEOUT_MS)
        page.click("#iir-submit")  # nothing answered: a warning
        toast = page.locator(".toast-body")
        expect(toast.first).to_be_visible(timeout=TIMEOUT_MS)
        _axe(page, f"warning-{size}", shot)

        page.locator("#iir-q-effective label").filter(has_text="4").first.click()
        page.locator("#iir-q-efficient label").filter(has_text="3").first.click()
        page.click("#iir-submit")
        expect(page.locator("#iir-start-task")).to_be_visible(timeout=TIMEOUT_MS)  # the next task's brief
        expect(toast).to_have_count(0, timeout=5_000)  # the questionnaire's warning went with its page
        _axe(page, f"next-brief-{size}", shot)
    finally:
        ctx.close()
