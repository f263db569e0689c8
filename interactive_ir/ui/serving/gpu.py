"""Hugging Face ZeroGPU (SPACES_ZERO_GPU set): `spaces` imported before anything touches CUDA, and a GPU
slot (`spaces.GPU`) taken by model calls only; a no-op everywhere else.

On ZeroGPU the process holds no GPU: one is lent per decorated call, for at most the duration it asks (a
request asking more than the visitor's remaining quota is refused). So:
- `import_spaces_first()` is `app.py`'s first step (ZeroGPU refuses a process that initialised CUDA
  before importing `spaces`; models then load "on cuda" and move to the lent GPU inside each slot);
- searches and query encoding stay on the CPU (`retrieval.search_device`, `backends._torch.pick_device`):
  a plain search never waits for GPU scheduling;
- a local model's call takes a slot sized from its work: an LLM's `generate` (`generate_seconds`), a
  captioner's `caption` (`caption_seconds`), a VLM's `ask` (`ask_seconds`); work longer than the longest
  slot is split over several slots. `gpu_slots(backend)`, used by `ui.startup.load_app`, so the search page
  and the study page (the same engine) are wrapped alike.

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


def slot_seconds(batches: int, tokens: int) -> int:
    """The slot asked for `batches` forward batches generating `tokens` tokens each: start-up plus their
    tokens, within SLOT_MIN_S..SLOT_MAX_S."""
    work = max(1, batches) * max(1, int(tokens)) * SECONDS_PER_TOKEN
    return int(min(SLOT_MAX_S, max(SLOT_MIN_S, math.ceil(SLOT_MIN_S + work))))


def batches_per_slot(tokens: int) -> int:
    """Most batches of `tokens` tokens one slot holds (at least 1): longer work is split over slots."""
    return max(1, int((SLOT_MAX_S - SLOT_MIN_S) // (max(1, int(tokens)) * SECONDS_PER_TOKEN)))


def generate_seconds(prompts: Sequence, temperature: float = 0.0, max_tokens: int = 256) -> int:
    """The slot a `generate` call asks for (its prompts in batches of BATCH)."""
    return slot_seconds(math.ceil(max(1, len(prompts)) / BATCH), max_tokens)


def caption_seconds(images: Sequence, batch: int = 8, max_new_tokens: int = 30) -> int:
    """The slot a `caption` call asks for (its images in batches of `batch`, `max_new_tokens` each)."""
    return slot_seconds(math.ceil(max(1, len(images)) / max(1, batch)), max_new_tokens)


def ask_seconds(images: Sequence, questions: Sequence, max_tokens: int = 64) -> int:
    """The slot an `ask` call asks for (one question at a time, as `HFVLM` answers them)."""
    return slot_seconds(len(questions), max_tokens)


def chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), max(1, size))]


class _Slotted:
    """A local model whose calls run in ZeroGPU slots; everything else is the wrapped model's."""

    def __init__(self, backend):
        self.backend = backend

    def __getattr__(self, name):
        if name == "backend":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.backend, name)


class GpuSlotLLM(_Slotted):
    """A local LLM whose `generate` runs in ZeroGPU slots sized by `generate_seconds`, as many as its
    batches need. The cancel token does not cross into the slot's process (`CancelToken`): it is checked
    before each slot."""

    def __init__(self, llm):
        super().__init__(llm)

        def generate_in_slot(prompts, temperature, max_tokens):
            return llm.generate(list(prompts), temperature=temperature, max_tokens=max_tokens)

        self._slot = gpu(generate_in_slot, duration=generate_seconds)

    @property
    def llm(self):
        return self.backend

    def generate(self, prompts, *, temperature: float = 0.0, max_tokens: int = 256, cancel=None) -> list[str]:
        from interactive_ir.backends.cancel import check

        out: list[str] = []
        for part in chunks(list(prompts), BATCH * batches_per_slot(max_tokens)):
            check(cancel)
            out.extend(self._slot(part, temperature, max_tokens))
        return out


class GpuSlotCaptioner(_Slotted):
    """A local captioner whose `caption` runs in ZeroGPU slots sized by `caption_seconds` (its own batch
    size and caption length)."""

    def __init__(self, captioner):
        super().__init__(captioner)
        self.batch = max(1, int(getattr(captioner, "batch_size", 8)))
        self.tokens = max(1, int(getattr(captioner, "max_new_tokens", 30)))

        def caption_in_slot(images):
            return captioner.caption(list(images))

        self._slot = gpu(caption_in_slot, duration=lambda images: caption_seconds(images, self.batch, self.tokens))

    def caption(self, images) -> list[str]:
        out: list[str] = []
        for part in chunks(list(images), self.batch * batches_per_slot(self.tokens)):
            out.extend(self._slot(part))
        return out


class GpuSlotVLM(_Slotted):
    """A local VLM whose `ask` runs in ZeroGPU slots sized by `ask_seconds`."""

    def __init__(self, vlm):
        super().__init__(vlm)

        def ask_in_slot(images, questions, max_tokens):
            return vlm.ask(images, questions, max_tokens=max_tokens)

        self._slot = gpu(ask_in_slot, duration=ask_seconds)

    def ask(self, images, questions, *, max_tokens: int = 64) -> list[str]:
        images, questions = [list(g) for g in images], list(questions)
        size = batches_per_slot(max_tokens)
        out: list[str] = []
        for a in range(0, len(questions), size):
            out.extend(self._slot(images[a : a + size], questions[a : a + size], max_tokens))
        return out


LOCAL_SPECS = ("transformers:", "hf:")  # backends run by transformers in this process (LLM; captioner, VLM)


def runs_on_gpu(backend) -> bool:
    """A model run by transformers in this process (HTTP endpoints and llama-cpp on the CPU take no slot)."""
    return str(getattr(backend, "spec", "")).startswith(LOCAL_SPECS)


def gpu_slots(backend):
    """`backend` (an LLM, a captioner or a VLM) with its model calls in GPU slots on ZeroGPU when it runs
    here (`runs_on_gpu`), else `backend` itself."""
    if backend is None or not zero_gpu() or not runs_on_gpu(backend):
        return backend
    for method, wrapper in (("generate", GpuSlotLLM), ("caption", GpuSlotCaptioner), ("ask", GpuSlotVLM)):
        if callable(getattr(backend, method, None)):
            from interactive_ir.backends.redact import redact_text

            log.info("ZeroGPU: %s runs in GPU slots of %d-%d s", redact_text(str(getattr(backend, "spec", backend))),
                     SLOT_MIN_S, SLOT_MAX_S)
            return wrapper(backend)
    return backend
