"""Filters over an index's metadata: which rows a query's `date:`, `folder:`, `camera:`, `tag:`, ... and
quoted phrases allow, as one SQL query over the metadata store (`metadata.py`'s `records`, `info` and
`fields` tables, each filtered column indexed).

`allowed_rows(meta, filters)` returns the sorted rows that pass every filter (`FilteredRows`: they keep the
filters too); the retriever masks its top-k with them (`retrieval/retriever.py`), and a Milvus store searches
with the same filters written as a Milvus expression (`milvus_filters.py`). An index built before the `info`
table existed has no metadata: a filter on it raises QueryError saying so and how to rebuild; so does a field
the index holds no value of (`camera:` on photos without EXIF).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from interactive_ir.errors import QueryError

BUILT_IN = ("date", "folder", "camera", "orientation", "file")  # fields every new index has; others are user fields
ORIENTATIONS = ("portrait", "landscape", "square")


@dataclass(frozen=True)
class Filter:
    """One condition on an image's metadata."""

    field: str  # one of BUILT_IN, "phrase" (a quoted exact phrase), or a user field of the metadata file (tag, album, ...)
    value: str = ""  # the text to match, case-insensitive ("" for a date range)
    lo: float | None = None  # date: first second allowed (since 1970, the photos' wall-clock time), None: open
    hi: float | None = None  # date: first second no longer allowed, None: open
    negate: bool = False  # True: rows that do NOT match (`-tag:work`)
    token: str = ""  # the filter as typed, for messages and chips

    def label(self) -> str:
        return self.token or (f'"{self.value}"' if self.field == "phrase" else f"{self.field}:{self.value}")


class FilteredRows(np.ndarray):
    """Sorted int64 rows that a query's filters allow, with the filters themselves (`.filters`): a Milvus
    store searches by the filters (a boolean expression), every other path by the rows. An array derived
    from it (a slice, a difference) is plain rows: it no longer stands for the filters."""

    filters: tuple[Filter, ...] = ()
    bits: np.ndarray | None = None  # the rows as a bitmap, built by the first ID-selector search (`scoped_search`)

    def __new__(cls, rows, filters) -> FilteredRows:
        obj = np.asarray(rows, dtype=np.int64).view(cls)
        obj.filters = tuple(filters)
        return obj

    def __array_finalize__(self, obj) -> None:
        self.filters, self.bits = (), None


def _like(v: str) -> str:
    return v.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def has_info(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'info'").fetchone() is not None


def user_field_names(db: sqlite3.Connection) -> list[str]:
    """The user fields this index holds values of (from its metadata file), sorted."""
    return [r[0] for r in db.execute("SELECT DISTINCT field FROM fields ORDER BY field")]


def _user_field(db: sqlite3.Connection, f: Filter) -> str:
    """The stored name of a user field (`tag:` finds `tags`, `person:` finds `people`); QueryError if absent."""
    return resolve_user_field(user_field_names(db), f)


def resolve_user_field(names, f: Filter) -> str:
    """The one of `names` (the user fields a store holds) that filter `f` means; QueryError naming them if none."""
    names = list(names)
    for cand in (f.field, f.field + "s", {"person": "people", "people": "person"}.get(f.field, ""),
                 f.field[:-1] if f.field.endswith("s") else ""):
        if cand and cand in names:
            return cand
    known = ", ".join([*BUILT_IN, *names])
    raise QueryError(f"unknown field in {f.label()!r}: this index has {known}")


def _condition(db: sqlite3.Connection, f: Filter) -> tuple[str, list]:
    """(SQL condition over `records r LEFT JOIN info i`, its parameters) for one filter."""
    v = f.value
    if f.field == "date":
        parts, args = [], []
        if f.lo is not None:
            parts.append("i.date >= ?")
            args.append(f.lo)
        if f.hi is not None:
            parts.append("i.date < ?")
            args.append(f.hi)
        return ("(" + " AND ".join(parts) + ")" if parts else "i.date IS NOT NULL"), args
    if f.field == "folder":
        e = _like(v.strip("/"))
        return ("(i.folder LIKE ? ESCAPE '\\' OR i.folder LIKE ? ESCAPE '\\' OR i.folder LIKE ? ESCAPE '\\' "
                "OR i.folder LIKE ? ESCAPE '\\')"), [e, e + "/%", "%/" + e, "%/" + e + "/%"]
    if f.field == "camera":
        e = "%" + _like(v) + "%"
        return "(i.make LIKE ? ESCAPE '\\' OR i.model LIKE ? ESCAPE '\\' OR (i.make || ' ' || i.model) LIKE ? ESCAPE '\\')", [e, e, e]
    if f.field == "orientation":
        w = "(CASE WHEN i.orientation BETWEEN 5 AND 8 THEN r.height ELSE r.width END)"
        h = "(CASE WHEN i.orientation BETWEEN 5 AND 8 THEN r.width ELSE r.height END)"
        op = {"portrait": "<", "landscape": ">", "square": "="}[v]
        return f"(r.width > 0 AND {w} {op} {h})", []
    if f.field == "file":
        return "r.id LIKE ? ESCAPE '\\'", ["%" + _like(v) + "%"]
    if f.field == "phrase":
        e = "%" + _like(v) + "%"
        return ("(r.captions LIKE ? ESCAPE '\\' OR r.id LIKE ? ESCAPE '\\' OR i.make LIKE ? ESCAPE '\\' "
                "OR i.model LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM fields f WHERE f.row = r.row "
                "AND f.value LIKE ? ESCAPE '\\'))"), [e, e, e, e, e]
    name = _user_field(db, f)
    return ("EXISTS (SELECT 1 FROM fields f WHERE f.row = r.row AND f.field = ? AND f.value = ? COLLATE NOCASE)",
            [name, v])


_HAS_DATA = {  # a field whose values no image holds cannot filter: say so instead of matching nothing
    "date": "SELECT 1 FROM info WHERE date IS NOT NULL LIMIT 1",
    "camera": "SELECT 1 FROM info WHERE make != '' OR model != '' LIMIT 1",
    "orientation": "SELECT 1 FROM records WHERE width > 0 LIMIT 1",
}
_NO_DATA = {"date": "no dates (no EXIF date and no file time)", "camera": "no camera make or model (no EXIF)",
            "orientation": "no image sizes (a caption-only collection)"}


def allowed_rows(db: sqlite3.Connection | None, filters, hint: str = "") -> FilteredRows | None:
    """Sorted int64 rows passing every filter (None: no filter), carrying the filters. QueryError when the index cannot answer one:
    no metadata tables (built before them; `hint` is the rebuild command), or no value of that field."""
    filters = list(filters or ())
    if not filters:
        return None
    if db is None or not has_info(db):
        raise QueryError(f"this index has no metadata to filter {filters[0].label()!r} on (it was built before "
                         f"photo metadata was read at index time); rebuild it{': ' + hint if hint else ''}")
    where, args = [], []
    for f in filters:
        if f.field in _HAS_DATA and db.execute(_HAS_DATA[f.field]).fetchone() is None:
            raise QueryError(f"{f.label()!r}: this index has {_NO_DATA[f.field]}")
        cond, a = _condition(db, f)
        where.append(f"NOT {cond}" if f.negate else cond)
        args += a
    sql = f"SELECT r.row FROM records r LEFT JOIN info i ON i.row = r.row WHERE {' AND '.join(where)} ORDER BY r.row"
    rows = np.fromiter((r[0] for r in db.execute(sql, args)), dtype=np.int64)
    return FilteredRows(rows, filters)


def facets(db: sqlite3.Connection | None, rows: np.ndarray | None = None, top: int = 8) -> dict[str, list[tuple[str, int]]]:
    """The commonest values of folder, camera, year and each user field, with counts (over `rows` when given):
    what the page's filter row offers. {} for an index without metadata."""
    if db is None or not has_info(db):
        return {}
    scope, args = _scope(db, rows), []
    q = {
        "year": "SELECT strftime('%Y', date, 'unixepoch') AS v, count(*) AS n FROM info WHERE date IS NOT NULL"
                f"{scope} GROUP BY v ORDER BY v",
        "folder": f"SELECT folder, count(*) AS n FROM info WHERE folder != ''{scope} GROUP BY folder ORDER BY n DESC, folder LIMIT {top}",
        "camera": f"SELECT trim(make || ' ' || model), count(*) AS n FROM info WHERE (make != '' OR model != ''){scope} "
                  f"GROUP BY make, model ORDER BY n DESC LIMIT {top}",
    }
    out = {k: [(str(v), int(n)) for v, n in db.execute(sql, args)] for k, sql in q.items()}
    for name in user_field_names(db):
        out[name] = [(str(v), int(n)) for v, n in db.execute(
            f"SELECT value, count(*) AS n FROM fields WHERE field = ?{scope} GROUP BY value COLLATE NOCASE "
            f"ORDER BY n DESC, value LIMIT {top}", [name])]
    return {k: v for k, v in out.items() if v}


def _scope(db: sqlite3.Connection, rows: np.ndarray | None) -> str:
    """A condition keeping `rows` only ("" for every row), through this connection's temporary `scope` table."""
    if rows is None:
        return ""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS scope (row INTEGER PRIMARY KEY)")
    db.execute("DELETE FROM scope")
    db.executemany("INSERT INTO scope VALUES (?)", ((int(r),) for r in rows))
    return " AND row IN (SELECT row FROM scope)"


def date_counts(db: sqlite3.Connection | None, rows: np.ndarray | None = None) -> tuple[str, list[tuple[str, int]]]:
    """How many images (of `rows`, default all) were taken in each year, oldest first, or in each month
    ("2019-07") when they span two years or fewer: ("year" or "month", [(label, count), ...]). Images without
    a date are not counted; ("", []) for an index without metadata or without dates."""
    if db is None or not has_info(db):
        return "", []
    scope = _scope(db, rows)
    out = {}
    for unit, fmt in (("year", "%Y"), ("month", "%Y-%m")):
        out[unit] = [(str(v), int(n)) for v, n in db.execute(
            f"SELECT strftime('{fmt}', date, 'unixepoch') AS v, count(*) FROM info WHERE date IS NOT NULL{scope} "
            "GROUP BY v ORDER BY v")]
        if unit == "year" and len(out[unit]) > 2:
            return "year", out[unit]
    return ("month", out["month"]) if out["month"] else ("", [])


def dates_of(db: sqlite3.Connection | None, rows) -> dict[int, float]:
    """row -> date (seconds since 1970: EXIF date taken, else the file's time) of those of `rows` that have one."""
    rows = [int(r) for r in rows]
    if db is None or not rows or not has_info(db):
        return {}
    got: dict[int, float] = {}
    for a in range(0, len(rows), 900):  # SQLite's limit on bound parameters
        part = rows[a : a + 900]
        got.update((int(r), float(d)) for r, d in db.execute(
            f"SELECT row, date FROM info WHERE date IS NOT NULL AND row IN ({','.join('?' * len(part))})", part))
    return got
