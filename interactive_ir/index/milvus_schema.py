"""The scalar fields of an exported Milvus collection: the photo metadata beside each vector.

`index export DIR --store SPEC` writes one entity per index row: `row` (INT64 primary key), `vector`, and
the facts of the index folder's metadata store (`metadata.py`'s `records`, `info` and `fields` tables):

- facts as read: `path` (the image id), `date` (seconds since 1970, EXIF date taken else the file's time;
  null when unknown), `date_source`, `make`, `model`, `lat`, `lon` (null without GPS), `orientation`
  (EXIF 1..8, 0 when absent), `width`, `height`, `file_bytes`, `file_mtime`, `folder`;
- filter keys (`k_*`), derived so that a Milvus expression answers a filter exactly as the SQLite store
  does (`milvus_filters.py`): `k_camera` ("make model"), `k_folder`, `k_path`, `k_text` (captions, file
  name, camera and user values: what a quoted phrase matches), lowercased in ASCII like SQLite's LIKE and
  NOCASE, and `k_shape` (portrait, landscape, square or "" from the size and the EXIF rotation);
- user fields of the metadata file (`tags`, `album`, `person`, ...) as `u_<name>`: ARRAY<VARCHAR> of the
  row's values, lowercased in ASCII (empty when the image has none). ARRAY rather than JSON: one typed,
  bounded field per user field that the collection's schema names (so a search knows which fields a
  collection holds, and says so), matched with `array_contains`, and given an INVERTED index by a Milvus
  server (Milvus Lite refuses scalar indices on ARRAY fields; a JSON path index needs Milvus 2.5.11+).

Scalar indices (INVERTED, the one scalar index Milvus Lite builds) go on the fields filters read by equality
or range: `INDEXED`. A collection exported before these fields existed holds `row` and `vector` only;
`StoreFields.has_metadata` tells it apart, and its filters say to export again.
"""

from __future__ import annotations

import json
import sqlite3
import string
from collections.abc import Iterator
from dataclasses import dataclass

TEXT_MAX = 65_535  # bytes: the longest VARCHAR Milvus stores (a longer value is cut at a character boundary)
VALUE_MAX = 512  # bytes of one user-field value (the metadata reader keeps 120 characters)
USER_FIELDS_MAX = 32  # user fields exported, the commonest first (Milvus allows 64 fields per collection)
ARRAY_MAX = 4096  # values of one user field per image (Milvus's largest ARRAY capacity)
USER_PREFIX = "u_"
KEY_FIELDS = ("k_camera", "k_folder", "k_path", "k_text", "k_shape")  # what the filters read
INDEXED = ("date", "k_folder", "k_camera", "k_path", "k_shape", "file_mtime")  # INVERTED scalar indices

# (name, type, extra schema arguments); VARCHAR fields get max_length TEXT_MAX unless given
SCALARS = (
    ("path", "VARCHAR", {}), ("date", "DOUBLE", {"nullable": True}), ("date_source", "VARCHAR", {"max_length": 16}),
    ("make", "VARCHAR", {"max_length": VALUE_MAX}), ("model", "VARCHAR", {"max_length": VALUE_MAX}),
    ("lat", "DOUBLE", {"nullable": True}), ("lon", "DOUBLE", {"nullable": True}),
    ("orientation", "INT32", {}), ("width", "INT32", {}), ("height", "INT32", {}),
    ("file_bytes", "INT64", {}), ("file_mtime", "DOUBLE", {}), ("folder", "VARCHAR", {}),
    ("k_camera", "VARCHAR", {"max_length": 2 * VALUE_MAX}), ("k_folder", "VARCHAR", {}), ("k_path", "VARCHAR", {}),
    ("k_text", "VARCHAR", {}), ("k_shape", "VARCHAR", {"max_length": 16}),
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def fold(s: str) -> str:
    """`s` lowercased in ASCII only, as SQLite's LIKE and NOCASE compare (so Milvus and SQLite agree)."""
    return str(s or "").translate(_ASCII_LOWER)


def cut(s: str, limit: int = TEXT_MAX) -> str:
    """`s` cut to at most `limit` UTF-8 bytes, at a character boundary."""
    b = s.encode("utf-8", "replace")
    return s if len(b) <= limit else b[:limit].decode("utf-8", "ignore")


def shape(width: int, height: int, orientation: int) -> str:
    """portrait, landscape or square as shown (EXIF orientations 5-8 turn the image), "" without a size."""
    if not width or width <= 0:
        return ""
    w, h = (height, width) if 5 <= (orientation or 0) <= 8 else (width, height)
    return "portrait" if w < h else "landscape" if w > h else "square"


@dataclass(frozen=True)
class UserField:
    name: str  # the field's name in the metadata store (tags, album, ...)
    capacity: int  # the most values one image holds (the ARRAY's max_capacity)

    @property
    def column(self) -> str:
        return USER_PREFIX + self.name


@dataclass(frozen=True)
class StoreFields:
    """Which scalar fields a collection holds (from its schema)."""

    names: frozenset[str]  # every field name
    user: tuple[str, ...]  # user fields (without the u_ prefix), sorted

    @property
    def has_metadata(self) -> bool:
        return set(KEY_FIELDS) <= self.names

    @classmethod
    def of(cls, description: dict) -> StoreFields:
        names = frozenset(f["name"] for f in description.get("fields", ()))
        return cls(names, tuple(sorted(n[len(USER_PREFIX):] for n in names if n.startswith(USER_PREFIX))))


def user_fields(db: sqlite3.Connection) -> tuple[list[UserField], list[str]]:
    """(the user fields to export, the commonest USER_FIELDS_MAX; the names of those left out)."""
    got = db.execute("SELECT field, max(n), sum(n) FROM (SELECT row, field, count(*) AS n FROM fields "
                     "GROUP BY row, field) GROUP BY field ORDER BY sum(n) DESC, field").fetchall()
    keep = [UserField(f, max(1, min(ARRAY_MAX, int(cap)))) for f, cap, _ in got[:USER_FIELDS_MAX]]
    return sorted(keep, key=lambda u: u.name), [f for f, _, _ in got[USER_FIELDS_MAX:]]


def add_fields(schema, data_type, users: list[UserField]) -> None:
    """Add the scalar fields (SCALARS, then one ARRAY per user field) to a pymilvus schema."""
    for name, typ, extra in SCALARS:
        kw = dict(extra)
        if typ == "VARCHAR":
            kw.setdefault("max_length", TEXT_MAX)
        schema.add_field(name, getattr(data_type, typ), **kw)
    for u in users:
        schema.add_field(u.column, data_type.ARRAY, element_type=data_type.VARCHAR, max_capacity=u.capacity,
                         max_length=VALUE_MAX)


_ROWS = ("SELECT r.row, r.id, r.captions, r.width, r.height, r.bytes, r.mtime, i.date, i.date_source, i.make, "
         "i.model, i.lat, i.lon, i.orientation, i.folder FROM records r LEFT JOIN info i ON i.row = r.row "
         "WHERE r.row >= ? AND r.row < ? ORDER BY r.row")


def entities(db: sqlite3.Connection, n: int, users: list[UserField], chunk: int) -> Iterator[list[dict]]:
    """The scalar values of rows 0..n-1, `chunk` rows at a time, as Milvus entities (without `vector`)."""
    values = db.execute("SELECT row, field, value FROM fields ORDER BY row")  # every field: phrases match them all
    pending = next(values, None)
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        mine: dict[int, dict[str, list[str]]] = {}
        while pending is not None and pending[0] < b:
            got = mine.setdefault(pending[0], {}).setdefault(pending[1], [])
            v = cut(fold(pending[2]), VALUE_MAX)
            if v not in got:
                got.append(v)
            pending = next(values, None)
        out = [_entity(r, mine.get(r[0], {}), users) for r in db.execute(_ROWS, (a, b))]
        yield out


def _entity(r: tuple, fields: dict[str, list[str]], users: list[UserField]) -> dict:
    row, pid, caps, width, height, size, mtime, date, source, make, model, lat, lon, orient, folder = r
    make, model, folder = make or "", model or "", folder or ""
    vals = [v for got in fields.values() for v in got]
    e = {"row": int(row), "path": cut(pid), "date": None if date is None else float(date),
         "date_source": source or "", "make": cut(make, VALUE_MAX), "model": cut(model, VALUE_MAX),
         "lat": None if lat is None else float(lat), "lon": None if lon is None else float(lon),
         "orientation": int(orient or 0), "width": int(width or 0), "height": int(height or 0),
         "file_bytes": int(size or 0), "file_mtime": float(mtime or 0.0), "folder": cut(folder),
         "k_camera": cut(fold(f"{make} {model}"), 2 * VALUE_MAX), "k_folder": cut(fold(folder)),
         "k_path": cut(fold(pid)), "k_shape": shape(int(width or 0), int(height or 0), int(orient or 0)),
         "k_text": cut(fold("\n".join([caps if isinstance(caps, str) else json.dumps(caps), pid, make, model, *vals])))}
    for u in users:
        e[u.column] = fields.get(u.name, [])[: u.capacity]
    return e
