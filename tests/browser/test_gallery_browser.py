"""No LLM: picture questions with clickable options; the gallery's large view, example searches, Seen badges."""

from __future__ import annotations

import re

import pytest
from iir_testutils import query_modes
from pageobj import TIMEOUT_MS, AppPage, K, expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(demo_retriever, app_env):
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    engine = build_engine(demo_retriever.retriever, llm=None, config=EngineConfig(k=K), belief=query_modes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, demo_retriever.notes, examples=("a dog", "a red car", "a house")) as u:
            yield u


@pytest.fixture
def app(browser, url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    yield AppPage(ctx.new_page(), url).open()
    ctx.close()


def options(page):
    return page.locator("#iir-dialogue .iir-opt")


def test_an_example_runs_a_search_and_a_picture_question_is_answered_by_a_click(app, shot):
    page = app.page
    examples = page.locator("#iir-results .iir-example")
    expect(examples).to_have_count(3, timeout=TIMEOUT_MS)  # they come with the page's first render: wait (issue 29)
    shot(page, "empty")
    examples.nth(1).click()  # "a red car"
    app.expect_round(1)
    expect(page.locator("#iir-dialogue")).to_contain_text("a red car")
    expect(options(page).first).to_be_visible(timeout=30_000)
    labels = options(page).locator(".iir-opt-label").all_inner_texts()
    yesno = page.locator("#iir-dialogue .iir-opts-yesno").count() == 1  # drawn with the options just waited for
    assert labels == ["Yes", "No"] if yesno else (len(labels) >= 2 and labels[-1].lower() == "none of these"), labels
    shot(page, "options")
    label = labels[0]
    options(page).nth(0).click()  # the click is the answer
    app.expect_round(2)
    dialogue = page.locator("#iir-dialogue .iir-history")
    expect(dialogue.locator(".iir-you")).to_have_count(2)
    # the answer is the clicked option, in the words the option showed (cut labels end in "…")
    said = "yes" if yesno else "closest to: " + label.rstrip("…").strip()
    expect(dialogue.locator(".iir-you").nth(1)).to_contain_text(said)
    expect(options(page).first).to_be_visible(timeout=30_000)  # and the next picture question
    shot(page, "answered-by-click")


def test_a_click_on_a_replaced_question_is_refused_plainly(app, shot):
    page = app.page
    app.search("a yellow flower")
    page.wait_for_selector("#iir-dialogue .iir-opt", timeout=30_000)
    stale = options(page).nth(0)
    q = stale.get_attribute("data-question")
    # as if a newer action had replaced the question the click was made on
    page.evaluate("""(q) => { const b = document.querySelector('#iir-dialogue .iir-opt');
                              b.dataset.question = q + ' (older)'; }""", q)
    stale.click()
    app.expect_toast(re.compile("no longer open"))
    app.expect_round(1)  # nothing changed
    page.evaluate("(q) => { document.querySelector('#iir-dialogue .iir-opt').dataset.question = q; }", q)
    options(page).nth(0).click()  # the current question still works
    app.expect_round(2)
    shot(page, "stale-option")


def test_the_large_view_shows_caption_neighbours_and_actions(app, shot):
    page = app.page
    app.search("a cat")
    app.expect_round(1)
    app.wait_model()  # the question step re-renders the results: measure what stays on the page
    app.wait_idle()
    cards = app.cards
    w = cards.nth(0).bounding_box()["width"]
    assert w >= 160, w  # images a person can see on a desktop, in a dense grid (issue 25)
    cards.nth(1).locator("button.iir-open").click()
    box = page.locator("#iir-lightbox")
    expect(box).to_be_visible()
    cap2 = cards.nth(1).locator(".iir-cap").inner_text()
    expect(box.locator(".iir-lb-cap")).to_contain_text(cap2)
    assert box.locator(".iir-lb-img").bounding_box()["width"] > w  # larger than the card
    shot(page, "lightbox")
    page.keyboard.press("ArrowRight")
    expect(box.locator(".iir-lb-cap")).to_contain_text(cards.nth(2).locator(".iir-cap").inner_text())
    box.locator(".iir-lb-prev").click()
    expect(box.locator(".iir-lb-cap")).to_contain_text(cap2)
    box.locator('button[data-action="relevant"]').click()  # the card's actions work from the large view
    app.expect_status("marked 1 relevant")
    expect(box.locator('button[data-action="relevant"]')).to_have_attribute("aria-pressed", "true")
    assert app.button(1, "relevant").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Escape")
    expect(box).to_be_hidden()
    # an image that cannot be shown (removed from the collection): a plain message, not a broken page
    page.evaluate("() => { const b = document.querySelector('#iir-results .iir-card button.iir-open'); "
                  "b.dataset.src = 'gradio_api/file=/nonexistent/gone.png'; }")
    cards.nth(0).locator("button.iir-open").click()
    expect(box.locator(".iir-lb-missing")).to_contain_text("cannot be shown", timeout=10_000)
    shot(page, "lightbox-missing")
    box.locator(".iir-lb-close").click()
    expect(box).to_be_hidden()


def test_seen_badges_and_more_like_my_marks(app, shot):
    page = app.page
    app.search("a yellow flower")
    app.expect_round(1)
    first = set(app.ids())
    liked = app.ids()[0]
    app.button(0, "relevant").click()
    app.expect_status("marked 1 relevant")
    app.more_like_marks()  # pages through unseen images
    app.expect_round(2)
    assert not set(app.ids()) & first and not app.seen_ids()
    assert app.liked_ids() == [liked]  # what you liked stays in view, first
    page.wait_for_selector("#iir-dialogue .iir-opt", timeout=30_000)
    options(page).nth(0).click()  # a click answer searches the whole collection again
    app.expect_round(3)
    ids = app.ids()
    shown_before = first | set()
    seen = set(app.seen_ids())
    assert seen <= set(ids) and all(i in seen for i in ids if i in shown_before)
    shot(page, "seen")
