"""The belief's per-row state and its update on a torch device (issue 41: a turn on the GPU without O(N) host work).

When the belief covers every row on a GPU (`belief_device.py`: `Belief.vectors` is a `DeviceRows`), its per-row
state — `text`, `actions`, `seen` — is three float64 torch tensors on that device and a turn's update runs there:
the click model over every row x (shown + 1) options (`log_choice`, the twin of `Belief._click_logits` /
`Belief._log_choice`), a yes/no answer (`word`: the has-word mask uploaded), a statement (`say`), the seen,
ruled-out and filter masks, the log-posterior (`log_scores` / `log_normalise`), and the top rows of a page, of
`top` (for the click and question information) and a rank (`rank_of`). Only O(k) or O(info_depth) values come
back to the host per turn; a whole-row array only when a caller asks for one (`Belief.ranking`: evaluation).

The state is float64 as on the CPU: it is 24 bytes a row against the 1-2 KB a row of the matrix a product reads,
so it costs little of a turn's memory traffic (`bench/bench_belief_scale.py` counts it; an H200 computes float64
at half its fp32 rate, far above what these element-wise passes need), and the posteriors then equal the numpy
belief's to the float32 rounding of the products (float32 state would add ties and flips between near-equal
ranks). The click model's exponentials of a chunk are fp32 (the cosines' own precision), their sums float64.

ONE click model: the numpy code of `belief.py` is the reference; `log_choice` here is its twin, kept equal by
tests/unit/retrieval/test_belief_device_state.py (1e-5 relative, with and without the error term, for clicks,
multi-marks and "none of these", at a usual and at a very low click temperature). Running out of device memory raises `DeviceFull` (the belief
mode makes the round again on the CPU). Nothing here imports torch: it comes with the `DeviceRows`.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from interactive_ir.errors import SessionError
from interactive_ir.retrieval.belief_device import DeviceFull, DeviceRows

# --- the click model's twin (reference: Belief._click_logits / Belief._log_choice in belief.py) --------------------
SHIFT_FREE = 50.0  # up to this |sim| / click_temperature, exp(sim / T) is summed as it is (no overflow, no max shift)


def log_choice(torch, cos, cols: list[int], config, scale: float = 1.0):
    """log P(the choice is among `cols` | i) for every row i, from its cosines with the shown images (`cos`, rows
    x shown, fp32; option `shown` is "none of these"): the click model of `Belief._click_logits` and
    `Belief._log_choice`, its torch twin (tests/unit/retrieval/test_belief_device_state.py keeps them equal): the
    softmax over the shown and the none option of sim / click_temperature, with probability click_error a uniform
    pick among the options instead. Cosines are at most 1 in size, so while that over click_temperature is at most
    SHIFT_FREE the exponentials are summed as they are, in few passes over the rows (`cos` is overwritten); else
    with the max shift, as numpy does. float64 from the sums on. `scale`: the cosines are `cos * scale` (the
    products over rows that are all as long: their one length's inverse, applied in the same pass)."""
    t, eps = config.click_temperature, config.click_error
    shown = cos.shape[1]
    if max(1.0, abs(config.none_similarity)) / t > SHIFT_FREE:
        return _log_choice_shifted(torch, cos.mul_(scale) if scale != 1.0 else cos, cols, config)
    none = math.exp(config.none_similarity / t)
    e = cos.mul_(scale / t).exp_()
    total = e.sum(dim=1, dtype=torch.float64).add_(none)
    picked = [c for c in cols if c < shown]
    if picked:
        chosen = e[:, picked].sum(dim=1, dtype=torch.float64)
        if shown in cols:
            chosen.add_(none)
    else:
        chosen = torch.full_like(total, none)
    p = chosen.div_(total)
    if eps > 0.0:
        p.mul_(1.0 - eps).add_(eps * len(cols) / (shown + 1))
    return p.log_()


def _log_choice_shifted(torch, cos, cols: list[int], config):
    """`log_choice` for a click temperature so low that exp(sim / T) could overflow: the logits' log-sum-exps
    with the max shift (`Belief._lse`), in float64."""
    t, eps = config.click_temperature, config.click_error
    a = cos.double() / t
    logits = torch.cat([a, torch.full((a.shape[0], 1), config.none_similarity / t, dtype=a.dtype, device=a.device)],
                       dim=1)
    model = torch.logsumexp(logits[:, cols], dim=1) - torch.logsumexp(logits, dim=1)
    if eps <= 0.0:
        return model
    floor = torch.full_like(model, float(np.log(eps * len(cols) / logits.shape[1])))
    return torch.logaddexp(float(np.log1p(-eps)) + model, floor)


# --- the per-row state on the device ---------------------------------------------------------------------------
class DeviceMath:
    """The belief's per-row math on the device of `rows` (a `DeviceRows`): its tensors are float64 vectors of
    len(rows) on that device. `norms` are the rows' lengths there (float32), `one_norm` their one length when
    every row is as long (else None), as `Belief` has them on the CPU; `chunk` the rows the click model runs over at
    a time (`belief_device.CLICK_CHUNK_ROWS` from the backend)."""

    def __init__(self, rows: DeviceRows, norms, one_norm: float | None, chunk: int = 4_194_304):
        self.rows = rows
        self.chunk = int(chunk)  # rows the click model runs over at a time (its float64 temporaries)
        self.torch = rows.torch
        self.where = rows.matrix.device
        self.norms = norms
        self.one_norm = one_norm
        self.n = len(rows)

    @contextmanager
    def guard(self, what: str):
        """DeviceFull (the round is made again on the CPU) when the device runs out of memory in `what`."""
        try:
            with self.torch.no_grad():
                yield
        except DeviceFull:
            raise
        except self.rows.oom_errors as e:
            raise DeviceFull(f"out of device memory in the belief's {what} ({e})") from e

    def tensor(self, values, dtype=None):
        """Host values (small: positions, a page's rows; or a mask a caller uploads) as a tensor on the device."""
        return self.torch.as_tensor(np.ascontiguousarray(values), device=self.where, dtype=dtype)

    def to_host(self, values) -> np.ndarray:
        """A tensor on the device as a numpy array on the host: every value that crosses to the host goes through
        here (the bench counts them)."""
        return values.cpu().numpy()

    def scalar(self, value) -> float:
        """One value to the host (a sync with the device)."""
        return float(self.to_host(value.reshape(1))[0])

    def zeros(self):
        """A float64 zero for every row (a fresh state term)."""
        with self.guard("state"):
            return self.torch.zeros(self.n, dtype=self.torch.float64, device=self.where)

    def scores(self, x: np.ndarray, temperature: float):
        """(every row . x) / temperature as float64 on the device: `(vectors @ x).astype(float64) / temperature`."""
        with self.guard("scores"):
            return self.rows.times(x).double().div_(temperature)

    def statement(self, said: list[tuple[np.ndarray, float]], temperature: float):
        """The sum over what was said, (row x, weight), of weight * score(x, i) / temperature for every row, in
        the order of `Belief.say`'s numpy operations: every row is read once for all of them (one product)."""
        with self.guard("statement"):
            return self._said_term(self.rows.times(np.stack([q for q, _ in said], axis=1)), said, temperature)

    def _said_term(self, scores, said: list[tuple[np.ndarray, float]], temperature: float):
        """`statement`'s sum from the products of every row with what was said (`scores`, rows x len(said))."""
        scores = scores.double()
        term = self.torch.zeros(self.n, dtype=self.torch.float64, device=self.where)
        for j, (_, weight) in enumerate(said):
            term += weight * scores[:, j] / temperature
        return term

    def unit(self, pos: np.ndarray):
        """The rows at positions `pos` divided by their lengths (float32, len(pos) x d, on the device)."""
        p = self.tensor(np.asarray(pos, np.int64))
        return self.rows.matrix[p].float() / self.norms[p][:, None]

    def cosines(self, pos: np.ndarray, among: np.ndarray | None = None):
        """Cosines (float32 tensor) of every row (or those at `among`) with the rows at `pos` (`Belief.cosines`)."""
        with self.guard("cosines"):
            unit = self.unit(pos)
            if among is None:
                out = self.rows.times_t(unit.T)
                norms = self.norms
            else:
                a = self.tensor(np.asarray(among, np.int64))
                out = self.rows.matrix[a].float() @ unit.T
                norms = self.norms[a]
            if self.one_norm is not None:
                return out.mul_(np.float32(1.0 / self.one_norm))
            return out.div_(norms[:, None])

    def choice(self, actions, pos: np.ndarray, cols: list[int], config,
               said: list[tuple[np.ndarray, float]] = (), temperature: float = 1.0):
        """`actions` plus log P(the choice among the shown rows at `pos` is in `cols` | i) for every row
        (`log_choice`), in place, the click model run over the rows `chunk` at a time (its float64 sums of a chunk,
        not every row's, in memory); with `said` ((row, weight) of words said beside the click), plus their
        `statement` term at `temperature`, from the SAME product (the shown rows' unit vectors and what was said
        side by side: the matrix read once for a Closest click with "but at night"). A device that fills up
        halfway leaves `actions` half done: the belief is then made again on the CPU from the session's rounds
        (`DeviceFull`)."""
        with self.guard("click model"):
            rhs = self.unit(pos).T
            if said:
                rhs = self.torch.cat([rhs, self.tensor(np.stack([q for q, _ in said], axis=1).astype(np.float32))], 1)
            both = self.rows.times_t(rhs)
            k = len(pos)
            cos = both[:, :k]  # every row as long: the length's inverse goes with 1/T in `log_choice`, one pass
            if self.one_norm is None:
                cos = cos.div_(self.norms[:, None])
            scale = 1.0 if self.one_norm is None else 1.0 / self.one_norm
            for a in range(0, self.n, self.chunk):
                b = min(self.n, a + self.chunk)
                actions[a:b] += log_choice(self.torch, cos[a:b], cols, config, scale)
            return actions + self._said_term(both[:, k:], said, temperature) if said else actions

    def word(self, actions, has_word: np.ndarray, yes: bool, word_yes: float, word_yes_absent: float):
        """`actions` plus log P(the answer | i): word_yes where the row's caption names the word, else
        word_yes_absent (their complements for a no); `has_word` (a bool per row) is uploaded."""
        with self.guard("answer"):
            has = self.tensor(np.asarray(has_word, bool))
            yes_p, absent_p = (self.torch.tensor(float(v), dtype=self.torch.float64, device=self.where)
                               for v in (word_yes, word_yes_absent))
            p = self.torch.where(has, yes_p, absent_p)
            return actions + self.torch.log(p if yes else 1.0 - p)

    def rule_out(self, actions, pos: np.ndarray) -> None:
        """Probability 0 at positions `pos` (in place)."""
        with self.guard("rule out"):
            actions[self.tensor(np.asarray(pos, np.int64))] = -math.inf

    def seen(self, pos: np.ndarray, times: np.ndarray):
        """How many times each row was shown: `times` at `pos` (summed where a position repeats), else 0."""
        with self.guard("seen"):
            out = self.torch.zeros(self.n, dtype=self.torch.float64, device=self.where)
            if len(pos):
                out.index_put_((self.tensor(np.asarray(pos, np.int64)),),
                               self.tensor(np.asarray(times, np.float64)), accumulate=True)
            return out

    def keep_only(self, actions, rows: np.ndarray):
        """`actions` with every row but index `rows` at -inf (the belief covers every row: position = row)."""
        with self.guard("filter"):
            rows = np.asarray(rows, np.int64)
            keep = self.torch.zeros(self.n, dtype=self.torch.bool, device=self.where)
            keep[self.tensor(rows[(rows >= 0) & (rows < self.n)])] = True
            return self.torch.where(keep, actions, -math.inf)

    def log_scores(self, text, actions, seen, overlook: float):
        """text + actions + seen * log(overlook) (`Belief.log_scores`), in two passes. No NaN can arise here (the
        text and seen terms are finite, the action terms finite or -inf), so the numpy code's NaN guard is not run."""
        with self.guard("log-scores"):
            return (text + actions).add_(seen, alpha=float(np.log(overlook)))

    def log_normalise(self, logp):
        """`logp` shifted so that its exponentials sum to 1; -inf stays -inf. SessionError when nothing is left.
        (`log_scores` has no NaN and no +inf: the numpy code's finite mask is not needed, the values are the same.)"""
        with self.guard("log-posterior"):
            top = logp.max()
            if not math.isfinite(self.scalar(top)):  # one scalar to the host
                raise SessionError("every image in the collection has been shown and none was it: start a new search")
            out = logp - top
            return out.sub_(self.torch.log(self.torch.exp(out).sum()))

    def live(self, logp) -> int:
        """How many rows are not ruled out (one scalar to the host)."""
        return int(self.scalar((logp > -math.inf).sum()))

    def without(self, logp, pos: np.ndarray, in_place: bool = False):
        """A copy of `logp` with -inf at positions `pos` (`logp` itself when there are none; itself changed with
        `in_place`: a log-posterior nobody else holds)."""
        if not len(pos):
            return logp
        with self.guard("exclusion"):
            out = logp if in_place else logp.clone()
            out[self.tensor(np.asarray(pos, np.int64))] = -math.inf
            return out

    def best(self, logp, n: int, exclude: np.ndarray = ()) -> tuple[np.ndarray, np.ndarray]:
        """(positions, log-probabilities) on the host of the `n` most probable rows not at positions `exclude`,
        most probable first (fewer when fewer are live: the ruled-out ones are dropped on the host): O(n) values
        cross."""
        with self.guard("top rows"):
            logp = self.without(logp, exclude)
            n = min(int(n), self.n)
            if n <= 0:
                return np.zeros(0, np.int64), np.zeros(0)
            vals, at = self.torch.topk(logp, n, sorted=True)
            vals, at = self.to_host(vals).astype(np.float64), self.to_host(at).astype(np.int64)
            live = np.isfinite(vals)
            return at[live], vals[live]

    def top(self, logp, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, probabilities renormalised among them) of the `n` most probable rows (`Belief.top`)."""
        at, lp = self.best(logp, max(1, n))
        p = np.exp(lp - lp.max()) if len(lp) else lp
        return at, p / p.sum() if len(p) else p

    def values(self, logp, pos: np.ndarray) -> np.ndarray:
        """`logp` at positions `pos`, on the host (float64)."""
        with self.guard("values"):
            return self.to_host(logp[self.tensor(np.asarray(pos, np.int64))]).astype(np.float64)

    def rank_of(self, pos: int | None, logp) -> int:
        """1-based rank of the row at `pos` under `logp` (ties in its favour); None or ruled out: after every
        live row (`Belief.rank_of`). One scalar crosses."""
        with self.guard("rank"):
            if pos is not None and 0 <= pos < self.n and math.isfinite(self.scalar(logp[pos])):
                return int(self.scalar((logp > logp[pos]).sum())) + 1
            return self.live(logp) + 1

    def host(self, values) -> np.ndarray:
        """A whole-row tensor on the host (float64): only where a caller asks for every row (`Belief.ranking`)."""
        return self.to_host(values).astype(np.float64)
