"""No LLM: the page says the question mode is off, and feedback and composed search still work."""

from __future__ import annotations

import pytest
from iir_testutils import query_modes
from pageobj import AppPage, K, expect

from interactive_ir.ui.events import QUESTIONS_OFF

pytestmark = pytest.mark.browser

OFF = "Questions are off: no LLM is configured (set IIR_LLM). Marking results and reference search still work."


@pytest.fixture(scope="module")
def url(demo_retriever, app_env):
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig

    # no LLM and LLM questions chosen: the question mode is off (the default, "auto", asks grounded questions)
    engine = build_engine(demo_retriever.retriever, llm=None, config=EngineConfig(k=K),
                          plugir=PlugIRConfig(questioner="llm"), belief=query_modes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, [*demo_retriever.notes, OFF], questions_off_reason=OFF) as u:
            yield u


def test_questions_off_feedback_and_reference_still_work(browser, url, shot):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        app = AppPage(ctx.new_page(), url).open()
        page = app.page
        # the dialogue says it in plain words; the settings to change stay in the notes on the models
        expect(page.locator("#iir-dialogue")).to_contain_text(QUESTIONS_OFF)
        assert "IIR_LLM" not in app.dialogue()
        expect(page.locator("#iir-answer textarea")).to_be_disabled()
        expect(page.locator("#iir-skip")).to_be_disabled()
        app.search("a yellow flower")
        app.expect_round(1)
        app.wait_idle()  # every event of the round has run: a question or model step would be on the page by now
        expect(page.locator("#iir-status")).not_to_contain_text("Working")
        expect(page.locator("#iir-status")).not_to_contain_text("language model")
        expect(page.locator("#iir-dialogue .iir-question")).to_have_count(0)
        expect(page.locator("#iir-dialogue")).to_contain_text(QUESTIONS_OFF)
        shot(page, "results")
        app.button(0, "relevant").click()
        app.expect_status("marked 1 relevant")
        app.more_like_marks()
        app.expect_round(2)
        app.button(0, "reference").click()
        page.wait_for_selector("#iir-reference .iir-ref img")
        app.relative("the same in red")
        app.expect_round(3)
        # the dialogue says it in plain words; the settings to change stay in the notes on the models
        expect(app.cards).to_have_count(K)
        expect(page.locator("#iir-dialogue")).to_contain_text(QUESTIONS_OFF)
        assert "IIR_LLM" not in app.dialogue()
        shot(page, "feedback-and-reference")
    finally:
        ctx.close()
