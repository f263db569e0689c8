"""Near-duplicates among a page of results (bursts, re-saved copies): results whose vectors are nearly the
same fold into one group, headed by the best ranked of them (`fold`).

The cut-off is `EngineConfig.fold_similarity` (cosine of the image vectors; a caption index's vectors are its
captions). Measured with bench/bench_duplicates.py on the Flickr8k dev caption index: see
docs/benchmarks/duplicates.md.
"""

from __future__ import annotations

import numpy as np


def fold(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Groups of positions (best ranked first, in rank order): each result joins the first group whose head's
    vector has cosine >= `threshold` with its own, else starts a group. `threshold` <= 0 or > 1: no folding."""
    n = len(vectors)
    if n == 0:
        return []
    if not 0 < threshold <= 1:
        return [[i] for i in range(n)]
    v = np.asarray(vectors, np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms > 0, norms, 1.0)
    sims = v @ v.T
    heads: list[int] = []
    groups: dict[int, list[int]] = {}
    for i in range(n):
        # a zero vector (no caption on a caption index) is like nothing
        head = next((h for h in heads if norms[i, 0] > 0 and sims[h, i] >= threshold), None)
        if head is None:
            heads.append(i)
            groups[i] = [i]
        else:
            groups[head].append(i)
    return [groups[h] for h in heads]
