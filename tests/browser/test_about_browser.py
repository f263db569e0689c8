"""Issue 39: "About this app" opened, the natural second click, keeps the page: at 1024-1440 px the title kept
its width and the search bar stayed near the top (it dropped to y~3,665, the first screen white), and on a phone
its text is whole; axe-core finds no serious or critical violation with it open, at both widths."""

from __future__ import annotations

import pytest
from pageobj import TIMEOUT_MS, AppPage, expect
from test_axe_browser import _say, axe_violations, settle

pytestmark = pytest.mark.browser

# what a real start-up's notes say (the test app's are short): the panel is sized by text this long
LONG_NOTE = ("Questions: picture questions built from the results (click the closest image, or yes/no). No LLM writes "
             "or rewrites text: no capable language model is set up here (the small offline SmolLM2 asks worse "
             "questions than picture questions, so it is not loaded; start with --llm transformers:smollm2 to use it).")
SIZES = {"desktop": (1440, 900), "narrow-desktop": (1024, 768), "phone": (390, 844)}


@pytest.mark.parametrize("size", list(SIZES))
def test_about_this_app_opens_without_blanking_the_page(browser, app_url, shot, size):
    width, height = SIZES[size]
    ctx = browser.new_context(viewport={"width": width, "height": height})
    try:
        app = AppPage(ctx.new_page(), app_url).open()
        page = app.page
        page.locator("#iir-notes-panel .label-wrap").first.click()
        notes = page.locator("#iir-notes")
        expect(notes).to_be_visible(timeout=TIMEOUT_MS)
        page.evaluate("""(text) => { const p = document.createElement('p'); p.textContent = text;
            document.querySelector('#iir-notes .prose, #iir-notes').appendChild(p); }""", LONG_NOTE)
        settle(page)
        shot(page, f"about-open-{size}")
        head = page.locator("#iir-head h1").bounding_box()
        search = page.locator("#iir-desc textarea").bounding_box()
        box = notes.bounding_box()
        assert head["height"] < 80 and head["width"] > min(300, width * 0.5), head  # the title keeps one line
        # the search bar is still reachable: below the notes at most, never thousands of pixels down
        assert search["y"] < box["y"] + box["height"] + 400 and search["y"] < 3 * height, (search, box)
        # the notes' text is whole: as wide as it is shown, nothing cut off at the right
        clipped = page.evaluate("""() => [...document.querySelectorAll('#iir-notes *')].filter((e) =>
            e.scrollWidth > e.clientWidth + 2 && getComputedStyle(e).overflowX !== 'visible').length""")
        assert clipped == 0 and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, box
        bad = axe_violations(page)
        assert not bad, f"About open at {size}:\n" + _say(bad)
    finally:
        ctx.close()
