"""A slow LLM: results come first, the page says what it is doing with a running timer, the results can
be used while the question is written, and a second step while one runs is refused cleanly."""

from __future__ import annotations

import re
import time

import pytest
from pageobj import AppPage, K

pytestmark = pytest.mark.browser

DELAY_S = 2.5  # seconds per LLM call (the fake LLM's question step makes two calls, a rewrite one)


class SlowLLM:
    """The fake LLM, answering after a delay (like a real model on a CPU)."""

    spec = "slow-fake"
    batch_capable = True

    def __init__(self, delay: float):
        from interactive_ir.backends.llms import FakeLLM

        self.inner = FakeLLM()
        self.delay = delay

    def generate(self, prompts, *, temperature: float = 0.0, max_tokens: int = 256):
        time.sleep(self.delay)
        return self.inner.generate(prompts, temperature=temperature, max_tokens=max_tokens)


@pytest.fixture(scope="module")
def slow_url(demo_retriever, app_env):
    """The page served in this process over the demo index, with a slow LLM."""
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    engine = build_engine(demo_retriever.retriever, llm=SlowLLM(DELAY_S), config=EngineConfig(k=K))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, [*demo_retriever.notes, "LLM slow-fake"]) as url:
            yield url


@pytest.fixture
def app(browser, slow_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    yield AppPage(ctx.new_page(), slow_url).open()
    ctx.close()


def test_results_first_then_the_question_with_a_timer(app, shot):
    page = app.page
    app.search("a dog with a ball")
    app.expect_round(1)  # the results do not wait for the LLM
    assert page.locator("#iir-dialogue .iir-question").count() == 0
    page.locator("#iir-desc textarea").press("Enter")  # the same submit again: ignored while it runs
    app.skip()  # another model step while the question is written: refused with a message
    app.expect_toast(re.compile("The LLM is writing a question"))
    app.button(0, "relevant").click()  # marking the shown results is fine meanwhile
    app.expect_status("marked 1 relevant")
    app.expect_status(re.compile(r"Working: The LLM is writing a question about these results… \(\d+ s\)"))
    shot(page, "results-while-asking")
    page.wait_for_selector("#iir-dialogue .iir-question")
    app.expect_status("Round 1 · 8 results · marked 1 relevant, 0 not relevant: press More like my marks")
    assert "Working" not in app.status() and "writing a question" not in app.status()
    assert app.dialogue().count("You:") == 1 and len(app.ids()) == K
    shot(page, "question-arrived")


def test_steps_are_refused_while_results_come_and_found_works_while_asking(app, shot):
    page = app.page
    app.search("a cat on a roof")
    page.wait_for_selector("#iir-dialogue .iir-question")
    app.answer("it is yellow")  # the answer is rewritten by the (slow) LLM before any result
    app.expect_status("Working: Rewriting your description with your answer (LLM)")
    shot(page, "rewriting")
    app.button(0, "found").click()  # a result of the old page while the new one is coming: refused
    app.expect_toast(re.compile("Still working"))
    app.expect_round(2)
    assert "Found" not in app.status()
    target = app.ids()[0]
    app.button(0, "found").click()  # while the next question is written: the search ends at once
    app.expect_status("Found")
    assert target in app.status() and "round 2 at rank 1" in app.status()
    page.wait_for_timeout(int(2.5 * DELAY_S * 1000))  # the question step ends without undoing that
    assert "Found" in app.status() and page.locator("#iir-dialogue .iir-question").count() == 0
    assert app.dialogue().count("You:") == 2
    shot(page, "found-while-asking")


def test_new_search_while_the_question_is_written_frees_the_page_at_once(app, shot):
    """New search drops the question being written: the next description runs right away, not after it."""
    page = app.page
    app.search("a dog with a ball")
    app.expect_round(1)
    app.expect_status(re.compile("The LLM is writing a question"))
    app.new_search()
    page.wait_for_timeout(600)  # the abandoned step lets go of the tab (it checks every 0.2 s)
    app.search("a red house")
    app.expect_round(1)  # the new search ran (before the fix it was refused: the tab was still "asking")
    refused = page.locator(".toast-body").filter(has_text=re.compile("writing a question|Still working"))
    assert refused.count() == 0
    assert "a red house" in app.dialogue()
    page.wait_for_selector("#iir-dialogue .iir-question")  # and its own question still comes
    shot(page, "new-search-while-asking")
