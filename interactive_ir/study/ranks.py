"""The target's rank after a round: what BRI and Hits@K are computed from.

The rank is the target's 1-based position among *all* indexed images under the round's query (the
collection rank of PlugIR's metrics), not its position on the page: with `exclude_shown` the page
skips images shown before, and the best rank so far already accounts for them. The round's query row
is rebuilt from the turn the way each mode built it:

- conversation, text search, skip: the fused row of the turn's query text; an answer or skip after a
  feedback or relative round mixes in that round's row (`PlugIRConfig.carry_weight`, as the engine does);
- feedback: Rocchio's vector (`session.feedback_query`) or the rewritten query text, fused with the
  feedback config's tau;
- relative: the composed row of this round, or the mean of the rows of the relative rounds so far when
  the composed config ranks by the history mean (paper 004).

A VLM re-rank (ImageScope stages 2 and 3) reorders only the top of the list; the rank reported here is
the first-stage rank.

The study runner's engines are wrapped by `probing_engine`, which records the query row of the last
`search_row` before each turn is recorded (per thread: concurrent participants do not mix rows), so
the rank uses exactly the row the engine searched with. The engine itself notes the row of each turn
(`engine.QUERY_ROW_ATTR`) for the turns it ran; the rebuild above is the fallback for turns read back
from JSON. An engine may also define `query_row(session, turn)`.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from interactive_ir.engine import QUERY_ROW_ATTR, Engine
from interactive_ir.errors import IIRError
from interactive_ir.modes.conversation.plugir.pipeline import carry_mix
from interactive_ir.core.session import Session, Turn

log = logging.getLogger(__name__)


PROBE_ATTR = "_study_query_row"  # transient attribute of a Turn (not a dataclass field, never serialised)


class ThreadProbeRetriever:
    """A retriever proxy that remembers, per thread, the query row of the latest `search_row`."""

    def __init__(self, inner):
        self._inner = inner
        self._local = threading.local()

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def search_row(self, qrow, k=None, exclude=()):
        self._local.row = np.array(qrow, dtype=np.float32, copy=True)
        return self._inner.search_row(qrow, k, exclude)

    def search_rows(self, qrow, k=None, exclude=(), exclude_rows=None):
        self._local.row = np.array(qrow, dtype=np.float32, copy=True)
        return self._inner.search_rows(qrow, k, exclude, exclude_rows)

    def take_row(self) -> np.ndarray | None:
        row = getattr(self._local, "row", None)
        self._local.row = None
        return row


def probing_engine(engine, config=None, mode_configs: dict | None = None):
    """A copy of `engine` (same backends; optionally another EngineConfig and mode configs) that records
    each turn's query row for `target_rank`."""
    retriever = engine.retriever
    inner = retriever._inner if isinstance(retriever, ThreadProbeRetriever) else retriever
    probe = ThreadProbeRetriever(inner)
    configs = dict(engine.mode_configs if mode_configs is None else mode_configs)
    out = Engine(probe, llm=engine.llm, captioner=engine.captioner, vlm=engine.vlm, config=config or engine.config,
                 **configs)
    out.add_record_hook(lambda session, turn: turn.__dict__.__setitem__(PROBE_ATTR, probe.take_row()))
    return out


def _tau(engine, section: str):
    cfg = getattr(engine, f"{section}_config", None)
    return getattr(cfg, "tau", None)


def query_row(engine, session: Session, turn: Turn) -> np.ndarray | None:
    """The query row the engine ranked the collection with at `turn` (None when it cannot be rebuilt)."""
    for attr in (PROBE_ATTR, QUERY_ROW_ATTR):
        noted = turn.__dict__.get(attr)
        if noted is not None:
            return noted
    own = getattr(engine, "query_row", None)
    if callable(own):
        return own(session, turn)
    retriever = engine.retriever
    if turn.kind == "relative":
        upto = sum(1 for t in session.turns[: _position(session, turn) + 1] if t.kind == "relative")
        hist = [np.asarray(h, np.float32) for h in session.composed_history[:upto or None]]
        if not hist:
            return None
        cfg = getattr(engine, "composed_config", None)
        use_mean = getattr(cfg, "use_history_mean", True)
        width = len(hist[-1])
        rows = [h for h in hist if len(h) == width]
        return np.mean(np.stack(rows), axis=0).astype(np.float32) if use_mean else hist[-1]
    if turn.kind == "feedback":
        tau = _tau(engine, "feedback")
        if turn.method == "rocchio" and session.feedback_query:
            return retriever.text_query_row(np.asarray(session.feedback_query, np.float32), tau)
        if turn.query:
            return retriever.text_query_row(retriever.encode_text(turn.query), tau)
        return None
    if not turn.query:
        return None
    row = retriever.text_query_row(retriever.encode_text(turn.query))
    if turn.kind in ("answer", "skip"):
        carried = _carried_turn(session, turn)
        cfg = getattr(engine, "plugir_config", None)
        carry = None if carried is None else query_row(engine, session, carried)
        row = carry_mix(row, carry, getattr(cfg, "carry_weight", 0.0))
    return row


def _position(session: Session, turn: Turn) -> int:
    return next((i for i, t in enumerate(session.turns) if t is turn), len(session.turns))


def _carried_turn(session: Session, turn: Turn) -> Turn | None:
    """The latest feedback or relative turn before `turn` that no typed search or new description replaced."""
    for t in reversed(session.turns[: _position(session, turn)]):
        if t.kind in ("feedback", "relative"):
            return t
        if t.kind in ("search", "describe"):
            return None
    return None


def target_rank(engine, session: Session, turn: Turn, target: str) -> int | None:
    """1-based rank of `target` in the whole index under `turn`'s query; None when unknown."""
    if target not in engine.retriever.index.row_of:
        return None
    try:
        row = query_row(engine, session, turn)
        return None if row is None else engine.retriever.rank_of(row, target)
    except (IIRError, ValueError, KeyError) as e:  # ranking is for analysis: never break the participant's turn
        log.warning("could not rank the target %s after round %s: %s", target, turn.round, e)
        return None
