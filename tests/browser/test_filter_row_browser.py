"""Issue 26 D4 and D8 on the page: the filter row (a folder picked there keeps only that folder's images, its
chip shows, the chip's removal restores the results), the date histogram of the matches and the results
newest first."""

from __future__ import annotations

import pytest
from iir_testutils import build_dated
from pageobj import TIMEOUT_MS, AppPage, expect

pytestmark = pytest.mark.browser

K = 8
QUERY = "a red dog on the beach"


@pytest.fixture(scope="module")
def served(browser, tmp_path_factory, app_env):
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    r, ids = build_dated(tmp_path_factory.mktemp("dated"))
    engine = build_engine(r, llm=None, config=EngineConfig(k=K, fold_similarity=0))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, ["a dated test collection"]) as u:
            yield u, engine


def pick(page, elem_id: str, option: str) -> None:
    """Choose `option` (its label as shown) in the Gradio dropdown `elem_id`."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def test_a_folder_filter_from_the_row_its_chip_and_removing_it(browser, served, shot):
    url, engine = served
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        app = AppPage(ctx.new_page(), url).open()
        page = app.page
        expect(page.locator("#iir-filters")).to_be_visible(timeout=TIMEOUT_MS)
        assert "folder:trips" in page.locator(".iir-syntax").get_attribute("title")  # the syntax in a help tip
        app.search(QUERY)
        app.expect_round(1)
        plain = app.ids()
        assert plain == engine.search_text(engine.new_session(), QUERY).shown
        assert any(not i.startswith("sub/") for i in plain)
        shot(page, "searched")
        n_sub = dict(engine.facets()["folder"])["sub"]
        pick(page, "iir-f-folder", f"sub ({n_sub})")
        chip = page.locator('#iir-results .iir-chip[data-id="folder:sub"]')
        expect(chip).to_be_visible(timeout=TIMEOUT_MS)
        got = app.ids()
        assert got and all(i.startswith("sub/") for i in got)
        assert got == engine.search_text(engine.new_session(), f"{QUERY} folder:sub").shown  # the typed query's
        expect(page.locator("#iir-desc textarea")).to_have_value(f"{QUERY} folder:sub", timeout=TIMEOUT_MS)
        shot(page, "folder-sub")
        chip.click()
        expect(chip).to_have_count(0, timeout=TIMEOUT_MS)
        page.wait_for_function("(want) => [...document.querySelectorAll('#iir-results .iir-card')]"
                               ".map(e => e.dataset.id).join(',') === want", arg=",".join(plain), timeout=TIMEOUT_MS)
        expect(page.locator("#iir-desc textarea")).to_have_value(QUERY, timeout=TIMEOUT_MS)
        expect(page.locator("#iir-f-folder input")).to_have_value("Any folder", timeout=TIMEOUT_MS)
        shot(page, "chip-removed")
    finally:
        ctx.close()


def test_newest_first_and_the_date_histogram(browser, served, shot):
    url, engine = served
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        app = AppPage(ctx.new_page(), url).open()
        page = app.page
        app.search(QUERY)
        app.expect_round(1)
        ranked = app.ids()
        unit, counts = engine.date_histogram(engine.new_session())
        bars = page.locator("#iir-results .iir-hist .iir-bar")
        expect(bars).to_have_count(len(counts), timeout=TIMEOUT_MS)
        assert unit == "year" and len(counts) > 1
        heights = bars.evaluate_all("els => els.map(e => e.firstElementChild.getBoundingClientRect().height)")
        top = max(n for _, n in counts)
        assert [round(h / max(heights), 1) for h in heights] == [round(n / top, 1) for _, n in counts]
        pick(page, "iir-f-sort", "Newest first")
        dates = engine.dates_of(ranked)
        newest = sorted(ranked, key=lambda i: dates[i], reverse=True)
        page.wait_for_function("(want) => [...document.querySelectorAll('#iir-results .iir-card')]"
                               ".map(e => e.dataset.id).join(',') === want", arg=",".join(newest), timeout=TIMEOUT_MS)
        ranks = page.locator("#iir-results .iir-card .iir-rank").all_inner_texts()
        assert ranks == [f"#{ranked.index(i) + 1}" for i in newest]  # each card keeps its rank by score
        shot(page, "newest-first")
        year = counts[0][0]
        page.locator(f'#iir-results .iir-bar[data-id="{year}"]').click()  # a bar keeps that year
        expect(page.locator(f'#iir-results .iir-chip[data-id="date:{year}"]')).to_be_visible(timeout=TIMEOUT_MS)
        kept = engine.dates_of(app.ids())
        assert kept and all(str(__import__("time").gmtime(t).tm_year) == year for t in kept.values())
        shot(page, "a-year")
    finally:
        ctx.close()


def test_the_row_fits_a_phone_and_its_chips_are_big_enough_to_tap(browser, served, shot):
    url, engine = served
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        app = AppPage(ctx.new_page(), url).open()
        page = app.page
        app.search(f"{QUERY} tag:family")
        app.expect_round(1)
        chip = page.locator('#iir-results .iir-chip[data-id="tag:family"]')
        expect(chip).to_be_visible(timeout=TIMEOUT_MS)
        box = chip.bounding_box()
        assert box["height"] >= 43.5 and box["width"] >= 43.5
        expect(page.locator("#iir-f-tags input")).to_have_value("family (8)", timeout=TIMEOUT_MS)  # the row follows
        wide = page.evaluate("() => [...document.querySelectorAll('#iir-filters > *')].filter(e => e.offsetParent)"
                             ".map(e => e.getBoundingClientRect().right).filter(r => r > window.innerWidth + 0.5)")
        assert wide == [] and page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
        shot(page, "phone")
    finally:
        ctx.close()
