"""Model calls and their record on the round: the one way every mode meters and logs an LLM or VLM call.

`MeteredLLM` wraps an LLM backend: one `LLMCall` per prompt in `log` (which stage asked what, what came
back, how long it took), backend round trips counted (one batched call of a `batch_capable` backend is one
round trip; otherwise one per prompt) and backend wall time summed in `seconds`. Every mode uses it:
the conversation's question and rewrite steps hold one for the step and record it on the turn when the step
is applied (`add_llm_calls`); the feedback and composed modes call `generate` / `ask`, which meter one
stage and record it on the turn at once.

On the turn: `turn.llm_calls` gets the calls' records (`LLMCall.to_dict`; VLM calls in the same shape plus
the image ids); the backend time is added to `turn.timings["llm"]` / `turn.timings["vlm"]` (so engine
time = total - llm - vlm) and, for a stage, to `turn.timings[stage]`; round trips add up in
`turn.extra["llm_round_trips"]` / `["vlm_round_trips"]`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from interactive_ir.backends.base import LLM, Prompt
from interactive_ir.backends.redact import redact_text
from interactive_ir.core.session import Turn
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


class MeteredLLM:
    """Wraps an LLM: records one `LLMCall` per prompt in `log`, counts backend round trips and sums the
    wall time spent in the backend (`seconds`)."""

    def __init__(self, llm: LLM, log: list[LLMCall] | None = None):
        self.llm = llm
        self.log: list[LLMCall] = log if log is not None else []
        self.round_trips = 0
        self.seconds = 0.0

    @property
    def spec(self) -> str:
        """The backend's spec without secrets (`redact_text`): it goes into call records, exports and errors."""
        return redact_text(self.llm.spec)

    @property
    def batch_capable(self) -> bool:
        return bool(getattr(self.llm, "batch_capable", False))

    def calls(self) -> tuple[dict, ...]:
        """The calls made so far, as `Turn.llm_calls` records."""
        return tuple(c.to_dict() for c in self.log)

    def generate(self, prompts: Sequence[Prompt], *, stage: str = "generate", temperature: float = 0.0,
                 max_tokens: int = 256) -> list[str]:
        t = time.perf_counter()
        try:
            return self._generate(list(prompts), stage, temperature, max_tokens)
        finally:
            self.seconds += time.perf_counter() - t

    def _generate(self, prompts: list, stage: str, temperature: float, max_tokens: int) -> list[str]:
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
            message = redact_text(e) or type(e).__name__
            self.log.extend(LLMCall(stage, p, None, latency, self.spec, temperature, message) for p in prompts)
            if isinstance(e, (BackendError, Cancelled)):  # Cancelled: superseded work, not a failure
                raise
            raise BackendError(f"LLM {self.spec} failed at stage {stage!r}: {message}") from e
        latency = time.perf_counter() - start
        self.log.extend(LLMCall(stage, p, r, latency, self.spec, temperature) for p, r in zip(prompts, replies))
        return replies


# --- on the turn -----------------------------------------------------------------------------------------
def add_llm_calls(turn: Turn, calls, seconds: float, round_trips: int) -> None:
    """Append a step's LLM calls to `turn.llm_calls` and add up its LLM time and round trips (nothing when
    the step made no call)."""
    if not calls:
        return
    turn.llm_calls.extend(calls)
    turn.timings["llm"] = round(turn.timings.get("llm", 0.0) + seconds, 6)
    turn.extra["llm_round_trips"] = turn.extra.get("llm_round_trips", 0) + round_trips


def _add_stage(turn: Turn, kind: str, stage: str, seconds: float, trips: int) -> None:
    turn.timings[stage] = round(turn.timings.get(stage, 0.0) + seconds, 6)
    turn.timings[kind] = round(turn.timings.get(kind, 0.0) + seconds, 6)
    key = f"{kind}_round_trips"
    turn.extra[key] = turn.extra.get(key, 0) + trips


def generate(llm, prompts: Sequence, *, turn: Turn, stage: str, temperature: float = 0.0,
             max_tokens: int = 256) -> list[str]:
    """`llm.generate(prompts)` as one stage of `turn`, metered and logged on it. Any backend failure raises
    BackendError; a call whose work was superseded raises `Cancelled` (see `backends.cancel`), which is not a
    failure."""
    metered = MeteredLLM(llm)
    try:
        return metered.generate(list(prompts), stage=stage, temperature=temperature, max_tokens=max_tokens)
    finally:
        _add_stage(turn, "llm", stage, metered.seconds, metered.round_trips)
        turn.llm_calls.extend(metered.calls())


def ask(vlm, images: Sequence[Sequence], questions: Sequence[str], *, turn: Turn, stage: str,
        max_tokens: int = 64, labels: Sequence[str] = ()) -> list[str]:
    """`vlm.ask(images, questions)`, logged on `turn` (`labels` name each question's images, e.g. ids)."""
    questions = list(questions)
    labels = list(labels) + [""] * (len(questions) - len(labels))
    spec = redact_text(getattr(vlm, "spec", ""))
    t = time.perf_counter()
    error = None
    replies: list = []
    try:
        replies = list(vlm.ask([list(g) for g in images], questions, max_tokens=max_tokens))
        if len(replies) != len(questions):
            raise BackendError(f"VLM {spec} returned {len(replies)} answers for {len(questions)} questions")
        return [r if isinstance(r, str) else "" for r in replies]
    except BackendError as e:
        error = redact_text(e)
        raise
    except Exception as e:  # noqa: BLE001 - a backend may raise anything; the session must stay usable
        error = redact_text(e) or type(e).__name__
        raise BackendError(f"VLM {spec} failed at stage {stage!r}: {error}") from e
    finally:
        dt = time.perf_counter() - t
        _add_stage(turn, "vlm", stage, dt, 1 if questions else 0)
        for i, (q, lab) in enumerate(zip(questions, labels)):
            reply = replies[i] if error is None and i < len(replies) else None
            turn.llm_calls.append({"stage": stage, "prompt": q, "reply": reply, "latency_s": dt, "backend": spec,
                                   "temperature": 0.0, "error": error, "images": lab})
