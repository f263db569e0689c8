"""The middle step of every model stage of the feedback and composed modes: call the LLM or VLM, and
log the call on the turn.

LLM calls go through `llm_log.LoggedLLM` (one `LLMCall` record per prompt in `turn.llm_calls`); VLM
calls are recorded in the same shape plus the image ids. The backend wall time is added to
`turn.timings[stage]` and to `turn.timings["llm"]` / `turn.timings["vlm"]` (so engine time =
total - llm - vlm), and round trips are counted in `turn.extra["llm_round_trips"]` /
`["vlm_round_trips"]`: one batched call of a batch-capable backend is one round trip.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from interactive_ir.errors import BackendError
from interactive_ir.core.llm_log import LoggedLLM
from interactive_ir.core.session import Turn


def _add(turn: Turn, kind: str, stage: str, seconds: float, trips: int) -> None:
    turn.timings[stage] = round(turn.timings.get(stage, 0.0) + seconds, 6)
    turn.timings[kind] = round(turn.timings.get(kind, 0.0) + seconds, 6)
    key = f"{kind}_round_trips"
    turn.extra[key] = turn.extra.get(key, 0) + trips


def generate(llm, prompts: Sequence, *, turn: Turn, stage: str, temperature: float = 0.0,
             max_tokens: int = 256) -> list[str]:
    """`llm.generate(prompts)`, logged on `turn`. Any backend failure raises BackendError; a call whose work
    was superseded raises `Cancelled` (see `backends.cancel`), which is not a failure."""
    logged = LoggedLLM(llm, [])
    t = time.perf_counter()
    try:
        return logged.generate(list(prompts), stage=stage, temperature=temperature, max_tokens=max_tokens)
    finally:
        _add(turn, "llm", stage, time.perf_counter() - t, logged.round_trips)
        turn.llm_calls.extend(c.to_dict() for c in logged.log)


def ask(vlm, images: Sequence[Sequence], questions: Sequence[str], *, turn: Turn, stage: str,
        max_tokens: int = 64, labels: Sequence[str] = ()) -> list[str]:
    """`vlm.ask(images, questions)`, logged on `turn` (`labels` name each question's images, e.g. ids)."""
    questions = list(questions)
    labels = list(labels) + [""] * (len(questions) - len(labels))
    spec = getattr(vlm, "spec", "")
    t = time.perf_counter()
    error = None
    replies: list = []
    try:
        replies = list(vlm.ask([list(g) for g in images], questions, max_tokens=max_tokens))
        if len(replies) != len(questions):
            raise BackendError(f"VLM {spec} returned {len(replies)} answers for {len(questions)} questions")
        return [r if isinstance(r, str) else "" for r in replies]
    except BackendError as e:
        error = str(e)
        raise
    except Exception as e:  # noqa: BLE001 - a backend may raise anything; the session must stay usable
        error = str(e) or type(e).__name__
        raise BackendError(f"VLM {spec} failed at stage {stage!r}: {error}") from e
    finally:
        dt = time.perf_counter() - t
        _add(turn, "vlm", stage, dt, 1 if questions else 0)
        for i, (q, lab) in enumerate(zip(questions, labels)):
            reply = replies[i] if error is None and i < len(replies) else None
            turn.llm_calls.append({"stage": stage, "prompt": q, "reply": reply, "latency_s": dt, "backend": spec,
                                   "temperature": 0.0, "error": error, "images": lab})
