"""What a description usually scores in one collection, fitted at build time, and the "no close match" note.

No absolute score works across queries and collections (rclip #207): a score of 0.3 is a fine match with one
embedder and a poor one with another. So the index keeps a relative measure: the best score that searches with
its own descriptions get (`fit_score_profile`: a sample of the stored captions, each searched as a description
with its own image left out, so the match is a neighbour's and not the caption itself), as quantiles in the
manifest (`score_profile`). A search whose best score falls below the profile's low quantile
(`EngineConfig.no_match_quantile`) gets a note (`close_match`). Indices without captions, and indices written
before, have no profile: no note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PROFILE_KEY = "score_profile"  # the manifest key
QUANTILES = (0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9)  # stored: enough to pick a cut-off at search time
PROFILE_SAMPLES = 300  # descriptions searched when fitting (a few seconds even at 1M rows)


@dataclass(frozen=True)
class CloseMatch:
    """How a search's best score compares with what the collection usually gives for a description."""

    best: float  # the search's best score
    usual: float  # the median best score of the collection's own descriptions
    cutoff: float  # the profile's score at the configured quantile
    quantile: float  # that quantile (0.05: 5% of the collection's descriptions score lower)
    weak: bool  # best < cutoff: no close match


def sample_queries(retriever, n: int = PROFILE_SAMPLES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(rows, query rows): up to `n` stored captions, each as a description's query row (None-free)."""
    index = retriever.index
    if not (index.has_captions or index.caption_only):
        return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(index), size=min(n, len(index)), replace=False)).astype(np.int64)
    vecs = index.vectors(rows, "caption" if index.has_captions else "image")
    keep = np.linalg.norm(vecs, axis=1) > 0.5  # an image without a caption has a zero vector
    rows, vecs = rows[keep], vecs[keep]
    return rows, np.stack([retriever.text_query_row(v) for v in vecs]) if len(rows) else vecs


def fit_score_profile(retriever, n: int = PROFILE_SAMPLES, seed: int = 0) -> dict | None:
    """The collection's score profile (a JSON-able dict), or None when it has no captions or too few rows."""
    if len(retriever.index) < 3:
        return None
    rows, queries = sample_queries(retriever, n, seed)
    if len(rows) < 2:
        return None
    best = []
    for row, q in zip(rows, queries):
        scores, _ = retriever.search_rows(q, 1, exclude_rows=np.array([row], np.int64))
        if len(scores):
            best.append(float(scores[0]))
    if len(best) < 2:
        return None
    qs = np.quantile(np.asarray(best, np.float64), QUANTILES)
    return {"tau": round(float(retriever.default_tau), 6), "samples": len(best),
            "quantiles": {f"{q:g}": round(float(v), 6) for q, v in zip(QUANTILES, qs)},
            "how": "best score of a stored caption searched as a description, its own image left out"}


def cutoff_of(profile: dict, quantile: float) -> float | None:
    """The profile's score at `quantile` (interpolated between the stored quantiles; None: unreadable)."""
    try:
        pts = sorted((float(k), float(v)) for k, v in profile["quantiles"].items())
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if not pts:
        return None
    xs, ys = zip(*pts)
    return float(np.interp(quantile, xs, ys))


def close_match(profile: dict | None, best: float, tau: float, quantile: float) -> CloseMatch | None:
    """The note for a search's best score, or None (no profile, a malformed one, one fitted at another tau,
    or the note turned off with `quantile` <= 0)."""
    if not isinstance(profile, dict) or quantile <= 0:
        return None
    try:
        if abs(float(profile.get("tau", -1)) - float(tau)) > 1e-6:
            return None  # scores fused with another caption weight are on another scale
    except (TypeError, ValueError):
        return None
    cut, usual = cutoff_of(profile, quantile), cutoff_of(profile, 0.5)
    if cut is None or usual is None:
        return None
    return CloseMatch(round(float(best), 4), round(usual, 4), round(cut, 4), quantile, float(best) < cut)


def store_profile(retriever, n: int = PROFILE_SAMPLES) -> dict | None:
    """Fit the profile and write it into the index's manifest (and its loaded copy); None when none fits."""
    from interactive_ir.index.store import write_manifest_field

    profile = fit_score_profile(retriever, n)
    if profile is not None:
        write_manifest_field(retriever.index.path, PROFILE_KEY, profile)
        retriever.index.manifest[PROFILE_KEY] = profile
    return profile
