"""Metrics for interactive retrieval, computed from the target image's rank at each round.

Input: for every query, the 1-based rank of its target image at each round, round 0 first (the
initial description-only query), e.g. ``{"q1": [20, 3, 7], "q2": [None, 8]}``.

Conventions (shared by every function here):

* **Ragged input.** Queries may stop early (a simulated user who found the target at round 2 stops
  asking). Every query is padded by carrying its last rank forward, as if the system kept showing the
  same result, to ``n_rounds``: the round budget plus one when it is given (``rounds=T``, as the
  evaluator and the ``metrics --rounds`` option do), else the longest query's length. The budget
  ``T`` of PlugIR's BRI is ``n_rounds - 1``, so give it whenever queries may stop early: a query's
  BRI then does not depend on how long the other queries of the run went on.
* **Not retrieved.** A rank of ``None`` means the target was not in the returned list. It counts as
  worse than any real rank: as ``n_images + 1`` when the index size is known, otherwise as +inf
  (so it never hits, scores 0 for MRR/NDCG, and makes BRI and the mean best rank infinite; JSON
  output reports those as null).
* **Fractions, not percents**: Hits@K, Recall@K, success rates and rank percentiles lie in [0, 1].

Definitions, and the paper each comes from:

* Best rank (PlugIR, Definition 1): ``pi_0 = R_0``, ``pi_t = min(pi_{t-1}, R_t)``.
* BRI (PlugIR, Definition 2), lower is better: the trapezoid-rule area under ``ln pi_t`` over
  rounds ``0..T`` divided by ``T``, i.e. ``ln(pi_0 pi_T) / 2T + sum_{t=1}^{T-1} ln(pi_t) / T``,
  averaged over queries. The natural log is the one that reproduces PlugIR's Appendix B tables
  (ranks 100,100,100 -> 4.6; 100,10,100 -> 2.9). With a single round (T = 0) BRI is the limit of that
  average, ``ln pi_0``.
* Hits@K (PlugIR; multi-round CIR paper, sec. 3.2): share of queries whose target has been in the
  top K at some round so far (best rank <= K).
* Recall@K per round: share of queries whose target is in the top K at that round.
* MRR@K and NDCG@K per round, for one relevant image: ``1/R`` and ``1/log2(R + 1)`` when
  ``R <= K``, else 0 (PlugIR Appendix B, Tables 7, 9 and 11).
* Average rank percentile (dialog-based retrieval with relative captions, sec. 5): share of the
  index ranked below the target, ``1 - (R - 1) / n_images`` (rank 1 -> 1.0), averaged per round.
* Rounds to success@K: the first round whose rank is <= K (0 = the initial query succeeded),
  averaged over the queries that succeeded; the others are reported as the success rate.
* Accumulated recall (query rewriting with relevance feedback, eq. 2): for queries with several
  relevant images, the distinct relevant images shown up to round T over the number of relevant
  images, averaged over queries (``accumulated_recall``).
* mAP@K (CIRCO, several ground truths G): ``AP@K = sum_{k<=K} P@k rel(k) / min(K, |G|)`` over a
  round's ranked list, averaged over queries, by round (``map_at_k``; from the ranks of the relevant
  images in the whole ranking, ``map_at_k_from_ranks``).
* Recall of the relevant images@K (Zhu et al., single turn): the share of a query's relevant images
  ranked in the top K of a round's ranking over the whole index, averaged over queries
  (``relevant_recall_at_k``; at round 0 the paper's "Single Turn" R@20..R@120).
* Recall_subset@K (CIRR): the target's rank among its query's subset group only (the images of its
  ``img_set`` but the reference), ``subset_rank``; then Recall@K of those ranks (``recall_subset_at_k``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from interactive_ir.errors import BadInputError

RanksByQuery = Mapping[str, Sequence[int | None]]
"""Query id -> 1-based rank of its target at each round (round 0 first); None = not retrieved."""

DEFAULT_KS = (1, 5, 10)


@dataclass(frozen=True)
class RankMatrix:
    """Validated ranks as one float array, ragged rows padded by carrying the last rank forward."""

    query_ids: tuple[str, ...]  # row order
    ranks: npt.NDArray[np.float64]  # shape (n_queries, n_rounds); unretrieved = n_images + 1 or inf
    lengths: tuple[int, ...]  # rounds each query actually ran, before padding
    n_images: int | None  # index size, when known

    @property
    def n_queries(self) -> int:
        return self.ranks.shape[0]

    @property
    def n_rounds(self) -> int:
        return self.ranks.shape[1]


@dataclass(frozen=True)
class SuccessStats:
    """When each query first reached the top K."""

    k: int
    first_round: dict[str, int | None]  # query id -> first round with rank <= k, None if never
    mean_rounds: float | None  # mean of first_round over successful queries, None if none succeeded
    success_rate: float  # share of queries that reached the top k within the rounds played


# ---------------------------------------------------------------- validation


def _check_rank(value: object, qid: str, t: int, n_images: int | None) -> float:
    where = f"query {qid!r}, round {t}"
    if value is None:
        return math.inf if n_images is None else float(n_images + 1)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        value = int(value)  # 3.0 from a JSON writer that writes floats
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise BadInputError(
            f"{where}: rank {value!r} is not a whole number; ranks are 1-based integers, null = not retrieved"
        )
    if value < 1:
        raise BadInputError(f"{where}: rank {value} is below 1; ranks are 1-based (the top image has rank 1)")
    if n_images is not None and value > n_images:
        raise BadInputError(f"{where}: rank {value} exceeds the index size n_images={n_images}")
    return float(value)


def _check_n_images(n_images: object) -> int | None:
    if n_images is None:
        return None
    if isinstance(n_images, bool) or not isinstance(n_images, (int, np.integer)) or n_images < 1:
        raise BadInputError(f"n_images must be a positive integer, got {n_images!r}")
    return int(n_images)


def check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    """The cut-offs as a tuple of distinct positive ints, in the order given."""
    out: list[int] = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise BadInputError(f"cut-off K must be a positive integer, got {k!r}")
        if int(k) not in out:
            out.append(int(k))
    if not out:
        raise BadInputError("give at least one cut-off K, e.g. 1,5,10")
    return tuple(out)


def _is_sequence(value: object) -> bool:
    return isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))


def rank_matrix(ranks: RanksByQuery | RankMatrix, n_images: int | None = None,
                rounds: int | None = None) -> RankMatrix:
    """Validate ``ranks`` and pad ragged queries to ``rounds + 1`` rounds at least (see the module docstring).

    Raises BadInputError for no queries, a query with no rounds, or a rank that is not a whole
    number >= 1 (or is above ``n_images``).
    """
    if isinstance(ranks, RankMatrix):
        return ranks
    n_images = _check_n_images(n_images)
    if not isinstance(ranks, Mapping):
        raise BadInputError(f"ranks must map query id -> list of ranks by round, got {type(ranks).__name__}")
    if not ranks:
        raise BadInputError("no queries: the ranks mapping is empty")
    rows: list[list[float]] = []
    for qid, by_round in ranks.items():
        if not _is_sequence(by_round):
            raise BadInputError(f"query {qid!r}: expected a list of ranks by round, got {type(by_round).__name__}")
        if len(by_round) == 0:
            raise BadInputError(f"query {qid!r}: no rounds; give at least the round-0 rank")
        rows.append([_check_rank(r, str(qid), t, n_images) for t, r in enumerate(by_round)])
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 0):
        raise BadInputError(f"the round budget must be a whole number >= 0, got {rounds!r}")
    n_rounds = max(max(len(row) for row in rows), 0 if rounds is None else int(rounds) + 1)
    matrix = np.array([row + [row[-1]] * (n_rounds - len(row)) for row in rows], dtype=np.float64)
    return RankMatrix(
        query_ids=tuple(str(q) for q in ranks),
        ranks=matrix,
        lengths=tuple(len(row) for row in rows),
        n_images=n_images,
    )


# ---------------------------------------------------------------- rank-based metrics


def _best(m: RankMatrix) -> npt.NDArray[np.float64]:
    return np.minimum.accumulate(m.ranks, axis=1)


def _by_round(values: npt.NDArray[np.float64]) -> list[float]:
    return [float(v) for v in values.mean(axis=0)]


def best_rank_so_far(ranks_by_round: Sequence[int | None], n_images: int | None = None) -> list[float]:
    """PlugIR Definition 1 for one query: the best (lowest) rank seen up to each round."""
    return [float(v) for v in _best(rank_matrix({"query": ranks_by_round}, n_images))[0]]


def best_rank(ranks: RanksByQuery | RankMatrix, n_images: int | None = None) -> list[float]:
    """Mean best rank so far, by round."""
    return _by_round(_best(rank_matrix(ranks, n_images)))


def _bri_rows(best: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    logs = np.log(best)
    budget = best.shape[1] - 1
    if budget == 0:
        return logs[:, 0]
    return (logs[:, 0] + logs[:, -1]) / (2 * budget) + logs[:, 1:-1].sum(axis=1) / budget


def bri_per_query(ranks: RanksByQuery | RankMatrix, n_images: int | None = None,
                  rounds: int | None = None) -> dict[str, float]:
    """PlugIR's Best log Rank Integral of each query (lower is better); all share T = n_rounds - 1."""
    m = rank_matrix(ranks, n_images, rounds)
    return dict(zip(m.query_ids, (float(v) for v in _bri_rows(_best(m))), strict=True))


def bri(ranks: RanksByQuery | RankMatrix, n_images: int | None = None, rounds: int | None = None) -> float:
    """PlugIR Definition 2: BRI averaged over queries (natural log; lower is better); T = `rounds` when given."""
    return float(_bri_rows(_best(rank_matrix(ranks, n_images, rounds))).mean())


def hits_at_k(ranks: RanksByQuery | RankMatrix, k: int, n_images: int | None = None) -> list[float]:
    """Share of queries whose target was in the top ``k`` at any round so far, by round."""
    (k,) = check_ks([k])
    return _by_round((_best(rank_matrix(ranks, n_images)) <= k).astype(np.float64))


def recall_at_k(ranks: RanksByQuery | RankMatrix, k: int, n_images: int | None = None) -> list[float]:
    """Share of queries whose target is in the top ``k`` at that round, by round."""
    (k,) = check_ks([k])
    return _by_round((rank_matrix(ranks, n_images).ranks <= k).astype(np.float64))


def mrr_at_k(ranks: RanksByQuery | RankMatrix, k: int, n_images: int | None = None) -> list[float]:
    """Mean reciprocal rank cut at ``k`` (1/R if R <= k else 0), by round."""
    (k,) = check_ks([k])
    r = rank_matrix(ranks, n_images).ranks
    return _by_round(np.where(r <= k, 1.0 / r, 0.0))


def ndcg_at_k(ranks: RanksByQuery | RankMatrix, k: int, n_images: int | None = None) -> list[float]:
    """NDCG cut at ``k`` for a single relevant image (1/log2(R+1) if R <= k else 0), by round."""
    (k,) = check_ks([k])
    r = rank_matrix(ranks, n_images).ranks
    return _by_round(np.where(r <= k, 1.0 / np.log2(r + 1.0), 0.0))


def rank_percentile(ranks: RanksByQuery | RankMatrix, n_images: int | None = None) -> list[float]:
    """Average rank percentile ``1 - (R - 1) / n_images`` by round (1.0 = top; unretrieved = 0.0)."""
    m = rank_matrix(ranks, n_images)
    if m.n_images is None:
        raise BadInputError("the rank percentile needs the index size: pass n_images")
    return _by_round(1.0 - (m.ranks - 1.0) / m.n_images)


def rounds_to_success(ranks: RanksByQuery | RankMatrix, k: int, n_images: int | None = None) -> SuccessStats:
    """First round at which each target reached the top ``k``; mean over successes and success rate."""
    (k,) = check_ks([k])
    m = rank_matrix(ranks, n_images)
    hit = m.ranks <= k
    first: dict[str, int | None] = {
        qid: (int(np.argmax(row)) if row.any() else None) for qid, row in zip(m.query_ids, hit, strict=True)
    }
    rounds = [t for t in first.values() if t is not None]
    return SuccessStats(
        k=k,
        first_round=first,
        mean_rounds=float(np.mean(rounds)) if rounds else None,
        success_rate=len(rounds) / m.n_queries,
    )


# ---------------------------------------------------------------- several relevant images


def accumulated_recall(
    shown: Mapping[str, Sequence[Iterable[Hashable]]],
    relevant: Mapping[str, Collection[Hashable]],
) -> list[float]:
    """Average accumulated recall by round (Zhu et al., eq. 2), for queries with several relevant images.

    ``shown[q][t]`` is the ids of the images shown for query ``q`` at round ``t``; ``relevant[q]`` its
    relevant ids. Round T's value is the share of ``relevant[q]`` shown at any round <= T, averaged
    over queries. An image shown twice counts once (the paper never re-shows seen images, so its sum of
    per-round counts equals this). Ragged queries keep their last value.
    """
    if not shown:
        raise BadInputError("no queries: the shown-images mapping is empty")
    rows: list[list[float]] = []
    for qid, rounds in shown.items():
        if qid not in relevant:
            raise BadInputError(f"query {qid!r} has shown images but no entry in the relevant-images mapping")
        rel = set(relevant[qid])
        if not rel:
            raise BadInputError(f"query {qid!r}: the relevant-images set is empty, recall is undefined")
        if not _is_sequence(rounds) or len(rounds) == 0:
            raise BadInputError(f"query {qid!r}: expected a non-empty list of rounds of shown image ids")
        found: set[Hashable] = set()
        row = []
        for t, ids in enumerate(rounds):
            if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
                raise BadInputError(f"query {qid!r}, round {t}: expected a list of image ids, got {ids!r}")
            found |= rel.intersection(ids)
            row.append(len(found) / len(rel))
        rows.append(row)
    n_rounds = max(len(row) for row in rows)
    padded = np.array([row + [row[-1]] * (n_rounds - len(row)) for row in rows], dtype=np.float64)
    return _by_round(padded)


def average_precision_at_k(ranking: Sequence[Hashable], relevant: Collection[Hashable], k: int) -> float:
    """CIRCO's AP@K of one ranked list: ``sum_{i<=K} P@i * rel(i) / min(K, |G|)``."""
    rel = set(relevant)
    if not rel:
        raise BadInputError("the relevant-images set is empty: AP is undefined")
    hits, total = 0, 0.0
    for i, image in enumerate(list(ranking)[:k], start=1):
        if image in rel:
            hits += 1
            total += hits / i
    return total / min(k, len(rel))


def map_at_k(
    rankings: Mapping[str, Sequence[Sequence[Hashable]]],
    relevant: Mapping[str, Collection[Hashable]],
    k: int,
) -> list[float]:
    """mAP@K by round (CIRCO): ``rankings[q][t]`` is the ranked ids of query ``q`` at round ``t``.

    Ragged queries keep their last value (as the rank metrics carry their last rank forward).
    """
    (k,) = check_ks([k])
    if not rankings:
        raise BadInputError("no queries: the rankings mapping is empty")
    rows = []
    for qid, rounds in rankings.items():
        if qid not in relevant:
            raise BadInputError(f"query {qid!r} has rankings but no entry in the relevant-images mapping")
        if not _is_sequence(rounds) or len(rounds) == 0:
            raise BadInputError(f"query {qid!r}: expected a non-empty list of rounds of ranked image ids")
        rows.append([average_precision_at_k(ids, relevant[qid], k) for ids in rounds])
    n_rounds = max(len(row) for row in rows)
    padded = np.array([row + [row[-1]] * (n_rounds - len(row)) for row in rows], dtype=np.float64)
    return _by_round(padded)


def average_precision_from_ranks(ranks: Iterable[int], n_relevant: int, k: int) -> float:
    """CIRCO's AP@K from the 1-based ranks of the relevant images in the whole ranking (`n_relevant` of them):
    the same as `average_precision_at_k` on the list, for any K, without holding the list."""
    if n_relevant < 1:
        raise BadInputError("the relevant-images set is empty: AP is undefined")
    total = 0.0
    for j, r in enumerate(sorted(int(x) for x in ranks), start=1):
        if r > k:
            break
        total += j / r
    return total / min(k, n_relevant)


def map_at_k_from_ranks(relevant_ranks: Mapping[str, Sequence[Sequence[int]]], k: int) -> list[float]:
    """mAP@K by round from ``relevant_ranks[q][t]``: the ranks, at round t, of every relevant image of ``q``."""
    (k,) = check_ks([k])
    if not relevant_ranks:
        raise BadInputError("no queries: the relevant-ranks mapping is empty")
    rows = []
    for qid, rounds in relevant_ranks.items():
        if not _is_sequence(rounds) or len(rounds) == 0:
            raise BadInputError(f"query {qid!r}: expected a non-empty list of rounds of relevant ranks")
        rows.append([average_precision_from_ranks(rs, len(rs), k) for rs in rounds])
    n_rounds = max(len(row) for row in rows)
    padded = np.array([row + [row[-1]] * (n_rounds - len(row)) for row in rows], dtype=np.float64)
    return _by_round(padded)


def relevant_recall_at_k(relevant_ranks: Mapping[str, Sequence[Sequence[int]]], k: int) -> list[float]:
    """By round, the share of each query's relevant images within the top K of that round's ranking
    (``relevant_ranks[q][t]``: their ranks over the whole index), averaged over queries; ragged queries keep
    their last value. At round 0 this is Zhu et al.'s single-turn Recall@K."""
    (k,) = check_ks([k])
    if not relevant_ranks:
        raise BadInputError("no queries: the relevant-ranks mapping is empty")
    rows = []
    for qid, rounds in relevant_ranks.items():
        if not _is_sequence(rounds) or len(rounds) == 0 or any(len(rs) == 0 for rs in rounds):
            raise BadInputError(f"query {qid!r}: expected a non-empty list of rounds of relevant ranks")
        rows.append([sum(1 for r in rs if int(r) <= k) / len(rs) for rs in rounds])
    n_rounds = max(len(row) for row in rows)
    padded = np.array([row + [row[-1]] * (n_rounds - len(row)) for row in rows], dtype=np.float64)
    return _by_round(padded)


def subset_rank(scores: Mapping[Hashable, float], target: Hashable) -> int:
    """The target's 1-based rank among `scores` (its subset group: id -> score), ties in its favour."""
    if target not in scores:
        raise BadInputError(f"the target {target!r} is not in its subset group")
    mine = scores[target]
    return 1 + sum(1 for image, s in scores.items() if image != target and s > mine)


def recall_subset_at_k(subset_ranks: RanksByQuery | RankMatrix, k: int) -> list[float]:
    """CIRR's Recall_subset@K by round, from the target's rank within its subset group (`subset_rank`)."""
    return recall_at_k(subset_ranks, k)


# ---------------------------------------------------------------- intervals


BOOTSTRAP = 2000  # bootstrap resamples of the queries for the 95% intervals


def bootstrap_ci(values, n: int = BOOTSTRAP, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (resampling queries; seeded). For a paired
    comparison pass the per-query differences."""
    v = np.asarray(values, np.float64)
    if len(v) == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n, len(v)))].mean(axis=1)
    a = (1 - level) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


# ---------------------------------------------------------------- everything at once


def _json_float(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _json_list(values: list[float]) -> list[float | None]:
    return [_json_float(v) for v in values]


def compute_all(
    ranks: RanksByQuery,
    ks: Iterable[int] = DEFAULT_KS,
    n_images: int | None = None,
    rounds: int | None = None,
) -> dict:
    """Every rank-based metric as a JSON-able dict (lists are by round, round 0 first).

    Keys: ``n_queries``, ``n_rounds``, ``n_images``, ``n_ended_early``, ``n_not_retrieved``, ``bri``,
    ``best_rank``, ``rank_percentile`` (only when ``n_images`` is given), and for each K:
    ``hits@K``, ``recall@K``, ``mrr@K``, ``ndcg@K``, ``rounds_to_success@K``, ``success_rate@K``;
    ``notes`` explains any null. Infinite values (unretrieved targets with no ``n_images``) are null.
    ``rounds`` is the round budget T: every query is scored over rounds 0..T (see the module docstring).
    """
    ks = check_ks(ks)
    m = rank_matrix(ranks, n_images, rounds)
    n_missing = sum(1 for by_round in ranks.values() for r in by_round if r is None)
    out: dict = {
        "n_queries": m.n_queries,
        "n_rounds": m.n_rounds,
        "n_images": m.n_images,
        "n_ended_early": sum(1 for n in m.lengths if n < m.n_rounds),
        "n_not_retrieved": n_missing,
        "bri": _json_float(bri(m)),
        "best_rank": _json_list(best_rank(m)),
    }
    if m.n_images is not None:
        out["rank_percentile"] = rank_percentile(m)
    for k in ks:
        success = rounds_to_success(m, k)
        out[f"hits@{k}"] = hits_at_k(m, k)
        out[f"recall@{k}"] = recall_at_k(m, k)
        out[f"mrr@{k}"] = mrr_at_k(m, k)
        out[f"ndcg@{k}"] = ndcg_at_k(m, k)
        out[f"rounds_to_success@{k}"] = success.mean_rounds
        out[f"success_rate@{k}"] = success.success_rate
    notes = []
    if n_missing and m.n_images is None:
        notes.append(
            f"{n_missing} rank(s) were null (not retrieved) and n_images is unknown, so they count as an "
            "infinite rank: bri and some best_rank values are null; pass n_images to count them as n_images+1"
        )
    if out["n_ended_early"]:
        notes.append(f"{out['n_ended_early']} query(ies) ended early; their last rank is carried forward")
    out["notes"] = notes
    return out
