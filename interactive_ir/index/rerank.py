"""The exact re-rank of an ivf-pq search's candidates, at the library's speed (issue 26, deliverable 10).

An ivf-pq search returns candidates with approximate scores; every score shown is exact, from the fp16
vectors. Re-ranking all of them (800 rows for a top-100) by converting their fp16 rows in numpy (about 2 ns
a value) cost more than the faiss search itself. Now:

1. the candidates' fp16 rows (read in ascending order from the memory-mapped file) are scored by faiss's
   fp16 kernel (a throwaway fp16 index over those rows): exact, and no float32 copy;
2. with SQ8 re-rank codes (`rerank_sq8.index`, written by every ivf-pq build: a faiss IndexScalarQuantizer,
   one byte per dimension, N * width bytes: 488 MB at 1M 512-d rows) the candidates are first scored from
   the codes in RAM by faiss's SQ8 kernel and only the best `shortlist(k)` rows are read from the fp16 file
   (216 instead of 800 for a top-100): fewer disk reads when the fp16 file is not in the page cache. The
   codes are read into RAM by the first search (the file is opened at load, so a rebuild that replaces the
   folder meanwhile changes nothing); IIR_RERANK_CODES=0 leaves them unread (no RAM for them).

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
    return os.environ.get(CODES_ENV, "1").strip() != "0"


def sq8_shortlist(q: np.ndarray, rows: np.ndarray, m: int, codes: Sq8Codes) -> np.ndarray:
    """The m of `rows` with the best SQ8 scores, in the order given: their codes gathered from RAM and
    scanned by faiss's SQ8 kernel (a throwaway index over those rows)."""
    import faiss

    sq = codes.index
    flat = faiss.IndexScalarQuantizer(sq.d, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    flat.sq = sq.sq  # the trained ranges
    flat.is_trained = True
    flat.add_sa_codes(codes.array[rows])
    _, i = flat.search(np.ascontiguousarray(np.asarray(q, np.float32)[None, :]), m)
    return rows[np.sort(i[0][i[0] >= 0])]


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


def rerank(q: np.ndarray, rows: np.ndarray, k: int, parts: list[np.ndarray],
           codes: Sq8Codes | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(exact scores, rows) of the best k candidates, best first (ties in the candidates' order); with `codes`,
    only the SQ8 shortlist of the candidates is read from `parts` and scored exactly."""
    rows = np.asarray(rows, np.int64)
    if codes is not None and len(rows) > shortlist(k):
        rows = sq8_shortlist(q, rows, shortlist(k), codes)
    exact = exact_scores(q, rows, parts)
    order = np.argsort(-exact, kind="stable")[:k]
    return exact[order], rows[order]
