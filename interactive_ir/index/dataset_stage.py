"""A dataset's rows written out for the folder builder: each distinct image once, its captions, its columns.

`stage_rows` streams `hub_dataset.iter_rows` and chooses the columns from the first `PEEK_ROWS` rows
(`choose_columns`): the image column, else a column of image URLs (`--url-column`, or the likeliest column
of http(s) URLs, said in the report). An image given as bytes or a local file is written as it is; a URL
is fetched by `url_images.UrlImages` (a few threads, the URL cache, a stored copy) a window of rows ahead
of the row being written, so the output keeps the dataset's order and memory holds one window. Each
distinct image lands in the image folder once (named by the id column or by its content hash, so rows
repeating an image share it), its captions in a JSONL captions file and the row's other columns (its URL
among them) in `columns.jsonl`. A row whose image is broken, or whose URL gives none, is skipped and
reported; `StageReport.fetch` counts the URLs by outcome.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path

from interactive_ir.errors import BadInputError
from interactive_ir.index.hub_dataset import (
    CAPTION_COLUMNS,
    DatasetSource,
    StageReport,
    checked_suffix,
    image_bytes,
    image_id,
    iter_rows,
    jsonable,
    row_captions,
)
from interactive_ir.index.url_cache import place
from interactive_ir.index.url_fetch import FetchConfig, fetch_config
from interactive_ir.index.url_images import UrlImages

log = logging.getLogger(__name__)

PEEK_ROWS = 16  # rows read before choosing the columns (a column of URLs is recognised in them)
URL_NAMES = ("url", "image_url", "img_url", "imageurl", "image_uri", "photo_url", "link", "src")  # likeliest first
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp")
_HTTP = re.compile(r"^https?://\S+$", re.IGNORECASE)


@dataclass(frozen=True)
class Columns:
    """Which column holds what, chosen from the first rows."""

    image: str  # the image column ({"bytes", "path"}, bytes, a path or a URL); "" when `url` names the images
    url: str  # the column of image URLs ("" = none)
    caption: str  # the caption column ("" = none)


def url_columns(rows: list[dict]) -> list[str]:
    """The columns whose non-empty values in `rows` are all http(s) URLs, likeliest image column first: a usual
    name (`URL_NAMES`), then a name with url/image/img in it, then values ending in an image suffix."""
    found = []
    for name in rows[0] if rows else []:
        values = [r.get(name) for r in rows if r.get(name) not in (None, "")]
        if values and all(isinstance(v, str) and _HTTP.match(v.strip()) for v in values):
            found.append(name)

    def rank(name: str) -> tuple[int, bool]:
        low = name.lower()
        named = 0 if low in URL_NAMES else 1 if any(w in low for w in ("url", "image", "img")) else 2
        pictures = any(str(r.get(name) or "").lower().split("?")[0].endswith(IMAGE_SUFFIXES) for r in rows)
        return named, not pictures

    return sorted(found, key=rank)  # stable: the dataset's order within a rank


def choose_columns(head: list[dict], src: DatasetSource, rep: StageReport) -> Columns:
    """The columns of `src` from its first rows `head`; BadInputError when no column holds images."""
    names = list(head[0]) if head else []
    caption = src.caption_column or next((c for c in CAPTION_COLUMNS if c in names), "")
    if src.url_column:
        if head and src.url_column not in names:
            raise BadInputError(f"{src.name} has no column {src.url_column!r} (--url-column): its columns are "
                                f"{', '.join(map(str, names))}")
        rep.url_column = src.url_column
        return Columns("", src.url_column, caption)
    if not head or src.image_column in names:
        return Columns(src.image_column, "", caption)
    found = url_columns(head)
    if not found:
        raise BadInputError(f"{src.name} has no image column {src.image_column!r}: its columns are "
                            f"{', '.join(map(str, names))}; pass --image-column NAME, or --url-column NAME for a "
                            "column of image URLs")
    rep.url_column, rep.url_found = found[0], found
    log.info("%s has no image column %r: fetching the image URLs of column %r", src.name, src.image_column, found[0])
    return Columns("", found[0], caption)


def row_url(row: dict, cols: Columns) -> str | None:
    """The image URL of `row` ("" for an empty URL cell), or None when its image comes as bytes or a file."""
    if cols.url:
        value = row.get(cols.url)
        return value.strip() if isinstance(value, str) else ("" if value is None else str(value))
    cell = row.get(cols.image)
    if isinstance(cell, dict) and not cell.get("bytes"):
        cell = cell.get("path")
    if isinstance(cell, str) and _HTTP.match(cell.strip()):
        return cell.strip()
    return None


class _Writer:
    """Writes staged rows in order: each distinct image once, its captions, its other columns."""

    def __init__(self, src: DatasetSource, cols: Columns, images: Path, cap_fh, col_fh, rep: StageReport):
        self.src, self.cols, self.images, self.rep = src, cols, images, rep
        self.cap_fh, self.col_fh = cap_fh, col_fh
        self.seen: set[str] = set()
        self.stopped = False  # the limit of distinct images is reached

    def take(self, n: int, row: dict, root: Path | None, url: str | None, fut) -> None:
        """Write row `n` (`fut`: the future of its URL's cached copy, or None)."""
        try:
            iid, store = self._image(row, root, url, fut)
        except BadInputError as e:  # a FetchError too
            self.rep.skipped.append((f"row {n}" + (f" ({url[:80]})" if url else ""), str(e)))
            return
        if iid not in self.seen:
            if self.src.limit and len(self.seen) >= self.src.limit:
                self.stopped = True
                return
            self.seen.add(iid)
            store(self.images / iid)
        caps = row_captions(row, self.cols.caption)
        if caps:
            self.cap_fh.write(json.dumps({"image": iid, "captions": caps}) + "\n")
        other = {k: jsonable(v) for k, v in row.items() if k not in (self.cols.image, self.cols.caption)}
        if "id" in other:  # "id" names the image here; the dataset's own id column is kept beside it
            other["dataset_id"] = other.pop("id")
        self.col_fh.write(json.dumps({"id": iid, **other}) + "\n")

    def _image(self, row: dict, root: Path | None, url: str | None, fut) -> tuple[str, Callable[[Path], None]]:
        """(the image's id, a function storing it at a path)."""
        if fut is not None:
            cached = fut.result()
            return image_id(row, self.src, cached.sha256, "", cached.suffix, False), lambda t: place(cached.path, t)
        if url is not None:
            raise BadInputError(f"its {self.cols.url or self.cols.image!r} is empty")
        data, name = image_bytes(row.get(self.cols.image), root)
        suffix = checked_suffix(data)
        iid = image_id(row, self.src, hashlib.sha256(data).hexdigest(), name, suffix, root is not None)

        def store(target: Path) -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

        return iid, store


def stage_rows(src: DatasetSource, images: Path, captions: Path, columns: Path, fetch: FetchConfig | None = None,
               progress: Callable | None = None) -> StageReport:
    """Stream `src`'s rows into an image folder, a captions JSONL and a columns JSONL, fetching image URLs with
    `fetch` (default: `fetch_config()`, the environment's); `progress(FetchStats)` after each URL. Broken rows
    are skipped (each reported); a dataset without an image column or a column of URLs stops at once."""
    images.mkdir(parents=True, exist_ok=True)
    rep = StageReport()
    rows = iter_rows(src)
    head = list(islice(rows, PEEK_ROWS))
    cols = choose_columns([r for r, _ in head], src, rep)
    window: deque = deque()  # (row number, row, root, url, future) asked for, not yet written
    with (UrlImages(fetch or fetch_config(), progress) as urls, open(captions, "w", encoding="utf-8") as cap_fh,
          open(columns, "w", encoding="utf-8") as col_fh):
        writer = _Writer(src, cols, images, cap_fh, col_fh, rep)
        for row, root in chain(head, rows):
            rep.rows += 1
            url = row_url(row, cols)
            window.append((rep.rows, row, root, url, urls.submit(url) if url else None))
            while window and not writer.stopped and (len(window) > urls.window or window[0][4] is None
                                                     or window[0][4].done()):
                writer.take(*window.popleft())
            if writer.stopped:
                break
        while window and not writer.stopped:
            writer.take(*window.popleft())
        for *_, fut in window:
            if fut is not None:
                fut.cancel()
    rep.images = len(writer.seen)
    if urls.stats.done:
        rep.fetch = urls.stats
    for where, why in rep.skipped[:20]:
        log.warning("skipped %s: %s", where, why)
    return rep
