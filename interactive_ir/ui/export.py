"""Export what a search found: the current page's results and the session's marks as CSV or JSON, and the
page's images as a zip. Plain functions of (engine, UIState); the page's "Export" controls call them.

A row: the image id, its rank on the page of its round, that round (0 for the description), its caption in
plain words, its score and the person's mark ("relevant", "not relevant" or ""). The rows are the page's
results in order, then the images marked in earlier rounds that the page does not show (each with the
round and rank where it was last shown). Images come only from the index, through its own path checks
(`index.image_file`): never a path from the client.
"""

from __future__ import annotations

import csv
import io
import json
import os
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from interactive_ir.errors import SessionError
from interactive_ir.ui.captions import plain_caption
from interactive_ir.ui.state import UIState

COLUMNS = ("id", "rank", "round", "caption", "score", "mark")
MAX_ZIP_IMAGES = 200  # "Download images" refuses a page with more images than this
MAX_ZIP_BYTES = 200 * 1024 * 1024  # ... or whose image files take more bytes than this
NOTHING_YET = "there is nothing to export yet: describe the image you are looking for first"


@dataclass(frozen=True)
class ExportRow:
    id: str
    rank: int  # 1 for the best result of its round
    round: int  # 0 for the first description, then 1, 2, ...
    caption: str  # in plain words (`captions.plain_caption`), "" when the index has none
    score: float
    mark: str  # "relevant", "not relevant" or "" (not marked)


def _mark(value: bool | None) -> str:
    return "" if value is None else ("relevant" if value else "not relevant")


def _caption(engine, image_id: str) -> str:
    row = engine.index.row_of.get(image_id)
    return plain_caption(engine.index.records[row].caption) if row is not None else ""


def _marks(st: UIState) -> dict[str, bool]:
    """Every mark of the search: the session's rounds, then the page's marks not yet used (they win)."""
    rel, irr = st.session.marked()
    return {**{i: True for i in rel}, **{i: False for i in irr}, **st.marks}


def _last_shown(session, image_id: str) -> tuple[int, int, float] | None:
    """(round, rank, score) where `image_id` was last shown, or None."""
    for t in reversed(session.turns):
        if image_id in t.shown:
            n = t.shown.index(image_id)
            return t.round, n + 1, float(t.scores[n]) if n < len(t.scores) else 0.0
    return None


def rows(engine, st: UIState, ids=None) -> list[ExportRow]:
    """The page's results, then the images marked earlier and not on the page; with `ids`, only those
    images. SessionError before the first description (a message the page shows)."""
    if not st.started:
        raise SessionError(NOTHING_YET)
    wanted = None if ids is None else set(ids)
    s = st.session
    turn = s.last
    marks = _marks(st)
    out: list[ExportRow] = []
    for rank, h in enumerate(engine.hits_of(turn), 1):
        if wanted is None or h.id in wanted:
            out.append(ExportRow(h.id, rank, turn.round, plain_caption(h.caption), float(h.score),
                                 _mark(marks.get(h.id))))
    on_page = set(turn.shown)
    for image_id, value in marks.items():
        where = _last_shown(s, image_id)
        if image_id in on_page or where is None or (wanted is not None and image_id not in wanted):
            continue
        r, rank, score = where
        out.append(ExportRow(image_id, rank, r, _caption(engine, image_id), score, _mark(value)))
    return out


def to_csv(export_rows: list[ExportRow]) -> str:
    """A header line and one line per row; captions with commas, quotes or line breaks are quoted."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in export_rows:
        w.writerow([r.id, r.rank, r.round, r.caption, f"{r.score:.6g}", r.mark])
    return buf.getvalue()


def to_json(export_rows: list[ExportRow], st: UIState) -> str:
    """{"description", "session_id", "round", "results": [row, ...]} (a row: `COLUMNS`)."""
    s = st.session
    return json.dumps({"description": s.description if s else "", "session_id": s.session_id if s else "",
                       "round": s.round if s else -1, "results": [asdict(r) for r in export_rows]},
                      ensure_ascii=False, indent=1)


def csv_text(engine, st: UIState, ids=None) -> str:
    return to_csv(rows(engine, st, ids))


def json_text(engine, st: UIState, ids=None) -> str:
    return to_json(rows(engine, st, ids), st)


def image_files(engine, st: UIState, ids=None) -> list[tuple[str, str]]:
    """(image id, file) of the page's results (or those of them in `ids`), each file through the index's
    checks; SessionError before the first description, or when the page has none."""
    if not st.started:
        raise SessionError(NOTHING_YET)
    wanted = None if ids is None else set(ids)
    index = engine.index
    out = []
    for image_id in st.current_ids:
        if wanted is not None and image_id not in wanted:
            continue
        row = index.row_of.get(image_id)
        if row is None:
            continue
        out.append((image_id, index.image_file(row, image_id)))  # IndexLoadError for an id or link that leaves the root
    if not out:
        raise SessionError("there are no images on this page to download")
    return out


def write_zip(engine, st: UIState, dest: str | Path, ids=None, max_images: int = MAX_ZIP_IMAGES,
              max_bytes: int = MAX_ZIP_BYTES) -> Path:
    """The page's images (see `image_files`) in a zip at `dest`, each under its image id (stored, not
    compressed: photos do not shrink). SessionError, before writing anything, when there are more than
    `max_images` or they take more than `max_bytes`."""
    files = image_files(engine, st, ids)
    if len(files) > max_images:
        raise SessionError(f"{len(files)} images are too many to download at once (at most {max_images})")
    size = sum(os.path.getsize(f) for _, f in files)
    if size > max_bytes:
        raise SessionError(f"these images take {size / 2**20:.0f} MB, too much to download at once "
                           f"(at most {max_bytes / 2**20:.0f} MB)")
    dest = Path(dest)
    names: set[str] = set()
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as z:
        for image_id, f in files:
            name = image_id.replace("\\", "/").lstrip("/")
            if name in names:
                continue
            names.add(name)
            z.write(f, name)
    return dest


MAX_SELECTED = 1000  # ids read from the page's selection at most (the page shows far fewer)


def selected_ids(text) -> list[str]:
    """The image ids of the page's selection, sent by the browser as a JSON list of strings; anything else
    (not JSON, not a list, not strings, too long) counts as no selection."""
    try:
        ids = json.loads(text or "[]")
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested past Python's limit
        return []
    if not isinstance(ids, list):
        return []
    return list(dict.fromkeys(i for i in ids[:MAX_SELECTED] if isinstance(i, str) and 0 < len(i) <= 1000))


# what each of the page's Export buttons downloads: (file name, how it is written)
FILES = {"csv": "search-results.csv", "json": "search-results.json", "zip": "search-images.zip"}


def write_file(engine, st: UIState, kind: str, folder: str | Path, ids=None) -> Path:
    """The export `kind` ("csv", "json" or "zip") written into `folder` under its name in `FILES`;
    SessionError (a message for the page) when there is nothing to export or too much."""
    dest = Path(folder) / FILES[kind]
    if kind == "zip":
        return write_zip(engine, st, dest, ids)
    text = csv_text(engine, st, ids) if kind == "csv" else json_text(engine, st, ids)
    dest.write_text(text, encoding="utf-8")
    return dest


EXPORT_KEEP_S = 600.0  # an export file is deleted this long after it was written (the browser has it by then)


def fresh_folder(root: str | Path | None = None, keep_s: float = EXPORT_KEEP_S, now: float | None = None) -> Path:
    """A new folder for one export under this process's export root, after deleting the exports older than
    `keep_s` seconds: downloads (a zip can be 200 MB) do not pile up on the server's disk."""
    import shutil
    import tempfile
    import time

    base = Path(root) if root is not None else Path(tempfile.gettempdir()) / f"iir-export-{os.getpid()}"
    base.mkdir(parents=True, exist_ok=True)
    now = time.time() if now is None else now
    for old in base.iterdir():
        try:
            if now - old.stat().st_mtime > keep_s:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass
    return Path(tempfile.mkdtemp(prefix="x-", dir=base))
