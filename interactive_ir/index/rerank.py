"""The exact re-rank of an ivf-pq search's candidates, at the library's speed (issue 26, deliverable 10).

An ivf-pq search returns candidates with approximate scores; every score shown is exact, from the fp16
vectors. Re-ranking all of them (800 rows for a top-100) by reading them from the memory-mapped fp16 file
and converting them in numpy cost several times the faiss search, where faiss's own `IndexRefine` keeps its
refine codes in RAM. So:

1. an ivf-pq index also holds SQ8 re-rank codes (`rerank_sq8.index`: a faiss IndexScalarQuantizer, one byte
   per dimension; N * width bytes, 512 MB at 1M 512-d rows), read into RAM by the first search (the file is
   opened at load, so a rebuild that replaces the folder meanwhile changes nothing). The search is then one
   faiss call, `IndexRefine(ivf-pq, SQ8)`: the candidates are scored from the codes in C++ and only the best
   `shortlist(k)` come back;
2. the shortlist is scored exactly from its fp16 rows by faiss's fp16 kernel (a throwaway fp16 index over
   those rows), not by a numpy float16 -> float32 conversion.

The top-k and its scores are exact unless SQ8's error (about 0.001 on a cosine) moves a true top-k row below
the shortlist (measured: bench/bench_rerank.py). Indices built before have no codes: every candidate is
re-ranked exactly (step 2 alone). IIR_RERANK_CODES=0 leaves the codes unused (no RAM for them).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from interactive_ir.index.folder_rows import FolderRows

CODES = "rerank_sq8.index"  # faiss IndexScalarQuantizer (QT_8bit) of the [image | caption] rows
CODES_ENV = "IIR_RERANK_CODES"  # "0": do not read the codes (re-rank every candidate from the fp16 rows)
SHORTLIST_FACTOR = 2  # rows scored exactly: SHORTLIST_FACTOR * k + SHORTLIST_EXTRA, best by SQ8 score
SHORTLIST_EXTRA = 16
TRAIN_ROWS = 65_536  # rows sampled (seeded) for each dimension's range
RANGE_MARGIN = 0.02  # the range is widened by this fraction of itself on each side (rows outside are clipped)
CHUNK_ROWS = 65_536


def shortlist(k: int) -> int:
    """How many candidates, best by SQ8 score, are scored exactly for a top-k."""
    return SHORTLIST_FACTOR * k + SHORTLIST_EXTRA


def write_codes(folder: Path, rows: FolderRows, n: int) -> str:
    """Write an index folder's SQ8 re-rank codes (trained on a seeded sample); returns the file name."""
    import faiss

    sq = faiss.IndexScalarQuantizer(rows.width, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    sq.sq.rangestat = faiss.ScalarQuantizer.RS_minmax
    sq.sq.rangestat_arg = RANGE_MARGIN
    take = np.sort(np.random.default_rng(0).choice(n, TRAIN_ROWS, replace=False)) if n > TRAIN_ROWS else np.arange(n)
    sq.train(rows.rows(take))
    for a in range(0, n, CHUNK_ROWS):
        sq.add(rows.chunk(a, min(n, a + CHUNK_ROWS)))
    faiss.write_index(sq, str(folder / CODES))
    return CODES


class Sq8Codes:
    """An index's SQ8 re-rank codes: the file opened at load, read into RAM by the first search."""

    def __init__(self, path: Path, count: int, width: int):
        self.path = Path(path)
        self.count, self.width = count, width
        self._fh = open(self.path, "rb")  # noqa: SIM115 - held open: the codes stay readable if the folder is replaced
        self._index = None
        self._lock = threading.Lock()

    @property
    def index(self):
        """The faiss IndexScalarQuantizer, in RAM (read once; ValueError if it does not fit the index)."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    import faiss

                    self._fh.seek(0)
                    sq = faiss.read_index(faiss.PyCallbackIOReader(self._fh.read))
                    if sq.ntotal != self.count or sq.d != self.width:
                        raise ValueError(f"{self.path} holds {sq.ntotal} rows of {sq.d}, the index {self.count} of {self.width}")
                    self._index = sq
        return self._index

    @property
    def nbytes(self) -> int:
        return self.count * self.width

    def close(self) -> None:
        self._fh.close()


def codes_wanted() -> bool:
    return os.environ.get(CODES_ENV, "1").strip() != "0"


def pruned_search(base, codes: Sq8Codes | None, params, k: int, k_fetch: int):
    """(faiss index, its search parameters, rows to ask for): IndexRefine(base, SQ8 codes) returning the
    shortlist of the k_fetch candidates when codes exist and prune something, else `base` unchanged."""
    if codes is None or k_fetch <= shortlist(k):
        return base, params, k_fetch
    import faiss

    m = shortlist(k)
    refined = faiss.IndexRefine(base, codes.index)  # a view: owns neither index (cheap: no copy)
    rp = faiss.IndexRefineSearchParameters(k_factor=(k_fetch + 0.5) / m, base_index_params=params)
    rp.referenced = (refined, params)  # keep the wrapped objects alive for the search
    return refined, rp, m


def exact_scores(q: np.ndarray, rows: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
    """Exact inner products of q with some rows of the fp16 matrices `parts` ([image | caption] side by
    side), computed by faiss's fp16 kernel; read in ascending row order (kinder to a memory-mapped file)."""
    import faiss

    rows = np.asarray(rows, np.int64)
    order = np.argsort(rows, kind="stable")
    got = [np.asarray(p[rows[order]], np.float16) for p in parts]
    codes = got[0] if len(got) == 1 else np.concatenate(got, axis=1)
    flat = faiss.IndexScalarQuantizer(codes.shape[1], faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    flat.add_sa_codes(np.ascontiguousarray(codes).view(np.uint8))
    d, i = flat.search(np.ascontiguousarray(np.asarray(q, np.float32)[None, :]), len(rows))
    out = np.empty(len(rows), np.float32)
    out[order[i[0]]] = d[0]
    return out


def rerank(q: np.ndarray, rows: np.ndarray, k: int, parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(exact scores, rows) of the best k candidates, best first (ties in the candidates' order)."""
    rows = np.asarray(rows, np.int64)
    exact = exact_scores(q, rows, parts)
    order = np.argsort(-exact, kind="stable")[:k]
    return exact[order], rows[order]
