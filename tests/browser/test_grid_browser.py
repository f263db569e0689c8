"""A dense, calm grid (issue 25): results fully in view with a question pending, at 1440x900 and on a phone
(390x844); tap targets of 44 px; thumbnails keep their aspect ratio; "Use as reference" brings the caption
box into view with the focus; captions in plain words. Screenshots of each state go to artifacts/."""

from __future__ import annotations

import pytest
from iir_testutils import query_modes
from pageobj import TIMEOUT_MS, AppPage, expect

pytestmark = pytest.mark.browser

K = 20  # the page's results per round (AppConfig's default)
SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
SHOTS = "artifacts"

FULLY_VISIBLE = """() => {
  const w = window.innerWidth, h = window.innerHeight;
  const bar = document.querySelector('#iir-dialogue-panel');
  const fixed = bar && getComputedStyle(bar).position === 'fixed';
  const bottom = fixed ? bar.getBoundingClientRect().top : h;  // what the question bar covers is hidden
  return [...document.querySelectorAll('#iir-results .iir-card')].filter(c => {
    const r = c.getBoundingClientRect();
    return r.width > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= bottom + 0.5 && r.right <= w + 0.5;
  }).length;
}"""

SMALL_TARGETS = """(sel) => [...document.querySelectorAll(sel)].filter(b => {
  const r = b.getBoundingClientRect(), s = getComputedStyle(b);
  return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && !b.closest('[hidden]');
}).filter(b => { const r = b.getBoundingClientRect(); return r.height < 43.5 || r.width < 43.5; })
  .map(b => `${b.id || b.className || b.tagName} "${(b.innerText || b.getAttribute('aria-label') || '').trim()
  .slice(0, 30)}" ${Math.round(b.getBoundingClientRect().width)}x${Math.round(b.getBoundingClientRect().height)}`)"""
TAP = ("#iir-results button, #iir-dialogue-panel button, #iir-search-row button, #iir-status-row button, "
       "#iir-caption-row button")


@pytest.fixture(scope="module")
def url(demo_retriever, app_env):
    """The demo gallery served as the app now starts without a capable LLM: no LLM, picture questions, K results."""
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    engine = build_engine(demo_retriever.retriever, llm=None, config=EngineConfig(k=K), belief=query_modes())
    assert engine.questions_enabled  # picture questions need no LLM
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, demo_retriever.notes) as u:
            yield u


def _shot(page, name: str) -> None:
    from conftest import ROOT

    (ROOT / SHOTS).mkdir(exist_ok=True)
    page.screenshot(path=str(ROOT / SHOTS / f"{name}.png"))  # the viewport: what a person sees


def _open(browser, url, size: str):
    phone = size == "phone"
    ctx = browser.new_context(viewport=SIZES[size], is_mobile=phone, has_touch=phone,
                              device_scale_factor=1)
    return ctx, AppPage(ctx.new_page(), url).open()


def _search_with_question(app: AppPage, text: str) -> None:
    app.search(text)
    app.expect_round(1)
    app.page.wait_for_selector("#iir-dialogue .iir-question .iir-opt", timeout=TIMEOUT_MS)
    app.page.wait_for_function("() => [...document.querySelectorAll('#iir-results img, #iir-dialogue img')]"
                               ".every(i => i.complete)", timeout=TIMEOUT_MS)
    app.page.evaluate("() => window.scrollTo(0, 0)")
    app.settle_layout()


@pytest.mark.parametrize("size, least", [("desktop", 12), ("phone", 2)])
def test_results_fully_in_view_with_a_question_pending(browser, url, size, least):
    ctx, app = _open(browser, url, size)
    try:
        page = app.page
        _shot(page, f"{size}-empty")
        _search_with_question(app, "a puppy sitting on the grass")
        assert len(app.ids()) == K
        visible = page.evaluate(FULLY_VISIBLE)
        _shot(page, f"{size}-question")
        assert visible >= least, f"{size}: {visible} results fully in view, want {least}"
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{size}: the page scrolls sideways by {overflow}px"
        # every option of the question, "None of these" too, is on screen
        for opt in page.locator("#iir-dialogue .iir-opt").all():
            box = opt.bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= SIZES[size]["height"] + 0.5, box
            assert box["x"] >= 0 and box["x"] + box["width"] <= SIZES[size]["width"] + 0.5, box
        expect(page.locator("#iir-dialogue .iir-opt-none")).to_be_in_viewport()
        # thumbnails keep their aspect ratio (the whole picture, scaled, never stretched or cropped)
        fits = page.locator("#iir-results .iir-card img").evaluate_all(
            "els => els.map(i => getComputedStyle(i).objectFit)")
        assert fits and set(fits) <= {"contain", "scale-down"}, fits
        if size == "phone":
            bar = page.locator("#iir-dialogue-panel").first.bounding_box()
            assert bar["height"] <= 0.45 * SIZES[size]["height"], bar  # the question bar leaves the results room
            first = app.cards.nth(0).bounding_box()
            assert first["y"] < 0.4 * SIZES[size]["height"], first  # header, search box and status are short
            small = page.evaluate(SMALL_TARGETS, TAP)
            assert not small, f"tap targets under 44 px: {small}"
        else:
            first = app.cards.nth(0).bounding_box()
            assert first["width"] >= 160, first  # pictures a person can see
        page.evaluate("() => window.scrollTo(0, 0)")
        _shot(page, f"{size}-results")
    finally:
        ctx.close()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_use_as_reference_brings_the_caption_box_into_view_with_the_focus(browser, url, size):
    ctx, app = _open(browser, url, size)
    try:
        page = app.page
        _search_with_question(app, "a red sports car")
        app.button(5, "reference").click()
        page.wait_for_selector("#iir-reference .iir-ref img", timeout=TIMEOUT_MS)
        box = page.locator("#iir-caption textarea")
        expect(box).to_be_focused(timeout=5_000)
        app.settle_layout()  # the scroll to the box has ended
        r = box.bounding_box()
        covered = page.evaluate("() => { const b = document.querySelector('#iir-dialogue-panel');"
                                "return getComputedStyle(b).position === 'fixed' ? b.getBoundingClientRect().top"
                                " : window.innerHeight; }")
        assert 0 <= r["y"] and r["y"] + r["height"] <= covered, (r, covered)
        _shot(page, f"{size}-reference")
    finally:
        ctx.close()


def test_captions_and_option_labels_in_plain_words(browser, url):
    ctx, app = _open(browser, url, "desktop")
    try:
        page = app.page
        _search_with_question(app, "a dog")
        caps = page.locator("#iir-results .iir-cap").all_inner_texts()
        labels = page.locator("#iir-dialogue .iir-opt-pic .iir-opt-label").all_inner_texts()
        assert caps and labels
        for text in caps + labels:
            low = text.lower()
            assert "keywords" not in low and not low.startswith("clipart of") and text[:1] == text[:1].upper(), text
    finally:
        ctx.close()
