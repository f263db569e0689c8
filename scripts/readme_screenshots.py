"""The README's screenshots, taken by a script: `python scripts/readme_screenshots.py [--fake]`.

Starts `python app.py` (the app's defaults; `--fake`: the fake embedder and LLM, for a quick check of the
script), searches as a person would in headless Debian Chromium (/usr/bin/chromium), and writes
docs/screenshots/{desktop,phone}.png: the results with a question pending at 1440x900 and at 390x844. The PNGs
are reduced to 256 colours so the repository stays small (each well under 300 KB).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
QUERY = "a puppy sitting on the grass"
SIZES = {"desktop": ({"width": 1440, "height": 900}, False), "phone": ({"width": 390, "height": 844}, True)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(url: str, proc: subprocess.Popen, timeout: float = 600) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the app did not answer at {url} within {timeout:.0f} s")


def _shoot(browser, url: str, name: str) -> Path:
    from playwright.sync_api import expect

    size, phone = SIZES[name]
    ctx = browser.new_context(viewport=size, is_mobile=phone, has_touch=phone, device_scale_factor=1)
    try:
        page = ctx.new_page()
        page.goto(url)
        box = page.locator("#iir-desc textarea")
        expect(box).to_be_visible(timeout=60_000)
        box.fill(QUERY)
        box.press("Enter")
        expect(page.locator("#iir-results .iir-page-head")).to_contain_text("Round 1:", timeout=120_000)
        page.wait_for_function("() => !document.querySelector('#iir-dialogue .iir-asking, #iir-results .iir-quick')",
                               timeout=180_000)
        page.wait_for_function("() => [...document.querySelectorAll('#iir-results img')].every(i => i.complete)",
                               timeout=60_000)
        page.wait_for_function("() => document.getAnimations().every((a) => a.playState !== 'running')")
        page.evaluate("() => window.scrollTo(0, 0)")
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"{name}.png"
        page.screenshot(path=str(path))
        return path
    finally:
        ctx.close()


def _shrink(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fake", action="store_true", help="fake embedder and LLM (a quick check of the script)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    tmp = tempfile.mkdtemp(prefix="iir-shots-")
    if args.fake:
        env.update(IIR_EMBEDDER="fake:32", IIR_LLM="fake", IIR_VLM="fake", IIR_INDICES_DIR=f"{tmp}/indices",
                   IIR_CACHE_DIR=f"{tmp}/cache")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    with open(Path(tmp) / "app.log", "w") as log:
        proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--host", "127.0.0.1", "--port", str(port)],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_up(url, proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for name in SIZES:
                path = _shoot(browser, url, name)
                _shrink(path)
                print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.0f} KB")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
