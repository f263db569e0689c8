"""The photo demo in a browser (issue 25 D4): `python app.py` as a Space starts it (SPACE_ID set, the Hub
reachable: the stand-in Hub serving a small dataset in the DOCCI mirror's layout, a slow download). The page
comes up at once with the clipart and a progress note; when the photos are ready the tab is told, the same
port serves the photo page, the tab reloads onto it, and it shows the photos with their credit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from app_server import app_process
from conftest import ROOT
from pageobj import TIMEOUT_MS, AppPage, K, expect

pytestmark = pytest.mark.browser

N = 8  # photos in the stand-in dataset
SWITCH_MS = 180_000  # clipart index, download, build, grace period, relaunch: generous under load
# set in the tab, kept across its reload: the note said the photos were ready before the page switched
TOLD = """() => {
  new MutationObserver(() => {
    if (document.querySelector('#iir-gallery [data-photos="ready"]')) sessionStorage.setItem("iir-told", "1");
  }).observe(document, { childList: true, subtree: true, characterData: true, attributes: true });
}"""


@pytest.fixture(scope="module")
def photo_app(browser, app_env, tmp_path_factory):
    """The app on a Space with the Hub reachable and no photo index yet."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hub_standin import StandInHub
    from photo_standin import serve_docci

    hub = StandInHub()
    serve_docci(hub, N).slow_s = 4.0  # each shard takes a moment: the progress note is seen
    url = hub.start()
    tmp = tmp_path_factory.mktemp("photo-app")
    env = {k: v for k, v in app_env.items() if k not in ("HF_HUB_OFFLINE", "HF_TOKEN", "IIR_INDEX")}
    env.update(SPACE_ID="standin/iir-demo", HF_ENDPOINT=url, HF_HOME=str(tmp / "hf"), IIR_PHOTO_COUNT=str(N),
               IIR_INDICES_DIR=str(tmp / "indices"), IIR_CACHE_DIR=str(tmp / "cache"), IIR_LLM="none")
    log = tmp / "app.log"
    try:
        with app_process(["-k", str(K)], env, log) as url:
            yield url, log
    finally:
        hub.stop()


def test_the_page_serves_at_once_then_switches_to_the_credited_photos(browser, photo_app, shot):
    url, log = photo_app
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = ctx.new_page()
        page.add_init_script(f"({TOLD})()")
        app = AppPage(page, url).open()
        gallery = page.locator("#iir-gallery")
        # at once: the clipart, credited as before, and how far the photos are
        expect(gallery.locator(".iir-credit")).to_contain_text("Drawings: Open Clip Art Library, public domain")
        expect(gallery.locator(".iir-photo-note")).to_contain_text(f"Preparing {N} photos (DOCCI, CC BY 4.0)")
        shot(page, "clipart-preparing")
        # told, then switched: the same address now serves the photo page, and the tab reloaded onto it
        expect(gallery.locator(".iir-credit")).to_contain_text("Photos: DOCCI (Onoe et al., 2024), CC BY 4.0",
                                                               timeout=SWITCH_MS)
        page.wait_for_selector("body[data-iir-loaded]", state="attached", timeout=TIMEOUT_MS)
        assert page.evaluate("() => sessionStorage.getItem('iir-told')") == "1", "the tab was not told first"
        expect(gallery.locator(".iir-photo-note")).to_have_count(0)
        expect(gallery.locator('.iir-credit a[href="https://creativecommons.org/licenses/by/4.0/"]')).to_have_text(
            "CC BY 4.0")
        app.search("a red flower on green grass")
        app.expect_round(1)
        expect(app.cards).to_have_count(K)
        first = app.cards.first
        expect(first.locator("img")).to_be_visible()
        page.wait_for_function("() => [...document.querySelectorAll('#iir-results .iir-card img')]"
                               ".every((i) => i.complete && i.naturalWidth > 0)", timeout=TIMEOUT_MS)
        # the cards: a short, plain caption each (the first sentence, no framing); search read the whole one
        caps = app.cards.locator(".iir-cap").all_inner_texts()
        assert caps and all("view of" not in c and "\n" not in c and len(c) <= 90 for c in caps), caps
        tips = app.cards.locator(".iir-cap").evaluate_all("els => els.map(e => e.title)")
        assert all("no people in the image" in t for t in tips), tips
        shot(page, "photos-results")
        page.locator("#iir-notes-panel").click()
        expect(page.locator("#iir-notes")).to_contain_text("Credit: Photos: DOCCI (Onoe et al., 2024), CC BY 4.0")
        shot(page, "about-credit")
    finally:
        ctx.close()
    phone = browser.new_context(viewport={"width": 390, "height": 844})
    try:  # a new visitor on a phone gets the photo page straight away, credited under the results
        app = AppPage(phone.new_page(), url).open()
        expect(app.page.locator("#iir-gallery .iir-credit")).to_contain_text("Photos: DOCCI")
        app.search("a blue house on a sandy beach")
        app.expect_round(1)
        expect(app.cards.first.locator("img")).to_be_visible()
        shot(app.page, "phone-photos")
    finally:
        phone.close()
    text = Path(log).read_text()
    assert "photo demo: the page now serves the photos" in text and "Traceback" not in text
