"""Act on several results (issue 25, deliverable 5): select cards (click, shift-click for a range, "Select all on
this page", x on the keyboard), download the selection as a zip or CSV, copy links to the selected images (each
link opens the image); a mark re-renders the cards and the selection stays; a new round keeps only what it shows."""

from __future__ import annotations

import csv
import io
import urllib.request
import zipfile

import pytest
from pageobj import TIMEOUT_MS, AppPage, K, expect

pytestmark = pytest.mark.browser


@pytest.fixture
def app(browser, app_url):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url.rstrip("/"))
    yield AppPage(ctx.new_page(), app_url).open()
    ctx.close()


def _box(app, i: int):
    return app.cards.nth(i).locator("button[data-select]")


def _download(page, what: str, tmp_path):
    with page.expect_download(timeout=TIMEOUT_MS) as dl:
        page.locator(f'#iir-results button[data-selbar="{what}"]').click()
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    return path


def test_select_results_then_download_them_and_copy_their_links(app, shot, tmp_path):
    page = app.page
    bar = page.locator("#iir-results .iir-selbar")
    app.search("a puppy sitting on the grass")
    app.expect_round(1)
    ids = app.settled_ids()
    assert len(ids) == K
    expect(bar.locator('button[data-selbar="zip"]')).to_be_disabled()  # nothing selected yet
    _box(app, 1).click()
    _box(app, 4).click(modifiers=["Shift"])  # 2..5, a range
    for i in range(K):
        expect(_box(app, i)).to_have_attribute("aria-pressed", "true" if 1 <= i <= 4 else "false")
    expect(bar.locator(".iir-selcount")).to_have_text("4 selected")
    _box(app, 3).click()  # a click again unselects
    expect(app.cards.nth(3)).not_to_have_class(__import__("re").compile("is-selected"))
    app.cards.nth(6).locator("button[data-action=open]").focus()
    page.keyboard.press("x")  # the keyboard selects the focused card
    expect(_box(app, 6)).to_have_attribute("aria-pressed", "true")
    picked = [ids[i] for i in (1, 2, 4, 6)]
    expect(bar.locator(".iir-selcount")).to_have_text("4 selected")

    # a mark re-renders the cards: the selection stays
    app.button(0, "relevant").click()
    app.expect_status("marked 1 relevant")
    expect(_box(app, 2)).to_have_attribute("aria-pressed", "true")
    expect(_box(app, 0)).to_have_attribute("aria-pressed", "false")
    shot(page, "selected")

    with zipfile.ZipFile(_download(page, "zip", tmp_path)) as z:
        assert sorted(z.namelist()) == sorted(picked)
    rows = list(csv.DictReader(io.StringIO(_download(page, "csv", tmp_path).read_text(encoding="utf-8"))))
    assert [r["id"] for r in rows] == picked and [r["rank"] for r in rows] == ["2", "3", "5", "7"]

    bar.locator('button[data-selbar="links"]').click()
    expect(bar.locator(".iir-selsaid")).to_have_text("4 links copied")
    links = page.evaluate("() => navigator.clipboard.readText()").split("\n")
    assert len(links) == 4 and all(u.startswith(app.url) for u in links), links
    for u in links:  # each link opens its image
        with urllib.request.urlopen(u, timeout=10) as r:
            assert r.status == 200 and r.headers["content-type"].startswith("image/")

    # Select all, then Clear
    bar.locator('button[data-selbar="all"]').click()
    expect(bar.locator(".iir-selcount")).to_have_text(f"{K} selected")
    expect(bar.locator('button[data-selbar="all"]')).to_be_disabled()
    bar.locator('button[data-selbar="clear"]').click()
    expect(page.locator("#iir-results .iir-card.is-selected")).to_have_count(0)
    expect(bar.locator('button[data-selbar="zip"]')).to_be_disabled()

    # a new round keeps only the selected images it shows again
    _box(app, 0).click()
    _box(app, 7).click()
    app.skip()
    app.expect_round(2)
    now = app.settled_ids()
    still = [i for i in (ids[0], ids[7]) if i in now]
    expect(bar.locator(".iir-selcount")).to_have_text(
        f"{len(still)} selected" if still else "Select results to download them or copy their links")
    expect(page.locator("#iir-results .iir-card.is-selected")).to_have_count(len(still))
