"""Captions of images for the LLM stages: stored ones first, else one batched captioner call, kept in an LRU cache."""

from __future__ import annotations

import base64
import io
import sys
import types

import pytest
from iir_testutils import build_tiny
from PIL import Image

from interactive_ir.backends import make_captioner
from interactive_ir.backends.captioners import FakeCaptioner
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BackendError, SessionError


class CountingCaptioner(FakeCaptioner):
    def __init__(self, fail: bool = False, short: bool = False):
        super().__init__()
        self.calls: list[int] = []
        self.fail, self.short = fail, short

    def caption(self, images):
        self.calls.append(len(images))
        if self.fail:
            raise BackendError("captioner down")
        out = super().caption(images)
        return out[:-1] if self.short else out


def test_stored_captions_need_no_captioner(tiny_index):
    r, ids, caps = tiny_index
    cap = CountingCaptioner()
    eng = build_engine(r, captioner=cap)
    got = eng.captions_of(ids[:3])
    assert got == [r.index.records[r.index.row_of[i]].caption for i in ids[:3]] and all(got)
    assert cap.calls == []


def test_uncaptioned_images_go_in_one_call_and_are_cached(tmp_path):
    r, ids, _ = build_tiny(tmp_path, captions=False)
    cap = CountingCaptioner()
    eng = build_engine(r, captioner=cap, config=EngineConfig(caption_cache_size=3))
    want = FakeCaptioner().caption([Image.open(r.index.image_path(r.index.row_of[i])) for i in ids[:3]])
    assert eng.captions_of(ids[:3]) == want and cap.calls == [3]
    assert eng.captions_of(ids[:3]) == want and cap.calls == [3]  # all from the cache
    assert eng.caption_of(ids[1]) == want[1] and cap.calls == [3]
    eng.captions_of([ids[3]])  # a 4th caption evicts the least recently used (ids[0]; ids[1] was just read)
    assert cap.calls == [3, 1]
    eng.captions_of([ids[1], ids[2]])
    assert cap.calls == [3, 1]
    eng.captions_of([ids[0]])
    assert cap.calls == [3, 1, 1]


def test_cache_off_and_errors(tmp_path):
    r, ids, _ = build_tiny(tmp_path, captions=False)
    cap = CountingCaptioner()
    eng = build_engine(r, captioner=cap, config=EngineConfig(caption_cache_size=0))
    eng.captions_of(ids[:2])
    eng.captions_of(ids[:2])
    assert cap.calls == [2, 2]
    with pytest.raises(SessionError, match="no image 'nope.png'"):
        eng.captions_of([ids[0], "nope.png"])
    with pytest.raises(BackendError, match="captioner down"):
        build_engine(r, captioner=CountingCaptioner(fail=True)).captions_of(ids[:1])
    with pytest.raises(BackendError, match="returned 1 captions for 2 images"):
        build_engine(r, captioner=CountingCaptioner(short=True)).captions_of(ids[:2])
    assert build_engine(r).captions_of(ids[:2]) == ["", ""]  # no captioner: no caption


def test_openai_vision_captioner_sends_each_image_and_keeps_the_first_line(monkeypatch):
    sent = []

    class FakeCompletions:
        def create(self, model, messages, temperature, max_tokens):
            sent.append((model, messages, max_tokens))
            text = f"\n  A picture number {len(sent)}.\nSecond line.  "
            return types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(content=text))])

    class FakeClient:
        def __init__(self, **kw):
            self.kw = kw
            self.chat = types.SimpleNamespace(completions=FakeCompletions())

    monkeypatch.setitem(sys.modules, "openai", types.SimpleNamespace(OpenAI=FakeClient))
    cap = make_captioner("openai-vision:cap-model@http://localhost:9", concurrency=1, max_side=64)
    assert cap.client.kw["base_url"] == "http://localhost:9/v1" and cap.model == "cap-model"
    images = [Image.new("RGB", (200, 100), (200, 40, 40)), Image.new("RGB", (30, 30), (40, 70, 200))]
    assert cap.caption(images) == ["A picture number 1.", "A picture number 2."]
    assert cap.caption([]) == []
    content = sent[0][1][0]["content"]
    assert [c["type"] for c in content] == ["text", "image_url"] and sent[0][0] == "cap-model"
    first = Image.open(io.BytesIO(base64.b64decode(content[1]["image_url"]["url"].split(",", 1)[1])))
    assert max(first.size) == 64  # scaled to max_side before sending
