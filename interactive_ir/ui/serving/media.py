"""Image URLs for the page: indexed images by opaque token (`tokens`, served by `files`), large ones as cached
thumbnails."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path

from interactive_ir.config import cache_dir
from interactive_ir.ui.serving.tokens import ROUTE, token

log = logging.getLogger(__name__)

THUMB_SIDE = 512  # longest side of a thumbnail (pixels)
THUMB_OVER_BYTES = 400_000  # files larger than this are shown as thumbnails
THUMB_OVER_SIDE = 1024  # ... and so are images with a longer side than this


def thumbs_dir() -> Path:
    """Where thumbnails are cached (IIR_CACHE_DIR/thumbs)."""
    return cache_dir() / "thumbs"


def _needs_thumb(path: Path) -> bool:
    if path.stat().st_size > THUMB_OVER_BYTES:
        return True
    from interactive_ir.index.imageio import image_size

    try:
        return max(image_size(path)) > THUMB_OVER_SIDE
    except Exception:  # unreadable: serve the file, the browser shows its alt text
        return False


def thumbnail(path: Path, folder: Path | None = None) -> Path:
    """A JPEG thumbnail of `path` (cached by path, size and mtime), or `path` itself when it is small."""
    path = Path(path)
    if not _needs_thumb(path):
        return path
    st = path.stat()
    key = hashlib.sha1(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:20]
    out = (folder or thumbs_dir()) / f"{key}.jpg"
    if out.exists():
        return out
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.imageio import open_image

    try:
        im = open_image(path)
    except BadInputError as e:
        log.warning("no thumbnail for %s: %s", path, e)
        return path
    im.thumbnail((THUMB_SIDE, THUMB_SIDE))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")  # two requests may make it at once
    im.save(tmp, "JPEG", quality=85)
    tmp.replace(out)
    return out


def image_url(index, image_id: str, *, full: bool = False) -> str:
    """Relative URL of an indexed image for the page (a thumbnail when large; `full`: the file itself),
    or "" when the id is not indexed or has no file (caption-only collections). The URL holds an opaque
    token, never a server path: the route in `files` maps it back to the file."""
    row = index.row_of.get(image_id) if index is not None and image_id else None
    if row is None:
        return ""
    try:
        if not Path(index.image_path(row)).is_file():
            return ""
    except (OSError, ValueError):
        return ""
    return f"{ROUTE}/{token(image_id)}" + ("?full=1" if full else "")


def upload_url(path: Path | str | None) -> str:
    """Relative URL of a kept upload (see `uploads`), or "" when `path` is not one."""
    from interactive_ir.ui.serving.uploads import upload_token

    tok = upload_token(path) if path else ""
    return f"{ROUTE}/{tok}" if tok else ""
