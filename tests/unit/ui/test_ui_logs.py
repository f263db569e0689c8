"""The app's log: the browser URL, and third-party noise kept out."""

from __future__ import annotations

import logging

from interactive_ir.ui.serving.logs import DropHandledNoise, browser_url


def test_the_url_a_browser_can_open():
    assert browser_url("0.0.0.0", 7860) == "http://127.0.0.1:7860"
    assert browser_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert browser_url("::", 7860) == "http://127.0.0.1:7860"
    assert browser_url("::1", 7860) == "http://[::1]:7860"
    assert browser_url("myhost", 1) == "http://myhost:1"


def record(path: str, level: int, msg: str) -> logging.LogRecord:
    return logging.LogRecord("root", level, path, 1, msg, (), None)


def test_open_clip_noise_is_dropped_but_real_errors_stay():
    f = DropHandledNoise()
    assert not f.filter(record("/x/open_clip/factory.py", logging.ERROR, "Failed to download weights for tag 'x'"))
    assert not f.filter(record("/x/open_clip/factory.py", logging.INFO, "Loaded built-in ViT-B-32 model config."))
    assert f.filter(record("/x/open_clip/factory.py", logging.ERROR, "Error loading image tower weights"))
    assert f.filter(record("/x/interactive_ir/assembly/app_index.py", logging.ERROR, "Failed to download weights"))
