"""Finding and opening images safely: corrupt files and decompression bombs are refused, not fatal."""

from __future__ import annotations

import io
import logging
import re
import warnings
from pathlib import Path

from interactive_ir.errors import BadInputError

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp"}
MAX_PIXELS = 40_000_000  # larger images are refused (decompression-bomb guard); IIR_MAX_PIXELS overrides
MAX_UPLOAD_BYTES = 30 * 1024 * 1024  # largest uploaded/query file accepted
FORMATS = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "GIF": ".gif", "BMP": ".bmp"}  # stored formats: suffix


def max_pixels() -> int:
    import os

    return int(os.environ.get("IIR_MAX_PIXELS", MAX_PIXELS))


def list_images(folder: Path) -> list[Path]:
    """All image files below `folder` (recursive, sorted, hidden folders skipped)."""
    folder = Path(folder)
    if not folder.exists():
        raise BadInputError(f"image folder {folder} does not exist: pass an existing folder with --images")
    if not folder.is_dir():
        raise BadInputError(f"{folder} is not a folder: pass a folder of images with --images")
    out = [
        p
        for p in folder.rglob("*")
        if p.suffix.lower() in IMAGE_EXTENSIONS
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ]
    return sorted(out)


def open_image(source, *, limit: int | None = None):
    """Open an image from a path, bytes or file object, fully decoded as RGB.

    Large JPEGs decode at a reduced size (at least 1024 px on a side); `info["original_size"]` keeps the file's.
    Raises BadInputError when it is not an image, is corrupt, or has more than `limit` pixels.
    """
    from PIL import Image, UnidentifiedImageError

    limit = limit or max_pixels()
    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    name = str(source) if isinstance(source, (str, Path)) else "upload"
    if isinstance(source, (str, Path)):
        p = Path(source)
        try:
            p.exists()
        except (OSError, ValueError) as e:  # a name too long, a NUL in it
            raise BadInputError(f"{str(p)[:80]} is not a usable path ({getattr(e, 'strerror', None) or e})") from None
        if p.is_dir():
            raise BadInputError(f"{p} is a folder, not an image file: give one image")
        if not p.exists():
            raise BadInputError(f"image {p} does not exist")
        if not p.is_file():  # a device (/dev/zero), a pipe, a socket: never read
            raise BadInputError(f"{p} is not a regular image file: give an image file (JPEG, PNG, ...)")
        if p.stat().st_size > MAX_UPLOAD_BYTES * 10:
            raise BadInputError(f"image {p} is too large ({p.stat().st_size // 2**20} MB)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(source) as im:
                w, h = im.size
                if w * h > limit:
                    raise BadInputError(
                        f"{name} is {w}x{h} = {w * h / 1e6:.0f} megapixels, over the {limit / 1e6:.0f} MP limit: "
                        "downscale it first"
                    )
                im.draft("RGB", (1024, 1024))  # fast JPEG decode at reduced size when possible
                rgb = im.convert("RGB")
                rgb.info["original_size"] = (w, h)  # the file's size: a draft decode may be smaller
                return rgb
    except BadInputError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        # PIL refuses images over ~89 MP before our own check sees the size
        raise BadInputError(f"{name} has more pixels than PIL will decode safely ({e}), over the "
                            f"{limit / 1e6:.0f} MP limit: downscale it first") from e
    except UnidentifiedImageError as e:
        raise BadInputError(f"{name} is not a readable image: use a JPEG, PNG, WebP, GIF or BMP") from e
    except (OSError, ValueError, SyntaxError) as e:
        raise BadInputError(f"{name} is not a readable image ({e}): it may be truncated or corrupt") from e


def checked_suffix(data: bytes) -> str:
    """The file suffix of a decodable image; BadInputError for broken or unsupported images."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = im.format
            im.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        why = re.sub(r" <_io\.BytesIO object at 0x[0-9a-fA-F]+>", "", str(e))  # PIL names its buffer
        raise BadInputError(f"a broken image ({why[:100]})") from e
    if fmt not in FORMATS:
        raise BadInputError(f"an image in {fmt} format (served formats: {', '.join(FORMATS)})")
    return FORMATS[fmt]


def image_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as im:
        return im.size
