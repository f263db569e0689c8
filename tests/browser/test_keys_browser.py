"""Issue 25, deliverable 7: the results by keyboard. Arrows (or j/k) move between results, a row at a time up and
down; Enter opens the large view and Escape closes it, the focus back on the card; r / n mark, f ends the search;
? opens the list of shortcuts; the card the keyboard is on is outlined; keys typed into a text box stay text."""

from __future__ import annotations

import pytest
from pageobj import TIMEOUT_MS, AppPage, K, expect

pytestmark = pytest.mark.browser

COLUMNS_JS = """() => { const c = [...document.querySelectorAll('#iir-results .iir-card:not(.is-liked)')];
  const top = c[0].getBoundingClientRect().top;
  return c.filter((e) => Math.abs(e.getBoundingClientRect().top - top) < 4).length; }"""


@pytest.fixture
def app(browser, app_url):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    yield AppPage(ctx.new_page(), app_url).open()
    ctx.close()


def _pic(app, i: int):
    return app.cards.nth(i).locator("button[data-action=open]")


def test_the_results_work_from_the_keyboard(app, shot):
    page = app.page
    app.search("a cat sleeping on a sofa")
    app.expect_round(1)
    expect(app.cards).to_have_count(K, timeout=TIMEOUT_MS)
    app.wait_model()
    app.wait_idle()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # the focus in no text box
    expect(page.locator("body")).to_be_focused()
    page.keyboard.press("j")
    expect(_pic(app, 0)).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(_pic(app, 1)).to_be_focused()
    page.keyboard.press("k")
    expect(_pic(app, 0)).to_be_focused()
    cols = page.evaluate(COLUMNS_JS)
    assert 1 < cols < K, cols  # the grid has rows of several cards at 1440 px
    page.keyboard.press("ArrowDown")
    expect(_pic(app, cols)).to_be_focused()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowRight")
    expect(_pic(app, 1)).to_be_focused()
    # the card the keyboard is on is outlined (a visible focus, not the browser's thin default)
    outline = app.cards.nth(1).evaluate("e => [getComputedStyle(e).outlineStyle, getComputedStyle(e).outlineWidth]")
    assert outline[0] == "solid" and float(outline[1].rstrip("px")) >= 2, outline
    assert app.cards.nth(2).evaluate("e => getComputedStyle(e).outlineStyle") == "none"
    shot(page, "card-focused")

    # r marks the card relevant; the re-drawn card keeps the focus, so n on the next one works at once
    page.keyboard.press("r")
    expect(app.button(1, "relevant")).to_have_attribute("aria-pressed", "true", timeout=TIMEOUT_MS)
    expect(_pic(app, 1)).to_be_focused()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("n")
    expect(app.button(2, "irrelevant")).to_have_attribute("aria-pressed", "true", timeout=TIMEOUT_MS)
    app.expect_status("marked 1 relevant, 1 not relevant")

    # Enter opens the large view of the focused card, Escape closes it and the focus is back on the card
    page.keyboard.press("Enter")
    box = page.locator("#iir-lightbox")
    expect(box).to_be_visible()
    expect(box.locator(".iir-lb-cap")).to_contain_text(f"#3 of {K}")
    page.keyboard.press("r")  # r in the large view marks the image shown there
    expect(app.button(2, "relevant")).to_have_attribute("aria-pressed", "true", timeout=TIMEOUT_MS)
    page.keyboard.press("Escape")
    expect(box).to_be_hidden()
    expect(_pic(app, 2)).to_be_focused()

    # ? opens the list of shortcuts, and again closes it
    page.keyboard.press("?")
    keys = page.locator("#iir-results .iir-keys ul")
    expect(keys).to_be_visible()
    expect(keys).to_contain_text("move between results")
    expect(keys).to_contain_text("larger view")
    shot(page, "shortcuts")
    page.keyboard.press("?")
    expect(keys).to_be_hidden()

    # keys typed into a text box are text, not shortcuts
    desc = page.locator("#iir-desc textarea")
    desc.click()
    desc.press_sequentially("jkrn")
    expect(desc).to_be_focused()
    expect(desc).to_have_value("a cat sleeping on a sofajkrn")

    # f on a card ends the search with that image
    _pic(app, 3).focus()
    found = app.ids()[3]
    page.keyboard.press("f")
    app.expect_status("Found")
    expect(page.locator(f'#iir-results .iir-card.is-found[data-id="{found}"]')).to_have_count(1)
    shot(page, "found-by-key")
