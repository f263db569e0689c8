"""A slow LLM: results come first, the page says what the models are doing (with a running timer) and
replaces the results when the LLM's rewrite lands; any newer action of the tab supersedes that work."""

from __future__ import annotations

import re

import pytest
from iir_testutils import query_modes
from pageobj import AppPage, K, expect

pytestmark = pytest.mark.browser

DELAY_S = 2.0  # seconds per LLM call (the fake LLM's question step makes two calls, a rewrite one)
WRITING = re.compile("writing a question")


@pytest.fixture(scope="module")
def slow_llm():
    """The slow LLM (fake:sleep=...); its `calls` record the cancel token each call was given."""
    from interactive_ir.backends import make_llm

    return make_llm(f"fake:sleep={DELAY_S}")


@pytest.fixture(scope="module")
def slow_url(demo_retriever, app_env, slow_llm):
    """The page served in this process over the demo index, with the slow LLM."""
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    engine = build_engine(demo_retriever.retriever, llm=slow_llm, config=EngineConfig(k=K), belief=query_modes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, [*demo_retriever.notes, "LLM fake:sleep"]) as url:
            yield url


@pytest.fixture
def app(browser, slow_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    yield AppPage(ctx.new_page(), slow_url).open()
    ctx.close()


def refusals(page):
    return page.locator(".toast-body").filter(has_text=re.compile("Still working|wait for it|writing a question"))


def test_results_first_then_the_question_with_a_timer(app, shot):
    page = app.page
    app.search("a dog with a ball")
    app.expect_round(1)  # the results do not wait for the LLM
    app.expect_status(WRITING)
    expect(page.locator("#iir-dialogue .iir-question")).to_have_count(0)
    expect(page.locator("#iir-answer textarea")).to_be_disabled()  # no question yet: nothing to answer or skip
    expect(page.locator("#iir-skip")).to_be_disabled()
    expect(page.locator("#iir-feedback")).to_be_disabled()  # no mark yet
    app.button(0, "relevant").click()  # marking the shown results is fine meanwhile
    app.expect_status("marked 1 relevant")
    expect(page.locator("#iir-feedback")).to_be_enabled()
    app.expect_status(re.compile(r"writing a question about these results… \(\d+ s\)"))
    shot(page, "results-while-asking")
    page.wait_for_selector("#iir-dialogue .iir-question", timeout=30_000)
    app.expect_status("Round 1 · 8 results · marked 1 relevant, 0 not relevant: press More like my marks")
    assert not WRITING.search(app.status())
    expect(page.locator("#iir-answer textarea")).to_be_enabled()
    assert app.dialogue().count("You:") == 1 and len(app.ids()) == K
    shot(page, "question-arrived")


def test_an_answer_shows_the_plain_dialogue_then_the_refined_results(app, shot):
    page = app.page
    app.search("a cat on a roof")
    page.wait_for_selector("#iir-dialogue .iir-question", timeout=30_000)
    app.answer("it is yellow")
    app.expect_round(2)  # at once: the dialogue as typed
    head = page.locator("#iir-results .iir-page-head")
    expect(head).to_contain_text("Quick results")
    app.expect_status("rewriting the dialogue")
    shot(page, "quick-results")
    expect(head).to_contain_text("Refined", timeout=30_000)  # the LLM's rewrite replaced them
    app.expect_round(2)
    shot(page, "refined")
    page.wait_for_selector("#iir-dialogue .iir-question", timeout=30_000)
    expect(page.locator("#iir-dialogue .iir-you")).to_have_count(2)
    expect(refusals(page)).to_have_count(0)


def test_a_new_description_supersedes_the_question_being_written(app, slow_llm, shot):
    """Typed while the question is written: the new search runs at once, the old question never shows, and
    the LLM call writing it is cancelled (not left to run to its end)."""
    page = app.page
    before = len(slow_llm.calls)
    app.search("a dog with a ball")
    app.expect_round(1)
    app.expect_status(WRITING)
    app.search("a red house")  # no New search needed, nothing refused, nothing dropped
    expect(page.locator("#iir-dialogue")).to_contain_text("a red house", timeout=10_000)
    assert "a dog with a ball" not in app.dialogue()
    app.expect_status(WRITING)
    page.wait_for_selector("#iir-dialogue .iir-question", timeout=30_000)
    question = page.locator("#iir-dialogue .iir-question").inner_text()
    page.wait_for_timeout(int(2.5 * DELAY_S * 1000))  # wait-ok: the dropped step ends meanwhile; nothing may show
    assert page.locator("#iir-dialogue .iir-question").inner_text() == question
    assert "a dog with a ball" not in app.dialogue()
    expect(refusals(page)).to_have_count(0)
    calls = slow_llm.calls[before:]
    old = [c for c in calls if any("a dog with a ball" in str(p) for p in c["prompts"])]
    assert old and all(c["cancel"] is not None for c in calls)  # every model step carries its token
    assert old[-1]["cancel"].cancelled  # the superseded question's call was cancelled
    assert "⚠" not in app.status()
    expect(page.locator(".toast-body")).to_have_count(0)  # never shown as an error
    shot(page, "superseded")


def test_skip_and_found_during_the_refinement(app, shot):
    page = app.page
    app.search("a cat on a roof")
    page.wait_for_selector("#iir-dialogue .iir-question", timeout=30_000)
    app.answer("it is black")
    expect(page.locator("#iir-results .iir-page-head")).to_contain_text("Quick results")
    target = app.ids()[0]
    rank = app.cards.nth(0).get_attribute("data-rank")  # results kept from the round before keep their places
    app.button(0, "found").click()  # a plain result is the one: the search ends, the rewrite is dropped
    app.expect_status("Found")
    assert f"round 2, at place {rank}" in app.status()
    assert page.locator("#iir-results .iir-card.is-found").get_attribute("data-id") == target
    page.wait_for_timeout(int(3.5 * DELAY_S * 1000))  # wait-ok: the dropped rewrite's time passes; nothing may show
    assert "Found" in app.status() and "Refined" not in page.locator("#iir-results .iir-page-head").inner_text()
    expect(page.locator("#iir-dialogue .iir-question")).to_have_count(0)
    expect(page.locator("#iir-answer")).to_be_hidden()  # nothing to answer or caption after Found
    expect(page.locator("#iir-caption")).to_be_hidden()
    shot(page, "found-while-refining")


def test_another_tabs_model_work_does_not_hold_up_a_search(browser, slow_url, shot):
    ctxs = [browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(3)]
    try:
        tabs = [AppPage(c.new_page(), slow_url).open() for c in ctxs]
        for t in tabs[:2]:  # two tabs fill both model slots with questions being written
            t.search("a dog with a ball")
        for t in tabs[:2]:
            t.expect_status(WRITING)
        tabs[2].search("a red house")  # a third tab: its results come while both others still wait
        tabs[2].expect_round(1)
        for t in tabs[:2]:
            t.expect_status(WRITING)
        shot(tabs[2].page, "third-tab")
    finally:
        for c in ctxs:
            c.close()
