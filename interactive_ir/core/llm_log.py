"""A per-turn record of LLM calls: which stage asked what, what came back, and how long it took.

Engines wrap their backend in `LoggedLLM` and call `generate(prompts, stage="question")`; the
session stores `[c.to_dict() for c in log]` in `Turn.llm_calls`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from interactive_ir.backends.base import LLM, Prompt
from interactive_ir.errors import BackendError, Cancelled


@dataclass
class LLMCall:
    """One prompt sent to an LLM and its reply."""

    stage: str  # the pipeline step that asked, e.g. "question", "filter", "answer", "reformulate"
    prompt: Prompt  # the prompt as sent: a string or a list of chat messages
    reply: str | None  # the raw reply, None when the call failed
    latency_s: float  # wall time of the backend call that produced it (shared by prompts batched together)
    backend: str  # the backend spec, e.g. "openai:gpt-4o-mini"
    temperature: float  # sampling temperature used
    error: str | None = None  # the error message when the call failed

    def to_dict(self) -> dict:
        """What `dataclasses.asdict` gives (the prompt's messages copied, not shared), built directly: asdict's
        generic walk cost a few milliseconds per turn for a turn's eleven prompts."""
        return {"stage": self.stage, "prompt": _copied(self.prompt), "reply": self.reply, "latency_s": self.latency_s,
                "backend": self.backend, "temperature": self.temperature, "error": self.error}


def _copied(x):
    """A deep copy of a prompt (a string, or lists and dicts of strings), as `asdict` copies it."""
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    if isinstance(x, list):
        return [_copied(v) for v in x]
    if isinstance(x, dict):
        return {_copied(k): _copied(v) for k, v in x.items()}
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_copied(v) for v in x)
    return asdict(LLMCall("", x, None, 0.0, "", 0.0))["prompt"]  # anything else: exactly as asdict would


class LoggedLLM:
    """Wraps an LLM: records one `LLMCall` per prompt in `log` and counts backend round trips.

    A round trip is one batched call of a `batch_capable` backend, or one prompt of any other.
    """

    def __init__(self, llm: LLM, log: list[LLMCall] | None = None):
        self.llm = llm
        self.log: list[LLMCall] = log if log is not None else []
        self.round_trips = 0

    @property
    def spec(self) -> str:
        return self.llm.spec

    @property
    def batch_capable(self) -> bool:
        return bool(getattr(self.llm, "batch_capable", False))

    def generate(self, prompts: Sequence[Prompt], *, stage: str = "generate", temperature: float = 0.0,
                 max_tokens: int = 256) -> list[str]:
        prompts = list(prompts)
        if not prompts:
            return []
        self.round_trips += 1 if self.batch_capable else len(prompts)
        start = time.perf_counter()
        try:
            replies = list(self.llm.generate(prompts, temperature=temperature, max_tokens=max_tokens))
            if len(replies) != len(prompts):
                raise BackendError(f"{self.spec} returned {len(replies)} replies for {len(prompts)} prompts")
        except Exception as e:
            latency = time.perf_counter() - start
            message = str(e) or type(e).__name__
            self.log.extend(LLMCall(stage, p, None, latency, self.spec, temperature, message) for p in prompts)
            if isinstance(e, (BackendError, Cancelled)):  # Cancelled: superseded work, not a failure
                raise
            raise BackendError(f"LLM {self.spec} failed at stage {stage!r}: {message}") from e
        latency = time.perf_counter() - start
        self.log.extend(LLMCall(stage, p, r, latency, self.spec, temperature) for p, r in zip(prompts, replies))
        return replies
