"""The image route: indexed images (and this server's kept uploads) go out by opaque token, nothing else.

`GET iir/img/<token>` serves the image (a cached thumbnail when it is large), `?full=1` the file itself.
A token (see `tokens`) names no server path and cannot be forged for a file that is not indexed.
Every request re-checks that the file lies inside the image root (no `..`, no absolute id, no symlink
out), sniffs its bytes and serves only JPEG, PNG, GIF, WebP and BMP, with `nosniff` and a sandboxing CSP:
HTML or SVG beside the photos are never served, inline or not.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from pathlib import Path, PurePosixPath

from interactive_ir.ui.serving.media import thumbnail
from interactive_ir.ui.serving.tokens import ROUTE, UPLOAD_MARK, token

log = logging.getLogger(__name__)

HEADERS = {
    "X-Content-Type-Options": "nosniff",  # the browser keeps our sniffed image type
    "Content-Security-Policy": "default-src 'none'; sandbox",  # even opened directly, nothing runs
    "Content-Disposition": "inline",
    "Cache-Control": "private, max-age=3600",
}
_MAGIC = ((b"\xff\xd8\xff", "image/jpeg"), (b"\x89PNG\r\n\x1a\n", "image/png"), (b"GIF87a", "image/gif"),
          (b"GIF89a", "image/gif"), (b"BM", "image/bmp"))


class NotServed(Exception):
    """The token names no servable image (the route answers 404; the reason is logged at debug level)."""


def sniff(path: Path) -> str:
    """The image MIME type from the file's first bytes; NotServed for anything else (HTML, SVG, text...)."""
    with open(path, "rb") as f:
        head = f.read(16)
    for magic, mime in _MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    raise NotServed(f"{path.name} is not a JPEG, PNG, GIF, WebP or BMP image")


SYSTEM_FOLDERS = ("/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/run", "/var/run", "/bin", "/sbin", "/lib",
                  "/usr/bin", "/usr/sbin", "/usr/lib")  # never a link root, whatever a manifest says


@functools.lru_cache(maxsize=4096)
def _real(folder: str) -> Path:
    """`folder` with its links resolved (a manifest's link root as the file system has it now)."""
    return Path(os.path.realpath(folder))


def _in_link_root(path: Path, link_roots) -> bool:
    """`path` (resolved) lies directly in one of `link_roots`: the folders the build saw accepted links point
    into, each the folder of a file it indexed (a sub-folder is not included: its files were not seen), an
    absolute folder that is neither `/` nor a system folder (`SYSTEM_FOLDERS`)."""
    parent = path.parent
    for r in link_roots:
        if not isinstance(r, str) or not r.startswith("/") or r.rstrip("/") == "":
            continue
        folder = _real(r)
        if any(folder == Path(s) or folder.is_relative_to(s) for s in SYSTEM_FOLDERS):
            continue
        if parent == folder:
            return True
    return False


def inside(root: Path, rel: str, link_roots=()) -> Path:
    """The file `root/rel`, resolved, when it exists inside `root`; NotServed otherwise.

    Refuses an image root that is a file system root, ids that are absolute or climb with `..`,
    and files that resolve (through symlinks) outside the root, except into `link_roots` (the folders
    the index's build saw its indexed links point into, recorded in its manifest; never `/`).
    """
    root = Path(root).resolve()
    if root == Path(root.anchor):
        raise NotServed(f"the image root is {root}: serving a file system root is refused")
    pure = PurePosixPath(str(rel).replace("\\", "/"))
    if not rel or pure.is_absolute() or ".." in pure.parts or Path(str(rel)).is_absolute():
        raise NotServed(f"id {rel!r} is not a path inside the image root")
    try:
        path = (root / pure).resolve(strict=True)
    except (OSError, RuntimeError) as e:
        raise NotServed(f"{rel!r}: {e.__class__.__name__}") from e
    if not path.is_relative_to(root) and not _in_link_root(path, link_roots):
        raise NotServed(f"{rel!r} resolves outside the image root")
    if not path.is_file():
        raise NotServed(f"{rel!r} is not a file")
    return path


class ImageFiles:
    """Maps tokens to the index's images and the upload store's files; thread-safe."""

    def __init__(self, index, uploads=None):
        self.index = index
        self.uploads = uploads  # an uploads.UploadStore, or None
        self._rows: dict[str, int] | None = None
        self._lock = threading.Lock()

    def _row(self, tok: str) -> int:
        if self._rows is None:
            with self._lock:
                if self._rows is None:  # built once, on the first request: one HMAC per indexed id
                    self._rows = {token(i): row for row, i in enumerate(self.index.ids)}
        row = self._rows.get(tok)
        if row is None:
            raise NotServed("unknown token")
        return row

    def resolve(self, tok: str, full: bool = False) -> tuple[Path, str]:
        """(file to send, MIME type) for a token; NotServed when there is none."""
        if tok.startswith(UPLOAD_MARK):
            if self.uploads is None:
                raise NotServed("no uploads here")
            path = self.uploads.path_of(tok)
            if path is None:
                raise NotServed("unknown upload token")
            path = inside(self.uploads.folder, path.name)
        else:
            row = self._row(tok)
            links = (getattr(self.index, "manifest", None) or {}).get("link_roots", ())
            path = inside(self.index.image_root, self.index.ids[row], links)  # links the build saw are served
        mime = sniff(path)  # the original must be an image, whichever file goes out
        if not full:
            small = thumbnail(path)
            if small != path:
                return small, sniff(small)
        return path, mime

    def response(self, tok: str, full: bool = False):
        from starlette.responses import FileResponse, Response

        try:
            path, mime = self.resolve(tok, full)
        except NotServed as e:
            log.debug("not served: %s", e)
            return Response("not found", status_code=404, media_type="text/plain", headers=HEADERS)
        except OSError as e:
            log.warning("cannot serve an image: %s", e)
            return Response("not found", status_code=404, media_type="text/plain", headers=HEADERS)
        return FileResponse(path, media_type=mime, headers=HEADERS)


def media_routes(index, uploads=None) -> list:
    """The route(s) to add to Gradio's FastAPI app: `launch(app_kwargs={"routes": media_routes(...)})`."""
    from fastapi.routing import APIRoute

    files = ImageFiles(index, uploads)

    def image(tok: str, full: int = 0):  # a plain def: FastAPI runs it in its thread pool
        return files.response(tok, bool(full))

    return [APIRoute(f"/{ROUTE}/{{tok}}", image, methods=["GET", "HEAD"], include_in_schema=False)]
