"""The page on the belief over the collection, as the app serves it by default (no LLM): "More like this"
on a card (the closest so far), the belief's own question answered by typing, "like this, but ..." on a reference, marks."""

from __future__ import annotations

import pytest
from pageobj import AppPage, K, expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(demo_retriever, app_env):
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.retrieval.belief import BeliefConfig

    engine = build_engine(demo_retriever.retriever, llm=None, config=EngineConfig(k=K), belief=BeliefConfig())
    assert engine.belief_mode.belief_config.on_page  # the default
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, demo_retriever.notes) as u:
            yield u


@pytest.fixture
def app(browser, url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    yield AppPage(ctx.new_page(), url).open()
    ctx.close()


def test_closest_answers_and_like_this_but_each_bring_a_page_of_unseen_images(app, shot):
    page = app.page
    app.search("a dog on the grass")
    app.expect_round(1)
    expect(page.locator("#iir-dialogue")).to_contain_text("System asks:")  # the belief's own question (no LLM)
    first = app.ids()
    assert len(first) == K
    shot(page, "belief-first")
    app.button(1, "like").click()  # "More like this": on the belief, the closest so far
    app.expect_round(2)
    second = app.ids()  # the round's results; the closest one is kept in view besides them (pinned, issue 38)
    assert len(second) == K and not set(second) & set(first)
    expect(page.locator("#iir-results .iir-card.is-pin-closest")).to_have_count(1)
    expect(page.locator("#iir-dialogue")).to_contain_text("this one is the closest")
    app.answer("a dog running with a ball")
    app.expect_round(3)
    third = app.ids()
    assert not set(third) & (set(first) | set(second))
    expect(page.locator("#iir-dialogue")).to_contain_text("a dog running with a ball")
    app.button(0, "reference").click()
    expect(app.cards.nth(0)).to_have_class(__import__("re").compile("is-ref"))
    app.relative("but at night instead of day")
    app.expect_round(4)
    expect(page.locator("#iir-dialogue")).to_contain_text("but at night instead of day")
    assert not set(app.ids()) & (set(first) | set(second) | set(third))
    shot(page, "belief-like-this-but")
