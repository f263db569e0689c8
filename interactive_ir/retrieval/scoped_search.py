"""Searches narrowed by the query language (`query_language.py`): top-k among the rows a query's filters
allow, and NOT terms lowering the scores of images like them. `Retriever.search_rows` calls these when
given `allow` or `nots`.

Filtered search: a filter allowing at most POOL_MAX rows is scored exactly over those rows (exact top-k of
the subset, whatever the index kind); a wider one searches the faiss index with an ID selector (masked
before the top-k), an approximate kind visiting more lists / graph nodes as the filter narrows (up to
WIDEN_MAX times), its candidates re-ranked exactly as usual. A Milvus store gets the filters themselves,
as a boolean expression (`index/milvus_filters.py`), and Milvus filters before its top-k.

NOT terms (SearchConfig.not_method; chosen by bench/bench_not_terms.py on the Flickr8k dev split):
"penalty" re-ranks a candidate pool by score - not_weight * (the best NOT term's score), "subtract" searches
with query - not_weight * NOT rows, "filter" drops the NOT_DROP share of the pool most like a NOT term.
"""

from __future__ import annotations

import numpy as np

from interactive_ir.errors import BadInputError, QueryError
from interactive_ir.index.filters import FilteredRows

POOL_MAX = 50_000  # a filter allowing at most this many rows is searched exactly over them (no faiss index)
NOT_DROP = 0.25  # not_method "filter": this share of the candidate pool (the most NOT-like) leaves
WIDEN_MAX = 4  # a filtered approximate search visits up to this many times more lists / graph nodes


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


def search_allowed(r, qrow: np.ndarray, k: int, allow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-k among the `allow`ed rows only: exact scores over them when few (POOL_MAX), else the index
    searched with an ID selector, its nprobe / efSearch widened as the filter narrows (up to WIDEN_MAX)."""
    k_eff = min(k, len(allow))
    if k_eff <= 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int64)
    q = np.ascontiguousarray(np.asarray(qrow, np.float32))
    if len(allow) <= POOL_MAX or r.device == "torch":
        scores = pool_scores(r, q, allow)
        top = np.argpartition(-scores, k_eff - 1)[:k_eff] if k_eff < len(scores) else np.arange(len(scores))
        order = top[np.lexsort((allow[top], -scores[top]))]
        return scores[order].astype(np.float32), allow[order]
    import faiss

    from interactive_ir.index import kinds

    p = r.index.params
    k_fetch = min(kinds.candidates(p, k_eff), len(allow))
    keep = faiss.IDSelectorBatch(allow)  # must outlive the search
    params = kinds.search_parameters(p, k_fetch, keep)
    widen = min(WIDEN_MAX, max(1.0, len(r.index) / len(allow)))
    if p.kind == "ivf-pq":
        params.nprobe = max(1, min(p.nlist, int(round(params.nprobe * widen))))
    elif p.kind == "hnsw":
        params.efSearch = int(round(params.efSearch * widen))
    index = r.index.faiss_index  # the CPU index: GPU indices take no ID selector
    d, i = index.search(q[None, :], k_fetch, params=params)
    del keep
    rows = i[0][i[0] >= 0].astype(np.int64)
    if p.approximate and len(rows):
        exact = r.index.row_vectors(rows) @ q
        order = np.argsort(-exact, kind="stable")[:k_eff]
        return exact[order].astype(np.float32), rows[order]
    return d[0][: len(rows)][:k_eff].astype(np.float32), rows[:k_eff]


def search_store_allowed(r, qrow: np.ndarray, k: int, ex: np.ndarray, allow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of a Milvus store among the `allow`ed rows, `ex` excluded: a query's filters (`FilteredRows`) go
    to Milvus as one boolean expression over the collection's scalar fields, whatever their count; rows
    without filters (a caller's own list) go as `row in [...]`, at most POOL_MAX of them."""
    allow = allow if isinstance(allow, FilteredRows) else np.asarray(allow, np.int64)
    k_eff = min(k, len(allow) - int(np.isin(ex, allow).sum()))
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


def pool_scores(r, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Exact scores of some rows, read chunk by chunk (a filtered search's candidate pool)."""
    out = np.empty(len(rows), np.float32)
    for a in range(0, len(rows), 65_536):
        out[a : a + 65_536] = r.index.row_vectors(rows[a : a + 65_536]) @ q
    return out
