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
  the composed config ranks by the history mean (A Sanity Check on Composed Image Retrieval).

A VLM re-rank (ImageScope stages 2 and 3) reorders only the top of the list; the rank reported here is
the first-stage rank.

Every mode notes on the turn the row it searched with (`Turn.query_row`, never serialised), so the rank of
a turn the engine ran uses exactly that row; the rebuild above is the fallback for turns read back from
JSON.
"""

from __future__ import annotations

import logging

import numpy as np

from interactive_ir.core.session import Session, Turn
from interactive_ir.errors import IIRError
from interactive_ir.modes.conversation.plugir.pipeline import carry_mix

log = logging.getLogger(__name__)


def _tau(engine, section: str):
    cfg = getattr(engine, f"{section}_config", None)
    return getattr(cfg, "tau", None)


def query_row(engine, session: Session, turn: Turn) -> np.ndarray | None:
    """The query row the engine ranked the collection with at `turn` (None when it cannot be rebuilt)."""
    if turn.query_row is not None:
        return np.asarray(turn.query_row, np.float32)
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
