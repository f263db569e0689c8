"""The retrieval engine: text->image, image->image, text->caption and fused search over an index.

Fused score (ImageScope): (1 - tau) * sim(text, image) + tau * sim(text, caption). The faiss index
stores [image | caption] rows, so any tau is one exact inner-product search with the query
[(1 - tau) q | tau q]. On a caption index (text embedder) the image vectors are caption vectors.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from interactive_ir.config import DEFAULT_K, TEXT_LIMIT_ENV, text_limit
from interactive_ir.errors import BadInputError, IndexLoadError, QueryError
from interactive_ir.index.store import ImageIndex, rebuild_hint
from interactive_ir.retrieval.search_backends import SearchBackends
from interactive_ir.retrieval.search_device import canonical_order
from interactive_ir.types import Hit, Vectors

log = logging.getLogger(__name__)


MATRIX_ROWS_MAX = 200_000  # whole-collection scores keep a float32 copy up to this many rows, chunked above
MATRIX_ROWS_ENV = "IIR_MATRIX_ROWS_MAX"  # overrides MATRIX_ROWS_MAX (0: never; a benchmark forces the pooled belief)


def matrix_rows_max(environ=None) -> int:
    """The most rows an index may have for the retriever to keep a float32 matrix of it (and the belief to cover
    every row): env IIR_MATRIX_ROWS_MAX when set, else MATRIX_ROWS_MAX. BadInputError for a bad value."""
    import os

    raw = (os.environ if environ is None else environ).get(MATRIX_ROWS_ENV, "").strip()
    if not raw:
        return MATRIX_ROWS_MAX
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise BadInputError(f"{MATRIX_ROWS_ENV} must be a whole number of rows (0 or more), got {raw!r}")
    return value


@dataclass(frozen=True)
class SearchConfig:
    k: int = DEFAULT_K  # results per page
    tau: float = 0.15  # weight of text->caption similarity in the fused score (ImageScope)
    max_text_chars: int | None = None  # longer text queries are refused; None: IIR_MAX_TEXT_CHARS, else
    #                                    config.MAX_TEXT_CHARS, read when the Retriever is built (the engine's limit)
    device: str = "auto"  # "auto": the GPU when present (search_device.py), else faiss on CPU; "faiss", "faiss-gpu", "torch"
    search_threads: int = 1  # faiss threads per query (one is fastest for single queries; bench/bench_search.py)
    not_method: str = "subtract"  # how NOT terms (-leash) lower scores: "subtract" (query - not_weight * NOT row),
    #                    "penalty" (re-rank a candidate pool by score - not_weight * best NOT score) or "filter" (drop
    #                    the pool's NOT_DROP most NOT-like). Flickr8k dev, bench/bench_not_terms.py: subtract = penalty
    #                    at one term (MRR 0.236 -> 0.278 at 0.25), filter hurts (0.199); subtract is one plain search
    not_weight: float = 0.25  # weight of a NOT term's row (subtract) or score (penalty); 0.5: R@10 drops, 1.0: MRR drops
    not_pool: int = 200  # candidates re-ranked for NOT terms (at least 4 * k)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]+")  # control characters (tab, newline kept)
_SURROGATE = re.compile(r"[\ud800-\udfff]+")  # lone surrogates: not encodable, they break JSON and logs


def check_query_text(text: str, limit: int) -> str:
    """`text` cleaned (control characters become spaces, lone surrogates are dropped) and checked: not empty,
    at most `limit` characters. Raises BadInputError saying what to do."""
    if text is not None and not isinstance(text, str):
        raise BadInputError(f"the query must be text, got {type(text).__name__}")
    text = _SURROGATE.sub("", _CONTROL.sub(" ", text or "")).strip()
    if not text:
        raise BadInputError("the query is empty: describe the image you are looking for")
    if len(text) > limit:
        raise BadInputError(f"the query is {len(text):,} characters; the limit is {limit:,}: shorten it, or raise "
                            f"the limit with {TEXT_LIMIT_ENV}")
    return text


class Retriever:
    """Searches one loaded index with the embedder it was built with. Thread-safe."""

    def __init__(self, index: ImageIndex, embedder, config: SearchConfig = SearchConfig(), hardware=None):
        if index.embedder_spec != embedder.spec:
            raise IndexLoadError(
                f"index {index.path} was built with {index.embedder_spec} ({index.dim}-d) but the embedder is "
                f"{embedder.spec} ({embedder.dim}-d): use --embedder {index.embedder_spec} or rebuild the index "
                f"with --embedder {embedder.spec} --rebuild")
        if index.dim != embedder.dim:
            raise IndexLoadError(f"index {index.path} holds {index.dim}-d vectors but {embedder.spec} gives "
                                 f"{embedder.dim}-d: rebuild it with "
                                 f"{rebuild_hint(index.path, {**index.manifest, 'embedder': embedder.spec})}")
        self.index = index
        self.embedder = embedder
        self.config = config
        self.max_text_chars = config.max_text_chars if config.max_text_chars is not None else text_limit()
        self.backends = SearchBackends(index, config, hardware)  # faiss (CPU or GPU) or torch; hardware: fakes in tests
        self._filter_cache: dict[tuple, np.ndarray] = {}  # filters -> allowed rows (oldest first)
        self._filter_lock = threading.Lock()

    # --- encoding ----------------------------------------------------------------------------
    @property
    def default_tau(self) -> float:
        return 1.0 if self.index.caption_only else (self.config.tau if self.index.has_captions else 0.0)

    def encode_text(self, text: str) -> np.ndarray:
        text = check_query_text(text, self.max_text_chars)
        return self.embedder.embed_texts([text])[0]

    def encode_texts(self, texts: Sequence[str]) -> Vectors:
        return self.embedder.embed_texts([check_query_text(t, self.max_text_chars) for t in texts])

    def encode_image(self, image) -> np.ndarray:
        """A PIL image, or a path/bytes opened safely."""
        from interactive_ir.index.imageio import open_image

        if not hasattr(image, "convert"):
            image = open_image(image)
        if not self.embedder.has_vision:
            raise BadInputError(f"this is a caption index ({self.embedder.spec}): image queries need a vision "
                                "embedder; describe the image in words instead")
        return self.embedder.embed_images([image])[0]

    def row_vector(self, row: int, kind: str = "image") -> np.ndarray:
        return self.index.vectors([row], kind)[0]

    # --- query composition -------------------------------------------------------------------
    def query_row(self, image_q: np.ndarray | None, caption_q: np.ndarray | None) -> np.ndarray:
        """The faiss query whose inner product is image_q . I + caption_q . C."""
        d = self.index.dim
        z = np.zeros(d, np.float32)
        iq = z if image_q is None else np.asarray(image_q, np.float32)
        if self.index.has_captions:
            cq = z if caption_q is None else np.asarray(caption_q, np.float32)
            return np.concatenate([iq, cq])
        if self.index.caption_only and image_q is None and caption_q is not None:
            return np.asarray(caption_q, np.float32)
        return iq

    def text_query_row(self, qvec: np.ndarray, tau: float | None = None) -> np.ndarray:
        """Fused text query: (1 - tau) text->image + tau text->caption."""
        tau = self.default_tau if tau is None else float(tau)
        if not 0.0 <= tau <= 1.0:
            raise BadInputError(f"tau must be between 0 and 1, got {tau}")
        if self.index.caption_only or not self.index.has_captions:
            return self.query_row(qvec, None)
        return self.query_row((1.0 - tau) * qvec, tau * qvec)

    # --- search ------------------------------------------------------------------------------
    def exclude_rows(self, exclude: Iterable[str]) -> np.ndarray:
        """Sorted rows of the excluded ids that are in the index."""
        exclude = list(exclude)
        if not exclude:
            return np.zeros(0, dtype=np.int64)
        found = self.index.row_of.many(exclude)  # one lookup for all (SQLite: one query, remembered ids free)
        return np.array(sorted(set(found.values())), dtype=np.int64)

    def search_rows(self, qrow: np.ndarray, k: int | None = None, exclude: Iterable[str] = (),
                    exclude_rows: np.ndarray | None = None, allow: np.ndarray | None = None,
                    nots: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the top-k rows by inner product with a composed query row, best first.

        Candidates stay arrays (no Hit or path per candidate). On an approximate index the candidates
        are re-ranked with exact scores from the memory-mapped fp16 vectors (`ImageIndex.rerank`). `allow`
        (sorted rows, from a
        query's filters): only those rows can be returned, masked before the top-k. `nots`: query rows of
        NOT terms (`not_rows`), which lower the scores of images like them (SearchConfig.not_method).
        """
        k = self.config.k if k is None else int(k)
        if k < 1:
            raise BadInputError(f"k must be at least 1, got {k}")
        ex = self.exclude_rows(exclude)
        if exclude_rows is not None and len(exclude_rows):
            ex = np.union1d(ex, np.asarray(exclude_rows, dtype=np.int64))
        if nots is not None and len(nots):
            from interactive_ir.retrieval.scoped_search import search_with_nots

            return search_with_nots(self, qrow, k, ex, allow, np.asarray(nots, np.float32))
        if allow is not None:
            from interactive_ir.retrieval import scoped_search as ss

            if self.index.store is not None:  # the filters go to Milvus as an expression
                return ss.search_store_allowed(self, qrow, k, ex, allow)
            return ss.search_allowed(self, qrow, k, allow, ex)
        k_eff = min(k, len(self.index) - len(ex))
        if k_eff <= 0:
            return np.zeros(0, np.float32), np.zeros(0, np.int64)
        q = np.ascontiguousarray(np.asarray(qrow, np.float32)[None, :])
        if self.index.store is not None:
            return self.index.store.search(q[0], k_eff, ex)  # exact scores from the store (FLAT / its own index)
        found = self.backends.torch_search(q[0], k_eff, ex) if self.device == "torch" else None
        if found is not None:
            return found  # exact fp32 scores already, in `canonical_order`
        scores, rows = self.backends.faiss_search(q, k_eff, ex)
        keep = rows >= 0
        scores, rows = np.asarray(scores[keep], np.float32), np.asarray(rows[keep], np.int64)
        if self.index.params.approximate and len(rows):
            scores, rows = self.index.rerank(q[0], rows, k_eff)  # exact scores (SQ8 codes prune first: index/rerank.py)
        return canonical_order(scores, rows)

    def candidate_rows(self, qrows: np.ndarray, k: int, allow: np.ndarray | None = None) -> list[np.ndarray]:
        """For each of several query rows (m x width), about its `k` best rows, as one index search: faiss
        scans once for every query row (nq = m; up to m * search_threads threads, the cores allowing) and
        the candidates are NOT re-ranked exactly (the caller scores them itself: the belief's pool). With
        `allow`, a Milvus store or a GPU device, each row is an ordinary `search_rows` (exact scores)."""
        q = np.ascontiguousarray(np.atleast_2d(np.asarray(qrows, np.float32)))
        k = min(int(k), len(self.index))
        if not len(q) or k < 1:
            return [np.zeros(0, np.int64) for _ in q]
        if allow is not None or self.index.store is not None or self.device != "faiss":
            return [np.asarray(self.search_rows(row, k, allow=allow)[1], np.int64) for row in q]
        import os

        import faiss

        from interactive_ir.index import kinds

        threads = max(1, min(len(q) * self.config.search_threads, os.cpu_count() or 1))
        faiss.omp_set_num_threads(threads)
        try:
            _, rows = self.index.faiss_index.search(q, k, params=kinds.search_parameters(self.index.params, k))
        finally:
            faiss.omp_set_num_threads(self.config.search_threads)  # this thread's count back (`faiss_search`)
        return [np.asarray(r[r >= 0], np.int64) for r in rows]

    def not_rows(self, terms) -> np.ndarray | None:
        """Query rows of NOT terms (each embedded like a description), or None without any."""
        terms = [t for t in terms or () if t and t.strip()]
        if not terms:
            return None
        return np.stack([self.text_query_row(v) for v in self.encode_texts(terms)]).astype(np.float32)

    def filter_rows(self, filters) -> np.ndarray | None:
        """Sorted rows passing every filter of a query (None: no filter; `index.filters.FilteredRows`, which
        keep the filters), remembered for the next rounds. QueryError when the index holds no metadata of a
        filter's field, or its Milvus store cannot filter on it (`MilvusStore.where_of`)."""
        filters = tuple(filters or ())
        if not filters:
            return None
        with self._filter_lock:
            got = self._filter_cache.get(filters)
        if got is None:
            from interactive_ir.index.filters import allowed_rows

            got = allowed_rows(self.index.meta.sql(), filters, rebuild_hint(self.index.path, self.index.manifest))
            if self.index.store is not None:  # a collection exported without the metadata says so before a search
                self.index.store.where_of(filters, self.index.path)
            got.setflags(write=False)
            with self._filter_lock:
                if len(self._filter_cache) >= 16:  # a few searches' filters; each up to 8 bytes per allowed row
                    self._filter_cache.pop(next(iter(self._filter_cache)))
                self._filter_cache[filters] = got
        return got

    def scope_rows(self, filters) -> np.ndarray | None:
        """`filter_rows`, and QueryError when the filters keep no image of the index (a search would show none)."""
        if (rows := self.filter_rows(filters)) is not None and not len(rows):
            raise QueryError(f"no image matches {' '.join(f.label() for f in filters)}: change or remove a filter")
        return rows

    def hits(self, scores: np.ndarray, rows: np.ndarray) -> list[Hit]:
        """Typed results for rows about to be shown (their metadata read in one query)."""
        recs = self.index.meta.records_many(rows)
        path = self.index.image_file
        return [Hit(rec.id, int(r), path(r, rec.id, full_check=False), float(s), rec.caption)
                for s, r, rec in zip(scores, rows, recs)]

    def records_of(self, rows):
        """The index records (id, captions) of `rows`, in order, in one metadata read; no paths built."""
        return self.index.meta.records_many(rows)

    def search_row(self, qrow: np.ndarray, k: int | None = None, exclude: Iterable[str] = (),
                   allow: np.ndarray | None = None, nots: np.ndarray | None = None) -> list[Hit]:
        """Top-k rows by inner product with a composed query row, skipping excluded image ids (and, with
        `allow`, every row not in it; `nots`: NOT terms' rows push images like them down)."""
        return self.hits(*self.search_rows(qrow, k, exclude, allow=allow, nots=nots))

    def search_text(self, text: str, k: int | None = None, exclude: Iterable[str] = (), tau: float | None = None) -> list[Hit]:
        return self.search_row(self.text_query_row(self.encode_text(text), tau), k, exclude)

    def search_query(self, text: str, k: int | None = None, where: str = "", tau: float | None = None,
                     exclude: Iterable[str] = ()) -> list[Hit]:
        """A query in the search language (`query_language.py`: words, -NOT terms, "phrases", field:value
        filters), plus `where`'s structured filters. QueryError names a bad token."""
        from interactive_ir.retrieval.query_language import parse_query, parse_where

        q = parse_query(text)
        allow = self.scope_rows(q.filters + parse_where(where or ""))
        qrow = self.text_query_row(self.encode_text(q.text), tau)
        return self.search_row(qrow, k, exclude, allow=allow, nots=self.not_rows(q.nots))

    def search_image(self, image, k: int | None = None, exclude: Iterable[str] = (), where: str = "") -> list[Hit]:
        """Image->image search by a PIL image, a path, or an indexed image id (`where`: filters)."""
        from interactive_ir.retrieval.query_language import parse_where

        row = self.index.row_of.get(image) if isinstance(image, str) else None
        vec = self.row_vector(row) if row is not None else self.encode_image(image)
        return self.search_row(self.query_row(vec, None), k, exclude, allow=self.scope_rows(parse_where(where or "")))

    def search_caption(self, text: str, k: int | None = None, exclude: Iterable[str] = ()) -> list[Hit]:
        """Text->caption search only."""
        return self.search_row(self.text_query_row(self.encode_text(text), 1.0), k, exclude)

    def hit(self, row: int, score: float) -> Hit:
        rec = self.index.records[row]
        return Hit(rec.id, row, self.index.image_file(row, rec.id, full_check=False), score, rec.caption)

    # --- whole-collection scores (evaluation, ranks) -----------------------------------------
    @cached_property
    def _matrix(self) -> np.ndarray | None:
        """A float32 copy of every row, kept only for small indices (fast repeated ranks in evaluation)."""
        if len(self.index) > matrix_rows_max():
            return None
        return self.index.row_vectors(np.arange(len(self.index)))

    @cached_property
    def matrix_norms(self) -> np.ndarray | None:
        """The lengths of the rows of `_matrix` (None without one), computed once (the belief's cosines)."""
        m = self._matrix
        return None if m is None else np.sqrt(np.einsum("ij,ij->i", m, m)).astype(np.float32)

    def all_scores(self, qrow: np.ndarray) -> np.ndarray:
        """Scores of every row for a composed query row (float32, length N), from the search's own matrix."""
        q = np.asarray(qrow, np.float32)
        if self.device == "torch" and self.backends.torch.ready():
            scores = self.backends.torch.all_scores(q)
            if scores is not None:
                return scores
        if self._matrix is not None:
            return self._matrix @ q
        out = np.empty(len(self.index), np.float32)  # chunk by chunk from the memory-mapped vectors
        for a in range(0, len(out), 65_536):
            out[a : a + 65_536] = self.index.row_vectors(np.arange(a, min(len(out), a + 65_536))) @ q
        return out

    def rank_of(self, qrow: np.ndarray, image_id: str, exclude: Iterable[str] = ()) -> int:
        """1-based rank of `image_id` among the non-excluded rows (ties count in its favour)."""
        scores = self.all_scores(qrow)
        row = self.index.row_of[image_id]
        mask = np.ones(len(scores), bool)
        for i in exclude:
            r = self.index.row_of.get(i)
            if r is not None and r != row:
                mask[r] = False
        return int(np.sum(scores[mask] > scores[row])) + 1

    # --- where searches run (`search_backends.SearchBackends`) --------------------------------
    @property
    def hardware(self):
        """What searches may run on (`search_device.Hardware`)."""
        return self.backends.hardware

    @property
    def device(self) -> str:
        """Where searches run: "torch" (GPU fp16 matmul, exact only), "faiss-gpu", "faiss" (CPU) or "milvus"."""
        return self.backends.device

    def warm(self) -> Retriever:
        """Put the index where it is searched now (the GPU's copy or matrix), not on a user's first query."""
        self.backends.warm()
        return self
