"""Choosing an ivf-pq index's nprobe (and re-rank depth) from its own data, the way autofaiss tunes to a recall target.

The size-based guess (`kinds.choose_params`) cannot know how clustered a collection is: on well-separated
data a few lists hold every neighbour, on diffuse data many must be visited. So after an ivf-pq index is
filled (at build time, and again with `index tune DIR`):

1. calibration queries: by default `queries` stored rows, each with isotropic noise added, its norm spread
   evenly from 0.5x to 4x the row's (cosine to the source row from about 0.9 down to 0.25; a CLIP text
   query lies about 0.3 from its image, and far queries need more lists than near ones), or the caller's
   own query vectors (`index tune DIR --queries FILE.npy`, e.g. encoded text queries);
2. their exact top-k by one streamed pass over the fp16 vectors (bounded memory whatever N);
3. recall@k of the search the retriever runs (IVF candidates, then the exact re-rank) at nprobe 4, 8, ...
   up to `max_nprobe`;
4. the smallest nprobe whose recall is within `tolerance` of the best recall at that re-rank depth; when
   that best is under `target`, the PQ codes are the limit (not the lists), so the re-rank depth doubles
   (up to `max_rerank_factor` x k) and step 3 runs again.

The choice and the recall table go into the manifest (`index_params`, `tuning`); IIR_NPROBE still overrides.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from interactive_ir.errors import BadInputError
from interactive_ir.index import kinds as K
from interactive_ir.index.folder_rows import FolderRows

log = logging.getLogger(__name__)

CHUNK_ROWS = 65_536  # rows per streamed read of the exact pass


@dataclass(frozen=True)
class TuneConfig:
    queries: int = 64  # calibration queries drawn from the collection (when no query file is given)
    k: int = 100  # the top-k whose recall is tuned (the retriever's usual candidate depth for a turn)
    target: float = 0.95  # recall@k wanted; below it at every nprobe, the re-rank depth doubles
    tolerance: float = 0.01  # accept the smallest nprobe within this of the best recall at its depth
    max_nprobe: int = 1024  # most lists tried (and never more than nlist)
    max_rerank_factor: int = 32  # deepest exact re-rank tried, as a multiple of k
    seed: int = 0  # seed of the calibration sample and its noise


@dataclass
class TuneReport:
    nprobe: int  # chosen lists visited per query
    rerank_factor: int  # chosen re-rank depth (candidates = rerank_factor * k)
    recall: float  # recall@k at the choice, on the calibration queries
    queries: int  # calibration queries used
    source: str  # "sampled rows + noise" or the query file
    seconds: float  # time the tuning took (exact pass included)
    table: list[dict] = field(default_factory=list)  # every (nprobe, rerank_factor, recall) tried

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


NOISE_SCALES = (0.5, 4.0)  # calibration noise norm relative to the row's, spread evenly over the queries


def sample_queries(src: FolderRows, count: int, seed: int) -> np.ndarray:
    """`count` stored rows, each plus isotropic noise (0.5x to 4x its norm), unit-normalised (float32)."""
    rng = np.random.default_rng(seed)
    take = rng.choice(src.n, min(count, src.n), replace=False)
    x = src.rows(take)
    noise = rng.standard_normal(x.shape).astype(np.float32)
    scale = np.linspace(*NOISE_SCALES, len(take), dtype=np.float32)[:, None]
    noise *= scale * np.linalg.norm(x, axis=1, keepdims=True) / np.maximum(np.linalg.norm(noise, axis=1, keepdims=True), 1e-12)
    q = x + noise
    return np.ascontiguousarray(q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12), dtype=np.float32)


def exact_topk(read_chunk: Callable[[int, int], np.ndarray], n: int, queries: np.ndarray, k: int,
               chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """Rows of each query's exact top-k by inner product, by one streamed pass (ties: lower row first)."""
    k = min(k, n)
    best_s = np.full((len(queries), 0), -np.inf, np.float32)
    best_r = np.zeros((len(queries), 0), np.int64)
    for a in range(0, n, chunk_rows):
        b = min(n, a + chunk_rows)
        s = queries @ read_chunk(a, b).T
        s_all = np.concatenate([best_s, s], axis=1)
        r_all = np.concatenate([best_r, np.broadcast_to(np.arange(a, b, dtype=np.int64), s.shape)], axis=1)
        if s_all.shape[1] > k:
            part = np.argpartition(-s_all, k - 1, axis=1)[:, :k]
            s_all, r_all = np.take_along_axis(s_all, part, 1), np.take_along_axis(r_all, part, 1)
        best_s, best_r = s_all, r_all
    order = np.lexsort((best_r, -best_s), axis=1)
    return np.take_along_axis(best_r, order, 1)


def reranked_recall(index, params: K.IndexParams, src: FolderRows, queries: np.ndarray, truth: np.ndarray,
                    k: int, nprobe: int, rerank_factor: int) -> float:
    """Mean recall@k of the retriever's pipeline (IVF candidates at nprobe, exact re-rank) against `truth`."""
    import faiss

    p = dataclasses.replace(params, nprobe=nprobe, rerank_factor=rerank_factor)
    k = min(k, src.n)
    k_fetch = min(K.candidates(p, k), src.n)
    _, cand = index.search(queries, k_fetch, params=faiss.SearchParametersIVF(nprobe=min(nprobe, params.nlist)))
    hits = 0
    for q, c, t in zip(queries, cand, truth):
        c = c[c >= 0]
        exact = src.rows(c) @ q
        top = c[np.argsort(-exact, kind="stable")[:k]]
        hits += len(np.intersect1d(top, t[:k]))
    return hits / (k * len(queries))


def nprobe_ladder(nlist: int, max_nprobe: int) -> list[int]:
    """4, 8, 16, ... up to min(nlist, max_nprobe), nlist included when it is smaller."""
    top = max(1, min(nlist, max_nprobe))
    out, p = [], 4
    while p < top:
        out.append(p)
        p *= 2
    return out + [top]


def tune(index, params: K.IndexParams, src: FolderRows, cfg: TuneConfig = TuneConfig(),
         queries: np.ndarray | None = None, source: str = "") -> tuple[K.IndexParams, TuneReport]:
    """The ivf-pq parameters with nprobe (and re-rank depth) chosen on calibration queries; see the module doc."""
    if params.kind != "ivf-pq":
        raise BadInputError(f"only an ivf-pq index is tuned (this one is {params.kind}): exact needs no tuning, "
                            "and hnsw's efSearch is set with IIR_EF_SEARCH")
    t0 = time.perf_counter()
    if queries is None:
        queries, source = sample_queries(src, cfg.queries, cfg.seed), "sampled rows + noise (0.5-4x)"
    else:
        queries = np.ascontiguousarray(np.asarray(queries, np.float32))
        if queries.ndim != 2 or queries.shape[1] != src.width:
            raise BadInputError(f"the query vectors have shape {queries.shape}, the index rows are {src.width} wide: "
                                f"give an (N, {src.width}) float array of query rows")
        if not np.isfinite(queries).all():
            raise BadInputError("the query vectors hold NaN or infinite values: encode the queries again")
    log.info("choosing nprobe for %d rows: exact top-%d of %d calibration queries (one pass over the vectors), "
             "then the search at nprobe up to %d", src.n, cfg.k, len(queries), min(params.nlist, cfg.max_nprobe))
    truth = exact_topk(src.chunk, src.n, queries, cfg.k)
    ladder = nprobe_ladder(params.nlist, cfg.max_nprobe)
    table: list[dict] = []
    rf = max(1, params.rerank_factor)
    while True:
        recalls = [reranked_recall(index, params, src, queries, truth, cfg.k, p, rf) for p in ladder]
        table += [{"nprobe": p, "rerank_factor": rf, "recall": round(r, 4)} for p, r in zip(ladder, recalls)]
        best = max(recalls)
        if best >= cfg.target or rf * 2 > cfg.max_rerank_factor:
            break
        rf *= 2
    chosen = next(p for p, r in zip(ladder, recalls) if r >= best - cfg.tolerance)
    recall = recalls[ladder.index(chosen)]
    report = TuneReport(chosen, rf, round(recall, 4), len(queries), source, round(time.perf_counter() - t0, 2), table)
    log.info("tuned ivf-pq: nprobe %d, re-rank %dx, recall@%d %.3f on %d queries (%.1f s)",
             chosen, rf, cfg.k, recall, len(queries), report.seconds)
    return dataclasses.replace(params, nprobe=chosen, rerank_factor=rf), report


def load_queries(path: Path) -> np.ndarray:
    """Query vectors from an (N, width) .npy file; BadInputError when unreadable."""
    try:
        q = np.load(path)
    except (ValueError, OSError, EOFError) as e:
        raise BadInputError(f"--queries {path} is not a readable .npy file ({str(e)[:120]}): give an (N, d) float "
                            "array of encoded queries saved with numpy.save") from e
    if q.ndim != 2 or q.dtype.kind != "f" or len(q) == 0:
        raise BadInputError(f"--queries {path} holds a {q.dtype} array of shape {q.shape}, not (N, d) floats with N >= 1")
    return q


def write_tuning(folder: Path, params: K.IndexParams, report: TuneReport) -> None:
    """Record a new tuning in an index folder's manifest (written to a temporary file, then renamed)."""
    import json

    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["index_params"] = params.to_dict()
    manifest["tuning"] = report.to_dict()
    tmp = folder / "manifest.json.tune-tmp"
    tmp.write_text(json.dumps(manifest, indent=2))
    tmp.replace(path)
