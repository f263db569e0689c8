"""Export (issue 25, deliverable 5): "Download results (CSV)" downloads the page's results in rank order with
their marks; "Download images (zip)" the page's images; before a search, a warning and no download."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from iir_testutils import query_modes
from pageobj import TIMEOUT_MS, AppPage, expect

pytestmark = pytest.mark.browser

K = 8


@pytest.fixture(scope="module")
def url(demo_retriever, app_env):
    from conftest import serve_in_process

    from interactive_ir.engine import EngineConfig, build_engine

    engine = build_engine(demo_retriever.retriever, llm=None, config=EngineConfig(k=K), belief=query_modes())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        with serve_in_process(engine, demo_retriever.notes) as u:
            yield u


def _download(page, button: str, tmp_path):
    if not page.locator(f"#{button}").is_visible():
        page.locator("#iir-export").get_by_text("Export", exact=True).first.click()  # open the accordion
    with page.expect_download(timeout=TIMEOUT_MS) as dl:
        page.locator(f"#{button}").click()
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    return path


def test_export_downloads_the_results_and_marks(browser, url, tmp_path):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    try:
        app = AppPage(ctx.new_page(), url).open()
        page = app.page
        app.search("a puppy sitting on the grass")
        app.expect_round(1)
        ids = app.ids()
        assert len(ids) == K
        app.button(1, "relevant").click()
        expect(app.cards.nth(1)).to_have_class(__import__("re").compile("is-rel"), timeout=TIMEOUT_MS)
        path = _download(page, "iir-export-csv", tmp_path)
        assert path.name == "search-results.csv"
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
        assert [r["id"] for r in rows] == ids
        assert [r["rank"] for r in rows] == [str(n) for n in range(1, K + 1)]
        assert [r["mark"] for r in rows] == ["", "relevant"] + [""] * (K - 2)
        assert all(r["caption"] and r["round"] == "0" for r in rows)
        data = json.loads(_download(page, "iir-export-json", tmp_path).read_text(encoding="utf-8"))
        assert [r["id"] for r in data["results"]] == ids
        with zipfile.ZipFile(_download(page, "iir-export-zip", tmp_path)) as z:
            assert sorted(z.namelist()) == sorted(ids)
    finally:
        ctx.close()


def test_export_before_a_search_warns_and_downloads_nothing(browser, url):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    try:
        page = AppPage(ctx.new_page(), url).open().page
        got = []
        page.on("download", lambda d: got.append(d))
        page.locator("#iir-export").get_by_text("Export", exact=True).first.click()
        page.locator("#iir-export-csv").click()
        expect(page.get_by_text("nothing to export yet", exact=False).first).to_be_visible(timeout=TIMEOUT_MS)
        page.wait_for_timeout(500)  # wait-ok: that nothing comes (no download) can only be waited out
        assert got == []
    finally:
        ctx.close()
