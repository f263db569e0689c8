"""Index kinds: exact, IVF-PQ and HNSW, and how `auto` chooses among them.

- `exact`: fp16 inner product over every row (faiss IndexScalarQuantizer). Exact scores; cost grows with N.
- `ivf-pq`: an inverted file of product-quantised codes (faiss IndexIVFPQ), trained on a sample and
  opened memory-mapped (IO_FLAG_MMAP): opening costs no RAM or time whatever N.
- `hnsw`: a graph over 8-bit scalar-quantised rows (faiss IndexHNSWSQ); its codes are memory-mapped,
  the graph (about 2*M ints per row) is read into RAM.
- `auto`: exact up to AUTO_EXACT_MAX rows, ivf-pq above it, with parameters chosen from N and the row
  width the way autofaiss does (about 2*sqrt(N) lists, 40 training rows per list, 8 dimensions per PQ sub-quantizer);
  the nprobe chosen here is a starting guess that the build replaces by one measured on the data (`tune`).

Approximate kinds return candidates that the retriever re-ranks exactly from the memory-mapped fp16
vectors, so every score shown is exact; only recall is approximate.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields

from interactive_ir.errors import BadInputError

KINDS = ("exact", "ivf-pq", "hnsw")
AUTO_EXACT_MAX = 300_000  # `auto` builds an exact index up to this many images (top-100 ~10 ms at 512-d), ivf-pq above
MIN_APPROX_ROWS = 1_000  # approximate kinds need this many images to train on; fewer: use exact


@dataclass(frozen=True)
class IndexParams:
    kind: str  # one of KINDS
    nlist: int = 0  # ivf-pq: inverted lists (k-means centroids)
    pq_m: int = 0  # ivf-pq: sub-quantizers per row (row width / pq_m dimensions each)
    pq_bits: int = 8  # ivf-pq: bits per sub-quantizer code
    nprobe: int = 0  # ivf-pq: lists visited per query (chosen on calibration queries at build; IIR_NPROBE overrides)
    hnsw_m: int = 0  # hnsw: neighbours per node
    ef_construction: int = 0  # hnsw: build-time beam width
    ef_search: int = 0  # hnsw: search-time beam width (at least the candidates asked for; IIR_EF_SEARCH overrides)
    train_size: int = 0  # rows sampled to train the quantizers
    rerank_factor: int = 0  # approximate kinds: candidates = max(rerank_factor * k, rerank_min), re-ranked exactly
    rerank_min: int = 0

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v or k == "kind"}

    @classmethod
    def from_dict(cls, d: dict) -> IndexParams:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def approximate(self) -> bool:
        return self.kind != "exact"


def _pow2(x: float) -> int:
    return 1 << max(0, round(math.log2(max(1.0, x))))


# sub-quantizer counts and widths GPU IVFPQ accepts (as retrieval/search_device.py's GPU_PQ_M, GPU_PQ_SUB_DIMS):
# an index built here can be copied to a GPU; 1024-wide rows get 64 sub-quantizers of 16 dimensions, not 128
GPU_PQ_M = (1, 2, 3, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 96)
GPU_PQ_SUB_DIMS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 28, 32)


def _pq_m(width: int) -> int:
    """Sub-quantizers for rows of `width`: the largest divisor giving at least 4 dimensions each, aiming at
    8, when GPU IVFPQ accepts it; else the largest count it accepts with 4 or more dimensions each."""
    target, plain = max(1, width // 8), 1
    for m in range(min(target, 128), 0, -1):
        if width % m == 0:
            plain = m
            break
    if plain in GPU_PQ_M and width // plain in GPU_PQ_SUB_DIMS:
        return plain
    ok = [m for m in GPU_PQ_M if width % m == 0 and 4 <= width // m and width // m in GPU_PQ_SUB_DIMS]
    return max(ok) if ok else plain


def choose_params(kind: str, n: int, width: int) -> IndexParams:
    """Parameters for `kind` ("auto" too) at n rows of `width` dimensions. Raises BadInputError."""
    if kind not in KINDS + ("auto",):
        raise BadInputError(f"unknown index kind {kind!r}: choose one of exact, ivf-pq, hnsw, auto")
    if kind == "auto":
        kind = "exact" if n <= AUTO_EXACT_MAX else "ivf-pq"
    if kind == "exact":
        return IndexParams("exact")
    if n < MIN_APPROX_ROWS:
        raise BadInputError(f"an {kind} index needs at least {MIN_APPROX_ROWS:,} images to train on, this collection "
                            f"has {n:,}: use --kind exact (or auto), which is also fast at this size")
    if kind == "ivf-pq":
        at_least_39_per_list = 1 << int(math.log2(n / 39))
        nlist = max(16, min(_pow2(2 * math.sqrt(n)), at_least_39_per_list, 65536))
        bits = 8  # 256 centroids per sub-quantizer: at least 1,000 training rows (MIN_APPROX_ROWS)
        return IndexParams("ivf-pq", nlist=nlist, pq_m=_pq_m(width), pq_bits=bits,
                           nprobe=min(nlist, max(32, nlist // 32)), train_size=min(n, max(40 * nlist, 256 * 40)),
                           rerank_factor=8, rerank_min=400)
    return IndexParams("hnsw", hnsw_m=32, ef_construction=80, ef_search=128,
                       train_size=min(n, 100_000), rerank_factor=2, rerank_min=100)


def create(params: IndexParams, width: int):
    """An empty, untrained faiss index of this kind (inner product)."""
    import faiss

    ip = faiss.METRIC_INNER_PRODUCT
    if params.kind == "exact":
        return faiss.IndexScalarQuantizer(width, faiss.ScalarQuantizer.QT_fp16, ip)
    if params.kind == "ivf-pq":
        quantizer = faiss.IndexFlatIP(width)
        index = faiss.IndexIVFPQ(quantizer, width, params.nlist, params.pq_m, params.pq_bits, ip)
        index.cp.niter = 10  # k-means iterations of the coarse and PQ quantizers (faiss: 25; recall barely moves)
        index.pq.cp.niter = 10
        index.pq.cp.max_points_per_centroid = 64  # each of the pq_m sub-k-means samples at most 16k rows
        index.pq.cp.min_points_per_centroid = 4  # small collections: train anyway, without a warning per sub-quantizer
        index.own_fields = True
        quantizer.this.disown()
        return index
    if params.kind == "hnsw":
        index = faiss.IndexHNSWSQ(width, faiss.ScalarQuantizer.QT_8bit, params.hnsw_m, ip)
        index.hnsw.efConstruction = params.ef_construction
        return index
    raise BadInputError(f"unknown index kind {params.kind!r}")


def read(path: str, params: IndexParams):
    """Open a written index memory-mapped: its codes stay on disk until a search touches them."""
    import faiss

    flags = faiss.IO_FLAG_MMAP if params.kind == "ivf-pq" else faiss.IO_FLAG_MMAP_IFC
    index = faiss.read_index(path, flags | faiss.IO_FLAG_READ_ONLY)
    if params.kind == "ivf-pq":
        no_prefetch_threads(index)
    return index


def no_prefetch_threads(index) -> None:
    """A memory-mapped ivf-pq index's lists (faiss OnDiskInvertedLists) start 32 prefetch threads per search
    by default: 5-6x the search itself on lists already in the page cache (bench/bench_rerank.py). Off:
    a list not in memory is read when the search touches it."""
    import faiss

    lists = faiss.downcast_InvertedLists(index.invlists)
    if isinstance(lists, faiss.OnDiskInvertedLists):
        lists.prefetch_nthread = 0


def candidates(params: IndexParams, k: int) -> int:
    """How many candidates an approximate search fetches for a top-k (re-ranked exactly afterwards)."""
    if not params.approximate:
        return k
    return max(k * params.rerank_factor, params.rerank_min, k)


def nprobe(params: IndexParams) -> int:
    """Lists an ivf-pq search visits: IIR_NPROBE, else the tuned value, within 1..nlist."""
    n = int(os.environ.get("IIR_NPROBE") or params.nprobe)
    return max(1, min(n, params.nlist or n))


def search_parameters(params: IndexParams, k_fetch: int, sel=None):
    """faiss SearchParameters for one query (exclusions as an ID selector, nprobe / efSearch)."""
    import faiss

    if params.kind == "ivf-pq":
        return faiss.SearchParametersIVF(sel=sel, nprobe=nprobe(params))
    if params.kind == "hnsw":
        ef = int(os.environ.get("IIR_EF_SEARCH") or params.ef_search)
        return faiss.SearchParametersHNSW(sel=sel, efSearch=max(ef, k_fetch))
    return faiss.SearchParameters(sel=sel) if sel is not None else None
