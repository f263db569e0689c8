"""A belief over the collection: a probability for every image being the one the user has in mind.

PicHunter (Cox et al., IEEE TIP 2000) keeps P(target = i) for every image i and updates it by Bayes' rule
from each user action under an explicit user model; Ferecatu and Geman (2009) do the same for a mental
picture. Here the belief is the log-posterior over the rows of an index, as one float64 array:

    log P(i | actions) = text(i) + sum over actions a of log P(a | target = i)   (+ a constant)

- `text(i)` = score(query row, row i) / text_temperature: the current query (the description, or what a
  mode made of the dialogue so far) as a softmax likelihood. It is *replaced* when the query changes, so a
  dialogue that repeats the description is not counted twice.
- A click on the shown image closest to the target ("closest"): P(click c | i) = softmax over the shown s
  of sim(i, s) / click_temperature, taken at c (the user model: a person picks what looks most like what
  they have in mind, more surely the more alike it is).
- "None of these": the same softmax with one more option of fixed similarity `none_similarity`, taken at
  that option: images unlike every shown one gain.
- A click is not always right: with probability `click_error` it falls on any option at random (a mixture
  with the uniform choice), so one wrong click cannot sink the target; marks and "none of these" likewise.
- Shown and not found: a person who sees the target usually says so, but may overlook it: every showing of
  an image that was not picked as the target multiplies its probability by `overlook` (a strong but finite
  penalty), so an overlooked target can come back once the other evidence points at it again. Only an image
  the search never shows (a benchmark's reference) or one outside the search's filters reaches 0.
- A yes or no to "Is there a dog?": P(yes | i) = `word_yes` when image i's caption has the word, else
  `word_yes_absent` (captions leave things out; answers can be wrong), and the answer's words as a statement.

Everything is vectorised over the rows (no per-image Python). An exact index up to
`retriever.matrix_rows_max()` rows keeps the whole collection; larger ones (approximate kinds, Milvus) keep
a candidate pool (`belief_pool.py`): first the `pool` best rows of the first query, then the nearest rows of
each click, mark and statement join it (scored by the evidence so far), the least probable never-shown rows
leave it over `pool * pool_cap` rows, and the rows outside it keep an explicit, estimated share of the
probability (`rest_share`), which brings their most probable region into the pool when it grows large. A
round's searches for the pool are one index search (`Retriever.candidate_rows`), and the pool's vectors one
buffer that rows join and leave in place (a pool's `rows` are in the order they joined: look rows up with
`positions`). On a GPU (`belief_device.py`) the belief covers every row whatever the size: its products over
every row run on the retriever's device matrix, and its per-row state (`text`, `actions`, `seen`: float64 tensors)
and update run there too (`dev`, a `belief_device_state.DeviceMath`: each method below that touches every row
hands over to it; the numpy code here is the reference its torch twin is tested against). There the
log-posterior is a tensor on the device: read it through `page`, `top`, `rank_of`, `live`, `best_unshown` and
`ranking` (the only one that brings every row to the host, asked for on demand).

Which images to show (`page`): the most probable ones, and `explore` images chosen to learn from (PicHunter,
Ferecatu and Geman): among the next `explore_depth` probable images, greedily the one that most raises the
expected information of the next click (the mutual information between the click and the target under the
click model above, over the `info_depth` most probable images), so a click says which part of the belief
is right. The same expected information chooses the belief's yes/no questions (`word_information`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from interactive_ir.errors import BadInputError, IIRError, SessionError
from interactive_ir.retrieval.belief_device_state import DeviceMath
from interactive_ir.retrieval.belief_pool import ChoiceTerm, Pool, StatementTerm, WordTerm

log = logging.getLogger(__name__)

ENV_PREFIX = "IIR_BELIEF_"


@dataclass(frozen=True)
class BeliefConfig:
    """The belief's user model and display; each field can be set by env `IIR_BELIEF_<FIELD>`. The defaults
    were fitted on the Flickr8k dev split with the model-free simulated user and checked on train images
    (docs/benchmarks/belief-vs-paging.md): its clicks judge by shared words, so a soft click model
    and no learning images did best; a statement's new words at temperature 0.1 and negated ones at 0.3 of it."""

    on_page: bool = True  # the web app's searches use the belief: every action is evidence and pages come from it
    text_temperature: float = 0.05  # softmax temperature of text evidence (query row scores); lower: trust text more
    click_temperature: float = 0.3  # softmax temperature of a "closest image" click among the shown images
    none_similarity: float = 0.3  # the similarity of the "none of these" option in the click model (cosine)
    explore: int = 0  # of each page's k images, how many are chosen to learn from (0: the k most probable)
    explore_depth: int = 60  # the learning images are chosen among this many most probable unseen images
    pool: int = 4000  # rows kept by the belief on a collection larger than the exact limit (approximate kinds)
    pool_grow: float = 0.025  # each click, mark or statement brings its nearest pool * pool_grow rows into the pool (0: fixed)
    pool_cap: float = 2.0  # the pool keeps at most pool * pool_cap rows: the least probable never-shown rows leave
    pool_probe: int = 256  # rows outside the pool sampled once to estimate their share of the probability (the rest)
    pool_fetch: float = 0.2  # when the rest holds more than this share, the page brings in the rows where it lies
    say_temperature: float = 0.1  # temperature of what the user says about the target (an answer, "like this, but ..."); lower: trust it more
    unsay_weight: float = 0.3  # what the user says the target does NOT show counts this share of what it shows
    question_depth: int = 60  # yes/no questions split the probability of this many most probable unseen images
    new_words_only: bool = True  # words the user said before (the description included) add no evidence again
    click_error: float = 0.1  # share of clicks (and marks) that fall on a random option: one wrong click cannot sink the target
    overlook: float = 0.01  # chance a person looks past the target on a page: each showing multiplies its probability by it
    info_depth: int = 300  # the expected information of a click or an answer is taken over this many most probable images
    word_yes: float = 0.5  # P(yes to "Is there a dog?") when the image's caption names a dog (fitted on dev: 0.49)
    word_yes_absent: float = 0.25  # P(yes) when its caption does not (captions leave things out; answers err; fitted: 0.24)
    min_information: float = 0.02  # a question whose answer is expected to tell less than this (bits) is not asked
    word_depth: int = 5000  # a yes/no answer reads the captions of this many most probable images (the rest: no word)

    def __post_init__(self):
        for name in ("text_temperature", "click_temperature", "say_temperature"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise BadInputError(f"belief {name} must be a positive number, got {v!r} (IIR_BELIEF_{name.upper()})")
        if not (np.isfinite(self.none_similarity) and -1.0 <= self.none_similarity <= 1.0):
            raise BadInputError(f"belief none_similarity must be between -1 and 1, got {self.none_similarity!r}")
        if not (np.isfinite(self.unsay_weight) and 0.0 <= self.unsay_weight <= 1.0):
            raise BadInputError(f"belief unsay_weight must be between 0 and 1, got {self.unsay_weight!r} (IIR_BELIEF_UNSAY_WEIGHT)")
        if (self.explore < 0 or self.explore_depth < 1 or self.question_depth < 2 or self.info_depth < 2
                or self.word_depth < 1):
            raise BadInputError("belief explore must be >= 0, explore_depth >= 1, question_depth and info_depth >= 2")
        _check_pool(self)
        for name in ("click_error", "overlook", "word_yes", "word_yes_absent"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 < v < 1.0) and not (name == "click_error" and v == 0.0):
                raise BadInputError(f"belief {name} must be between 0 and 1, got {v!r} (IIR_BELIEF_{name.upper()})")


def _check_pool(cfg: BeliefConfig) -> None:
    """The pool's parameters in range, else BadInputError naming the env var that sets each."""
    ranges = {"pool": (1, None, "a whole number of rows, at least 1"), "pool_probe": (0, None, "0 or more rows"),
              "pool_cap": (1.0, None, "at least 1 (times pool)"), "pool_grow": (0.0, None, "0 or more (times pool)"),
              "pool_fetch": (0.0, 1.0, "a share above 0 and at most 1")}
    for name, (lo, hi, what) in ranges.items():
        v = getattr(cfg, name)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v >= lo
        ok = ok and (hi is None or (lo < v <= hi)) and (name not in ("pool", "pool_probe") or float(v).is_integer())
        if not ok:
            raise BadInputError(f"belief {name} must be {what}, got {v!r} (IIR_BELIEF_{name.upper()})")
    if cfg.pool_grow > cfg.pool_cap:
        raise BadInputError(f"belief pool_grow ({cfg.pool_grow}) must be at most pool_cap ({cfg.pool_cap}): "
                            "IIR_BELIEF_POOL_GROW, IIR_BELIEF_POOL_CAP")


def belief_config(cfg: BeliefConfig | None = None, environ=None) -> BeliefConfig:
    """`cfg`, else the defaults with `IIR_BELIEF_*` env vars applied (read now)."""
    from interactive_ir.config import apply_env

    return cfg if cfg is not None else apply_env(BeliefConfig(), ENV_PREFIX, os.environ if environ is None else environ)


def log_normalise(logp: np.ndarray) -> np.ndarray:
    """`logp` shifted so that its exponentials sum to 1; -inf stays -inf. SessionError when nothing is left."""
    finite = np.isfinite(logp)
    if not finite.any():
        raise SessionError("every image in the collection has been shown and none was it: start a new search")
    top = logp[finite].max()
    out = np.where(finite, logp - top, -np.inf)
    return out - np.log(np.exp(out[finite]).sum())


def _lse(a: np.ndarray, axis: int) -> np.ndarray:
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


@dataclass
class Belief:
    """The log-posterior over `rows` of one index (all rows, or a candidate pool); see the module docstring.

    `vectors` are the rows' unit vectors (the retriever's search vectors), `text` the current text term,
    `actions` the sum of the action terms. Build one with `Belief.over` and update it with the methods."""

    rows: np.ndarray  # index rows the belief covers: every row, arange(N); a pool's in the order they joined
    vectors: np.ndarray  # their vectors (float32, len(rows) x d), the similarity of the user model (a pool's: a
    #                      view of one contiguous buffer that rows join and leave in place, `_append` / `evict`)
    config: BeliefConfig
    text: np.ndarray = field(default=None)  # current text term, float64 per row
    actions: np.ndarray = field(default=None)  # summed action terms, float64 per row (-inf: ruled out)
    query: np.ndarray | None = None  # the query row of the text term
    norms: np.ndarray = field(default=None)  # the vectors' lengths (similarities are cosines)
    said: set = field(default_factory=set)  # content-word stems the user has said (`retrieval.words`)
    seen: np.ndarray = field(default=None)  # how many times each row was shown and not picked as the target
    pool: Pool | None = None  # a pooled belief's evidence terms and rest (`belief_pool.py`); None: every row
    dev: DeviceMath | None = None  # every row on a GPU: text, actions, seen (and logp) are float64 tensors there
    #                                and the update runs there (`belief_device_state.py`); None: numpy on the host

    def __post_init__(self):
        n = len(self.rows)
        if self.norms is None:
            self.norms = _norms(self.vectors)
        self._derive()
        if self.dev is not None:  # the per-row state on the device
            self.text, self.actions, self.seen = (self.dev.zeros() if a is None else a
                                                  for a in (self.text, self.actions, self.seen))
            return
        if self.text is None:
            self.text = np.zeros(n)
        if self.actions is None:
            self.actions = np.zeros(n)
        if self.seen is None:
            self.seen = np.zeros(n)

    def _derive(self) -> None:
        """What is derived from `norms` and `rows` (not fields): one length for every row, and the rows' sorted
        order (None when ascending already: every row) for `_find`."""
        if not hasattr(self, "_buf"):
            self._buf, self._shared = None, False  # a pool's vector buffer, and whether a copy shares it
        if self.dev is not None:  # every row (ascending); the one length was found once for the device
            self._one_norm, self._order, self._sorted = self.dev.one_norm, None, self.rows
            return
        lo, hi = (float(self.norms.min()), float(self.norms.max())) if len(self.norms) else (1.0, 1.0)
        self._one_norm = lo if hi - lo <= 1e-4 * hi else None
        ascending = self.pool is None or bool(np.all(self.rows[1:] > self.rows[:-1]))
        self._order = None if ascending else np.argsort(self.rows, kind="stable")
        self._sorted = self.rows if ascending else self.rows[self._order]

    def __deepcopy__(self, memo) -> Belief:
        """A copy whose evidence is its own while the (possibly collection-sized) vectors are shared: a pool's
        buffer is copied by whichever of the two changes it first (`_room`)."""
        own = (lambda a: a.clone()) if self.dev is not None else (lambda a: a.copy())  # noqa: E731
        b = Belief(self.rows, self.vectors, self.config, own(self.text), own(self.actions),
                   None if self.query is None else self.query.copy(), self.norms, set(self.said), own(self.seen),
                   None if self.pool is None else self.pool.copy(), self.dev)
        if self._buf is not None:
            b._buf, b._shared, self._shared = self._buf, True, True
        return b

    def _find(self, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(positions, covered): where index `rows` are in the belief, and which of them it covers (the
        positions of the others are meaningless). O(len(rows) log N)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(self._sorted):
            return np.zeros(len(rows), np.int64), np.zeros(len(rows), bool)
        at = np.minimum(np.searchsorted(self._sorted, rows), len(self._sorted) - 1)
        ok = self._sorted[at] == rows
        return (at if self._order is None else self._order[at]), ok

    # --- building ----------------------------------------------------------------------------------
    @classmethod
    def over(cls, retriever, qrow: np.ndarray, config: BeliefConfig, allow: np.ndarray | None = None,
             device=None) -> Belief:
        """A belief with `qrow` as its text evidence, over the whole collection when the retriever keeps a
        matrix of it (or `device`, a `belief_device.BeliefDevice`, holds every row on a GPU: whatever the
        collection's size), else over the `config.pool` best rows for `qrow` (among the `allow`ed rows: a
        search's filters, so that a narrow filter on a large collection still leaves a pool to choose from).
        `belief_device.DeviceFull` when the device fills up meanwhile."""
        on_device = device.rows() if device is not None else None
        if on_device is not None:
            dev = DeviceMath(on_device, *device.device_norms(on_device), chunk=device.click_chunk)
            b = cls(np.arange(len(on_device)), on_device, config, norms=device.norms(on_device), dev=dev)
            b.set_query(qrow)
            return b
        matrix, norms = retriever._matrix, retriever.matrix_norms  # noqa: SLF001 - its float32 copy (None above its limit)
        if matrix is not None:
            rows, vectors = np.arange(len(matrix)), matrix
            norms = np.where(norms > 0, norms, 1.0).astype(np.float32)
        else:
            rows = np.unique(retriever.candidate_rows(qrow, min(config.pool, len(retriever.index)), allow=allow)[0])
            vectors, norms = retriever.index.row_vectors(rows), None
        pool = None
        if matrix is None:
            pool = Pool(len(retriever.index), None if allow is None else np.sort(np.asarray(allow, np.int64)))
            pool.sample(retriever, rows, int(config.pool_probe))
        b = cls(rows, vectors, config, norms=norms, pool=pool)
        b.set_query(qrow)
        return b

    # --- evidence ------------------------------------------------------------------------------------
    def set_query(self, qrow: np.ndarray) -> None:
        """The current query's evidence: score(qrow, i) / text_temperature (replaces the previous query's)."""
        q = np.asarray(qrow, np.float32)
        if q.shape != (self.vectors.shape[1],) or not np.isfinite(q).all():
            raise BadInputError(f"a query row of width {self.vectors.shape[1]} with finite values is needed")
        self.query = q
        if self.dev is not None:
            self.text = self.dev.scores(q, self.config.text_temperature)
            return
        self.text = (self.vectors @ q).astype(np.float64) / self.config.text_temperature

    def positions(self, rows: Sequence[int]) -> np.ndarray:
        """Positions in the belief of index rows (SessionError for a row it does not cover)."""
        rows = np.asarray(rows, dtype=np.int64)
        pos, ok = self._find(rows)
        if not ok.all():
            raise SessionError(f"row {int(rows[~ok][0])} is not among the images this search considers")
        return pos

    def rule_out(self, rows: Sequence[int]) -> None:
        """Images shown and not the target: probability 0 (rows outside a pool are left out already)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.pool is not None:
            self.pool.ruled.update(int(r) for r in rows)
        if len(rows):
            pos, ok = self._find(rows)
            if self.dev is not None:
                self.dev.rule_out(self.actions, pos[ok])
                return
            self.actions[pos[ok]] = -np.inf  # O(shown log N), no pass over the rows

    def set_seen(self, rows: Sequence[int], times: Sequence[int] | None = None) -> None:
        """How many times each of `rows` (index rows) was shown and not picked as the target (`times`, one
        each by default); every other row: never. Each showing costs log(`overlook`), so a very probable seen
        image can come back (a person may have looked past it). Rows outside a pool are left out."""
        rows = np.asarray(rows, dtype=np.int64)
        times = np.ones(len(rows)) if times is None else np.asarray(times, dtype=np.float64)
        if self.dev is not None:
            pos, ok = self._find(rows)
            self.seen = self.dev.seen(pos[ok], times[ok])
            return
        self.seen = np.zeros(len(self.rows))
        if len(rows):
            pos, ok = self._find(rows)
            np.add.at(self.seen, pos[ok], times[ok])

    def keep_only(self, rows: np.ndarray) -> None:
        """Only `rows` (index rows: a search's filters) can be the target; every other has probability 0."""
        if self.dev is not None:
            self.actions = self.dev.keep_only(self.actions, rows)
            return
        self.actions = np.where(np.isin(self.rows, np.asarray(rows, np.int64)), self.actions, -np.inf)

    def click(self, shown_rows: Sequence[int], chosen: int | None) -> None:
        """A click on `shown_rows[chosen]` as the image closest to the target (None: "none of these").

        log P(click | i) = sim(i, chosen)/T - logsumexp over the shown (and the none option) of sim/T."""
        self.marks(shown_rows, [] if chosen is None else [chosen])

    def marks(self, shown_rows: Sequence[int], liked: Sequence[int]) -> None:
        """Images marked "like it" among the shown (`liked`: positions in `shown_rows`): the closest image to
        the target is one of them, log P(marks | i) = logsumexp over the liked of sim(i, s)/T - logsumexp over
        the shown and the none option; none liked is "none of these" (a click is one liked image)."""
        pos, cols = self._choice(shown_rows, liked)
        if self.dev is not None:  # the same click model, its torch twin over every row on the device
            self.actions = self.dev.choice(self.actions, pos, cols, self.config)
            return
        logits = self._click_logits(self.cosines(pos))
        with np.errstate(invalid="ignore"):
            self.actions = self.actions + self._log_choice(logits, cols)
        if self.pool is not None:  # kept to score rows that join the pool later
            self.pool.add_term(self, ChoiceTerm(self.vectors[pos] / self.norms[pos][:, None], tuple(cols)))

    def update(self, shown_rows: Sequence[int], liked: Sequence[int], positive: np.ndarray | None = None,
               negative: np.ndarray | None = None) -> None:
        """A round's marks (or click: one liked image; none: "none of these") and what was said beside them, as
        `marks` then `say`. On a device both come from one product over every row (the matrix read once a turn,
        `DeviceMath.choice` with what was said); on the CPU it is those two calls."""
        if self.dev is None:
            self.marks(shown_rows, liked)
            self.say(positive, negative)
            return
        pos, cols = self._choice(shown_rows, liked)
        self.actions = self.dev.choice(self.actions, pos, cols, self.config, self._said_rows(positive, negative),
                                       self.config.say_temperature)

    def _click_logits(self, cos: np.ndarray) -> np.ndarray:
        """sim / click_temperature for every shown option, then the "none of these" option (last column)."""
        t = self.config.click_temperature
        a = cos.astype(np.float64) / t
        return np.concatenate([a, np.full(a.shape[:-1] + (1,), self.config.none_similarity / t)], axis=-1)

    def _log_choice(self, logits: np.ndarray, cols: list[int]) -> np.ndarray:
        """log P(the choice is among `cols` | i) under the click model with its error term: with probability
        1 - click_error the softmax of the logits, else a uniform pick among the options."""
        eps, n = self.config.click_error, logits.shape[1]
        model = _lse(logits[:, cols], 1) - _lse(logits, 1)
        if eps <= 0.0:
            return model
        return np.logaddexp(np.log1p(-eps) + model, np.log(eps * len(cols) / n))

    def _choice(self, shown_rows: Sequence[int], liked: Sequence[int]) -> tuple[np.ndarray, list[int]]:
        """(positions of the shown rows, the chosen options' columns: the liked, or the none option)."""
        pos = self.positions(shown_rows)
        if not len(pos):
            raise SessionError("nothing was shown to choose from")
        cols = sorted({int(c) for c in liked}) or [len(pos)]
        if not 0 <= cols[0] <= cols[-1] <= len(pos) or (liked and cols[-1] == len(pos)):
            raise SessionError(f"option {cols[-1]} is not one of the {len(pos)} shown images")
        return pos, cols

    def _said_rows(self, positive: np.ndarray | None, negative: np.ndarray | None) -> list[tuple[np.ndarray, float]]:
        """(row, weight) of what was said (`say`): the positive row, and the negative at -unsay_weight; checked."""
        said = []
        for row, weight in ((positive, 1.0), (negative, -self.config.unsay_weight)):
            if row is None or weight == 0.0:
                continue
            q = np.asarray(row, np.float32)
            if q.shape != (self.vectors.shape[1],) or not np.isfinite(q).all():
                raise BadInputError(f"a statement row of width {self.vectors.shape[1]} with finite values is needed")
            said.append((q, weight))
        return said

    def answer_word(self, has_word: np.ndarray, yes: bool,
                    words_of: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        """A yes (or no) to "is there <word>?": `has_word` says, per covered row, whether its caption names it.
        P(yes | i) = word_yes where it does, word_yes_absent where not (the error term of an answer).
        `words_of(rows)`: the same for index rows that join a pool later."""
        q1, q0 = self.config.word_yes, self.config.word_yes_absent
        if self.dev is not None:  # the has-word mask is uploaded; the update runs on the device
            self.actions = self.dev.word(self.actions, has_word, yes, q1, q0)
            return
        p = np.where(np.asarray(has_word, bool), q1, q0)
        self.actions = self.actions + np.log(p if yes else 1.0 - p)
        if self.pool is not None:
            self.pool.add_term(self, WordTerm(bool(yes), words_of))

    def say(self, positive: np.ndarray | None, negative: np.ndarray | None = None) -> None:
        """What the user said the target shows (`positive`, a query row of the retriever) and does not show
        (`negative`): log P(statement | i) = (score(positive, i) - unsay_weight * score(negative, i)) /
        say_temperature, up to a constant (an answer, or the text of "like this, but ...")."""
        t = self.config.say_temperature
        said = self._said_rows(positive, negative)  # on the device, one product over every row for all of them
        if self.dev is not None:
            if said:
                self.actions = self.actions + self.dev.statement(said, t)
            return
        term = np.zeros(len(self.rows))
        for q, weight in said:
            term += weight * (self.vectors @ q).astype(np.float64) / t
            if self.pool is not None:
                self.pool.add_term(self, StatementTerm(q, weight / t))
        with np.errstate(invalid="ignore"):
            self.actions = self.actions + term

    def cosines(self, pos: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        """Cosine similarities of the covered rows (or those at `among`) with the rows at positions `pos`."""
        if self.dev is not None:  # on the device; a few rows' cosines (`among`) come to the host
            out = self.dev.cosines(pos, among)
            return out if among is None else self.dev.to_host(out)
        among = slice(None) if among is None else among
        out = self.vectors[among] @ (self.vectors[pos] / self.norms[pos][:, None]).T
        if self._one_norm is not None:  # every row as long (unit rows; image + caption rows): one scalar, in place
            out *= np.float32(1.0 / self._one_norm)
        else:
            out /= self.norms[among][:, None]
        return out

    # --- reading --------------------------------------------------------------------------------------
    def log_scores(self) -> np.ndarray:
        """Unnormalised log-probabilities per covered row (-inf: ruled out; a tensor on the device there)."""
        if self.dev is not None:
            return self.dev.log_scores(self.text, self.actions, self.seen, self.config.overlook)
        with np.errstate(invalid="ignore"):
            logp = self.text + self.actions + self.seen * np.log(self.config.overlook)
        return np.where(np.isnan(logp), -np.inf, logp)

    def log_posterior(self) -> np.ndarray:
        """Normalised log-probabilities per covered row (-inf: ruled out; a float64 tensor on the device there:
        read it through the belief's methods, `page`, `top`, `rank_of`, `live`, `best_unshown`, `ranking`)."""
        if self.dev is not None:
            return self.dev.log_normalise(self.log_scores())
        return log_normalise(self.log_scores())

    def ranking(self, n_rows: int, logp: np.ndarray | None = None) -> np.ndarray:
        """A score for every row of the index (length `n_rows`): the log-posterior (`logp` when already
        computed), -inf outside the pool. On the device every row comes to the host: asked for only on demand."""
        out = np.full(n_rows, -np.inf)
        logp = self.log_posterior() if logp is None else logp
        out[self.rows] = self.dev.host(logp) if self.dev is not None else logp
        return out

    def rank_of(self, row: int, logp: np.ndarray) -> int:
        """1-based rank of index row `row` under `logp` (the log-posterior; ties count in its favour); a row the
        belief does not cover, or one ruled out, after every live covered row."""
        at, ok = self._find([row])
        pos = int(at[0])
        if self.dev is not None:
            return self.dev.rank_of(pos if ok[0] else None, logp)
        if ok[0] and np.isfinite(logp[pos]):
            return int(np.sum(logp > logp[pos])) + 1
        return int(np.isfinite(logp).sum()) + 1

    def page(self, k: int, exclude_rows: Sequence[int] = (),
             logp: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
        """(rows, log-probabilities, n_best) of the next page: the `k - explore` most probable rows not in
        `exclude_rows`, then the rows chosen to learn from. n_best: how many are there for their probability.
        `logp`: the log-posterior when the caller computed it already (not changed here)."""
        if self.dev is not None:
            return self._page_device(k, exclude_rows, logp)
        logp = self.log_posterior() if logp is None else logp
        if len(exclude_rows):
            logp = logp.copy()
            pos, ok = self._find(exclude_rows)
            logp[pos[ok]] = -np.inf  # rows outside a pool are not on it anyway
        live = int(np.isfinite(logp).sum())
        k = min(int(k), live)
        if k <= 0:
            raise SessionError("every image in the collection has been shown: start a new search")
        depth = min(live, max(k, self.config.explore_depth))
        order = np.argpartition(-logp, depth - 1)[:depth] if depth < len(logp) else np.arange(len(logp))
        order = order[np.argsort(-logp[order], kind="stable")]
        n_best = max(1, k - self.config.explore) if k > 1 else k
        chosen = list(order[:n_best])
        chosen += self.informative(order[n_best:], logp, chosen, k - n_best)
        pos = np.asarray(chosen, dtype=np.int64)
        return self.rows[pos], logp[pos], n_best

    def _page_device(self, k: int, exclude_rows: Sequence[int], logp) -> tuple[np.ndarray, np.ndarray, int]:
        """`page` on the device: the `explore_depth` most probable rows not excluded come to the host (most
        probable first), the learning images are chosen from them as on the CPU (`informative`, over the
        `info_depth` most probable rows not excluded). A log-posterior made here is changed in place."""
        fresh = logp is None
        logp = self.log_posterior() if fresh else logp
        if len(exclude_rows):
            pos, ok = self._find(exclude_rows)
            logp = self.dev.without(logp, pos[ok], in_place=fresh)
        order, _ = self.dev.best(logp, max(int(k), self.config.explore_depth))
        k = min(int(k), len(order))
        if k <= 0:
            raise SessionError("every image in the collection has been shown: start a new search")
        n_best = max(1, k - self.config.explore) if k > 1 else k
        chosen = list(order[:n_best])
        chosen += self.informative(order[n_best:], logp, chosen, k - n_best)
        pos = np.asarray(chosen, dtype=np.int64)
        return self.rows[pos], self.dev.values(logp, pos), n_best

    def live(self, logp) -> int:
        """How many covered rows `logp` (a log-posterior) leaves possible."""
        return self.dev.live(logp) if self.dev is not None else int(np.isfinite(logp).sum())

    def without(self, logp, pos: np.ndarray):
        """A copy of `logp` (a log-posterior) with the rows at positions `pos` ruled out (-inf)."""
        if self.dev is not None:
            return self.dev.without(logp, pos)
        out = logp.copy()
        out[np.asarray(pos, np.int64)] = -np.inf
        return out

    def best_unshown(self, logp, n: int, exclude: np.ndarray = ()) -> np.ndarray:
        """Positions of the `n` most probable covered rows under `logp` that are not at positions `exclude`, most
        probable first (fewer when fewer are live)."""
        if self.dev is not None:
            return self.dev.best(logp, n, exclude)[0]
        hidden = logp.copy()
        if len(exclude):
            hidden[np.asarray(exclude, np.int64)] = -np.inf
        live = int(np.isfinite(hidden).sum())
        if live < 1:
            return np.zeros(0, np.int64)
        cand, _ = self.top(hidden, min(n, live))
        return cand[np.argsort(-hidden[cand], kind="stable")]

    def top(self, logp: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, probabilities renormalised among them) of the `n` most probable covered rows."""
        if self.dev is not None:
            return self.dev.top(logp, n)
        live = int(np.isfinite(logp).sum())
        n = max(1, min(n, live))
        at = np.argpartition(-logp, n - 1)[:n] if n < len(logp) else np.arange(len(logp))
        at = at[np.isfinite(logp[at])]
        p = np.exp(logp[at] - logp[at].max())
        return at, p / p.sum()

    def click_probabilities(self, logits: np.ndarray) -> np.ndarray:
        """P(option | target) from click logits (last axis: the options), the error term mixed in."""
        z = np.exp(logits - logits.max(axis=-1, keepdims=True))
        z /= z.sum(axis=-1, keepdims=True)
        eps = self.config.click_error
        return (1.0 - eps) * z + eps / logits.shape[-1]

    def click_information(self, display: Sequence[int], logp: np.ndarray | None = None) -> float:
        """The expected information (nats) of a click on the images at positions `display` (or "none of
        these") about the target, over the `info_depth` most probable images."""
        logp = self.log_posterior() if logp is None else logp
        at, p = self.top(logp, self.config.info_depth)
        probs = self.click_probabilities(self._click_logits(self.cosines(np.asarray(display, np.int64), at)))
        return float(_information(p, probs[:, None, :])[0])

    def informative(self, cand: np.ndarray, logp: np.ndarray, page: list[int], n: int) -> list[int]:
        """Greedy: `n` of `cand` that each most raise the expected information of a click on the page so far
        (PicHunter's most informative display), vectorised over the candidates: info_depth x cand x options."""
        if n <= 0 or not len(cand):
            return []
        at, p = self.top(logp, self.config.info_depth)
        base = self.cosines(np.asarray(page, np.int64), at) if page else np.zeros((len(at), 0), np.float32)
        sim = self.cosines(np.asarray(cand, np.int64), at)  # targets x candidates
        out: list[int] = []
        free = np.ones(len(cand), bool)
        for _ in range(min(n, len(cand))):
            both = np.concatenate([np.broadcast_to(base[:, None, :], (len(at), len(cand), base.shape[1])),
                                   sim[:, :, None]], axis=2)
            gain = _information(p, self.click_probabilities(self._click_logits(both)))
            gain[~free] = -np.inf
            j = int(np.argmax(gain))
            free[j] = False
            out.append(int(cand[j]))
            base = np.concatenate([base, sim[:, j:j + 1]], axis=1)
        return out

    # --- the pool (a collection too large to hold: `belief_pool.py`) -----------------------------------
    def include(self, retriever, rows: Sequence[int]) -> int:
        """Cover index `rows` too (a pooled belief; inside its filters): their vectors are read and scored by
        the current query and the evidence so far, never shown. How many rows joined."""
        if self.pool is None:
            return 0
        rows = np.unique(np.asarray(rows, np.int64))
        new = rows[~self._find(rows)[1]]
        if self.pool.allow is not None:
            new = new[np.isin(new, self.pool.allow)]
        if not len(new):
            return 0
        vectors = np.asarray(retriever.index.row_vectors(new), np.float32)
        norms = _norms(vectors)
        text = (vectors @ self.query).astype(np.float64) / self.config.text_temperature
        self._append(new, vectors, norms, text, self.pool.score(self, new, vectors, norms))
        self.pool.drop_from_probe(new)
        return len(new)

    def _room(self, rows: int) -> np.ndarray:
        """The pool's vector buffer, this belief's own (not shared with a copy) and with room for `rows` rows
        (a quarter more when it must grow, so that a round's joins rarely reallocate, but not past the cap and
        an eighth: a pool never holds more than the cap and one round's joins). The current rows stay."""
        n = len(self.rows)
        if self._buf is None or self._shared or len(self._buf) < rows:
            size = max(rows, len(self._buf) if self._buf is not None else 0)
            cap = int(round(self.config.pool * self.config.pool_cap))
            buf = np.empty((max(rows, min(size + size // 4, cap + cap // 8) + 64), self.vectors.shape[1]), np.float32)
            buf[:n] = self.vectors
            self._buf, self._shared = buf, False
        return self._buf

    def _append(self, rows: np.ndarray, vectors: np.ndarray, norms: np.ndarray, text: np.ndarray,
                actions: np.ndarray) -> None:
        """Rows joining a pool, at its end: their vectors written into the buffer (no copy of the others)."""
        n, m = len(self.rows), len(rows)
        buf = self._room(n + m)
        buf[n:n + m] = vectors
        self.vectors = buf[:n + m]
        self.rows = np.concatenate([self.rows, rows])
        self.norms = np.concatenate([self.norms, norms])
        self.text = np.concatenate([self.text, text])
        self.actions = np.concatenate([self.actions, actions])
        self.seen = np.concatenate([self.seen, np.zeros(m)])
        self._derive()

    def grow_near(self, retriever, queries: Sequence[np.ndarray], n: int | None = None) -> int:
        """Bring the `n` nearest rows (by the index's search; default pool * pool_grow) of each query row into
        a pooled belief. A search that fails leaves the pool as it is and says so once in the log; a store that
        answers fewer rows than asked adds what it answered. How many rows joined."""
        return self.include(retriever, self._near(retriever, queries, n)) if self.pool is not None else 0

    def _near(self, retriever, queries: Sequence[np.ndarray], n: int | Sequence[int] | None = None) -> np.ndarray:
        """The rows the index's search finds nearest each query row (`n` each, or one `n` per query row; see
        `grow_near`), in ONE index search over every query row (`Retriever.candidate_rows`)."""
        return np.concatenate([np.zeros(0, np.int64), *self._near_each(retriever, queries, n)])

    def _near_each(self, retriever, queries: Sequence[np.ndarray], n: int | Sequence[int] | None = None) -> list:
        """`_near`'s rows, one array per query row (empty where its search failed or `n` is 0)."""
        if n is None or np.isscalar(n):
            each = [int(round(self.config.pool * self.config.pool_grow)) if n is None else int(n)] * len(queries)
        else:
            each = [int(x) for x in n]
        out = [np.zeros(0, np.int64) for _ in queries]
        live = [i for i, m in enumerate(each) if m > 0]
        if not live:
            return out
        try:
            found = retriever.candidate_rows(np.stack([np.asarray(queries[i], np.float32) for i in live]),
                                             max(each[i] for i in live), allow=self.pool.allow)
        except (IIRError, RuntimeError, ValueError) as e:
            if not self.pool.warned:
                log.warning("the belief's pool cannot grow (%s): it keeps the %d rows it has", e, len(self.rows))
                self.pool.warned = True
            return out
        for i, f in zip(live, found):
            out[i] = np.asarray(f[:each[i]], np.int64)
        return out

    def rest_share(self) -> float:
        """The estimated probability that the target is outside a pooled belief's rows (0 over every row)."""
        if self.pool is None:
            return 0.0
        rest = self.pool.log_rest(self)
        s = self.log_scores()
        s = s[np.isfinite(s)]
        if not np.isfinite(rest):
            return 0.0
        top = max(rest, s.max()) if len(s) else rest
        r = np.exp(rest - top)
        return float(r / (r + np.exp(s - top).sum()))

    def reach(self, retriever, protect: Sequence[int] = (), near: Sequence[np.ndarray] = ()) -> int:
        """After a round's evidence: bring in the nearest rows of `near` (query rows: what was picked and said,
        pool * pool_grow each) and the rows the index's search finds along the whole evidence (`Pool.direction`:
        pool * pool_grow of them, explore_depth at least), in one step; when the rest then holds more than
        `pool_fetch` of the probability, the nearest rows of its most probable sampled row too; then keep the
        pool to `pool * pool_cap` rows, the least probable never-shown rows leaving (`protect`: index rows that
        stay, the page just shown). The round's searches are ONE index search over all their query rows (the
        rest's row in it when the rest held more than `pool_fetch` before the step). Rows added."""
        if self.pool is None:
            return 0
        added = 0
        if self.config.pool_grow > 0 and self.query is not None:
            grow = int(round(self.config.pool * self.config.pool_grow))
            queries = [*near, self.pool.direction(self)]
            each = [grow] * len(near) + [max(grow, self.config.explore_depth)]
            lead = self.pool.rest_leads(self, 1) if self.rest_share() > self.config.pool_fetch else []
            queries += list(lead)
            each += [grow] * len(lead)
            found = self._near_each(retriever, queries, each)
            cut = len(queries) - len(lead)
            added = self.include(retriever, np.concatenate([np.zeros(0, np.int64), *found[:cut]]))
            if len(lead) and self.rest_share() > self.config.pool_fetch:  # still: near the rest's most probable row
                added += self.include(retriever, np.concatenate(found[cut:]))
        self.evict(int(round(self.config.pool * self.config.pool_cap)), protect)
        return added

    def evict(self, cap: int, protect: Sequence[int] = ()) -> int:
        """Drop the least probable never-shown rows (not in `protect`) of a pooled belief over `cap` rows."""
        over = len(self.rows) - int(cap)
        if self.pool is None or over <= 0:
            return 0
        free = self.seen == 0
        protect = np.asarray(protect, np.int64)
        if len(protect):
            free &= ~np.isin(self.rows, protect)
        cand = np.flatnonzero(free)
        drop = cand[np.argsort(self.log_scores()[cand], kind="stable")[:over]]
        n, left = len(self.rows), len(self.rows) - len(drop)
        gone = np.zeros(n, bool)
        gone[drop] = True
        holes = np.flatnonzero(gone[:left])  # dropped rows among the first `left`: filled by kept rows past them
        tail = left + np.flatnonzero(~gone[left:])
        perm = np.arange(left)
        perm[holes] = tail
        buf = self._room(n)
        buf[holes] = buf[tail]  # only the moved rows' vectors are copied
        self.vectors = buf[:left]
        for name in ("rows", "norms", "text", "actions", "seen"):
            setattr(self, name, getattr(self, name)[perm])
        self._derive()
        return len(drop)


def _norms(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1)
    return np.where(norms > 0, norms, 1.0).astype(np.float32)


def _information(p: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Mutual information (nats) between the target (weights `p`, axis 0) and the answer (last axis) for each
    display (axis 1): H(sum_i p_i P(.|i)) - sum_i p_i H(P(.|i))."""
    probs = np.clip(probs, 1e-12, 1.0)
    marginal = np.einsum("i,ica->ca", p, probs)
    h_marginal = -(marginal * np.log(marginal)).sum(axis=-1)
    h_given = -np.einsum("i,ic->c", p, (probs * np.log(probs)).sum(axis=-1))
    return h_marginal - h_given


def word_information(p: np.ndarray, has_word: np.ndarray, word_yes: float, word_yes_absent: float) -> np.ndarray:
    """Expected information (nats) of a yes/no answer about each word: `p` the probabilities of the images
    asked over, `has_word` (images x words, bool) whether each image's caption names each word."""
    m = np.clip(p @ has_word.astype(np.float64), 0.0, 1.0)  # probability mass that has each word
    h = lambda q: -(q * np.log(np.clip(q, 1e-12, 1)) + (1 - q) * np.log(np.clip(1 - q, 1e-12, 1)))  # noqa: E731
    yes = m * word_yes + (1 - m) * word_yes_absent
    return h(yes) - (m * h(np.float64(word_yes)) + (1 - m) * h(np.float64(word_yes_absent)))
