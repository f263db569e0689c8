"""Browser tests: the app served locally with fake backends, driven by Debian's Chromium through Playwright.

Skipped (with the reason) when /usr/bin/chromium or the playwright package is missing. Screenshots of
every step go to artifacts/screenshots/ (gitignored).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from app_server import app_process, free_port, wait_until_up
from pageobj import K

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian Chromium not found at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def app_env(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("app")
    env = dict(os.environ)
    env.update(IIR_EMBEDDER="fake:32", IIR_LLM="fake", IIR_VLM="fake", IIR_INDICES_DIR=str(tmp / "indices"),
               IIR_CACHE_DIR=str(tmp / "cache"), GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1",
               PYTHONUNBUFFERED="1",
               IIR_BELIEF_ON_PAGE="0")  # the app's query-vector modes; the belief page: test_belief_browser.py
    for k in ("PORT", "GRADIO_SERVER_PORT", "GRADIO_SERVER_NAME", "OPENAI_API_KEY", "IIR_LLM_BASE_URL"):
        env.pop(k, None)
    env["IIR_TMP"] = str(tmp)
    return env


@pytest.fixture(scope="session")
def app_url(browser, app_env):
    """`python app.py` on the demo gallery (fake:32 embedder, fake LLM and VLM), as a user would start it."""
    with app_process(["-k", str(K)], app_env, Path(app_env["IIR_TMP"]) / "app.log") as url:
        yield url


@contextlib.contextmanager
def serve_in_process(engine, notes, **page_options):
    """`build_demo(engine, notes)` served from this process on a free port, with the process's settings
    installed as app.py does; yields its URL."""
    from interactive_ir.ui import build_demo, launch_options
    from interactive_ir.ui.serving.process import install

    install()
    demo = build_demo(engine, notes, **page_options)
    demo.queue(default_concurrency_limit=2)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **launch_options(engine))
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url)
        yield url
    finally:
        demo.close()


@pytest.fixture(scope="session")
def demo_retriever(app_url, app_env):
    """The demo index the app_url server built (fake:32), loaded in this process."""
    from interactive_ir.assembly.app_index import prepare

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IIR_INDICES_DIR", app_env["IIR_INDICES_DIR"])
        mp.setenv("IIR_CACHE_DIR", app_env["IIR_CACHE_DIR"])
        setup = prepare(embedder_spec="fake:32")
    return setup


@pytest.fixture
def shot(request):
    """shot(page, "step") saves artifacts/screenshots/<test>-<nn>-<step>.png (full page)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    counter = {"n": 0}
    name = request.node.name.replace("test_", "", 1)

    def take(page, step: str) -> Path:
        counter["n"] += 1
        path = SHOTS / f"{name}-{counter['n']:02d}-{step}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
