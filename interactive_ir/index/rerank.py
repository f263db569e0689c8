"""The exact re-rank of an ivf-pq search's candidates, at the library's speed (issue 26, deliverable 10).

An ivf-pq search returns candidates with approximate scores; every score shown is exact, from the fp16
vectors. Re-ranking all of them (800 rows for a top-100) by converting their fp16 rows in numpy (about 2 ns
a value) cost more than the faiss search itself. Now:

1. the candidates' fp16 rows (read in ascending order from the memory-mapped file) are scored by faiss's
   fp16 kernel (a throwaway fp16 index over those rows, reused by the thread): exact, no float32 copy;
2. with IIR_RERANK_CODES=1, SQ8 re-rank codes (`rerank_sq8.index`, written by every ivf-pq build: a faiss
   IndexScalarQuantizer, one byte per dimension, N * width bytes: 488 MB at 1M 512-d rows) are read into
   RAM by the first search, the candidates are scored from them by faiss's SQ8 kernel, and only the best
   `shortlist(k)` rows are read from the fp16 file (216 instead of 800 for a top-100). Measured at 1M
   (bench/bench_rerank.py): slower while the fp16 file is in the page cache, 30% faster when every row read
   is a disk read; so it is for collections whose fp16 vectors do not fit in RAM. The codes file is opened
   at load, so a rebuild that replaces the folder meanwhile changes nothing.

The top-k and its scores are exact unless SQ8's error (about 0.001 on a cosine) moves a true top-k row below
the shortlist (measured in bench/bench_rerank.py: none did). Indices built before have no codes: step 1 alone.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from interactive_ir.index.folder_rows import FolderRows

CODES = "rerank_sq8.index"  # faiss IndexScalarQuantizer (QT_8bit) of the [image | caption] rows
CODES_ENV = "IIR_RERANK_CODES"  # "1": read the codes into RAM and re-rank a shortlist (default: every candidate)
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
        self._array = None
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
    def array(self) -> np.ndarray:
        """The codes as a uint8 (N, width) view (no copy) of the index in RAM."""
        if self._array is None:
            import faiss

            sq = self.index
            self._array = faiss.rev_swig_ptr(sq.codes.data(), sq.ntotal * sq.code_size).reshape(sq.ntotal, sq.code_size)
        return self._array

    @property
    def nbytes(self) -> int:
        return self.count * self.width

    def close(self) -> None:
        self._fh.close()


def codes_wanted() -> bool:
    return os.environ.get(CODES_ENV, "0").strip() == "1"


_SCRATCH = threading.local()  # per thread: the throwaway faiss indices, reset and refilled each search


def _scratch(kind: str, d: int, sq=None):
    """This thread's empty fp16 (or, with `sq`, SQ8 with its trained ranges) inner-product index of width d."""
    import faiss

    cache = getattr(_SCRATCH, "indices", None)
    if cache is None:
        cache = _SCRATCH.indices = {}
    key = (kind, d, id(sq))
    index = cache.get(key)
    if index is None:
        qt = faiss.ScalarQuantizer.QT_8bit if kind == "sq8" else faiss.ScalarQuantizer.QT_fp16
        index = faiss.IndexScalarQuantizer(d, qt, faiss.METRIC_INNER_PRODUCT)
        if sq is not None:
            index.sq = sq.sq  # the trained ranges
            index.is_trained = True
        cache[key] = index
    index.reset()
    return index


def _top(index, codes: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, positions) of the best k of some rows' codes for q, best first, scanned by faiss's kernel."""
    index.add_sa_codes(np.ascontiguousarray(codes).view(np.uint8))
    d, i = index.search(np.ascontiguousarray(np.asarray(q, np.float32)[None, :]), min(k, len(codes)))
    index.reset()
    keep = i[0] >= 0
    return d[0][keep], i[0][keep]


def sq8_shortlist(q: np.ndarray, rows: np.ndarray, m: int, codes: Sq8Codes) -> np.ndarray:
    """The m of `rows` (ascending) with the best SQ8 scores, ascending: their codes gathered from RAM."""
    _, pos = _top(_scratch("sq8", codes.width, codes.index), codes.array[rows], q, m)
    return rows[np.sort(pos)]


def exact_top(q: np.ndarray, rows: np.ndarray, k: int, parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(exact scores, rows) of the best k of `rows` (ascending: kinder to a memory-mapped file), best first,
    from the fp16 matrices `parts` ([image | caption] side by side) by faiss's fp16 kernel."""
    got = [np.asarray(p[rows], np.float16) for p in parts]
    codes = got[0] if len(got) == 1 else np.concatenate(got, axis=1)
    scores, pos = _top(_scratch("fp16", codes.shape[1]), codes, q, k)
    return scores, rows[pos]


def rerank(q: np.ndarray, rows: np.ndarray, k: int, parts: list[np.ndarray],
           codes: Sq8Codes | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(exact scores, rows) of the best k candidates, best first; with `codes`, only the SQ8 shortlist of the
    candidates is read from `parts` and scored exactly."""
    rows = np.sort(np.asarray(rows, np.int64))
    if codes is not None and len(rows) > shortlist(k):
        rows = sq8_shortlist(q, rows, shortlist(k), codes)
    return exact_top(q, rows, k, parts)
