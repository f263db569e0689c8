"""Retrieval context extraction (PlugIR Algorithm 1).

The top-n candidates for the current query are clustered into m groups by KMeans on their image
embeddings; in each cluster the image whose softmax similarity distribution over the other candidates
has the lowest entropy (the most specific one) is the representative, and its caption goes into the
Table 18 questioner prompt. The functions here are pure: vectors in, indices out.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

BESIDE_MIN = 200  # from this many candidates, KMeans runs in a second thread beside the entropies (on two free
#                   cores a turn then waits for the longer of the two, not their sum; the CPU time is the same)
KMEANS_ITERATIONS = 25  # Lloyd iterations (faiss's default; converges on n ~ 1000 candidates well before)


def default_n_candidates(index_size: int, fraction: float = 0.01, minimum: int = 20, maximum: int = 0) -> int:
    """The paper's n: about 1% of the collection, at least `minimum`, at most `maximum` (0: no cap), never
    more than the collection."""
    n = int(round(fraction * index_size))
    if maximum:
        n = min(n, int(maximum))
    return max(0, min(index_size, max(int(minimum), n)))


def softmax(scores: np.ndarray, scale: float = 1.0, axis: int = -1) -> np.ndarray:
    """exp(scale * s) normalised along `axis` (numerically stable; -inf entries get probability 0)."""
    z = np.asarray(scores, np.float64) * float(scale)
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def similarity_entropies(vectors: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """H(p_x) for each row x: p_x = softmax over the *other* rows x' of scale * <x, x'> (natural log)."""
    v = np.asarray(vectors, np.float32)  # float32: n = 1000 candidates stay a few milliseconds
    n = len(v)
    if n < 2:
        return np.zeros(n)
    s = v @ v.T
    if scale != 1.0:  # x * 1 == x: the paper's scale 1 skips a pass over the n x n matrix
        s *= np.float32(scale)
    np.fill_diagonal(s, -np.inf)
    s -= s.max(axis=1, keepdims=True)
    e = np.exp(s)  # the diagonal (x itself) gets weight 0
    np.fill_diagonal(s, 0.0)
    z = e.sum(axis=1)
    # H = -sum p log p with p = e / z and log p = s - log z:  H = log z - sum(e * s) / z
    return (np.log(z) - np.einsum("ij,ij->i", e, s) / z).astype(np.float64)


def cross_entropies(queries: np.ndarray, vectors: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """H(p_x) for each candidate x with p_x = softmax over the *other* candidates x' of scale * <q_x, v_x'>:
    q_x is x's caption vector, v the image vectors (PlugIR's code: caption->image entropy)."""
    q, v = np.asarray(queries, np.float32), np.asarray(vectors, np.float32)
    n = len(v)
    if n < 2:
        return np.zeros(n)
    s = (q @ v.T).astype(np.float64) * float(scale)
    np.fill_diagonal(s, -np.inf)
    s -= s.max(axis=1, keepdims=True)
    e = np.exp(s)
    np.fill_diagonal(s, 0.0)
    z = e.sum(axis=1)
    return np.log(z) - np.einsum("ij,ij->i", e, s) / z


def kmeans_labels(vectors: np.ndarray, m: int, seed: int = 0, n_init: int = 1) -> np.ndarray:
    """KMeans cluster labels (faiss, k-means++ initialisation, seeded: the same rows always give the same
    labels). m is lowered to the number of distinct rows. Labels are numbered in order of first appearance
    (the best-ranked candidate is in cluster 0)."""
    v = np.ascontiguousarray(np.asarray(vectors, np.float32))
    n = len(v)
    if n == 0:
        return np.zeros(0, int)
    m = max(1, min(int(m), _distinct_rows(v, int(m))))
    if m == 1:
        return np.zeros(n, int)
    import faiss  # heavy import: only when a turn needs it

    opts = dict(niter=KMEANS_ITERATIONS, nredo=max(1, int(n_init)), seed=int(seed) & 0x7FFFFFFF, verbose=False,
                min_points_per_centroid=1, max_points_per_centroid=max(256, n))  # every row, no sampling
    if hasattr(faiss, "ClusteringInitMethod_KMEANS_PLUS_PLUS"):  # faiss >= 1.13; older ones sample at random
        opts["init_method"] = faiss.ClusteringInitMethod_KMEANS_PLUS_PLUS
    km = faiss.Kmeans(v.shape[1], m, **opts)
    km.train(v)
    _, assigned = km.index.search(v, 1)
    _, first, labels = np.unique(assigned[:, 0], return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # cluster ids by first appearance: stable, readable summaries
    return order[labels.reshape(-1)].astype(int)


def _distinct_rows(v: np.ndarray, at_most: int) -> int:
    """How many distinct rows `v` has, counted up to `at_most` (the candidates' first rows are almost always
    distinct, so this reads a few rows, not all of them)."""
    seen: set[bytes] = set()
    for row in v:
        seen.add(row.tobytes())
        if len(seen) >= at_most:
            break
    return len(seen)


def pick_representatives(labels: np.ndarray, entropies: np.ndarray) -> list[int]:
    """Per cluster, the position of its lowest-entropy member (ties: the better-ranked, i.e. lower
    position); returned in rank order."""
    reps = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        reps.append(int(members[np.argmin(entropies[members])]))  # argmin takes the first of ties
    return sorted(reps)


def summary(n_candidates: int, labels, representative_ids: list[str], representative_entropies,
            captions: list[str]) -> dict:
    """A compact, JSON-able record of one extraction for `Turn.extra`."""
    return {
        "n_candidates": int(n_candidates),
        "n_clusters": int(len(np.unique(np.asarray(labels, np.int64)))),
        "representatives": list(representative_ids),
        "entropies": [round(float(e), 4) for e in representative_entropies],
        "captions": list(captions),
    }


@dataclass
class Clusters:
    """Algorithm 1 on candidate vectors (positions, no ids)."""

    labels: np.ndarray  # cluster of each candidate
    entropies: np.ndarray  # H(p_x) of each candidate
    representatives: list[int]  # positions, one per cluster, rank order


@dataclass
class RetrievalContext:
    """What Algorithm 1 found for one query."""

    ids: list[str]  # the candidate image ids, best first (S_R)
    labels: list[int] = field(default_factory=list)  # cluster of each candidate
    entropies: list[float] = field(default_factory=list)  # H(p_x) of each candidate
    representatives: list[int] = field(default_factory=list)  # positions in `ids`, one per cluster, rank order
    captions: list[str] = field(default_factory=list)  # the representatives' captions ("" dropped by caller)

    def summary(self) -> dict:
        """A compact, JSON-able record for `Turn.extra`."""
        return summary(len(self.ids), self.labels, [self.ids[i] for i in self.representatives],
                       [self.entropies[i] for i in self.representatives], self.captions)


def cluster(vectors: np.ndarray, m: int, seed: int = 0, scale: float = 1.0, n_init: int = 1,
            caption_vectors: np.ndarray | None = None) -> Clusters:
    """Algorithm 1 lines 7-13 on the candidates' image vectors (best first). With `caption_vectors` the
    representative's entropy is caption->image (`cross_entropies`), else image->image."""
    def entropies():
        return (similarity_entropies(vectors, scale) if caption_vectors is None
                else cross_entropies(caption_vectors, vectors, scale))

    with one_thread():
        if len(vectors) < BESIDE_MIN:
            labels, ent = kmeans_labels(vectors, m, seed, n_init), entropies()
        else:  # KMeans in a thread of its own beside the entropies: both release the GIL
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1, thread_name_prefix="rce-kmeans") as pool:
                job = pool.submit(_in_one_thread, kmeans_labels, vectors, m, seed, n_init)
                ent = entropies()
                labels = job.result()
    reps = pick_representatives(labels, ent) if len(labels) else []
    return Clusters(np.asarray(labels, int), np.asarray(ent, np.float64), reps)


def _in_one_thread(fn, *args):
    """`fn(*args)` inside `one_thread()`, for a new thread: OpenMP thread counts are per thread, and a new
    thread starts with the process default, not the limit of the thread that made it."""
    with one_thread():
        return fn(*args)


def one_thread():
    """A context in which the BLAS and OpenMP pools run one thread: at n ~ 1000 candidates thread start-up
    costs more than it saves, and on a busy server (several users, faiss, an LLM) oversubscribed pools
    are several times slower (a 1,000 x 1,024 by 1,024 x 6 product took 40 ms instead of 0.4 at load 7)."""
    import faiss  # noqa: F401 - loads the OpenMP runtime KMeans uses, so that it is among the pools

    return _thread_pools(len(sys.modules)).limit(limits=1)


@lru_cache(maxsize=1)
def _thread_pools(modules: int):
    """The process's BLAS and OpenMP pools (threadpoolctl), found again only when more modules were imported
    (`modules`: how many), which is when new native libraries appear: finding them scans every loaded
    library, about 2 ms, more than the limit itself, on every turn."""
    from threadpoolctl import ThreadpoolController  # installed with scikit-learn

    return ThreadpoolController()


def extract(ids: list[str], vectors: np.ndarray, m: int, seed: int = 0, scale: float = 1.0,
            n_init: int = 1, caption_vectors: np.ndarray | None = None) -> RetrievalContext:
    """`cluster` on given candidates (ids best first, their image vectors), with their ids."""
    if len(ids) != len(vectors):
        raise ValueError(f"{len(ids)} ids but {len(vectors)} vectors")
    c = cluster(vectors, m, seed, scale, n_init, caption_vectors)
    return RetrievalContext(list(ids), [int(x) for x in c.labels], [float(x) for x in c.entropies],
                            c.representatives)
