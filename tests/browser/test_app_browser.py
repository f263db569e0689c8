"""The web app in headless Chromium: every interaction mode, separate sessions, layout, bad input."""

from __future__ import annotations

import re

import pytest
from pageobj import K, expect

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser, app_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    p = ctx.new_page()
    yield p
    ctx.close()


@pytest.fixture
def app(page, app_url):
    from pageobj import AppPage

    return AppPage(page, app_url).open()


def test_full_search_every_mode(app, shot):
    page = app.page
    page.locator("#iir-notes-panel").get_by_text("About this app").click()  # folded by default
    expect(page.locator("#iir-notes")).to_contain_text("fake:32", timeout=10_000)
    expect_text = page.locator("#iir-notes").inner_text()
    assert "fake:32" in expect_text and "LLM fake" in expect_text  # the setup notes are on the page
    shot(page, "start")

    # a description: k results with captions as alt text, and a question about them
    app.search("a cat sleeping on a sofa")
    app.expect_round(1)
    ids1 = app.ids()
    assert len(ids1) == K
    alts = app.alts()
    assert len(alts) == K and all(a.strip() for a in alts)
    app.page.wait_for_selector("#iir-dialogue .iir-question")
    assert "You: a cat sleeping on a sofa" in app.dialogue()
    shot(page, "results-and-question")

    # answer the question: a new round, the answer in the dialogue, the answer box cleared
    question = page.locator("#iir-dialogue .iir-question").inner_text()
    app.answer("it is black and white")
    app.expect_round(2)
    app.wait_model()  # the plain dialogue's results, then the LLM's rewrite's
    assert "You: it is black and white" in app.dialogue()
    assert page.locator("#iir-answer textarea").input_value() == ""
    ids2 = app.ids()
    assert len(ids2) == K  # the top-k of the whole collection: images shown before may come back (marked seen)
    assert set(app.seen_ids()) == set(ids2) & set(ids1)
    expect(page.locator("#iir-results .iir-card.is-seen .iir-seen")).to_have_count(len(set(ids2) & set(ids1)))
    if set(ids2) & set(ids1):  # the Seen badge is not under the card's select box
        card = page.locator("#iir-results .iir-card.is-seen").first
        badge, box = card.locator(".iir-seen").bounding_box(), card.locator(".iir-select").bounding_box()
        assert badge and box and (badge["x"] + badge["width"] <= box["x"] or badge["y"] >= box["y"] + box["height"])
    assert question.replace("System asks:", "").strip() in app.dialogue()  # the answered question stays visible
    shot(page, "answered")

    # mark two results, unmark one; toggles show their state
    app.button(0, "relevant").click()
    app.button(1, "irrelevant").click()
    app.button(2, "relevant").click()
    app.expect_status("marked 2 relevant, 1 not relevant")
    app.button(2, "relevant").click()  # toggle off
    app.expect_status("marked 1 relevant, 1 not relevant")
    assert app.button(0, "relevant").get_attribute("aria-pressed") == "true"
    assert app.button(1, "irrelevant").get_attribute("aria-pressed") == "true"
    assert app.button(2, "relevant").get_attribute("aria-pressed") == "false"
    shot(page, "marked")

    app.more_like_marks()
    app.expect_round(3)
    app.wait_model()
    ids3 = app.ids()
    assert len(ids3) == K and not set(ids3) & (set(ids1) | set(ids2))
    assert "(you marked 1 relevant, 1 not relevant)" in app.dialogue()
    # the marked images keep their marks in the strip of earlier rounds
    # (an image shown in two rounds has a thumbnail in each)
    expect(page.locator("#iir-strip .iir-thumb.is-rel").first).to_be_attached()
    expect(page.locator("#iir-strip .iir-thumb.is-irr").first).to_be_attached()
    shot(page, "feedback-page")

    # a reference from the results plus a relative caption
    ref = ids3[1]
    app.button(1, "reference").click()
    page.wait_for_selector("#iir-reference .iir-ref img")
    assert app.button(1, "reference").get_attribute("aria-pressed") == "true"
    app.relative("the same but with a blue background")
    app.expect_round(4)
    app.wait_model()
    ids4 = app.ids()
    assert ref not in ids4 and len(ids4) == K  # never the reference itself; seen images may come back
    assert set(app.seen_ids()) == set(ids4) & (set(ids1) | set(ids2) | set(ids3))
    strip = page.locator("#iir-strip").inner_text()
    assert "Round 3" in strip and "relative to" not in strip  # round 4 is the current page, not in the strip yet
    expect(page.locator("#iir-strip .iir-round")).to_have_count(3)
    shot(page, "relative-caption")

    # I found it: the search ends with round and rank, the buttons go away
    target = ids4[2]
    rank = app.cards.nth(2).get_attribute("data-rank")  # its rank: results kept from round 3 keep their places
    app.button(2, "found").click()
    app.expect_status("Found")
    assert f"round 4, at place {rank}" in app.status() and target not in app.status()  # plain words, no file name
    expect(page.locator("#iir-results .iir-actions button[data-action]")).to_have_count(0)
    assert page.locator("#iir-results .iir-card.is-found").get_attribute("data-id") == target
    expect(page.locator("#iir-answer")).to_be_hidden()  # no more questions for an ended search
    expect(page.locator("#iir-skip")).to_be_hidden()
    expect(page.locator("#iir-caption")).to_be_hidden()
    shot(page, "found")

    # new search: an empty page and boxes
    app.new_search()
    app.expect_status("Start by describing")
    expect(page.locator("#iir-results .iir-example").first).to_be_visible()  # the empty page is drawn
    expect(app.cards).to_have_count(0)
    expect(page.locator("#iir-desc textarea")).to_have_value("")
    shot(page, "new-search")
    expect(page.locator("#iir-answer textarea")).to_be_disabled()  # no question yet
    app.search("a red flag")
    app.expect_round(1)
    assert "a cat" not in app.dialogue()


def test_skip_question(app, shot):
    app.search("a bird in a tree")
    app.expect_round(1)
    first = app.settled_ids()
    app.skip()
    app.expect_round(2)
    assert "(question skipped)" in app.dialogue()
    assert not set(app.ids()) & set(first)
    app.page.wait_for_selector("#iir-dialogue .iir-question")
    shot(app.page, "skipped")


def test_hide_seen_option_shows_only_new_images(app, shot):
    """Options > "Hide images already shown": the tab's next rounds show no image shown before, none marked seen."""
    page = app.page
    page.locator("#iir-options").get_by_text("Options").click()
    app.wait_idle()  # the page's load events (a shared link, the options' sync) have set the boxes
    hide = page.locator("#iir-hide-seen input[type=checkbox]")
    hide.check()
    expect(hide).to_be_checked()
    app.search("a cat sleeping on a sofa")
    app.expect_round(1)
    first = app.settled_ids()
    app.answer("it is black and white")
    app.expect_round(2)
    app.wait_model()
    assert len(app.ids()) == K and not set(app.ids()) & set(first)
    expect(page.locator("#iir-results .iir-card.is-seen")).to_have_count(0)
    assert app.seen_ids() == []
    shot(page, "hide-seen")


def test_quick_clicks_are_all_kept(app, shot):
    """Marks clicked in quick succession each count (none is dropped while the previous one renders)."""
    app.search("a bowl of fruit")
    app.expect_round(1)
    for i in range(5):
        app.button(i, "relevant" if i % 2 == 0 else "irrelevant").click()
    app.expect_status("marked 3 relevant, 2 not relevant")
    pressed = [app.button(i, "relevant" if i % 2 == 0 else "irrelevant").get_attribute("aria-pressed")
               for i in range(5)]
    assert pressed == ["true"] * 5
    shot(app.page, "quick-marks")


def test_found_on_an_earlier_round_in_the_strip(app, shot):
    """A result passed over in round 1 can still be the one: Found under its thumbnail ends the search."""
    page = app.page
    app.search("a house with a red roof")
    app.expect_round(1)
    first = app.settled_ids()
    app.skip()
    app.expect_round(2)
    app.wait_model()  # the page settles (a button re-rendered under the pointer loses its click)
    thumbs = page.locator("#iir-strip .iir-thumb-found")
    expect(thumbs).to_have_count(K)
    expect(page.locator("#iir-strip")).to_contain_text("Passed over your image?")
    thumbs.nth(3).click()
    app.expect_status("Found")
    assert "round 1, at place 4" in app.status() and first[3] not in app.status()  # no file name
    expect(page.locator("#iir-strip .iir-thumb.is-found")).to_have_count(1)
    expect(page.locator("#iir-strip .iir-thumb-found")).to_have_count(0)  # the search ended: no more buttons
    shot(page, "found-in-strip")


def test_two_browser_contexts_keep_separate_sessions(browser, app_url, shot):
    from pageobj import AppPage

    ctx_a = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx_b = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        a = AppPage(ctx_a.new_page(), app_url).open()
        b = AppPage(ctx_b.new_page(), app_url).open()
        a.search("a cat sleeping")  # both searches in flight at once
        b.search("a flag with a red cross")
        a.expect_round(1)
        b.expect_round(1)
        a.button(0, "relevant").click()
        a.expect_status("marked 1 relevant")
        a.answer("it is orange")
        a.expect_round(2)
        assert "it is orange" in a.dialogue() and "a flag" not in a.dialogue()
        assert "a flag with a red cross" in b.dialogue() and "a cat" not in b.dialogue()
        assert "it is orange" not in b.dialogue() and "marked" not in b.status()
        b.page.goto(b.url)  # a fresh page is a fresh session; the other tab is untouched (reload() would run the
        b.page.wait_for_selector("#iir-desc textarea")  # search again: the address bar carries it, ?q=...)
        expect(b.page.locator("#iir-results .iir-example").first).to_be_visible()  # the empty page is drawn
        expect(b.cards).to_have_count(0)
        expect(b.page.locator("#iir-dialogue .iir-you")).to_have_count(0)
        a.skip()
        a.expect_round(3)
        shot(a.page, "context-a")
        shot(b.page, "context-b")
    finally:
        ctx_a.close()
        ctx_b.close()


def test_upload_reference_and_caption(app, shot, tmp_path):
    from PIL import Image

    img = tmp_path / "my photo.png"
    Image.new("RGB", (64, 48), (30, 120, 200)).save(img)
    app.upload(img)
    app.page.wait_for_selector("#iir-reference .iir-ref img")
    assert "your uploaded image" in app.page.locator("#iir-reference").inner_text()
    shot(app.page, "uploaded")
    app.relative("the same colour but with a boat")
    app.expect_round(1)
    expect(app.cards).to_have_count(K)
    assert "relative to a reference image" in app.dialogue()
    assert "Upload a reference image" in app.page.locator("#iir-reference").inner_text() or \
        "top result" in app.page.locator("#iir-reference").inner_text()
    shot(app.page, "relative-results")


def test_layout_at_laptop_and_phone_width(browser, app_url, shot):
    from pageobj import AppPage

    for name, size in (("laptop", {"width": 1280, "height": 800}), ("phone", {"width": 390, "height": 844})):
        ctx = browser.new_context(viewport=size, is_mobile=name == "phone", has_touch=name == "phone")
        try:
            app = AppPage(ctx.new_page(), app_url).open()
            app.search("a tree in the snow")
            app.expect_round(1)
            page = app.page
            page.wait_for_function("() => [...document.querySelectorAll('#iir-results img')].every(i => i.complete)")
            app.settle_layout()  # before measuring
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{name}: the page scrolls sideways by {overflow}px"
            first, second = (app.cards.nth(i).bounding_box() for i in (0, 1))
            assert abs(first["y"] - second["y"]) < 2, (name, first, second)  # 2+ per row
            assert first["x"] + first["width"] <= size["width"], (name, first)
            dlg = page.locator("#iir-dialogue").bounding_box()
            res = page.locator("#iir-results").bounding_box()
            if name == "laptop":
                assert first["width"] >= 160, first  # images a person can see
                assert dlg["y"] + dlg["height"] <= res["y"] + 5, (dlg, res)  # the question bar above the results
                assert res["y"] < size["height"], res  # results start above the fold
            page.wait_for_selector("#iir-dialogue .iir-question")
            if name == "phone":
                # the dialogue bar sits at the bottom of the screen: the question and the answer box are
                # reachable without scrolling past the results
                page.evaluate("() => window.scrollTo(0, 0)")
                q = page.locator("#iir-dialogue .iir-question").bounding_box()
                box = page.locator("#iir-answer textarea").bounding_box()
                assert 0 <= q["y"] and box["y"] + box["height"] <= size["height"], (q, box)
                btn = app.button(0, "found").bounding_box()
                assert btn["height"] >= 24, btn  # big enough to tap
                shot(page, "phone-question")
                page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
                app.answer("it is white")  # from the bar, at the bottom of the page
                app.expect_round(2)
                # the new round scrolls into view (waited for: the scroll follows the render)
                page.wait_for_function("(h) => { const c = document.querySelector('#iir-results .iir-card');"
                                       "const y = c && c.getBoundingClientRect().top; return y >= 0 && y < h / 2; }",
                                       arg=size["height"], timeout=30_000)
            shot(page, name)
        finally:
            ctx.close()


# --- bad input ------------------------------------------------------------------------------------
def test_empty_description_and_overlong_answer(app, shot):
    app.search("")
    app.expect_toast(re.compile("description is empty", re.I))
    app.expect_status("description is empty")
    expect(app.cards).to_have_count(0)
    shot(app.page, "empty-description")

    app.search("a horse in a field")
    app.expect_round(1)
    before = app.settled_ids()
    app.answer("x" * 10_000)
    app.expect_toast(re.compile("10,000 characters", re.I))
    app.expect_status("10,000 characters")
    assert app.ids() == before  # nothing changed
    shot(app.page, "long-answer")
    app.answer("it is brown")  # the session still works
    app.expect_round(2)
    assert "it is brown" in app.dialogue() and "xxxxxxxx" not in app.dialogue()


def test_non_image_and_huge_uploads_are_refused(app, shot, tmp_path):
    from PIL import Image

    app.search("a boat on a river")
    app.expect_round(1)
    txt = tmp_path / "notes.txt"
    txt.write_text("this is not an image\n" * 50)
    app.upload(txt)
    app.expect_toast(re.compile("image", re.I))
    shot(app.page, "text-upload")
    expect(app.page.locator("#iir-reference .iir-ref img")).to_have_count(0)

    fake = tmp_path / "fake.png"  # an image extension with text inside
    fake.write_text("not a png")
    app.upload(fake)
    app.expect_toast(re.compile("not a readable image", re.I))
    expect(app.page.locator("#iir-reference .iir-ref img")).to_have_count(0)

    huge = tmp_path / "huge.png"  # 100 megapixels, a small file
    Image.new("1", (10_000, 10_000)).save(huge)
    app.upload(huge)
    app.expect_toast(re.compile("megapixels", re.I))
    app.expect_status("100 megapixels")
    expect(app.page.locator("#iir-reference .iir-ref img")).to_have_count(0)
    shot(app.page, "huge-upload")
    app.answer("it is white")  # the session survives
    app.expect_round(2)


def test_double_click_i_found_it(app, shot):
    app.search("a red car")
    app.expect_round(1)
    target = app.settled_ids()[1]
    app.button(1, "found").dblclick()
    app.expect_status("Found")
    app.wait_idle()  # the second click's event has run too
    assert "round 1, at place 2" in app.status()
    assert app.page.locator("#iir-results .iir-card.is-found").get_attribute("data-id") == target
    expect(app.page.locator(".toast-body").filter(has_text="Something went wrong")).to_have_count(0)
    expect(app.page.locator("#iir-results .iir-card.is-found")).to_have_count(1)
    shot(app.page, "found-twice")
    expect(app.page.locator("#iir-answer")).to_be_hidden()  # no answering after the end
