"""Typed results of a round's later steps (REFINE, ASK), and how a step's timings add up on its round.

A round is RETRIEVE (fast, no LLM: the turn and its results, at once), then optionally REFINE (an LLM
rewrite of an answer's dialogue into one query, and its results) and ASK (the next question). REFINE and
ASK are each computed without touching the session (`Refinement`, `QuestionStep`) and then applied; a
result for a round the session has moved past is refused on apply, so a page can drop model work that a
newer action superseded and the session stays as that action left it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from interactive_ir.core.session import Turn
from interactive_ir.types import Candidates, Hit, Question


def add_timings(turn: Turn, timings: dict) -> None:
    """Add a step's seconds per stage to the round's."""
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
