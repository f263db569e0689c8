"""Where an index's vectors live: the index folder (faiss, memory-mapped) or a Milvus collection.

One small interface, `VectorStore`: search rows (with rows excluded), fetch rows' vectors. Metadata
(ids, captions, paths) always comes from the index folder's `metadata.sqlite`. The retriever searches
through `index.store` when one is attached and `index.vectors()` fetches from it, so the engine's modes
(conversation, feedback, composition) never know where the vectors are.

Store specs:
- `milvus://HOST:PORT/COLLECTION`: a Milvus server or cluster (standalone or distributed);
- `milvus-lite:PATH.db` (or `milvus-lite:PATH.db#COLLECTION`): Milvus Lite, embedded, one file.
The collection holds one entity per index row: `row` (INT64 primary key) and `vector` ([image | caption],
float32, inner product). `index export DIR --store SPEC` fills it from an index.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from interactive_ir.errors import BackendUnavailable, BadInputError, IndexLoadError

log = logging.getLogger(__name__)

DEFAULT_COLLECTION = "images"
TIMEOUT_S = 10.0  # seconds before an unreachable Milvus is reported


class VectorStore(Protocol):
    """What the retriever needs from a place that holds vectors."""

    width: int  # row width: dim, or 2*dim with caption vectors

    def search(self, q: np.ndarray, k: int, exclude_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the k best rows by inner product with q, best first, excluded rows skipped."""

    def fetch(self, rows: np.ndarray) -> np.ndarray:
        """float32 [image | caption] rows, in the order asked."""


@dataclass(frozen=True)
class StoreSpec:
    uri: str  # what MilvusClient connects to: http://HOST:PORT, or a .db file for Milvus Lite
    collection: str  # collection name
    lite: bool  # True for Milvus Lite (embedded)

    def __str__(self) -> str:
        return f"milvus-lite:{self.uri}#{self.collection}" if self.lite else \
            f"milvus://{self.uri.removeprefix('http://')}/{self.collection}"


def parse_store(spec: str) -> StoreSpec:
    """Parse `milvus://HOST:PORT/COLLECTION` or `milvus-lite:PATH.db[#COLLECTION]`; BadInputError otherwise."""
    spec = (spec or "").strip()
    if spec.startswith("milvus-lite:"):
        path, _, coll = spec.removeprefix("milvus-lite:").partition("#")
        if not path.endswith(".db"):
            raise BadInputError(f"--store {spec}: a Milvus Lite store is a file ending in .db, e.g. milvus-lite:indices/mine.db")
        return StoreSpec(path, coll or DEFAULT_COLLECTION, True)
    if spec.startswith("milvus://"):
        rest = spec.removeprefix("milvus://")
        host, _, coll = rest.partition("/")
        if not host or ":" not in host or not coll or "/" in coll:
            raise BadInputError(f"--store {spec}: write milvus://HOST:PORT/COLLECTION, e.g. milvus://localhost:19530/images")
        return StoreSpec(f"http://{host}", coll, False)
    raise BadInputError(f"unknown --store {spec!r}: use milvus://HOST:PORT/COLLECTION or milvus-lite:PATH.db")


def _client(spec: StoreSpec):
    try:
        from pymilvus import MilvusClient
    except ImportError as e:
        raise BackendUnavailable("the Milvus store needs pymilvus (and milvus-lite for milvus-lite:): "
                                 "pip install pymilvus milvus-lite") from e
    try:
        return MilvusClient(uri=spec.uri, timeout=TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - pymilvus raises MilvusException and grpc errors alike
        what = "start Milvus Lite" if spec.lite else "reach Milvus"
        raise IndexLoadError(f"cannot {what} at {spec.uri} ({_first_line(e)}): check that it runs and the --store "
                             f"address ({spec})") from e


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:200]


class MilvusStore:
    """An index's vectors in a Milvus collection (server, cluster or Lite)."""

    def __init__(self, spec: StoreSpec, width: int, count: int | None = None):
        self.spec = spec
        self.width = int(width)
        self.client = _client(spec)
        try:
            has = self.client.has_collection(spec.collection)
            desc = self.client.describe_collection(spec.collection) if has else None
        except Exception as e:  # noqa: BLE001
            raise IndexLoadError(f"cannot read collection {spec.collection!r} at {spec.uri} ({_first_line(e)})") from e
        if desc is None:
            raise IndexLoadError(f"Milvus at {spec.uri} has no collection {spec.collection!r}: fill it with "
                                 f"python -m interactive_ir index export INDEX_DIR --store {spec}")
        vec = next((f for f in desc["fields"] if f["name"] == "vector"), None)
        dim = int((vec or {}).get("params", {}).get("dim", -1))
        if dim != self.width:
            raise IndexLoadError(f"collection {spec.collection!r} at {spec.uri} holds {dim}-d vectors but the index "
                                 f"rows are {self.width}-d: export this index into it again with "
                                 f"python -m interactive_ir index export INDEX_DIR --store {spec} (it is replaced)")
        try:
            self.client.load_collection(spec.collection)  # a reopened collection starts released
        except Exception as e:  # noqa: BLE001
            raise IndexLoadError(f"cannot load collection {spec.collection!r} at {spec.uri} ({_first_line(e)})") from e
        if count is not None:
            n = self._count()
            if n != count:
                raise IndexLoadError(f"collection {spec.collection!r} holds {n} rows, the index {count}: export "
                                     f"again with python -m interactive_ir index export INDEX_DIR --store {spec}")

    def _count(self) -> int:
        res = self.client.query(self.spec.collection, filter="", output_fields=["count(*)"])
        return int(res[0]["count(*)"])

    def search(self, q: np.ndarray, k: int, exclude_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flt = f"row not in [{','.join(str(int(r)) for r in exclude_rows)}]" if len(exclude_rows) else ""
        res = self.client.search(self.spec.collection, data=[np.asarray(q, np.float32).tolist()], limit=int(k),
                                 filter=flt, output_fields=["row"], search_params={"metric_type": "IP"})
        hits = res[0]
        return (np.array([h["distance"] for h in hits], np.float32), np.array([h["row"] for h in hits], np.int64))

    def fetch(self, rows: np.ndarray) -> np.ndarray:
        rows = [int(r) for r in np.asarray(rows).ravel()]
        if not rows:
            return np.zeros((0, self.width), np.float32)
        got = self.client.get(self.spec.collection, ids=sorted(set(rows)), output_fields=["vector"])
        by_row = {int(g["row"]): g["vector"] for g in got}
        missing = [r for r in rows if r not in by_row]
        if missing:
            raise IndexLoadError(f"collection {self.spec.collection!r} lacks row {missing[0]}: export the index again")
        return np.array([by_row[r] for r in rows], np.float32)


def open_store(spec: str, width: int, count: int | None = None) -> MilvusStore:
    return MilvusStore(parse_store(spec), width, count)


def export_index(index, spec: str, chunk: int = 10_000, progress=None) -> StoreSpec:
    """Copy an index's rows into a (new or replaced) collection; returns the parsed spec."""
    s = parse_store(spec)
    client = _client(s)
    width = index.dim * (2 if index.has_captions else 1)
    try:
        if client.has_collection(s.collection):
            client.drop_collection(s.collection)
        from pymilvus import DataType

        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("row", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=width)
        params = client.prepare_index_params()
        params.add_index(field_name="vector", index_type="FLAT" if s.lite else "AUTOINDEX", metric_type="IP")
        client.create_collection(s.collection, schema=schema, index_params=params, consistency_level="Strong")
        n = len(index)
        for a in range(0, n, chunk):
            rows = np.arange(a, min(n, a + chunk))
            vecs = index.row_vectors(rows)
            client.insert(s.collection, [{"row": int(r), "vector": v.tolist()} for r, v in zip(rows, vecs)])
            if progress:
                progress(min(n, a + chunk), n)
        client.flush(s.collection)
    except IndexLoadError:
        raise
    except Exception as e:  # noqa: BLE001
        raise IndexLoadError(f"exporting into {s} failed ({_first_line(e)})") from e
    return s
