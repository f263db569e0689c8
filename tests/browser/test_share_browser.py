"""Share a search (issue 25, deliverable 6): a link with `?q=...` runs its search on opening; the address bar
carries the search's link after a search; Copy link copies it; Save search downloads the session as JSON
and Open saved search restores it in another tab; a file that is not a saved search is refused plainly."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from pageobj import TIMEOUT_MS, AppPage, expect

pytestmark = pytest.mark.browser


def _query(page) -> dict:
    return parse_qs(urlsplit(page.url).query)


def test_a_shared_link_runs_its_search_and_the_address_bar_carries_it(browser, app_url):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url.rstrip("/"))
    try:
        page = ctx.new_page()
        page.goto(app_url.rstrip("/") + "/?q=a+red+dog&hide_seen=1")
        app = AppPage(page, app_url)
        app.expect_round(1)
        assert app.ids()
        expect(page.locator("#iir-desc textarea")).to_have_value("a red dog")
        page.wait_for_function("() => location.search.includes('red')", timeout=TIMEOUT_MS)
        assert _query(page) == {"q": ["a red dog"], "hide_seen": ["1"]}  # the link's setting is the tab's now
        # a new search in this tab: the address bar follows it
        app.search("a blue car")
        page.wait_for_function("() => location.search.includes('blue')", timeout=TIMEOUT_MS)
        assert _query(page) == {"q": ["a blue car"], "hide_seen": ["1"]}
        page.locator("#iir-copy-link").click()
        expect(page.locator("#iir-share .iir-copied")).to_have_text("Link copied", timeout=TIMEOUT_MS)
        copied = page.evaluate("() => navigator.clipboard.readText()")
        assert parse_qs(urlsplit(copied).query) == {"q": ["a blue car"], "hide_seen": ["1"]}
        # the copied link, opened in another browser context, shows the same results
        other = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        other.goto(copied)
        again = AppPage(other, app_url)
        again.expect_round(1)
        assert again.ids() == app.ids()
        other.context.close()
    finally:
        ctx.close()


def test_an_over_long_shared_description_is_refused_plainly(browser, app_url):
    page = browser.new_page()
    try:
        page.goto(app_url.rstrip("/") + "/?q=" + "dog+" * 3000)
        app = AppPage(page, app_url)
        app.expect_toast("description")
        assert not app.ids()
        page.wait_for_selector("#iir-desc textarea", timeout=TIMEOUT_MS)
    finally:
        page.close()


def test_save_then_open_a_search(browser, app_url, tmp_path):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    try:
        page = ctx.new_page()
        app = AppPage(page, app_url).open()
        app.search("a red dog")
        app.expect_round(1)
        app.wait_model()
        app.skip()
        app.expect_round(2)
        app.wait_model()
        app.wait_idle()
        save = page.locator("#iir-save")  # the link and Save search follow the results (their own event)
        expect(save).to_be_enabled(timeout=TIMEOUT_MS)
        shown = app.settled_ids()
        with page.expect_download(timeout=TIMEOUT_MS) as got:
            save.click()
        saved = tmp_path / "saved.json"
        got.value.save_as(saved)
        data = json.loads(saved.read_text())
        assert len(data["turns"]) == 2 and data["turns"][-1]["shown"] == shown

        fresh = ctx.new_page()
        other = AppPage(fresh, app_url).open()
        with fresh.expect_file_chooser() as chooser:
            fresh.locator("#iir-open").click()
        chooser.value.set_files(str(saved))
        other.expect_status("Opened a saved search")
        other.expect_round(len(data["turns"]))
        assert other.ids() == shown

        bad = tmp_path / "notes.json"
        bad.write_text('{"hello": 1}')
        with fresh.expect_file_chooser() as chooser:
            fresh.locator("#iir-open").click()
        chooser.value.set_files(str(bad))
        other.expect_toast("not a saved search")
        assert other.ids() == shown  # nothing changed
    finally:
        ctx.close()
