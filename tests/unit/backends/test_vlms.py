"""VLM backends (fake, hf with an injected model or pipeline, openai-vision with a patched client) and call logging."""

from __future__ import annotations

import base64
import io
import sys
import types

import pytest
from PIL import Image

from interactive_ir.backends import list_backends, make_vlm
from interactive_ir.backends.vlms import HFVLM, FakeVLM, fake_answer, side_by_side
from interactive_ir.core.model_calls import ask
from interactive_ir.core.session import Turn
from interactive_ir.errors import BackendError, BackendUnavailable, BadInputError, UnknownSpecError

RED = Image.new("RGB", (40, 30), (200, 40, 40))
BLUE = Image.new("RGB", (20, 30), (40, 70, 200))


def test_registry_lists_the_three_vlm_backends_and_refuses_unknown_specs():
    names = {b.name for b in list_backends("vlm")}
    assert names == {"openai-vision", "hf", "fake"}
    assert isinstance(make_vlm("fake"), FakeVLM)
    with pytest.raises(UnknownSpecError, match="openai-vision:MODEL"):
        make_vlm("nope:model")


def test_fake_vlm_answers_by_the_colour_of_the_last_image():
    vlm = make_vlm("fake")
    out = vlm.ask([[RED], [RED], [BLUE, RED], [RED]],
                  ["Is the car red?", "Is the car blue?", "Is it red?", "Is there a dog?"])
    assert out == ["Yes", "No", "Yes", "Yes"]  # the last image counts; no colour named -> Yes
    assert fake_answer([RED, BLUE], 'Evaluate ... ANSWER: [Yes/No] "make it blue"').startswith("ANSWER: Yes")
    assert vlm.calls[0]["questions"][1] == "Is the car blue?"


def test_fake_vlm_script_responder_and_input_checks():
    vlm = FakeVLM(script=["yes", RuntimeError("boom")])
    assert vlm.ask([[RED]], ["q"]) == ["yes"]
    with pytest.raises(RuntimeError):
        vlm.ask([[RED]], ["q"])
    with pytest.raises(BackendError, match="exhausted"):
        vlm.ask([[RED]], ["q"])
    seen = []
    vlm = FakeVLM(responder=lambda images, q: seen.append((len(images), q)) or "No")
    assert vlm.ask([[RED, BLUE]], ["two?"]) == ["No"] and seen == [(2, "two?")]
    with pytest.raises(BadInputError, match="one image list per question"):
        vlm.ask([[RED]], ["a", "b"])
    with pytest.raises(BadInputError, match="at least one image"):
        vlm.ask([[]], ["a"])
    with pytest.raises(BadInputError):
        FakeVLM(responder=lambda i, q: "", script=[])


def test_side_by_side_places_images_left_to_right_at_one_height():
    im = side_by_side([RED, BLUE], height=60)
    # RED 40x30 -> 80x60, BLUE 20x30 -> 40x60, 8 px gap
    assert im.size == (80 + 8 + 40, 60)
    assert im.getpixel((10, 30)) == (200, 40, 40)
    assert im.getpixel((80 + 8 + 10, 30)) == (40, 70, 200)
    assert side_by_side([RED]).size == RED.size


def test_hf_spec_errors(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # restored at teardown: with the hub unreachable make_vlm goes offline
    with pytest.raises(BadInputError, match="hf:REPO_OR_DIR"):
        make_vlm("hf:")
    with pytest.raises(BadInputError, match="unknown hf VLM task"):
        make_vlm("hf:some/model#bogus")


def test_hf_vqa_model_gets_one_side_by_side_image_per_question():
    calls = []

    def vqa(image, question, max_new_tokens):
        calls.append((image.size, question, max_new_tokens))
        return " yes " if len(calls) == 1 else [{"answer": " no ", "score": 0.9}]  # a str, or pipeline-style

    vlm = HFVLM("dummy", "vqa", spec="hf:dummy", pipeline=vqa)
    assert vlm.task == "visual-question-answering"
    assert vlm.ask([[RED, BLUE], [RED]], ["left vs right?", "red?"], max_tokens=7) == ["yes", "no"]
    assert calls[0][0] == side_by_side([RED, BLUE]).size and calls[1][0] == RED.size
    assert [c[1] for c in calls] == ["left vs right?", "red?"] and calls[0][2] == 7


def test_hf_chat_pipeline_gets_all_images_and_returns_the_assistant_text():
    seen = {}

    def pipe(text, max_new_tokens, return_full_text):
        seen["content"] = text[0]["content"]
        seen["max"] = max_new_tokens
        return [{"generated_text": [{"role": "assistant", "content": " ANSWER: No\nwrong colour"}]}]

    vlm = HFVLM("dummy", "chat", spec="hf:dummy", pipeline=pipe)
    assert vlm.task == "image-text-to-text"
    assert vlm.ask([[RED, BLUE]], ["compare"], max_tokens=20) == ["ANSWER: No\nwrong colour"]
    assert [c["type"] for c in seen["content"]] == ["image", "image", "text"] and seen["max"] == 20


def test_hf_pipeline_failure_is_a_backend_error():
    def pipe(**_):
        raise RuntimeError("out of memory")

    vlm = HFVLM("dummy", "visual-question-answering", spec="hf:dummy", pipeline=pipe)
    with pytest.raises(BackendError, match="out of memory"):
        vlm.ask([[RED]], ["q"])


def test_openai_vision_needs_a_key_or_a_server(monkeypatch):
    pytest.importorskip("openai")
    for k in ("OPENAI_API_KEY", "IIR_LLM_API_KEY", "IIR_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(BackendUnavailable, match="API key"):
        make_vlm("openai-vision:gpt-4o-mini")
    with pytest.raises(BadInputError, match="model name"):
        make_vlm("openai-vision:")


def test_openai_vision_sends_images_in_order_then_the_question(monkeypatch):
    sent = []

    class FakeCompletions:
        def create(self, model, temperature, max_tokens, messages):
            sent.append((model, messages))
            reply = types.SimpleNamespace(message=types.SimpleNamespace(content=f" answer {len(sent)} "))
            return types.SimpleNamespace(choices=[reply])

    class FakeClient:
        def __init__(self, **kw):
            self.kw = kw
            self.chat = types.SimpleNamespace(completions=FakeCompletions())

    monkeypatch.setitem(sys.modules, "openai", types.SimpleNamespace(OpenAI=FakeClient))
    vlm = make_vlm("openai-vision:my-vlm@http://localhost:9/v1", concurrency=1)
    assert vlm.client.kw["base_url"] == "http://localhost:9/v1"
    out = vlm.ask([[RED, BLUE], [BLUE]], ["which?", "blue?"], max_tokens=5)
    assert out == ["answer 1", "answer 2"]
    model, messages = sent[0]
    content = messages[0]["content"]
    assert model == "my-vlm" and [c["type"] for c in content] == ["image_url", "image_url", "text"]
    first = Image.open(io.BytesIO(base64.b64decode(content[0]["image_url"]["url"].split(",", 1)[1])))
    assert first.size == RED.size and content[2]["text"] == "which?"


def test_ask_logs_every_question_and_counts_one_round_trip():
    turn = Turn(round=0, kind="relative")
    out = ask(FakeVLM(), [[RED], [BLUE]], ["red?", "red?"], turn=turn, stage="verify", labels=["a", "b"])
    assert out == ["Yes", "No"]
    assert turn.extra["vlm_round_trips"] == 1 and "verify" in turn.timings and "vlm" in turn.timings
    assert [(c["stage"], c["images"], c["reply"]) for c in turn.llm_calls] == [("verify", "a", "Yes"),
                                                                              ("verify", "b", "No")]


def test_ask_turns_any_failure_into_a_logged_backend_error():
    turn = Turn(round=0, kind="relative")
    with pytest.raises(BackendError, match="boom"):
        ask(FakeVLM(script=[ValueError("boom")]), [[RED]], ["q"], turn=turn, stage="evaluate")
    assert turn.llm_calls[0]["reply"] is None and "boom" in turn.llm_calls[0]["error"]
    assert turn.extra["vlm_round_trips"] == 1
