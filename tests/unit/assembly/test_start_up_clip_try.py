"""The CLIP try at start-up is named and time-boxed: with the hub unreachable and the weights not in the local
cache, the app says so at once, without importing torch and open_clip (10-30 s) to find out (issue 39)."""

from __future__ import annotations

import logging

import pytest

from interactive_ir.assembly import app_index
from interactive_ir.config import DEFAULT_EMBEDDER
from interactive_ir.errors import BackendError


@pytest.fixture
def offline(monkeypatch):
    import interactive_ir.backends as backends
    from interactive_ir.backends import hub

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(hub, "go_offline", lambda: None)
    built = []
    monkeypatch.setattr(backends, "make_embedder", lambda spec, **kw: built.append(spec) or object())
    return monkeypatch, built


def test_clip_weights_missing_from_the_cache_fail_at_once(offline, caplog):
    monkeypatch, built = offline
    monkeypatch.setattr(app_index, "_weights_cached", lambda spec: False)
    with caplog.at_level(logging.INFO, logger="interactive_ir"), pytest.raises(BackendError, match="local cache"):
        app_index._try_embedder(DEFAULT_EMBEDDER)
    assert built == []  # no slow import of torch and open_clip to find out
    assert any(DEFAULT_EMBEDDER in r.getMessage() and "at most" in r.getMessage() for r in caplog.records)


def test_clip_weights_in_the_cache_load_offline(offline):
    monkeypatch, built = offline
    monkeypatch.setattr(app_index, "_weights_cached", lambda spec: True)
    app_index._try_embedder(DEFAULT_EMBEDDER)
    assert built == [DEFAULT_EMBEDDER]


def test_the_cache_check_knows_the_default_embedder_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    assert app_index._weights_cached(DEFAULT_EMBEDDER) is False  # an empty cache
    assert app_index._weights_cached("open_clip:ViT-L-14:openai") is None  # unknown: tried as before
