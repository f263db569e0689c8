"""One search by one person (or simulated user): the dialogue, what was shown, marked and referenced.

The UI keeps a `Session` in `gr.State`; the evaluator and the user-study logger read the same records.
Sessions round-trip through JSON (`to_json` / `from_json`).
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from interactive_ir.core.options import SessionOptions
from interactive_ir.errors import SessionError
from interactive_ir.types import Candidates, Question

TURN_KINDS = ("describe", "answer", "skip", "feedback", "relative", "search", "closest", "like")


@dataclass
class Turn:
    """One round: what the user gave, what the system did, and what it showed."""

    round: int  # 0 for the first description, then 1, 2, ...
    kind: str  # one of TURN_KINDS: how the user moved the search this round
    query: str = ""  # the text query used for retrieval this round (after any reformulation)
    user_text: str = ""  # what the user typed (description, answer, or relative caption)
    question: str = ""  # the system's question shown after this round's results ("" when none)
    question_fallback: bool = False  # True when the question was built without a valid LLM question
    answered_question: str = ""  # the question the user answered this round ("" when none)
    shown: list[str] = field(default_factory=list)  # image ids shown after this round, best first
    scores: list[float] = field(default_factory=list)  # their scores
    relevant: list[str] = field(default_factory=list)  # ids the user marked relevant this round
    irrelevant: list[str] = field(default_factory=list)  # ids the user marked not relevant this round
    reference: str = ""  # reference image id for a relative caption ("" when none or uploaded)
    reference_upload: bool = False  # True when the reference was an uploaded image
    method: str = ""  # the algorithm used (e.g. "plugir", "zs", "rocchio", "imagescope", "compose")
    why: dict[str, list[str]] = field(default_factory=dict)  # per shown id: reasons from a re-ranker
    llm_calls: list[dict] = field(default_factory=list)  # per model call: stage, prompt, reply, latency_s
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage ("retrieve", "llm", ...)
    started_at: float = 0.0  # unix time
    finished_at: float = 0.0
    error: str = ""  # a turn-level error shown to the user (the session stays usable)
    extra: dict[str, Any] = field(default_factory=dict)  # mode-specific data (candidate questions, ...)
    seen: list[str] = field(default_factory=list)  # ids in `shown` an earlier round showed too (marked, not hidden)
    asked: Question | None = None  # the typed question shown after this round (its text is `question`)
    # transient step results (never serialised): what the retrieve step computed for this round's later steps
    query_row: np.ndarray | None = field(default=None, repr=False, compare=False)  # the row it ranked with
    candidates: Candidates | None = field(default=None, repr=False, compare=False)  # S_R (rows) searched with that row

    def to_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name not in TRANSIENT_TURN_FIELDS}

    @classmethod
    def from_dict(cls, d: dict) -> Turn:
        names = {f.name for f in fields(cls)} - TRANSIENT_TURN_FIELDS
        data = {k: v for k, v in d.items() if k in names}
        data["asked"] = Question.from_dict(d.get("asked"))
        return cls(**data)


TRANSIENT_TURN_FIELDS = frozenset({"query_row", "candidates"})
TRANSIENT_SESSION_FIELDS = frozenset({"belief", "options"})  # options: serialised inside `meta`


def _plain(value):
    """A JSON-able copy of a field value (typed questions become dicts)."""
    if isinstance(value, Question):
        return value.to_dict()
    if isinstance(value, Turn):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return copy.deepcopy(value)


@dataclass
class Session:
    """Everything about one search. Plain data: the engine holds the logic."""

    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    description: str = ""  # the first description
    turns: list[Turn] = field(default_factory=list)
    pending_question: str = ""  # the text of the question waiting for an answer ("" when none)
    pending: Question | None = None  # that question, typed (kind, clickable options); see `question`
    composed_history: list[list[float]] = field(default_factory=list)  # composed query rows of earlier rounds
    feedback_query: list[float] = field(default_factory=list)  # Rocchio query vector, when that method runs
    carry_row: list[float] = field(default_factory=list)  # query row of the latest feedback or relative round:
    #                                                     later answers and skips keep its effect (conversation.py)
    found: dict[str, Any] = field(default_factory=dict)  # {"id", "round", "rank"} once the user found it
    filters: str = ""  # the search's filters as typed (date:2019..2021 tag:family "red kite"; query_language.py):
    #                    every round of every mode keeps them
    not_terms: list[str] = field(default_factory=list)  # the search's NOT terms (-leash): every round lowers images like them
    meta: dict[str, Any] = field(default_factory=dict)  # data: participant, task, condition, target, source, ...
    created_at: float = field(default_factory=time.time)
    options: SessionOptions = field(default_factory=SessionOptions)  # how it behaves (the mode its actions
    #                              reach, questions, hide seen): written into `meta` as its legacy keys
    belief: Any = field(default=None, repr=False, compare=False)  # the belief over the collection
    #                              (`retrieval.belief.Belief`, transient: rebuilt from the rounds when missing)

    def __post_init__(self) -> None:
        # behaviour keys given in `meta` (an old record, `new_session(ask_questions=False)`) become options
        self.meta = dict(self.meta)  # the caller's dict (a loaded record) is left as it was
        self.options = SessionOptions.from_meta(self.meta).merge(self.options)

    # --- views -----------------------------------------------------------------------------------
    @property
    def round(self) -> int:
        """The index of the last turn (-1 before the first)."""
        return len(self.turns) - 1

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    @property
    def current_query(self) -> str:
        return self.last.query if self.last else self.description

    @property
    def on_belief(self) -> bool:
        """Whether every action of this search is evidence for the belief over the collection."""
        return self.options.on_belief

    @property
    def ended(self) -> bool:
        return bool(self.found) or bool(self.meta.get("gave_up"))

    @property
    def question(self) -> Question | None:
        """The pending question, typed. Code that sets only `pending_question` gets a plain "llm" question."""
        if not self.pending_question:
            return None
        if self.pending is not None and self.pending.text == self.pending_question:
            return self.pending
        return Question(self.pending_question, "llm", (), self.round)

    def set_question(self, question: Question | None) -> None:
        """Make `question` the pending one (None: no question pending)."""
        self.pending = question
        self.pending_question = question.text if question is not None else ""

    def shown_ids(self) -> list[str]:
        """Every image id shown so far, in order of first showing."""
        seen: dict[str, None] = {}
        for t in self.turns:
            for i in t.shown:
                seen.setdefault(i, None)
        return list(seen)

    def marked(self) -> tuple[list[str], list[str]]:
        """(relevant, not relevant) ids over all turns; a later mark overrides an earlier one."""
        state: dict[str, bool] = {}
        for t in self.turns:
            for i in t.relevant:
                state[i] = True
            for i in t.irrelevant:
                state[i] = False
        return [i for i, v in state.items() if v], [i for i, v in state.items() if not v]

    def dialogue(self) -> list[tuple[str, str]]:
        """(question, answer) pairs in order; skipped questions are left out."""
        return [(t.answered_question, t.user_text) for t in self.turns if t.kind == "answer" and t.answered_question]

    def require_shown(self, ids) -> None:
        shown = set(self.shown_ids())
        bad = [i for i in ids if i not in shown]
        if bad:
            raise SessionError(f"image {bad[0]!r} was never shown in this search: mark only shown results")

    # --- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-able dict; the options are written as the `meta` keys records have always had."""
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name not in TRANSIENT_SESSION_FIELDS}
        out["meta"] = {**out["meta"], **self.options.to_meta()}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> Session:
        names = {f.name for f in fields(cls)} - TRANSIENT_SESSION_FIELDS
        data = {k: v for k, v in d.items() if k in names}
        data["turns"] = [Turn.from_dict(t) for t in d.get("turns", [])]
        data["pending"] = Question.from_dict(d.get("pending"))
        return cls(**data)

    @classmethod
    def from_json(cls, s: str) -> Session:
        return cls.from_dict(json.loads(s))
