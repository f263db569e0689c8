"""What a photo says about itself, read at index time: EXIF date taken, camera, GPS, orientation; plus the
folder it lives in and the user fields a captions/metadata file gives (tags, album, person, ...).

`read_photo_info(path, image_id)` reads the file's header only (PIL opens lazily; no pixel is decoded). Broken
or missing EXIF gives empty values, never an error: a photo without EXIF is indexed like any other. The
values land in the metadata store's `info` and `fields` tables (`metadata.py`), which the filters of the
query language read (`filters.py`).

Dates: EXIF DateTimeOriginal (else DateTimeDigitized, else DateTime) as seconds since 1970 of the wall-clock
time (EXIF has no time zone); a photo without one falls back to its file's modification time, and
`date_source` says which ("exif" or "file").
"""

from __future__ import annotations

import calendar
import logging
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

_DATE_TAGS = (36867, 36868, 306)  # DateTimeOriginal, DateTimeDigitized (Exif IFD), DateTime (IFD0)
_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825
_MAKE, _MODEL, _ORIENTATION = 271, 272, 274
_EXIF_DATE = re.compile(r"^\s*(\d{4})[:\-](\d{2})[:\-](\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?")
RESERVED_KEYS = frozenset({"image", "file_name", "caption", "captions", "id"})  # not user fields


@dataclass
class PhotoInfo:
    """The searchable facts of one image beyond its pixels and captions."""

    date: float | None = None  # seconds since 1970 (EXIF wall-clock time, else the file's mtime); None: unknown
    date_source: str = ""  # "exif", "file" or "" (unknown)
    make: str = ""  # camera maker (EXIF Make), "" when absent
    model: str = ""  # camera model (EXIF Model)
    lat: float | None = None  # GPS latitude in degrees (north positive), None when absent
    lon: float | None = None  # GPS longitude in degrees (east positive)
    orientation: int = 0  # EXIF orientation 1..8, 0 when absent
    folder: str = ""  # the folder of the image id ("" at the root), posix separators
    fields: dict[str, list[str]] = field(default_factory=dict)  # user fields from the metadata file, lowercase keys


def folder_of(image_id: str) -> str:
    return image_id.rpartition("/")[0]


def exif_date(text) -> float | None:
    """Seconds since 1970 of an EXIF date string ("2019:07:14 18:03:22"), or None when it is not one."""
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    m = _EXIF_DATE.match(str(text or ""))
    if not m:
        return None
    y, mo, d, hh, mm, ss = (int(g) if g else 0 for g in m.groups())
    if not (1800 <= y <= 2200 and 1 <= mo <= 12 and 1 <= d <= 31 and hh < 24 and mm < 60 and ss < 61):
        return None  # "0000:00:00 00:00:00" and other placeholders cameras write
    try:
        return float(calendar.timegm((y, mo, d, hh, mm, min(ss, 59), 0, 0, 0)))
    except (OverflowError, ValueError):
        return None


def _text(v) -> str:
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    return " ".join(str(v or "").replace("\x00", " ").split())[:120]


def _degrees(dms, ref) -> float | None:
    try:
        d, m, s = (float(x) for x in dms)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    v = d + m / 60.0 + s / 3600.0
    ref = _text(ref).upper()
    return -v if ref in ("S", "W") else v


def read_exif(path: Path) -> PhotoInfo:
    """EXIF date, camera, GPS and orientation of an image file (empty values when it has none or it is broken)."""
    from PIL import Image

    info = PhotoInfo()
    try:
        with warnings.catch_warnings(), Image.open(path) as im:
            warnings.simplefilter("ignore")  # PIL warns of corrupt EXIF; such a photo is indexed without it
            ex = im.getexif()
            sub = ex.get_ifd(_EXIF_IFD)
            gps = ex.get_ifd(_GPS_IFD)
    except Exception as e:  # noqa: BLE001 - any broken header: the photo is still indexed, without EXIF
        log.debug("no EXIF from %s: %s", path, e)
        return info
    for tag in _DATE_TAGS:
        t = exif_date(sub.get(tag) if tag != 306 else ex.get(tag))
        if t is not None:
            info.date, info.date_source = t, "exif"
            break
    info.make, info.model = _text(ex.get(_MAKE)), _text(ex.get(_MODEL))
    o = ex.get(_ORIENTATION)
    info.orientation = int(o) if isinstance(o, int) and 1 <= o <= 8 else 0
    if gps:
        lat, lon = _degrees(gps.get(2), gps.get(1)), _degrees(gps.get(4), gps.get(3))
        if lat is not None and lon is not None and abs(lat) <= 90 and abs(lon) <= 180 and (lat, lon) != (0.0, 0.0):
            info.lat, info.lon = lat, lon
    return info


def read_photo_info(path: Path, image_id: str, mtime: float | None = None,
                    fields: dict[str, list[str]] | None = None) -> PhotoInfo:
    """EXIF facts of `path`, its folder, the user `fields`; the file's `mtime` is the date when EXIF has none."""
    info = read_exif(path)
    if info.date is None and mtime:
        info.date, info.date_source = float(mtime), "file"
    info.folder = folder_of(image_id)
    info.fields = dict(fields or {})
    return info


def user_fields(row: dict) -> dict[str, list[str]]:
    """The user fields of one metadata-file object: every key but the reserved ones, values as lists of text."""
    out: dict[str, list[str]] = {}
    for k, v in row.items():
        key = str(k).strip().lower()
        if key in RESERVED_KEYS or not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", key):
            continue
        vals = v if isinstance(v, list) else [v]
        vals = [_text(x) for x in vals if isinstance(x, (str, int, float)) and not isinstance(x, bool)]
        if vals := [x for x in vals if x]:
            out[key] = vals
    return out


def read_user_fields(path: Path) -> dict[str, dict[str, list[str]]]:
    """{image key: {field: [values]}} from a JSONL (or JSON list) captions/metadata file; {} for other forms."""
    import json

    path = Path(path)
    if path.suffix.lower() not in (".jsonl", ".json", ".ndjson"):
        return {}
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    rows: list = []
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return {}
        rows = data if isinstance(data, list) else []
    else:
        for line in text.splitlines():
            try:
                rows.append(json.loads(line)) if line.strip() else None
            except json.JSONDecodeError:
                return {}  # read_captions reports the bad line
    out: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        key = row.get("image") or row.get("file_name") if isinstance(row, dict) else None
        if isinstance(key, str) and (f := user_fields(row)):
            got = out.setdefault(key, {})
            for k, vals in f.items():
                got.setdefault(k, []).extend(v for v in vals if v not in got.get(k, []))
    return out
