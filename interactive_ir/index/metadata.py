"""Per-image metadata of an index: a SQLite table read lazily, row by row.

`metadata.sqlite` holds one table, `records(row, id, captions, width, height, bytes, mtime)`, with a
unique index on `id`. Nothing is read at open: `records[row]`, `row_of.get(id)` and `ids[row]` are one
indexed SQL lookup each (a few microseconds), so a 10M-image index opens in milliseconds and holds no
Python object per image. Indices of format 1 (`metadata.jsonl`) are read whole into lists, as before.

The views (`Records`, `RowOf`, `Ids`) behave like the list / dict / list the engine used before.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from interactive_ir.errors import IndexLoadError
from interactive_ir.index.photo_info import PhotoInfo, folder_of

SQLITE_NAME = "metadata.sqlite"
ROW_CACHE = 200_000  # ids whose rows a SQLite index remembers (about 30 MB at most)
JSONL_NAME = "metadata.jsonl"
_FIELDS = ("id", "captions", "width", "height", "bytes", "mtime")


@dataclass
class IndexRecord:
    """Metadata of one indexed image."""

    id: str  # path relative to the image root, posix separators: the image's stable id
    captions: list[str] = field(default_factory=list)  # human or generated captions, may be empty
    width: int = 0  # pixels, 0 when unknown (caption-only collections)
    height: int = 0
    bytes: int = 0  # file size when indexed (with mtime, detects changed files on update)
    mtime: float = 0.0
    info: PhotoInfo | None = field(default=None, compare=False)  # EXIF, folder and user fields, written to the
    #                       `info` / `fields` tables at build (None: the folder and mtime only); not read back per row

    @property
    def caption(self) -> str:
        return self.captions[0] if self.captions else ""


def unsafe_id_reason(image_id: str) -> str | None:
    """Why an id may not name a file under the image root (absolute, climbing out, ...), or None."""
    if not isinstance(image_id, str) or not image_id:
        return "is empty"
    if "\x00" in image_id:
        return "contains a NUL character"
    if "\\" in image_id:
        return "contains a backslash (ids use / separators)"
    if image_id[0] == "/" or (len(image_id) > 1 and image_id[1] == ":"):
        return "is an absolute path"
    if ".." in image_id and ".." in image_id.split("/"):  # string checks only: called for every shown hit
        return "climbs out of the image root (..)"
    return None


# --- reading ---------------------------------------------------------------------------------------
class SqliteMetadata:
    """Read-only access to `metadata.sqlite`; one connection per thread, opened on first use."""

    def __init__(self, path: Path, count: int):
        self.path = Path(path)
        self.count = int(count)
        self._local = threading.local()
        self.record = lru_cache(maxsize=4096)(self._record)  # shown images are asked for again and again
        self._rows: dict[str, int] = {}  # id -> row of ids asked for before (a session's shown images, again each turn)
        self._rows_lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            # immutable: the file is never edited in place (a rebuild replaces the folder), so no locking
            db = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
            self._local.db = db
        return db

    def sql(self) -> sqlite3.Connection:
        """This thread's read-only connection (the filters' queries, `filters.py`)."""
        return self._db()

    def check(self, hint: str, scan_ids: bool = True) -> None:
        """Table present, row count as promised; with `scan_ids`, no unsafe id (one SQL scan over every id;
        large indices skip it at load: their ids were checked at build, by `index verify`, and again
        whenever a file is opened)."""
        db = self._db()
        try:
            if scan_ids:
                n, lo, hi = db.execute("SELECT count(*), min(row), max(row) FROM records").fetchone()
            else:  # O(1) on the integer primary key; rows are unique, so 0..count-1 means count rows. Two
                #    subqueries: SQLite answers a lone min() or max() from the b-tree's ends, but scans every
                #    row for "SELECT min(row), max(row)" (1.2 s at 10M rows)
                lo, hi = db.execute("SELECT (SELECT min(row) FROM records), (SELECT max(row) FROM records)").fetchone()
                n = 0 if hi is None else (hi + 1 if lo == 0 else -1)
            bad = None if not scan_ids else db.execute(
                "SELECT row, id FROM records WHERE id = '' OR id LIKE '/%' OR id = '..' OR id LIKE '../%' "
                "OR id LIKE '%/../%' OR id LIKE '%/..' OR instr(id, char(92)) > 0 OR id GLOB '[A-Za-z]:*' "
                "OR instr(id, char(0)) > 0 LIMIT 1").fetchone()
        except sqlite3.DatabaseError as e:
            raise IndexLoadError(f"{self.path} is not a readable metadata table ({e}); rebuild: {hint}") from e
        if n != self.count or (n and (lo, hi) != (0, n - 1)):
            raise IndexLoadError(f"{self.path} has {n} rows (rows {lo}..{hi}) but the manifest says {self.count}; "
                                 f"rebuild: {hint}")
        if bad:
            raise IndexLoadError(f"{self.path} row {bad[0]}: id {bad[1]!r} {unsafe_id_reason(bad[1]) or 'is unsafe'}; "
                                 f"ids must be paths inside the image root: rebuild: {hint}")
        if scan_ids:
            self._check_captions(db, hint)

    def _check_captions(self, db, hint: str) -> None:
        """Every row's captions a JSON list (one SQL scan with SQLite's JSON functions)."""
        try:
            bad = db.execute("SELECT row FROM records WHERE NOT json_valid(captions) OR json_type(captions) != 'array' "
                             "LIMIT 1").fetchone()
        except sqlite3.OperationalError:  # an SQLite without JSON functions: rows are checked as they are read
            return
        if bad:
            raise IndexLoadError(f"{self.path} row {bad[0]}: its captions are not a JSON list; rebuild: {hint}")

    def _record(self, row: int) -> IndexRecord:
        r = self._db().execute("SELECT id, captions, width, height, bytes, mtime FROM records WHERE row = ?",
                               (row,)).fetchone()
        if r is None:
            raise IndexError(f"row {row} is not in the index ({self.count} rows)")
        self._remember({r[0]: row})
        return IndexRecord(r[0], self._captions(r[1], row), r[2], r[3], r[4], r[5])

    def _captions(self, text, row: int) -> list[str]:
        try:
            caps = json.loads(text)
        except (TypeError, ValueError):
            caps = None
        if not isinstance(caps, list):
            raise IndexLoadError(f"{self.path} row {row}: its captions are not a JSON list; rebuild the index")
        return [c for c in caps if isinstance(c, str)]

    def _remember(self, rows: dict[str, int]) -> None:
        """Keep id -> row pairs just read: a shown image's id comes back as an exclusion of the next search."""
        with self._rows_lock:
            if len(self._rows) + len(rows) > ROW_CACHE:  # bounded: a long-running server forgets and looks up again
                self._rows.clear()
            self._rows.update(rows)

    def records_many(self, rows) -> list[IndexRecord]:
        """Records of many rows in one query (search hits), in the order asked."""
        rows = [int(r) for r in rows]
        got: dict[int, IndexRecord] = {}
        db = self._db()
        for a in range(0, len(rows), 900):  # SQLite's limit on bound parameters
            part = rows[a : a + 900]
            q = f"SELECT row, id, captions, width, height, bytes, mtime FROM records WHERE row IN ({','.join('?' * len(part))})"
            for r in db.execute(q, part):
                got[r[0]] = IndexRecord(r[1], self._captions(r[2], r[0]), r[3], r[4], r[5], r[6])
        missing = [r for r in rows if r not in got]
        if missing:
            raise IndexError(f"row {missing[0]} is not in the index ({self.count} rows)")
        self._remember({rec.id: r for r, rec in got.items()})
        return [got[r] for r in rows]

    def row(self, image_id: str) -> int | None:
        if not isinstance(image_id, str):
            return None
        return self.rows_many([image_id]).get(image_id)

    def rows_many(self, ids) -> dict[str, int]:
        """id -> row of the given ids that are in the index, in one query per 900 ids not looked up before."""
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
        got = {i: self._rows[i] for i in ids if i in self._rows}
        todo = [i for i in ids if i not in got]
        db = self._db()
        for a in range(0, len(todo), 900):  # SQLite's limit on bound parameters
            part = todo[a : a + 900]
            for image_id, row in db.execute(f"SELECT id, row FROM records WHERE id IN ({','.join('?' * len(part))})", part):
                got[image_id] = int(row)
        if todo:
            self._remember({i: got[i] for i in todo if i in got})
        return got

    def id_of(self, row: int) -> str:
        return self.record(row).id

    def iter_records(self, chunk: int = 10_000) -> Iterator[IndexRecord]:
        for start in range(0, self.count, chunk):
            cur = self._db().execute("SELECT id, captions, width, height, bytes, mtime FROM records "
                                     "WHERE row >= ? AND row < ? ORDER BY row", (start, start + chunk))
            for n, r in enumerate(cur, start):
                yield IndexRecord(r[0], self._captions(r[1], n), r[2], r[3], r[4], r[5])

    def iter_ids(self, chunk: int = 50_000) -> Iterator[str]:
        for start in range(0, self.count, chunk):
            yield from (r[0] for r in self._db().execute(
                "SELECT id FROM records WHERE row >= ? AND row < ? ORDER BY row", (start, start + chunk)))


class MemoryMetadata:
    """Metadata held in lists (format-1 indices, and indices built in tests by hand)."""

    def __init__(self, records: list[IndexRecord]):
        self.records_list = records
        self.count = len(records)
        self.ids_list = [r.id for r in records]
        self.rows = {r.id: i for i, r in enumerate(records)}

    def record(self, row: int) -> IndexRecord:
        return self.records_list[row]

    def sql(self) -> None:
        """No SQL store: filters say this index has no metadata."""
        return None

    def records_many(self, rows) -> list[IndexRecord]:
        return [self.records_list[int(r)] for r in rows]

    def row(self, image_id: str) -> int | None:
        return self.rows.get(image_id) if isinstance(image_id, str) else None

    def rows_many(self, ids) -> dict[str, int]:
        return {i: self.rows[i] for i in ids if isinstance(i, str) and i in self.rows}

    def id_of(self, row: int) -> str:
        return self.ids_list[row]

    def iter_records(self) -> Iterator[IndexRecord]:
        return iter(self.records_list)

    def iter_ids(self) -> Iterator[str]:
        return iter(self.ids_list)


def read_jsonl(path: Path, count: int, hint: str) -> MemoryMetadata:
    """Parse a format-1 `metadata.jsonl`, every line checked; errors name the file, the line and the fix."""
    records = []
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise IndexLoadError(f"cannot read {path} ({e.strerror}); rebuild: {hint}") from e
    with fh:
        try:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                records.append(_parse_line(line, path, n, hint))
        except UnicodeDecodeError as e:
            raise IndexLoadError(f"{path} is not UTF-8 text ({e.reason}); rebuild: {hint}") from e
    if len(records) != count:
        raise IndexLoadError(f"index {path.parent}: metadata has {len(records)} rows but the manifest says "
                             f"{count}; rebuild: {hint}")
    return MemoryMetadata(records)


def _parse_line(line: str, path: Path, n: int, hint: str) -> IndexRecord:
    where = f"{path} line {n}"
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise IndexLoadError(f"{where} is not JSON ({e.msg}); rebuild: {hint}") from e
    if not isinstance(d, dict):
        raise IndexLoadError(f"{where} is not a JSON object; rebuild: {hint}")
    if not isinstance(d.get("id"), str):
        raise IndexLoadError(f"{where} has no \"id\" string; rebuild: {hint}")
    caps = d.get("captions", [])
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise IndexLoadError(f"{where}: \"captions\" must be a list of strings; rebuild: {hint}")
    for k in ("width", "height", "bytes", "mtime"):
        if k in d and (isinstance(d[k], bool) or not isinstance(d[k], (int, float))):
            raise IndexLoadError(f"{where}: \"{k}\" must be a number; rebuild: {hint}")
    why = unsafe_id_reason(d["id"])
    if why:
        raise IndexLoadError(f"{where}: id {d['id']!r} {why}; ids must be paths inside the image root: rebuild: {hint}")
    return IndexRecord(d["id"], list(caps), int(d.get("width", 0)), int(d.get("height", 0)), int(d.get("bytes", 0)),
                       float(d.get("mtime", 0.0)))


# --- writing ---------------------------------------------------------------------------------------
class SqliteMetadataWriter:
    """Appends records in row order to a new `metadata.sqlite`; duplicated ids are refused."""

    def __init__(self, path: Path, resume: bool = False):
        self.path = Path(path)
        self.db = sqlite3.connect(str(self.path), isolation_level=None)  # transactions managed here
        self.db.execute("PRAGMA journal_mode=MEMORY")  # rollback of a bad chunk works, no journal file
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("CREATE TABLE IF NOT EXISTS records (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
                        "captions TEXT NOT NULL, width INTEGER, height INTEGER, bytes INTEGER, mtime REAL)")
        self.db.executescript(INFO_SCHEMA)
        self.count = self.db.execute("SELECT count(*) FROM records").fetchone()[0] if resume else 0
        self.db.execute("BEGIN")

    def truncate(self, rows: int) -> None:
        """Drop rows >= `rows` (a resumed build restarts from its last complete chunk)."""
        self.db.execute("DELETE FROM records WHERE row >= ?", (rows,))
        self.db.execute("DELETE FROM info WHERE row >= ?", (rows,))
        self.db.execute("DELETE FROM fields WHERE row >= ?", (rows,))
        self.commit()
        self.count = rows

    def add(self, records: Sequence[IndexRecord]) -> None:
        rows = [(self.count + i, r.id, json.dumps(r.captions, ensure_ascii=False), r.width, r.height, r.bytes, r.mtime)
                for i, r in enumerate(records)]
        self.db.execute("SAVEPOINT chunk")
        try:
            self.db.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            infos = [_info_of(r) for r in records]
            self.db.executemany("INSERT INTO info VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                [(self.count + i, f.date, f.date_source, f.make, f.model, f.lat, f.lon,
                                  f.orientation, f.folder) for i, f in enumerate(infos)])
            self.db.executemany("INSERT INTO fields VALUES (?, ?, ?)",
                                [(self.count + i, k, v) for i, f in enumerate(infos)
                                 for k, vals in f.fields.items() for v in vals])
        except sqlite3.IntegrityError as e:
            self.db.execute("ROLLBACK TO chunk")  # the chunk's rows that went in before the duplicate
            self.db.execute("RELEASE chunk")
            raise DuplicateIdError(self._first_duplicate([r.id for r in records])) from e
        self.db.execute("RELEASE chunk")
        self.count += len(rows)

    def _first_duplicate(self, ids: list[str]) -> str:
        seen = set()
        for i in ids:
            if i in seen or self.db.execute("SELECT 1 FROM records WHERE id = ?", (i,)).fetchone():
                return i
            seen.add(i)
        return ids[0] if ids else ""

    def commit(self) -> None:
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")

    def close(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        self.db.close()


# Searchable facts beyond the records (`photo_info.py`); indices built before these tables existed have
# neither, and their filters say so (`filters.py`).
INFO_SCHEMA = """
CREATE TABLE IF NOT EXISTS info (row INTEGER PRIMARY KEY, date REAL, date_source TEXT, make TEXT, model TEXT,
    lat REAL, lon REAL, orientation INTEGER, folder TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS info_date ON info(date);
CREATE INDEX IF NOT EXISTS info_folder ON info(folder);
CREATE INDEX IF NOT EXISTS info_make ON info(make COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS fields (row INTEGER NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS fields_value ON fields(field, value COLLATE NOCASE);
"""


def _info_of(rec: IndexRecord) -> PhotoInfo:
    """The record's facts; a record built without them still gets its folder and file date."""
    if rec.info is not None:
        return rec.info
    return PhotoInfo(date=rec.mtime or None, date_source="file" if rec.mtime else "", folder=folder_of(rec.id))


class DuplicateIdError(ValueError):
    """An id appears twice; `.args[0]` is the id."""


# --- the views the engine uses -------------------------------------------------------------------
def _at(meta, row, get):
    """`get(row)` for a row or a slice of rows, with Python's negative indices and an IndexError past the end."""
    if isinstance(row, slice):
        return [get(i) for i in range(*row.indices(meta.count))]
    row = int(row)
    if row < 0:
        row += meta.count
    if not 0 <= row < meta.count:
        raise IndexError(f"row {row} is not in the index ({meta.count} rows)")
    return get(row)


class Records(Sequence):
    """`index.records[row]` -> IndexRecord, looked up on demand."""

    def __init__(self, meta):
        self._m = meta

    def __len__(self) -> int:
        return self._m.count

    def __getitem__(self, row):
        return _at(self._m, row, self._m.record)

    def __iter__(self):
        return self._m.iter_records()


class Ids(Sequence):
    """`index.ids[row]` -> id; `id in index.ids` is a keyed lookup, not a scan."""

    def __init__(self, meta):
        self._m = meta

    def __len__(self) -> int:
        return self._m.count

    def __getitem__(self, row):
        return _at(self._m, row, self._m.id_of)

    def __iter__(self):
        return self._m.iter_ids()

    def __contains__(self, image_id) -> bool:
        return self._m.row(image_id) is not None

    def index(self, image_id, *args) -> int:
        r = self._m.row(image_id)
        if r is None:
            raise ValueError(f"{image_id!r} is not in the index")
        return r


class RowOf(Mapping):
    """`index.row_of[id]` / `.get(id)` -> row, looked up on demand (no dict of every id in RAM)."""

    def __init__(self, meta):
        self._m = meta

    def __getitem__(self, image_id) -> int:
        r = self._m.row(image_id)
        if r is None:
            raise KeyError(image_id)
        return r

    def get(self, image_id, default=None):
        r = self._m.row(image_id)
        return default if r is None else r

    def many(self, ids) -> dict[str, int]:
        """id -> row of those of `ids` in the index (one lookup for all: exclusions of a search)."""
        return self._m.rows_many(ids)

    def __contains__(self, image_id) -> bool:
        return self._m.row(image_id) is not None

    def __len__(self) -> int:
        return self._m.count

    def __iter__(self):
        return self._m.iter_ids()
