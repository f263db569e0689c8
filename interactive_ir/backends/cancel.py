"""Stopping model work that nobody waits for any more.

A `CancelToken` is handed, explicitly, with a piece of model work (the page creates one per model step,
`ui.work.Work.cancel`). The caller sets it when a newer action of the tab supersedes the work; the LLM
backends check it between the smallest steps they can (a generated token for transformers, a streamed
chunk for llama-cpp, a request or retry for HTTP backends) and raise `Cancelled`, so a superseded
generation frees its model lock and the CPU at once instead of running to `max_tokens`.

`CancellableLLM(llm, token)` is the LLM the engine's steps get for such work (see `Engine.with_llm`): it
passes the token to every `generate(..., cancel=token)` call; nothing else in the engine knows of it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from interactive_ir.backends.prompts import Prompt
from interactive_ir.errors import Cancelled

POLL_S = 0.05  # how often a wait (for a model lock, for a request) looks at the token


class CancelToken:
    """Set once, by whoever stops wanting the work's result; thread-safe.

    A copy made for another process (pickled, e.g. into a ZeroGPU worker) is a fresh, unset token:
    cancelling does not cross processes, and such work's result is only discarded."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, less when cancelled meanwhile; returns whether it is cancelled."""
        return self._event.wait(max(0.0, seconds))

    def __reduce__(self):  # pickle / deepcopy: a fresh token (an Event cannot cross processes)
        return (CancelToken, ())

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled})"


def check(cancel: CancelToken | None, what: str = "the model call") -> None:
    """Raise `Cancelled` when `cancel` is set (None: never)."""
    if cancel is not None and cancel.cancelled:
        raise Cancelled(f"{what} was cancelled: a newer action superseded it")


@contextmanager
def holding(lock, cancel: CancelToken | None, what: str = "the model call") -> Iterator[None]:
    """`with lock:` that stops waiting for the lock (raising `Cancelled`) once `cancel` is set, so
    superseded work queued behind another generation leaves the queue."""
    check(cancel, what)
    if cancel is None:
        lock.acquire()
    else:
        while not lock.acquire(timeout=POLL_S):
            check(cancel, what)
    try:
        yield
    finally:
        lock.release()


class CancellableLLM:
    """`llm` with every `generate` call carrying `cancel` (the token of the work it serves)."""

    def __init__(self, llm, cancel: CancelToken):
        self.llm = llm  # the backend (its `breaker`, for `guard.status_note`, is found through this)
        self.cancel = cancel

    @property
    def spec(self) -> str:
        return self.llm.spec

    @property
    def batch_capable(self) -> bool:
        return bool(getattr(self.llm, "batch_capable", False))

    def generate(self, prompts: Sequence[Prompt], *, temperature: float = 0.0, max_tokens: int = 256,
                 cancel: CancelToken | None = None) -> list[str]:
        check(self.cancel)
        return self.llm.generate(prompts, temperature=temperature, max_tokens=max_tokens, cancel=cancel or self.cancel)
