"""The page in the browser's language (issue 26, deliverable 9): German, Chinese, and English for a language
the catalogue lacks; a German description on the English-only demo embedder brings the note."""

from __future__ import annotations

import pytest
from pageobj import AppPage
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _open(browser, url, locale):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, locale=locale)
    return ctx, AppPage(ctx.new_page(), url).open()


def test_the_page_in_german_shows_german_labels_and_the_english_only_note(browser, app_url, shot):
    ctx, app = _open(browser, app_url, "de-DE")
    try:
        page = app.page
        assert page.locator("#iir-new").inner_text().strip() == "Neue Suche"
        assert page.locator("#iir-desc textarea").get_attribute("placeholder").startswith("Beschreiben Sie das gesuchte Bild")
        assert "Interaktive Bildsuche" in page.locator("#iir-head").inner_text()
        expect(page.get_by_text("Optionen", exact=True).first).to_be_visible()
        expect(page.get_by_text("Options", exact=True)).to_have_count(0)
        shot(page, "german")
        app.search("ein Hund am Strand")
        app.expect_round(1)
        assert "look German" in app.status() and "open_clip:xlm-roberta-base-ViT-B-32" in app.status()
        shot(page, "german-note")
    finally:
        ctx.close()


def test_chinese_and_a_language_without_a_catalogue(browser, app_url, shot):
    ctx, app = _open(browser, app_url, "zh-CN")
    try:
        assert app.page.locator("#iir-new").inner_text().strip() == "新搜索"
        shot(app.page, "chinese")
    finally:
        ctx.close()
    ctx, app = _open(browser, app_url, "fr-FR")
    try:
        assert app.page.locator("#iir-new").inner_text().strip() == "New search"  # English, not a key
        assert "iir_" not in app.page.locator("#iir-page").inner_text()
        app.search("a dog on the beach")
        app.expect_round(1)
        assert "look" not in app.status()
    finally:
        ctx.close()
