"""Typed results of a round's later steps, and the LLM meter they share.

A round is RETRIEVE (fast, no LLM: the turn and its results, at once), then optionally REFINE (an LLM
rewrite of an answer's dialogue into one query, and its results) and ASK (the next question). REFINE and
ASK are each computed without touching the session (`Refinement`, `QuestionStep`) and then applied; a
result for a round the session has moved past is refused on apply, so a page can drop model work that a
newer action superseded and the session stays as that action left it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from interactive_ir.core.llm_log import LoggedLLM
from interactive_ir.core.session import Turn
from interactive_ir.types import Candidates, Hit, Question


class MeteredLLM(LoggedLLM):
    """`LoggedLLM` that also sums the wall time spent in the backend."""

    def __init__(self, llm, log_list=None):
        super().__init__(llm, [] if log_list is None else log_list)
        self.seconds = 0.0

    def generate(self, prompts, **kw):
        t = time.perf_counter()
        try:
            return super().generate(prompts, **kw)
        finally:
            self.seconds += time.perf_counter() - t

    def calls(self) -> tuple[dict, ...]:
        return tuple(c.to_dict() for c in self.log)


def add_llm_calls(turn: Turn, calls, seconds: float, round_trips: int) -> None:
    """Append a step's LLM calls to `turn.llm_calls` and add up its LLM time and round trips."""
    if not calls:
        return
    turn.llm_calls.extend(calls)
    turn.timings["llm"] = round(turn.timings.get("llm", 0.0) + seconds, 6)
    turn.extra["llm_round_trips"] = turn.extra.get("llm_round_trips", 0) + round_trips


def add_timings(turn: Turn, timings: dict) -> None:
    for k, v in timings.items():
        turn.timings[k] = round(turn.timings.get(k, 0.0) + float(v), 6)


@dataclass(frozen=True)
class Refinement:
    """REFINE: an answer round's results again, for the LLM's rewrite of the dialogue into one query."""

    round: int  # the round it refines
    replaces: str  # that round's query before (the plain dialogue); apply refuses a round that changed since
    query: str  # the rewritten query (the plain dialogue again when the model failed or gave junk)
    reformulated: bool  # True when the model's caption is used
    hits: tuple[Hit, ...]  # the new results, best first
    row: np.ndarray = field(repr=False, compare=False)  # the query row they were ranked with
    candidates: Candidates | None = field(default=None, repr=False, compare=False)  # S_R (rows) for the next question
    llm_calls: tuple[dict, ...] = ()  # the calls made (Turn.llm_calls records)
    llm_seconds: float = 0.0  # time spent in the backend
    round_trips: int = 0  # backend round trips
    timings: dict = field(default_factory=dict)  # seconds per stage: "reformulate", "retrieve"
    error: str = ""  # a backend failure, for the user


@dataclass(frozen=True)
class QuestionStep:
    """ASK: the next question about a round's results, with what it took to write it."""

    round: int  # the round whose results it asks about
    question: Question | None  # None: nothing to ask
    extra: dict = field(default_factory=dict)  # JSON-able details for Turn.extra["plugir"]
    timings: dict = field(default_factory=dict)  # seconds per stage: "candidates", "rce", "question", ...
    llm_calls: tuple[dict, ...] = ()
    llm_seconds: float = 0.0
    round_trips: int = 0
    error: str = ""  # a failure of the step, for the user (the session stays usable)
