"""Issue 26 on the page: "More like this" on a result card (a new round ranked by that image)."""

from __future__ import annotations

import pytest
from iir_testutils import query_modes
from pageobj import TIMEOUT_MS, AppPage, expect

pytestmark = pytest.mark.browser

K = 8


@pytest.fixture(scope="module")
def served(demo_retriever, app_env):
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    engine = build_engine(demo_retriever.retriever, llm=None, config=EngineConfig(k=K), belief=query_modes())  # more_like
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, demo_retriever.notes) as u:
            yield u, engine


def test_more_like_this_shows_a_new_round_ranked_by_that_image(browser, served, shot):
    url, engine = served
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        app = AppPage(ctx.new_page(), url).open()
        app.search("a puppy sitting on the grass")
        app.expect_round(1)
        first = app.ids()
        pick = first[2]
        shot(app.page, "round-1")
        app.button(2, "like").click()
        app.expect_round(2)
        got = app.ids()
        s = engine.new_session()  # the same two steps in this process: the page shows the engine's round
        engine.search_text(s, "a puppy sitting on the grass")
        want = engine.more_like(s, pick).shown
        assert got == want and pick not in got
        expect(app.page.locator("#iir-dialogue")).to_contain_text("more like one of the results", timeout=TIMEOUT_MS)
        expect(app.page.locator("#iir-strip")).to_contain_text("Round 1: described", timeout=TIMEOUT_MS)
        shot(app.page, "more-like-this")
    finally:
        ctx.close()
