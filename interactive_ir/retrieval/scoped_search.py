"""Searches narrowed by the query language (`query_language.py`): top-k among the rows a query's filters
allow, and NOT terms lowering the scores of images like them. `Retriever.search_rows` calls these when
given `allow` or `nots`.

Filtered search (`filtered_path`, by the filter's count): a selective filter is scored exactly over the rows
it allows (the exact top-k of the subset, whatever the index kind; their fp16 vectors scored by faiss's
kernel); a wider one searches the faiss index with a bitmap ID selector (masked before the top-k), an
approximate kind visiting WIDEN_SHARE / share times the lists / graph nodes, its candidates re-ranked
exactly as usual. ivf-pq picks whichever its measured costs make cheaper; exact and hnsw pool up to POOL_MAX.
Measured at 1M ivf-pq (bench/bench_filtered.py): recall@100 >= 0.99 at 50%, 10%, 1% and 0.1%. A Milvus
store gets the filters themselves, as a boolean expression (`index/milvus_filters.py`), and Milvus filters
before its top-k.

NOT terms (SearchConfig.not_method; chosen by bench/bench_not_terms.py on the Flickr8k dev split):
"penalty" re-ranks a candidate pool by score - not_weight * (the best NOT term's score), "subtract" searches
with query - not_weight * NOT rows, "filter" drops the NOT_DROP share of the pool most like a NOT term.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interactive_ir.errors import BadInputError, QueryError
from interactive_ir.index.filters import FilteredRows
from interactive_ir.retrieval.search_device import canonical_order

POOL_MAX = 50_000  # exact and hnsw: a filter allowing at most this many rows is scored exactly over them
NOT_DROP = 0.25  # not_method "filter": this share of the candidate pool (the most NOT-like) leaves
WIDEN_SHARE = 0.4  # a filter allowing a share s of the rows visits WIDEN_SHARE / s times the lists / graph nodes
#                    (at least 1x): recall@100 at 1M ivf-pq was 0.949 at (times visited) x s = 0.2, 0.99-1.0 at 0.4
WIDEN_MAX = 32  # hnsw: at most this many times the nodes; a narrower filter is scored exactly
# ivf-pq chooses the cheaper path by these costs, measured at 1M 512-d rows, PQ64, nlist 2048, one thread
# (bench/bench_filtered.py): the exact pool 0.28-0.32 us a row; the ID selector about 1 ms (coarse quantizer,
# candidates re-ranked), plus 2-4 ns a code scanned
POOL_ROW_NS = 300  # gathering and scoring one allowed row exactly, per 512 values of the row
SCAN_CODE_NS = 3  # scanning one ivf-pq code, per 64 sub-quantizers
SELECTOR_BASE_NS = 1_000_000  # the rest of an ID-selector search
POOL_CHUNK = 65_536  # rows of an exact pool read and scored at a time


def search_with_nots(r, qrow, k: int, ex: np.ndarray, allow, nots: np.ndarray):
    """Top-k with NOT terms applied by SearchConfig.not_method (every score shown is the adjusted one)."""
    q = np.asarray(qrow, np.float32)
    method, w = r.config.not_method, float(r.config.not_weight)
    if method == "subtract":
        return r.search_rows(q - w * nots.sum(axis=0), k, exclude_rows=ex, allow=allow)
    if method not in ("penalty", "filter"):
        raise BadInputError(f"unknown NOT method {method!r}: use penalty, subtract or filter")
    scores, rows = r.search_rows(q, max(r.config.not_pool, 4 * k), exclude_rows=ex, allow=allow)
    if not len(rows):
        return scores, rows
    neg = (r.index.row_vectors(rows) @ nots.T).max(axis=1)
    if method == "filter":  # the NOT_DROP share of the pool most like a NOT term leaves
        keep = neg < np.quantile(neg, 1.0 - NOT_DROP)
        adjusted, rows = scores[keep], rows[keep]
    else:
        adjusted = scores - w * neg
    order = np.argsort(-adjusted, kind="stable")[:k]
    return adjusted[order].astype(np.float32), rows[order]


def _found(rows: np.ndarray, ex: np.ndarray) -> np.ndarray:
    """Positions in sorted unique `rows` of those of the sorted `ex` it holds (binary searches, no hashing)."""
    if not len(rows) or not len(ex):
        return np.zeros(0, np.int64)
    pos = np.minimum(np.searchsorted(rows, ex), len(rows) - 1)
    return pos[rows[pos] == ex]


def without(rows: np.ndarray, ex: np.ndarray) -> np.ndarray:
    """Sorted unique `rows` less the sorted `ex` (np.setdiff1d hashed both: 7.5 ms for 50,000 rows and
    nothing to remove)."""
    rows = np.asarray(rows, np.int64)
    pos = _found(rows, ex)
    return np.delete(rows, pos) if len(pos) else rows


def filtered_path(p, width: int, n: int, left: int) -> tuple[str, float]:
    """How a filtered search of `left` allowed rows among n runs on an index of kind `p` (`kinds.IndexParams`)
    and row `width`: ("pool", 1) to score every allowed row exactly, or ("selector", how many times the lists /
    graph nodes an ID-selector search visits: WIDEN_SHARE / share, at least 1). ivf-pq takes the cheaper by the
    measured costs (a few thousand rows at 1M, a few tens of thousands at 10M); exact and hnsw pool up to
    POOL_MAX rows, and hnsw also when it would need more than WIDEN_MAX times the nodes."""
    widen = max(1.0, WIDEN_SHARE * n / max(left, 1))
    if p.kind == "ivf-pq" and p.nlist:
        lists = min(p.nlist, p.nprobe * widen)
        selector = SELECTOR_BASE_NS + n * lists / p.nlist * SCAN_CODE_NS * p.pq_m / 64
        return ("pool", 1.0) if left * POOL_ROW_NS * width / 512 <= selector else ("selector", widen)
    if left <= POOL_MAX or (p.kind == "hnsw" and widen > WIDEN_MAX):
        return "pool", 1.0
    return "selector", widen if p.approximate else 1.0


def search_allowed(r, qrow: np.ndarray, k: int, allow: np.ndarray, ex: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k among the `allow`ed rows, `ex` (sorted) excluded: exact scores over them when few or very
    selective, else the index searched with an ID selector, its nprobe / efSearch widened as the filter
    narrows (`filtered_path`)."""
    ex = np.zeros(0, np.int64) if ex is None else np.asarray(ex, np.int64)
    if not isinstance(allow, FilteredRows):  # a caller's own list: sorted and unique first (FilteredRows are)
        allow = np.unique(np.asarray(allow, np.int64))
    left = len(allow) - len(_found(allow, ex))
    k_eff = min(k, left)
    if k_eff <= 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int64)
    q = np.ascontiguousarray(np.asarray(qrow, np.float32))
    path, widen = filtered_path(r.index.params, r.index.faiss_index.d, len(r.index), left)
    if path == "pool" or r.device == "torch":
        return pool_top(r, q, without(allow, ex), k_eff)
    from interactive_ir.index import kinds

    p = r.index.params
    k_fetch = min(kinds.candidates(p, k_eff), left)
    keep = id_selector(allow, len(r.index), ex)  # must outlive the search
    params = kinds.search_parameters(p, k_fetch, keep.selector)
    if p.kind == "ivf-pq":
        params.nprobe = max(1, min(p.nlist, int(round(params.nprobe * widen))))
    elif p.kind == "hnsw":
        params.efSearch = int(round(params.efSearch * widen))
    index = r.index.faiss_index  # the CPU index: GPU indices take no ID selector
    d, i = index.search(q[None, :], k_fetch, params=params)
    del keep
    rows = i[0][i[0] >= 0].astype(np.int64)
    if p.approximate and len(rows):
        return canonical_order(*r.index.rerank(q, rows, k_eff))  # exact scores, as an unfiltered search's
    return d[0][: len(rows)][:k_eff].astype(np.float32), rows[:k_eff]


@dataclass(frozen=True)
class IdSelector:
    """A faiss ID selector and the bitmap it reads (kept alive together: faiss holds a raw pointer)."""

    selector: object  # faiss.IDSelectorBitmap
    bits: np.ndarray  # uint8, bit i (little-endian within a byte) set for an allowed row i


def allowed_bits(allow: np.ndarray, n: int) -> np.ndarray:
    """The bitmap of the allowed rows among n (n/8 bytes), remembered with a filter's rows (`FilteredRows.bits`):
    about 1 ms per million rows to build, so a session's later searches with the same filters reuse it."""
    bits = getattr(allow, "bits", None)
    if bits is None or len(bits) != (n + 7) // 8:
        mask = np.zeros(n, bool)
        mask[np.asarray(allow)] = True
        bits = np.packbits(mask, bitorder="little")
        bits.setflags(write=False)
        if isinstance(allow, FilteredRows):
            allow.bits = bits
    return bits


def id_selector(allow: np.ndarray, n: int, ex: np.ndarray | None = None) -> IdSelector:
    """A bitmap selector of the allowed rows among n less `ex`, each test O(1). (faiss.IDSelectorBatch, a
    hash set, took 39 ms to build for 500,000 rows, and a filtered search builds its selector each time.)"""
    import faiss

    bits = allowed_bits(allow, n)
    if ex is not None and len(ex):
        bits = bits.copy()
        ex = np.asarray(ex, np.int64)
        np.bitwise_and.at(bits, ex >> 3, ~np.left_shift(1, ex & 7).astype(np.uint8))
    return IdSelector(faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits)), bits)


def search_store_allowed(r, qrow: np.ndarray, k: int, ex: np.ndarray, allow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of a Milvus store among the `allow`ed rows, `ex` excluded: a query's filters (`FilteredRows`) go
    to Milvus as one boolean expression over the collection's scalar fields, whatever their count; rows
    without filters (a caller's own list) go as `row in [...]`, at most POOL_MAX of them."""
    allow = allow if isinstance(allow, FilteredRows) else np.unique(np.asarray(allow, np.int64))
    k_eff = min(k, len(allow) - len(_found(allow, ex)))
    if k_eff <= 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int64)
    if getattr(allow, "filters", ()):
        where = r.index.store.where_of(allow.filters, r.index.path)
    elif len(allow) <= POOL_MAX:
        where = f"row in [{','.join(str(int(x)) for x in allow)}]"
    else:
        raise QueryError(f"{len(allow):,} rows given without their filters: a Milvus store takes at most "
                         f"{POOL_MAX:,} listed rows; search with the query's filters instead")
    return r.index.store.search(np.asarray(qrow, np.float32), k_eff, ex, where)


def pool_top(r, q: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact top-k of a filtered search's pool (sorted `rows`), best first: POOL_CHUNK rows at a time,
    their fp16 vectors read in ascending order and scored by faiss's fp16 kernel (`ImageIndex.rerank`, as an
    approximate search's candidates; no float32 copy), each chunk's top-k kept."""
    best_s, best_r = np.zeros(0, np.float32), np.zeros(0, np.int64)
    for a in range(0, len(rows), POOL_CHUNK):
        s, got = r.index.rerank(q, rows[a : a + POOL_CHUNK], k)
        best_s, best_r = np.concatenate([best_s, np.asarray(s, np.float32)]), np.concatenate([best_r, got])
    best_s, best_r = canonical_order(best_s, best_r)
    return best_s[:k], best_r[:k]
