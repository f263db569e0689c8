"""Where an index's vectors live: the index folder (faiss, memory-mapped) or a Milvus collection.

One small interface, `VectorStore`: search rows (with rows excluded), fetch rows' vectors. Metadata
(ids, captions, paths) always comes from the index folder's `metadata.sqlite`. The retriever searches
through `index.store` when one is attached and `index.vectors()` fetches from it, so the engine's modes
(conversation, feedback, composition) never know where the vectors are.

Store specs:
- `milvus://HOST:PORT/COLLECTION`: a Milvus server or cluster (standalone or distributed);
- `milvus-lite:PATH.db` (or `milvus-lite:PATH.db#COLLECTION`): Milvus Lite, embedded, one file.
The collection holds one entity per index row: `row` (INT64 primary key), `vector` ([image | caption],
float32, inner product) and the photo metadata as scalar fields (`milvus_schema.py`). `index export DIR
--store SPEC` fills it from an index: into a new collection, which replaces the old one only once complete.
A search with filters sends them as a Milvus boolean expression (`milvus_filters.py`); a collection exported
before the scalar fields existed answers plain searches, and its filters say to export it again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from interactive_ir.errors import BackendUnavailable, BadInputError, IndexLoadError, QueryError
from interactive_ir.index import milvus_schema as ms

log = logging.getLogger(__name__)

DEFAULT_COLLECTION = "images"
TIMEOUT_S = 10.0  # seconds before an unreachable Milvus is reported


class VectorStore(Protocol):
    """What the retriever needs from a place that holds vectors."""

    width: int  # row width: dim, or 2*dim with caption vectors

    def search(self, q: np.ndarray, k: int, exclude_rows: np.ndarray, where: str = "") -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of the k best rows by inner product with q, best first, excluded rows skipped; with
        `where` (a store expression, `where_of`), only rows it holds for."""

    def where_of(self, filters, index_dir: Path | str = "INDEX_DIR") -> str:
        """The store's expression of a query's filters; QueryError when the store cannot filter on them."""

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
        self.fields = ms.StoreFields.of(desc)
        if count is not None:
            n = self._count()
            if n != count:
                raise IndexLoadError(f"collection {spec.collection!r} holds {n} rows, the index {count}: export "
                                     f"again with python -m interactive_ir index export INDEX_DIR --store {spec}")

    def _count(self) -> int:
        res = self.client.query(self.spec.collection, filter="", output_fields=["count(*)"])
        return int(res[0]["count(*)"])

    def where_of(self, filters, index_dir: Path | str = "INDEX_DIR") -> str:
        from interactive_ir.index.milvus_filters import expression

        filters = list(filters)
        if filters and not self.fields.has_metadata:
            raise QueryError(f"the Milvus collection {self.spec} holds no photo metadata (exported before it went "
                             f"with the vectors), so it cannot filter {filters[0].label()!r}: export it again with "
                             f"python -m interactive_ir index export {index_dir} --store {self.spec} "
                             "(plain searches work meanwhile)")
        return expression(filters, self.fields)

    def search(self, q: np.ndarray, k: int, exclude_rows: np.ndarray, where: str = "") -> tuple[np.ndarray, np.ndarray]:
        ex = f"row not in [{','.join(str(int(r)) for r in exclude_rows)}]" if len(exclude_rows) else ""
        flt = " and ".join(f"({p})" for p in (where, ex) if p) if where and ex else where or ex
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


@dataclass(frozen=True)
class ExportReport:
    spec: StoreSpec  # where the rows went
    rows: int  # entities written
    metadata: bool  # True: the photo metadata went too (scalar fields); False: the index has none (built before it)
    user_fields: tuple[str, ...] = ()  # user fields exported as u_<name> arrays
    left_out: tuple[str, ...] = ()  # user fields beyond milvus_schema.USER_FIELDS_MAX, not exported
    unindexed: tuple[str, ...] = field(default=())  # scalar fields whose index the server refused (searched unindexed)


def export_index(index, spec: str, chunk: int = 10_000, progress=None) -> ExportReport:
    """Copy an index's rows and metadata into a new collection that replaces any of that name once complete
    (a failed export leaves the old collection as it was)."""
    s = parse_store(spec)
    client = _client(s)
    db = index.meta.sql()
    from interactive_ir.index.filters import has_info

    meta = db is not None and has_info(db)
    users, left_out = ms.user_fields(db) if meta else ([], [])
    tmp = f"{s.collection}__export"
    try:
        if client.has_collection(tmp):
            client.drop_collection(tmp)
        unindexed = _create(client, s, tmp, index.dim * (2 if index.has_captions else 1), meta, users)
        _fill(client, tmp, index, db if meta else None, users, chunk, progress)
        if client.has_collection(s.collection):
            client.drop_collection(s.collection)
        client.rename_collection(tmp, s.collection)
    except Exception as e:  # noqa: BLE001 - pymilvus raises MilvusException and grpc errors alike
        try:
            if client.has_collection(tmp):
                client.drop_collection(tmp)
        except Exception:  # noqa: BLE001 - the first error is the one to report
            log.warning("could not drop the half-written collection %s", tmp)
        raise IndexLoadError(f"exporting into {s} failed ({_first_line(e)})") from e
    return ExportReport(s, len(index), meta, tuple(u.name for u in users), tuple(left_out), tuple(unindexed))


def _create(client, s: StoreSpec, name: str, width: int, meta: bool, users) -> list[str]:
    """Create the collection (vector index, and scalar indices where Milvus builds them); the fields whose
    scalar index a server refused."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=width)
    if meta:
        ms.add_fields(schema, DataType, users)
    params = client.prepare_index_params()
    params.add_index(field_name="vector", index_type="FLAT" if s.lite else "AUTOINDEX", metric_type="IP")
    for f in ms.INDEXED if meta else ():
        params.add_index(field_name=f, index_type="INVERTED")
    client.create_collection(name, schema=schema, index_params=params, consistency_level="Strong")
    refused = []
    for u in users if not s.lite else ():  # Milvus Lite builds no scalar index on ARRAY fields; a server does
        p = client.prepare_index_params()
        p.add_index(field_name=u.column, index_type="INVERTED")
        try:
            client.create_index(name, p)
        except Exception as e:  # noqa: BLE001 - an older server: the field is searched without an index
            log.warning("Milvus refused an index on %s (%s): it is searched without one", u.column, _first_line(e))
            refused.append(u.column)
    return refused


def _fill(client, name: str, index, db, users, chunk: int, progress) -> None:
    n = len(index)
    scalars = ms.entities(db, n, users, chunk) if db is not None else None
    for a in range(0, n, chunk):
        rows = np.arange(a, min(n, a + chunk))
        vecs = index.row_vectors(rows)
        extra = next(scalars) if scalars is not None else [{"row": int(r)} for r in rows]
        if len(extra) != len(rows) or extra[0]["row"] != a:
            raise IndexLoadError(f"the metadata of rows {a}..{rows[-1]} is incomplete: run index verify on the index")
        client.insert(name, [{**e, "vector": v.tolist()} for e, v in zip(extra, vecs)])
        if progress:
            progress(min(n, a + chunk), n)
    client.flush(name)
