"""Two app processes behind nginx (deploy/nginx.conf), in Chromium: each browser gets its own affinity
cookie, searches and sees its results and pictures, and all its requests stay on one process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pageobj import AppPage, expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_replicas  # noqa: E402

pytestmark = pytest.mark.skipif(bench_replicas.NGINX is None, reason="nginx not installed (apt-get install -y nginx)")


def test_two_browsers_through_nginx_each_search_on_their_own_process(browser, tmp_path, shot):
    with bench_replicas.Replicas(tmp_path, n=2) as r:
        pages = []
        for words in ("a red dog on the grass", "a blue car in the snow"):
            context = browser.new_context(viewport={"width": 1280, "height": 900})  # a browser of its own
            app = AppPage(context.new_page(), r.base).open()
            app.search(words)
            app.expect_round(1)
            expect(app.page.locator("#iir-results img").first).to_be_visible()
            assert app.ids() and words in app.dialogue()
            cookie = next(c["value"] for c in context.cookies() if c["name"] == "iir_replica")
            pages.append((app, context, cookie))
        shot(pages[0][0].page, "behind-nginx")
        loaded = pages[0][0].page.evaluate(
            "() => [...document.querySelectorAll('#iir-results img')].filter(i => i.naturalWidth > 0).length")
        assert loaded > 0  # the pictures came through the proxy
        served = r.served_by()
        for _, context, cookie in pages:
            assert len(served[cookie]) == 1, served[cookie]  # every request of this browser on one process
            context.close()
