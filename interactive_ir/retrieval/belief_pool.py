"""The candidate pool of a belief over a collection too large to hold (`retrieval/belief.py`).

Above the exact limit (`retriever.matrix_rows_max()`) the belief covers a pool of rows, first the `pool` best
rows of the description. A fixed pool would leave a target outside it out of reach whatever the person does,
so the pool grows with the evidence: the nearest rows (by the index's own search) of each click, mark and
statement join it, each scored by the evidence so far. That needs the evidence kept as typed terms that can
score any row, not only the sum over the rows covered when it came (`ChoiceTerm`, `StatementTerm`,
`WordTerm`). The pool is bounded: over `pool * pool_cap` rows the least probable never-shown rows leave.

Rows outside the pool keep an explicit share of the probability, the "rest": a fixed random sample of them
(`probe`, read once) is scored by the same terms, and the rest's mass is the sample's mean probability times
the number of rows outside the pool (an unbiased estimate from the query's score distribution). When the rest
holds more than `pool_fetch` of the probability, the page fetches the nearest rows of the sample's most
probable rows too (`Belief.reach`). After every round the index is also searched along the evidence itself
(`Pool.direction`: the log-posterior's gradient, text, statements and clicks summed into one query row), so
the rows the whole evidence favours join, wherever they are in the collection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

PROBE_SEED = 41  # the rest's sample is the same for every search over one collection (a search is reproducible)


@dataclass(frozen=True)
class ChoiceTerm:
    """A click, marks or "none of these" among shown images: their unit vectors and the chosen options."""

    shown: np.ndarray  # options x d, unit rows
    cols: tuple[int, ...]  # the chosen options (the last index past the shown: none of these)

    def score(self, belief, vectors: np.ndarray, norms: np.ndarray, rows: np.ndarray) -> np.ndarray:
        cos = (vectors @ self.shown.T) / norms[:, None]
        return belief._log_choice(belief._click_logits(cos), list(self.cols))  # noqa: SLF001 - the same click model

    def direction(self, belief) -> np.ndarray:
        """The term's gradient for a unit row near uniform choice: the chosen options' mean minus the mean of
        every option ("none of these": a zero vector), over the click temperature."""
        options = np.concatenate([self.shown, np.zeros((1, self.shown.shape[1]), self.shown.dtype)])
        return (options[list(self.cols)].mean(axis=0) - options.mean(axis=0)) / belief.config.click_temperature


@dataclass(frozen=True)
class StatementTerm:
    """What was said the target shows (scale > 0) or does not show (scale < 0): scale * score(row, i)."""

    row: np.ndarray  # a query row of the retriever
    scale: float  # weight / say_temperature

    def score(self, belief, vectors: np.ndarray, norms: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.scale * (vectors @ self.row).astype(np.float64)

    def direction(self, belief) -> np.ndarray:
        return self.scale * self.row


@dataclass(frozen=True)
class WordTerm:
    """A yes or no to "is there <word>?"; `words_of(rows)` says whether each index row's caption names it."""

    yes: bool
    words_of: Callable[[np.ndarray], np.ndarray] | None = None  # None: no row added later names it

    def score(self, belief, vectors: np.ndarray, norms: np.ndarray, rows: np.ndarray) -> np.ndarray:
        has = np.zeros(len(rows), bool) if self.words_of is None else np.asarray(self.words_of(rows), bool)
        p = np.where(has, belief.config.word_yes, belief.config.word_yes_absent)
        return np.log(p if self.yes else 1.0 - p)

    def direction(self, belief) -> None:
        return None  # captions, not vectors: no direction in the index's space


@dataclass
class Pool:
    """What a pooled belief knows beyond its rows: the collection's size, the filters, the evidence as terms,
    the rows ruled out, and the rest's sample (`probe_*`, scored like the pool)."""

    total: int  # rows in the collection
    allow: np.ndarray | None = None  # sorted rows a search's filters allow (None: every row)
    terms: list = field(default_factory=list)  # the evidence so far, in order
    ruled: set = field(default_factory=set)  # index rows ruled out (never the target)
    probe_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    probe_vectors: np.ndarray | None = None
    probe_norms: np.ndarray | None = None
    probe_actions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    warned: bool = False  # a failed growth was logged (once per search)

    def copy(self) -> Pool:
        return Pool(self.total, self.allow, list(self.terms), set(self.ruled), self.probe_rows, self.probe_vectors,
                    self.probe_norms, self.probe_actions.copy(), self.warned)

    def sample(self, retriever, covered: np.ndarray, n: int) -> None:
        """A fixed random sample of up to `n` rows outside `covered` (and inside the filters) as the probe."""
        rng = np.random.default_rng(PROBE_SEED)
        space = self.allow if self.allow is not None else None
        size = len(space) if space is not None else self.total
        draw = rng.choice(size, size=min(size, 2 * n + len(covered) // 64 + 8), replace=False) if size else []
        rows = np.asarray(space[draw] if space is not None else draw, np.int64)
        rows = rows[~np.isin(rows, covered)][:n]
        self.set_probe(np.sort(rows), retriever.index.row_vectors(np.sort(rows)) if len(rows) else None)

    def set_probe(self, rows: np.ndarray, vectors: np.ndarray | None) -> None:
        self.probe_rows = rows
        self.probe_vectors = vectors
        if vectors is not None and len(rows):
            norms = np.linalg.norm(vectors, axis=1)
            self.probe_norms = np.where(norms > 0, norms, 1.0).astype(np.float32)
        self.probe_actions = np.zeros(len(rows))

    def drop_from_probe(self, rows: np.ndarray) -> None:
        """Rows that joined the pool leave the rest's sample."""
        keep = ~np.isin(self.probe_rows, rows)
        if not keep.all():
            self.probe_rows = self.probe_rows[keep]
            self.probe_vectors = self.probe_vectors[keep]
            self.probe_norms = self.probe_norms[keep]
            self.probe_actions = self.probe_actions[keep]

    def add_term(self, belief, term) -> None:
        """Record `term` and score the rest's sample by it (the pool's rows are scored by the belief)."""
        self.terms.append(term)
        if len(self.probe_rows):
            with np.errstate(invalid="ignore"):
                self.probe_actions = self.probe_actions + term.score(belief, self.probe_vectors, self.probe_norms,
                                                                     self.probe_rows)

    def score(self, belief, rows: np.ndarray, vectors: np.ndarray, norms: np.ndarray) -> np.ndarray:
        """The summed action terms of `rows` (not yet covered) under the evidence so far; -inf where ruled out
        or outside the filters."""
        out = np.zeros(len(rows))
        with np.errstate(invalid="ignore"):
            for term in self.terms:
                out = out + term.score(belief, vectors, norms, rows)
        out[np.isin(rows, np.fromiter(self.ruled, np.int64, len(self.ruled)))] = -np.inf
        if self.allow is not None:
            out[~np.isin(rows, self.allow)] = -np.inf
        return np.where(np.isnan(out), -np.inf, out)

    def log_rest(self, belief) -> float:
        """log of the unnormalised probability of every row outside the pool (on the scale of
        `Belief.log_scores`): the sample's mean probability times the number of rows outside; -inf when none."""
        outside = (len(self.allow) if self.allow is not None else self.total) - len(belief.rows)
        if outside <= 0 or not len(self.probe_rows):
            return -np.inf
        s = (self.probe_vectors @ belief.query).astype(np.float64) / belief.config.text_temperature + self.probe_actions
        s = s[np.isfinite(s)]
        if not len(s):
            return -np.inf
        top = s.max()
        return float(top + np.log(np.exp(s - top).sum() / len(self.probe_rows)) + np.log(outside))

    def direction(self, belief) -> np.ndarray:
        """The evidence as one query row: the text term's row over its temperature plus each term's direction
        (the log-posterior's gradient for a unit row, near uniform clicks). The index's own search along it
        finds the rows the evidence makes most probable over the whole collection, to a first approximation."""
        out = np.asarray(belief.query, np.float64) / belief.config.text_temperature
        for term in self.terms:
            d = term.direction(belief)
            if d is not None:
                out = out + d
        return out.astype(np.float32)

    def rest_leads(self, belief, n: int) -> np.ndarray:
        """The vectors of the `n` most probable rows of the rest's sample (where the rest's mass is)."""
        s = (self.probe_vectors @ belief.query).astype(np.float64) / belief.config.text_temperature + self.probe_actions
        order = np.argsort(-np.where(np.isfinite(s), s, -np.inf), kind="stable")[:n]
        return self.probe_vectors[order[np.isfinite(s[order])]]
