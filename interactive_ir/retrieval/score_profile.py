"""When a description has no close match in one collection, calibrated per index, and the "no close match" note.

No absolute score works across queries and collections (rclip #207): a score of 0.3 is a fine match with one
embedder and a poor one with another, and short typed descriptions score far lower than long captions even when
their first result is exactly right. So the note judges how far the best result stands out from the next ones
(`standout`: the best score's distance above the mean of the next `STANDOUT_K - 1`, in their standard deviations)
and the cut-off is calibrated per index on queries whose answer is known (`fit_score_profile`): a sample of the
stored captions, each cut to a short typed-like description (a window of 2 to 6 of its words), searched once with
its image present and once with its image removed. The cut-off is the standout below which only `quantile` (5%)
of the present searches whose image came first fall (false alarms; taken at the 95% lower bound of that quantile
given how many searches estimated it); the fit half sets it and the other half
measures the false alarms and the hit rate where the image is absent, both stored in the manifest
(`score_profile`) with the cut-off's quantiles. Indices without captions, and profiles written before this
measure (version 1, a raw best score that flagged most typed searches), get no note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

PROFILE_KEY = "score_profile"  # the manifest key
PROFILE_VERSION = 2  # 2: the standout measure calibrated on present and removed images; older profiles: no note
QUANTILES = (0.01, 0.02, 0.025, 0.05, 0.1, 0.25, 0.5)  # of present-and-first searches: a cut-off at any of these
PROFILE_SAMPLES = 2000  # captions searched when fitting (two top-50 searches each: seconds on the demo, a minute at 1M rows)
STANDOUT_K = 50  # the best result against the next STANDOUT_K - 1
QUERY_WORDS = (2, 6)  # a calibration query is a window of this many of a caption's words (typed-like)
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


@dataclass(frozen=True)
class CloseMatch:
    """How a search's best result stands out from the next ones, against what this collection gives."""

    best: float  # the search's best score
    standout: float  # (best - mean of the next ones) / their std
    cutoff: float  # the profile's standout at the configured quantile
    quantile: float  # that quantile (0.05: 5% of searches whose image came first stand out less: false alarms)
    absent_hit: float | None  # measured share of searches whose image was removed that get the note (None: unknown)
    weak: bool  # standout < cutoff: no close match
    unknown: tuple[str, ...] = ()  # the description's words when no stored caption uses any of them (`vocabulary`)


def standout(scores) -> float | None:
    """(best - mean(rest)) / std(rest) over the top scores, best first; None with fewer than 3 or flat ones."""
    s = np.asarray(scores, np.float64)[:STANDOUT_K]
    if len(s) < 3:
        return None
    rest = s[1:]
    sd = float(rest.std())
    return None if sd < 1e-9 else float((s[0] - rest.mean()) / sd)


def typed_like(caption: str, rng) -> str:
    """A short window of a caption's words, as a person might type it ("" when it has none)."""
    words = WORD.findall(caption or "")
    if not words:
        return ""
    n = int(rng.integers(QUERY_WORDS[0], QUERY_WORDS[1] + 1))
    start = int(rng.integers(0, max(1, len(words) - n + 1)))
    return " ".join(words[start:start + n])


def sample_queries(retriever, n: int = PROFILE_SAMPLES, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """(rows, typed-like descriptions): up to `n` stored captions, each cut to a short window of its words."""
    index = retriever.index
    if not (index.has_captions or index.caption_only) or len(index) < 3:
        return np.zeros(0, np.int64), []
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(index), size=min(n, len(index)), replace=False)).astype(np.int64)
    out_rows, texts = [], []
    for row in rows:
        try:
            caps = index.records[int(row)].captions
        except (AttributeError, IndexError, KeyError, TypeError):
            continue
        text = typed_like(caps[0] if caps else "", rng)
        if text:
            out_rows.append(int(row))
            texts.append(text)
    return np.asarray(out_rows, np.int64), texts


def _searched(retriever, rows: np.ndarray, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """((best, standout) of the present searches whose image came first, (best, standout) of the searches it
    was removed from), each an (n, 2) array."""
    present, absent = [], []
    for row, vec in zip(rows, retriever.encode_texts(texts)):
        q = retriever.text_query_row(vec)
        scores, found = retriever.search_rows(q, STANDOUT_K)
        if len(found) and int(found[0]) == int(row) and (z := standout(scores)) is not None:
            present.append((float(scores[0]), z))
        scores, _ = retriever.search_rows(q, STANDOUT_K, exclude_rows=np.array([row], np.int64))
        if (z := standout(scores)) is not None:
            absent.append((float(scores[0]), z))
    return np.asarray(present, np.float64).reshape(-1, 2), np.asarray(absent, np.float64).reshape(-1, 2)


def _quantiles(values: np.ndarray) -> dict[str, float]:
    return {f"{q:g}": round(float(v), 6) for q, v in zip(QUANTILES, np.quantile(values, QUANTILES))}


def _weak(pairs: np.ndarray, cut_best: float, cut_standout: float) -> np.ndarray:
    return (pairs[:, 0] < cut_best) | (pairs[:, 1] < cut_standout)


def fit_score_profile(retriever, n: int = PROFILE_SAMPLES, seed: int = 0, quantile: float = 0.05) -> dict | None:
    """The collection's calibration (a JSON-able dict), or None without captions or with too few searches: the
    cut-off's quantiles from one half of the sample, false alarms and hits measured at `quantile` on the other."""
    rows, texts = sample_queries(retriever, n, seed)
    if len(rows) < 20:
        return None
    half = np.arange(len(rows)) % 2 == 0
    fit_p, _ = _searched(retriever, rows[half], [t for t, h in zip(texts, half) if h])
    chk_p, chk_a = _searched(retriever, rows[~half], [t for t, h in zip(texts, half) if not h])
    if len(fit_p) < 10 or not len(chk_p) or not len(chk_a):
        return None
    profile = {"version": PROFILE_VERSION, "tau": round(float(retriever.default_tau), 6), "k": STANDOUT_K,
               "quantiles": _quantiles(fit_p[:, 1]), "best_quantiles": _quantiles(fit_p[:, 0])}
    cut_b, cut_z = cutoffs(profile, quantile, len(fit_p))
    return {**profile, "samples": {"fit_first": len(fit_p), "check_first": len(chk_p), "check_absent": len(chk_a)},
            "checked_at": quantile, "false_alarm": round(float(_weak(chk_p, cut_b, cut_z).mean()), 4),
            "absent_hit": round(float(_weak(chk_a, cut_b, cut_z).mean()), 4),
            "how": "a window of 2-6 words of a stored caption searched with its image present (first) and removed"}


def cutoffs(profile: dict, quantile: float, n: int | None = None) -> tuple[float, float] | tuple[None, None]:
    """(best score, standout) cut-offs for at most `quantile` false alarms. The standout's is taken at the one-sided
    95% lower bound of `quantile` given the `n` (default: the profile's fit) searches it was estimated on, so a
    small sample errs towards silence. The best score's is -inf: on typed descriptions a raw score flags right
    first results (a caption index scores "a puppy sitting on the grass" 0.31 against the bulldog puppy it finds),
    so only the standout judges; the best-score quantiles are stored for the record."""
    if n is None:
        samples = profile.get("samples")
        n = samples.get("fit_first") if isinstance(samples, dict) else None
    q = safe_quantile(quantile, n if isinstance(n, int) else None)
    z = cutoff_of(profile, q)
    return (None, None) if z is None else (float("-inf"), z)


def safe_quantile(quantile: float, n: int | None) -> float:
    """`quantile` lowered to its one-sided 95% lower bound from `n` samples (at least half of it)."""
    if not n:
        return quantile / 2
    return max(quantile / 2, quantile - 1.645 * float(np.sqrt(quantile * (1 - quantile) / n)))


def cutoff_of(profile: dict, quantile: float, key: str = "quantiles") -> float | None:
    """The profile's standout (or with `key` "best_quantiles" best score) at `quantile` (interpolated between the
    stored quantiles; None: unreadable)."""
    try:
        pts = sorted((float(k), float(v)) for k, v in profile[key].items())
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if not pts:
        return None
    xs, ys = zip(*pts)
    return float(np.interp(quantile, xs, ys))


def close_match(profile: dict | None, scores, tau: float, quantile: float) -> CloseMatch | None:
    """The note for a search's top scores (best first), or None (no profile, one of an older version, a
    malformed one, one fitted at another tau, too few scores, or the note turned off with `quantile` <= 0)."""
    if not isinstance(profile, dict) or quantile <= 0 or profile.get("version") != PROFILE_VERSION:
        return None
    try:
        if abs(float(profile.get("tau", -1)) - float(tau)) > 1e-6:
            return None  # scores fused with another caption weight are on another scale
    except (TypeError, ValueError):
        return None
    (cut_b, cut_z), z = cutoffs(profile, quantile), standout(scores)
    if cut_b is None or z is None:
        return None
    hit = profile.get("absent_hit") if profile.get("checked_at") == quantile else None
    best = float(scores[0])
    return CloseMatch(round(best, 4), round(z, 3), round(cut_z, 3), quantile,
                      hit if isinstance(hit, float) else None, best < cut_b or z < cut_z)


def store_profile(retriever, n: int = PROFILE_SAMPLES) -> dict | None:
    """Fit the profile and write it into the index's manifest (and its loaded copy); None when none fits."""
    from interactive_ir.index.store import write_manifest_field

    profile = fit_score_profile(retriever, n)
    if profile is not None:
        write_manifest_field(retriever.index.path, PROFILE_KEY, profile)
        retriever.index.manifest[PROFILE_KEY] = profile
    return profile


def needs_profile(index) -> bool:
    """True when the index has captions and no current profile (built before, or with version 1)."""
    p = index.manifest.get(PROFILE_KEY)
    return (index.has_captions or index.caption_only) and not (isinstance(p, dict) and p.get("version") == PROFILE_VERSION)
