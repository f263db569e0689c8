"""Hugging Face ZeroGPU (SPACES_ZERO_GPU set): `spaces` imported before anything touches CUDA, and a GPU
slot (`spaces.GPU`) taken by model calls only; a no-op everywhere else.

On ZeroGPU the process holds no GPU: one is lent per decorated call, for at most the duration it asks (a
request asking more than the visitor's remaining quota is refused). So:
- `import_spaces_first()` is `app.py`'s first step (ZeroGPU refuses a process that initialised CUDA
  before importing `spaces`; models then load "on cuda" and move to the lent GPU inside each slot);
- searches and query encoding stay on the CPU (`retrieval.search_device`, `backends._torch.pick_device`):
  a plain search never waits for GPU scheduling;
- a local LLM's `generate` takes a slot sized from its work (`generate_seconds`): `gpu_slots(llm)`, used
  by `ui.startup.load_app`, so the search page and the study page (the same engine) are wrapped alike.

Checked with the fake `spaces` in tests/fakes/zerogpu (no ZeroGPU Space was used).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)

SLOT_MIN_S = 15  # the shortest slot a model call asks for (seconds): scheduling and moving weights to the GPU
SLOT_MAX_S = 120  # the longest (ZeroGPU's default quota per call is 60 s; longer calls need the visitor's quota)
SECONDS_PER_TOKEN = 0.04  # a 1.5B model's generation per token and batch on a ZeroGPU slice, with margin
BATCH = 8  # prompts generated together (TransformersLLM's default batch)


def zero_gpu(environ=os.environ) -> bool:
    return bool(environ.get("SPACES_ZERO_GPU", "").strip())


def import_spaces_first(environ=os.environ) -> bool:
    """On ZeroGPU, import `spaces` now, before torch or any model (True when it did). Raises RuntimeError
    when ZeroGPU is announced but `spaces` is missing (a GPU would never be lent: the app says so at once)."""
    if not zero_gpu(environ):
        return False
    try:
        import spaces  # noqa: F401 - must precede torch's CUDA start
    except ImportError as e:
        raise RuntimeError("SPACES_ZERO_GPU is set but the `spaces` package is missing: pip install spaces") from e
    log.info("ZeroGPU: spaces imported before torch; model calls take GPU slots, searches run on the CPU")
    return True


def gpu(fn: Callable, duration: int | Callable = SLOT_MAX_S) -> Callable:
    """`fn` wrapped with `spaces.GPU(duration=...)` on ZeroGPU, else `fn` itself. `duration` may be a
    function of `fn`'s arguments (seconds for that call). The wrapped call runs in a worker process: it
    must return what it changes."""
    if not zero_gpu():
        return fn
    import spaces

    log.info("wrapping %s with spaces.GPU", getattr(fn, "__name__", fn))
    return spaces.GPU(duration=duration)(fn)


def generate_seconds(prompts: Sequence, temperature: float = 0.0, max_tokens: int = 256) -> int:
    """The slot a `generate` call asks for: start-up plus its batches' tokens, within SLOT_MIN_S..SLOT_MAX_S."""
    work = math.ceil(max(1, len(prompts)) / BATCH) * max(1, int(max_tokens)) * SECONDS_PER_TOKEN
    return int(min(SLOT_MAX_S, max(SLOT_MIN_S, math.ceil(SLOT_MIN_S + work))))


class GpuSlotLLM:
    """A local LLM whose every `generate` runs in a ZeroGPU slot sized by `generate_seconds`; everything
    else is the wrapped LLM's. The cancel token does not cross into the slot's process (`CancelToken`)."""

    def __init__(self, llm):
        self.llm = llm

        def generate_in_slot(prompts, temperature, max_tokens):
            return llm.generate(list(prompts), temperature=temperature, max_tokens=max_tokens)

        self._slot = gpu(generate_in_slot, duration=generate_seconds)

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def generate(self, prompts, *, temperature: float = 0.0, max_tokens: int = 256, cancel=None) -> list[str]:
        from interactive_ir.backends.cancel import check

        check(cancel)
        return self._slot(list(prompts), temperature, max_tokens)


def runs_on_gpu(llm) -> bool:
    """A model run by transformers in this process (HTTP endpoints and llama-cpp on the CPU take no slot)."""
    return str(getattr(llm, "spec", "")).startswith("transformers:")


def gpu_slots(llm):
    """`llm` with its calls in GPU slots on ZeroGPU (a local transformers model), else `llm` itself."""
    if llm is None or not zero_gpu() or not runs_on_gpu(llm):
        return llm
    log.info("ZeroGPU: %s generates in GPU slots of %d-%d s", getattr(llm, "spec", llm), SLOT_MIN_S, SLOT_MAX_S)
    return GpuSlotLLM(llm)
