"""Sign in with Hugging Face in a browser (issue 27 D1), with Gradio's local mock of the sign-in: the
machine's login is checked against the stand-in Hub (whoami), and the signed-in visitor's questions reach
a stand-in router with their (mock) token, never the Space owner's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pageobj import AppPage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app_server import stop_app  # noqa: E402
from hub_standin import StandInHub  # noqa: E402
from llm_standin import StandInLLM  # noqa: E402
from test_sign_in import serve_app  # noqa: E402

pytestmark = pytest.mark.browser
OWNER = "hf_owner_token"


def test_a_visitor_signs_in_and_their_token_asks_the_questions(browser, tmp_path, shot):
    hub, llm = StandInHub(OWNER), StandInLLM()
    hub_url, llm_url = hub.start(), llm.start()
    proc, url, _ = serve_app(tmp_path, {"HF_ENDPOINT": hub_url, "HF_TOKEN": OWNER,
                                        "IIR_LLM": f"hf-router:org/model@{llm_url}"}, "--sign-in", "on", "-k", "8")
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        app = AppPage(ctx.new_page(), url + "/").open()
        page = app.page
        page.wait_for_selector("#iir-sign-in-note:has-text('Not signed in')")
        shot(page, "anonymous")
        app.search("a yellow flower")
        app.expect_round(1)
        page.wait_for_selector("#iir-dialogue .iir-question")
        assert llm.auths == []  # anonymous: a picture question, no model call
        page.locator("#iir-login").click()  # the mock signs in and comes back to the page
        page.wait_for_selector("#iir-sign-in-note:has-text('Signed in as')", timeout=30_000)
        assert "standin-user" in page.locator("#iir-login").inner_text()
        app.search("a red car")
        app.expect_round(1)
        page.wait_for_selector("#iir-dialogue .iir-question", timeout=30_000)
        shot(page, "signed-in-question")
        assert llm.auths and set(llm.auths) == {"Bearer mock-oauth-token-for-local-dev"}
        phone = browser.new_context(viewport={"width": 390, "height": 844})
        try:
            small = phone.new_page()
            small.goto(url + "/")
            small.wait_for_selector("#iir-login")
            box, head = small.locator("#iir-login").bounding_box(), small.locator("#iir-head h1").bounding_box()
            assert box["width"] > 80 and head["width"] > 100  # both readable on a phone
            shot(small, "phone")
        finally:
            phone.close()
    finally:
        ctx.close()
        stop_app(proc)
        hub.stop()
        llm.stop()
