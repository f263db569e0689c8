"""Issue 25, items 1, 2, 5, 6, 8 and 10, as a person meets them in the browser: an uploaded reference refined by
the model, the large view keeping clicks and focus, the pending question always in view, a visible "Found
it", what you liked kept in view, and plain words (the study's end and admin pages count give-ups as such)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from iir_testutils import query_modes
from pageobj import AppPage, K, expect

pytestmark = pytest.mark.browser

# WCAG contrast of an element's text against what is behind it, from computed styles: the colour (with the
# opacities of the element and its ancestors) over the first ancestor background that is not transparent
CONTRAST_JS = """(el) => {
  const rgba = (s) => { const m = s.match(/rgba?\\(([^)]+)\\)/); if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (fg, bg) => [0, 1, 2].map((i) => fg[i] * fg[3] + bg[i] * (1 - fg[3]));
  const lum = (c) => { const v = c.map((x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  let opacity = 1, bgs = [];
  for (let e = el; e; e = e.parentElement) {
    const cs = getComputedStyle(e);
    opacity *= Number(cs.opacity);
    const b = rgba(cs.backgroundColor);
    if (b[3] > 0) bgs.push(b);
    if (b[3] >= 1) break;
  }
  let bg = [255, 255, 255];
  for (const b of bgs.reverse()) bg = over(b, bg);
  const c = rgba(getComputedStyle(el).color);
  const fg = over([c[0], c[1], c[2], c[3] * opacity], bg);
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""

# is the element inside every box that clips it (an ancestor with overflow other than visible)?
UNCLIPPED_JS = """(el) => {
  const r = el.getBoundingClientRect();
  for (let e = el.parentElement; e; e = e.parentElement) {
    const cs = getComputedStyle(e);
    if (cs.overflowY === "visible" && cs.overflowX === "visible") continue;
    if (e === document.body || e === document.documentElement) continue;
    const b = e.getBoundingClientRect();
    if (r.top < b.top - 1 || r.bottom > b.bottom + 1 || r.left < b.left - 1 || r.right > b.right + 1) return false;
  }
  return r.width > 0 && r.height > 0;
}"""


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    yield ctx.new_page()
    ctx.close()


@pytest.fixture
def app(page, app_url):
    return AppPage(page, app_url).open()


@pytest.fixture(scope="module")
def picture_url(demo_retriever, app_env):
    """The page with no LLM: picture questions with clickable options, every round."""
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    engine = build_engine(demo_retriever.retriever, llm=None, config=EngineConfig(k=K), belief=query_modes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, demo_retriever.notes) as u:
            yield u


# --- item 1: an uploaded reference with a caption, refined by the model -------------------------------------------
def test_an_uploaded_reference_is_refined_by_the_model_then_deleted(app, app_env, shot, tmp_path):
    from PIL import Image

    uploads = Path(app_env["IIR_CACHE_DIR"]) / "uploads"
    img = tmp_path / "my photo.png"
    Image.new("RGB", (64, 48), (200, 120, 30)).save(img)
    app.upload(img)
    app.page.wait_for_selector("#iir-reference .iir-ref img")
    app.relative("the same colour but with a boat")
    app.expect_round(1)
    app.wait_model()  # the quick results, then the model's (imagescope reads the upload again)
    status = app.status()
    assert "could not" not in status and "does not exist" not in status, status
    assert not re.search(r"/\w+/", status), status  # never a server path
    expect(app.page.locator("#iir-results .iir-page-head")).to_contain_text("Refined")
    shot(app.page, "upload-refined")
    # the model's work is done: the upload is deleted (the page shows the top result as the reference)
    deadline = time.time() + 10
    while time.time() < deadline and uploads.exists() and any(uploads.iterdir()):
        time.sleep(0.2)  # wait-ok: polling the upload folder (a server-side state)
    assert not uploads.exists() or not any(uploads.iterdir())


def test_without_a_way_to_read_uploads_the_page_says_why(browser, app_env, tmp_path, shot):
    """A caption index and no captioner (the offline demo's default): no upload, and a plain reason."""
    from conftest import serve_in_process
    from iir_testutils import build_tiny, query_modes

    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui.render import NO_UPLOAD

    class TextOnly(FakeEmbedder):
        has_vision = False

    r, _, _ = build_tiny(tmp_path, embedder=TextOnly(32))
    engine = build_engine(r, config=EngineConfig(k=4), belief=query_modes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, ["a tiny index"]) as url:
            ctx = browser.new_context(viewport={"width": 1440, "height": 900})
            try:
                app = AppPage(ctx.new_page(), url).open()
                expect(app.page.locator("#iir-upload input[type=file]")).to_have_count(0)
                expect(app.page.locator("#iir-reference")).to_contain_text(NO_UPLOAD)
                shot(app.page, "no-upload-why")
            finally:
                ctx.close()


# --- item 2: the large view keeps held clicks and the keyboard focus --------------------------------------------
def test_the_large_view_keeps_held_clicks_and_traps_focus(app, shot):
    page = app.page
    app.search("a cat")
    app.expect_round(1)
    app.wait_model()
    app.wait_idle()
    app.cards.nth(1).locator("button.iir-open").click()
    box = page.locator("#iir-lightbox")
    expect(box).to_be_visible()
    rel = box.locator('button[data-action="relevant"]')
    for n in range(6):  # each click held for 0.6 s, as a person on a touchpad does
        b = rel.bounding_box()
        page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
        page.mouse.down()
        page.wait_for_timeout(600)  # wait-ok: the click is held this long (the action itself)
        page.mouse.up()
        want = "true" if n % 2 == 0 else "false"
        expect(rel).to_have_attribute("aria-pressed", want, timeout=8_000)
        expect(app.button(1, "relevant")).to_have_attribute("aria-pressed", want, timeout=8_000)
    rel.focus()
    page.wait_for_timeout(1500)  # wait-ok: the page re-renders meanwhile, and the focus must stay all along
    assert page.evaluate("() => document.activeElement.dataset.action") == "relevant"
    inside = "() => document.getElementById('iir-lightbox').contains(document.activeElement)"
    for key in ["Tab"] * 8 + ["Shift+Tab"] * 8:
        page.keyboard.press(key)
        assert page.evaluate(inside), key  # Tab never leaves the dialog
    shot(page, "large-view-focus")
    page.keyboard.press("Escape")
    expect(box).to_be_hidden()
    back = page.evaluate("() => { const a = document.activeElement; return [a.dataset.action, "
                         "a.closest('.iir-card') && a.closest('.iir-card').dataset.id]; }")
    assert back == ["open", app.ids()[1]]  # the focus is back on the card the view was opened from


# --- item 5: the pending question and its options stay in view --------------------------------------------------
def test_the_pending_question_stays_in_view_after_many_rounds(browser, picture_url, shot):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        app = AppPage(ctx.new_page(), picture_url).open()
        page = app.page
        app.search("a dog on the grass")
        for n in range(1, 7):
            app.expect_round(n)
            page.wait_for_selector("#iir-dialogue .iir-opt", timeout=30_000)
            app.wait_idle()
            if n < 6:
                page.locator("#iir-dialogue .iir-opt").nth(0).click()
        opts = page.locator("#iir-dialogue .iir-question .iir-opt")
        expect(opts.nth(1)).to_be_attached()
        page.evaluate("() => window.scrollTo(0, 0)")  # nothing scrolled by hand: what a person sees
        for i in range(opts.count()):
            assert opts.nth(i).evaluate(UNCLIPPED_JS), f"option {i} is cut off"
            assert opts.nth(i).bounding_box()["y"] + opts.nth(i).bounding_box()["height"] <= 900, f"option {i} below"
        # the history scrolls in its own box, showing its newest line
        last = page.locator("#iir-dialogue .iir-history .iir-msg").last
        assert last.evaluate(UNCLIPPED_JS)
        expect(page.locator("#iir-dialogue .iir-history .iir-msg").nth(9)).to_be_attached()
        shot(page, "question-after-six-rounds")
    finally:
        ctx.close()


# --- item 6: "Found it" is a clear primary action, notes are readable ---------------------------------------------
def test_found_it_is_a_clear_action_and_notes_are_readable(browser, picture_url, shot):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        app = AppPage(ctx.new_page(), picture_url).open()
        page = app.page
        app.search("a red car")
        app.expect_round(1)
        page.wait_for_selector("#iir-dialogue .iir-opt", timeout=30_000)
        app.wait_idle()
        found = page.locator('#iir-results .iir-card button[data-action="found"]')
        expect(found).to_have_count(K)
        for i in range(K):
            b = found.nth(i)
            ratio = b.evaluate(CONTRAST_JS)
            box = b.bounding_box()
            assert ratio >= 4.5 and box["height"] >= 44 and box["width"] >= 44, (i, ratio, box)
        notes = page.locator("#iir-dialogue .iir-note, #iir-dialogue .iir-qnote")
        expect(notes.first).to_be_attached()
        for i in range(notes.count()):
            assert notes.nth(i).evaluate(CONTRAST_JS) >= 4.5, notes.nth(i).inner_text()
        shot(page, "found-it-primary")
    finally:
        ctx.close()


# --- item 8: "More like my marks" keeps what you liked in view ----------------------------------------------------
def test_more_like_my_marks_keeps_the_liked_images_first(app, shot):
    page = app.page
    app.search("a dog")
    app.expect_round(1)
    app.wait_model()
    app.wait_idle()
    liked = app.ids()[:2]
    app.button(0, "relevant").click()
    app.expect_status("marked 1 relevant")
    app.button(1, "relevant").click()
    app.expect_status("marked 2 relevant")
    app.more_like_marks()
    app.expect_round(2)
    assert app.liked_ids() == liked  # first on the page, with a badge
    assert not set(app.ids()) & set(liked) and len(app.ids()) == K  # the round itself shows new images
    expect(page.locator("#iir-results .iir-card.is-liked .iir-liked")).to_have_count(2)
    app.expect_status("the 2 you liked stay first")
    first = page.locator("#iir-results .iir-card").first
    assert first.get_attribute("data-id") == liked[0]
    shot(page, "liked-kept")
    first.locator('button[data-action="found"]').click()  # one of them was the one after all
    app.expect_status("Found")
    assert "round 1, at place 1" in app.status()


# --- item 10: plain words -----------------------------------------------------------------------------------------
def test_plain_words_on_the_page(app, shot):
    page = app.page
    app.search("a small house")
    app.expect_round(1)
    app.wait_model()
    label = page.locator("#iir-desc label, #iir-desc [data-testid=block-info]").first.inner_text()
    assert len(label) <= 50, label
    target = app.ids()[2]
    app.button(2, "found").click()
    app.expect_status("Found")
    status = app.status()
    assert target not in status and "." + target.rsplit(".", 1)[-1] not in status  # no file name
    # nothing the page shows outside the notes on the models names settings or specs
    page.locator("#iir-notes-panel").evaluate("e => e.remove()")
    text = page.locator("body").inner_text()
    for jargon in ("HF_TOKEN", "IIR_", "fake:32", "--llm", "/tmp/"):
        assert jargon not in text, jargon
    shot(page, "plain-words")


# --- item 10 in the study: no Gradio links, give-ups counted as such, a plain message for a missing answer -------
@pytest.fixture(scope="module")
def giveup_study(browser, app_env, tmp_path_factory):
    from test_study_browser import TARGETS, _serve_study

    yield from _serve_study(
        app_env, tmp_path_factory.mktemp("giveup"),
        "study_id: giveup-study\ntitle: Give-up study\nrounds: 2\nk: 6\ncounterbalance: none\n"
        "conditions:\n  A: {mode: feedback, label: System A}\n"
        "questionnaires:\n  end: [ueq_s]\n"
        f"tasks: [{TARGETS[0]}, {TARGETS[1]}]\n", "giveup-study")


def test_study_end_and_admin_count_give_ups_and_show_no_gradio_links(browser, giveup_study, shot):
    from test_study_browser import ADMIN_PASSWORD, TIMEOUT_MS

    url, _ = giveup_study
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(url)
        expect(page.locator("#iir-agree")).to_be_visible(timeout=TIMEOUT_MS)
        _expect_no_gradio_links(page)
        shot(page, "consent-no-gradio-links")
        page.click("#iir-agree")
        for _ in (1, 2):
            expect(page.locator("#iir-start-task")).to_be_visible(timeout=TIMEOUT_MS)
            page.click("#iir-start-task")
            page.fill("#iir-desc textarea", "something blue")
            page.press("#iir-desc textarea", "Enter")
            expect(page.locator("#iir-results .iir-card").first).to_be_visible(timeout=TIMEOUT_MS)
            page.click("#iir-give-up")
            page.click("#iir-give-up-yes")  # no questionnaire after a task in this study: the next task, or the end form
        # the end questionnaire (UEQ-S): submitted with item 1 left empty, the message says which and what to do
        expect(page.locator("#iir-q-ueqs_2")).to_be_visible(timeout=TIMEOUT_MS)
        for i in range(2, 9):
            page.locator(f"#iir-q-ueqs_{i} label").filter(has_text="5").first.click()
        page.click("#iir-submit-end")
        expect(page.locator("#iir-status, .toast-body").filter(has_text="question 1 of 8").first).to_be_visible(
            timeout=TIMEOUT_MS)
        said = page.locator("#iir-status, .toast-body").filter(has_text="question 1 of 8").first.inner_text()
        assert "obstructive" in said and "choose a number from 1 (obstructive) to 7 (supportive)" in said, said
        shot(page, "ueq-missing-item")
        page.locator("#iir-q-ueqs_1 label").filter(has_text="5").first.click()
        page.click("#iir-submit-end")
        done = page.locator("#iir-study-done")
        expect(done).to_contain_text("Thank you", timeout=TIMEOUT_MS)
        assert "completed all" not in done.inner_text()
        assert "found the image in 0 of 2 tasks" in done.inner_text()
        shot(page, "end-page-give-ups")
    finally:
        ctx.close()
    admin = browser.new_page()
    try:
        admin.goto(url + "admin")
        expect(admin.locator("#iir-admin-password input")).to_be_visible(timeout=TIMEOUT_MS)
        _expect_no_gradio_links(admin)
        shot(admin, "admin-no-home-bar")
        admin.fill("#iir-admin-password input", ADMIN_PASSWORD)
        admin.click("#iir-admin-login")
        summary = admin.locator("#iir-admin-summary")
        expect(summary).to_contain_text("2 task(s) ended: 0 found, 2 given up", timeout=TIMEOUT_MS)
        shot(admin, "admin-give-ups")
    finally:
        admin.close()


def _expect_no_gradio_links(page) -> None:
    """No Gradio "Home" bar, "Use via API", "Built with Gradio" or Settings link is visible on a rendered page.
    The caller waits for the page's own first component: Gradio draws its bar and footer in the same pass, so a
    bar that is there shows by then (the old /admin failed here with its "Home" link)."""
    expect(page.get_by_role("link", name="Home")).to_have_count(0)
    expect(page.locator(".nav-holder, nav a").filter(has_text="Home")).to_have_count(0)
    for link in ("Use via API", "Built with Gradio", "Settings"):
        expect(page.locator("footer").get_by_text(link)).to_have_count(0)
        expect(page.get_by_text(link, exact=True)).to_have_count(0)
