"""Keeping one slow or broken model server from stalling everyone: stage deadlines and a circuit breaker.

- A `Deadline` is the wall-time budget of one model stage (one `generate` call), counted across its
  retries: each attempt gets what is left, and no retry starts once it is spent.
- A `CircuitBreaker` opens after `failures` failed stages in a row: for `pause_s` every call is refused
  at once (`BackendPaused`) instead of waiting on the server; then one trial call is let through, and
  a success closes it again. A cancelled call (`errors.Cancelled`: superseded work) counts neither way.
- `status_note(engine)` is what the page says while a breaker is open ("" otherwise).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from interactive_ir.backends.redact import redact_text, whole_sentences, with_public
from interactive_ir.errors import BackendError

log = logging.getLogger(__name__)


class BackendPaused(BackendError):
    """A backend's circuit breaker is open: it is not called for a while (the message says how long)."""


class MalformedReply(BackendError):
    """A backend answered, but with something unusable (not JSON, no `choices`, empty content)."""


@dataclass
class Deadline:
    """`seconds` of wall time from now (time.monotonic)."""

    seconds: float
    start: float = 0.0

    def __post_init__(self) -> None:
        self.start = self.start or time.monotonic()

    @property
    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.start)

    @property
    def spent(self) -> bool:
        return self.left <= 0


class CircuitBreaker:
    """Thread-safe breaker over one backend. `clock` is injectable for tests."""

    def __init__(self, name: str, failures: int = 3, pause_s: float = 60.0, clock=time.monotonic):
        self.name = name
        self.failures = max(1, int(failures))  # failed stages in a row that open the breaker
        self.pause_s = float(pause_s)  # how long it stays open before one trial call
        self._clock = clock
        self._lock = threading.Lock()
        self._failed = 0  # consecutive failures
        self._open_until = 0.0  # clock time the breaker closes for a trial (0: closed)
        self._trial = False  # a trial call is in flight
        self.last_error = ""

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._open_until > 0 and self._clock() < self._open_until

    def seconds_left(self) -> float:
        with self._lock:
            return max(0.0, self._open_until - self._clock()) if self._open_until else 0.0

    def before_call(self) -> None:
        """Raise BackendPaused while open; after the pause let one trial call through."""
        with self._lock:
            if not self._open_until:
                return
            now = self._clock()
            if now < self._open_until or self._trial:
                left = max(1, round(self._open_until - now))
                raise with_public(BackendPaused(f"{self.name} is paused after {self._failed} failed calls in a row "
                                                f"(last: {self.last_error}); trying it again in about {left} s"),
                                  f"the language model is paused after {self._failed} failed calls in a row; it is "
                                  f"tried again in about {left} s.")
            self._trial = True

    def success(self) -> None:
        with self._lock:
            if self._open_until:
                log.info("%s answers again: its breaker is closed", self.name)
            self._failed, self._open_until, self._trial = 0, 0.0, False

    def cancelled(self) -> None:
        """The call was cancelled (a newer action superseded its work): neither a success nor a failure. A
        cancelled trial call lets the next call be the trial."""
        with self._lock:
            self._trial = False

    def failure(self, error: str = "") -> None:
        with self._lock:
            self._failed += 1
            self._trial = False
            self.last_error = whole_sentences(redact_text(error or "failed"), 200)
            if self._failed >= self.failures:
                self._open_until = self._clock() + self.pause_s
                log.warning("%s failed %d times in a row: not called for %.0f s (last error: %s)", self.name,
                            self._failed, self.pause_s, self.last_error)


def _breaker(engine):
    llm = getattr(engine, "llm", None)
    return getattr(llm, "breaker", None) or getattr(getattr(llm, "llm", None), "breaker", None)


def pause_mark(engine) -> float:
    """Which pause of the engine's LLM is on (the clock time it ends), 0.0 when none: a page says a pause once."""
    breaker = _breaker(engine)
    return float(breaker._open_until) if breaker is not None and breaker.is_open else 0.0


def status_note(engine) -> str:
    """One sentence for the page while the engine's LLM is paused by its breaker, else ""."""
    breaker = _breaker(engine)
    if breaker is None or not breaker.is_open:
        return ""
    return (f"Questions are paused: the LLM did not answer properly several times in a row; it is tried again "
            f"in about {max(1, round(breaker.seconds_left()))} s. Search, marks and references still work.")


def probe(backend) -> tuple[bool, str] | None:
    """Check once whether an HTTP backend's server answers: (reachable, sentence), or None for a backend that
    has no server (local models, fakes). An unreachable one starts with its breaker open: questions are
    paused, not left to time out, until a trial call after the pause succeeds."""
    for b in (backend, getattr(backend, "llm", None), getattr(backend, "client", None)):
        fn = getattr(b, "probe", None)
        if callable(fn):
            ok, note = fn()
            breaker = getattr(b, "breaker", None)
            if not ok and breaker is not None:
                for _ in range(breaker.failures):
                    breaker.failure("not reachable at start-up")
            return ok, note
    return None
