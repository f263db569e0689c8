"""The ways a query row moves between rounds, side by side (after pyserini's `DenseVectorRocchioPrf` beside
its searcher): each takes rows and weights and returns the row the next round ranks with. The modes call
them; nothing here reads a session.

- `rocchio`: relevance feedback (Zhu et al.'s Rocchio baseline): towards the marked-relevant images, away
  from the marked-not-relevant ones.
- `compose_vector`, `history_mean`: composed search without an LLM (reference + relative caption), and the
  multi-round ranker over every composed round's row.
- `pull_target`, `reshape`: the grounded pull of a clicked question option (PlugIR's conversation without an
  LLM): towards the chosen option's candidates, away from the others'.
- `carry_mix`: PlugIR's carry: a typed answer's text row mixed with the row of the latest feedback,
  relative or clicked round, so a mixed session keeps what those rounds did.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interactive_ir.errors import BadInputError


# --- relevance feedback -------------------------------------------------------------------------------------
def rocchio(query: np.ndarray, relevant: np.ndarray | None, irrelevant: np.ndarray | None,
            alpha: float = 1.0, beta: float = 0.75, gamma: float = 0.15) -> np.ndarray:
    """alpha q + beta mean(relevant rows) - gamma mean(irrelevant rows); empty sets contribute nothing."""
    q = alpha * np.asarray(query, np.float64)
    if relevant is not None and len(relevant):
        q = q + beta * np.asarray(relevant, np.float64).mean(axis=0)
    if irrelevant is not None and len(irrelevant):
        q = q - gamma * np.asarray(irrelevant, np.float64).mean(axis=0)
    return q.astype(np.float32)


# --- composed search ----------------------------------------------------------------------------------------
def compose_vector(reference: np.ndarray, text: np.ndarray, text_weight: float = 1.0) -> np.ndarray:
    """normalise(reference + text_weight * text), float32."""
    v = np.asarray(reference, np.float32) + np.float32(text_weight) * np.asarray(text, np.float32)
    n = float(np.linalg.norm(v))
    if n == 0.0:
        raise BadInputError("the relative caption cancels the reference exactly: rephrase it")
    return (v / n).astype(np.float32)


def history_mean(rows) -> np.ndarray:
    """The mean of the composed query rows of all rounds (the multi-round ranker of "A Sanity Check on
    Composed Image Retrieval")."""
    return np.mean(np.asarray(rows, np.float32), axis=0).astype(np.float32)


# --- the grounded pull of a clicked option ------------------------------------------------------------------
def _unit(v: np.ndarray) -> np.ndarray | None:
    n = float(np.linalg.norm(v))
    return None if n == 0.0 else v / n


def pull_target(query: np.ndarray, rows: np.ndarray, temperature: float = 0.0) -> np.ndarray:
    """The mean of `rows`, each weighted by softmax(<row, q/|q|> / temperature) (0: the plain mean).

    Weighting by the current scores pulls towards the members the query already ranks high: a query that
    already has the target near the top keeps it there instead of drifting to the cluster's centre."""
    rows = np.asarray(rows, np.float64)
    if temperature <= 0.0 or len(rows) < 2:
        return rows.mean(axis=0)
    q = np.asarray(query, np.float64)
    s = rows @ (q / (np.linalg.norm(q) or 1.0)) / temperature
    w = np.exp(s - s.max())
    return (w / w.sum()) @ rows


def reshape(query: np.ndarray, option_rows: Sequence[np.ndarray | None], chosen: int, pull: float = 0.6,
            push: float = 0.2, temperature: float = 0.0) -> np.ndarray:
    """The query row moved towards option `chosen` and away from the others (Rocchio on search rows).

    `option_rows[i]` holds the search rows of option i's members (2-D; None or empty for none). With u(x)
    the unit vector of x: q' = q + pull |q| u(c) - push |q| u(mean of all the other options' rows), where
    c is the chosen rows' mean weighted by the current scores (`pull_target`, `temperature`), rescaled to
    the length of q (later mixes with text rows keep their balance).
    """
    q = np.asarray(query, np.float64)
    length = float(np.linalg.norm(q))
    if length == 0.0:
        return q.astype(np.float32)
    out = q.copy()
    mine = option_rows[chosen] if 0 <= chosen < len(option_rows) else None
    if mine is not None and len(mine):
        u = _unit(pull_target(q, mine, temperature))
        if u is not None:
            out += pull * length * u
    others = [np.asarray(r, np.float64) for i, r in enumerate(option_rows) if i != chosen and r is not None and len(r)]
    if others:
        u = _unit(np.concatenate(others).mean(axis=0))
        if u is not None:
            out -= push * length * u
    n = float(np.linalg.norm(out))
    return (out * (length / n) if n else q).astype(np.float32)


# --- PlugIR's carry -----------------------------------------------------------------------------------------
def carry_mix(rows: np.ndarray, carry: np.ndarray | None, weight: float) -> np.ndarray:
    """Each text query row r (1-D, or the rows of a 2-D array) becomes (1 - w) r + w |r| c / |c|: the
    weighted mean of r and the carried row c rescaled to r's length. No carry (or w = 0) returns r."""
    rows = np.asarray(rows, np.float32)
    if carry is None or not len(carry) or weight <= 0.0:
        return rows
    c = np.asarray(carry, np.float32)
    c_norm = float(np.linalg.norm(c))
    if c_norm == 0.0 or c.shape[-1] != rows.shape[-1]:
        return rows
    lengths = np.linalg.norm(rows, axis=-1, keepdims=True)
    w = np.float32(min(1.0, float(weight)))
    return ((1 - w) * rows + w * lengths * (c / np.float32(c_norm))).astype(np.float32)
