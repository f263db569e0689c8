"""The images fetched for URL datasets, kept on disk so that a re-run or a re-index never fetches a URL again.

Layout under the cache folder (`FetchConfig.cache_dir`, default `IIR_CACHE_DIR/url-images`):

    blobs/ab/<sha256 of the stored bytes><suffix>    each stored copy once (content-addressed)
    urls/cd/<sha256 of "<max_side> <url>">.json      {"sha256", "suffix", "bytes"}: the blob a URL gave

A URL's entry names the copy stored at one `max_side`, so another size fetches again. Both kinds of file
are written under a temporary name and renamed, so an interrupted run leaves no half-written entry and
two builds may share the cache. An entry whose blob is gone (the cache was pruned) counts as a miss.
Failed URLs are not remembered: a later run tries them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.errors import IndexBuildError


@dataclass(frozen=True)
class Cached:
    """One URL's stored copy in the cache."""

    path: Path  # the blob
    sha256: str  # of its bytes (its content address)
    suffix: str  # ".jpg", ".png", ...
    hit: bool  # it was in the cache before this run asked (no fetch)


def default_cache_dir() -> Path:
    from interactive_ir.config import cache_dir

    return cache_dir() / "url-images"


class UrlCache:
    """The cache folder `root` for stored copies of at most `max_side` pixels (0: as fetched)."""

    def __init__(self, root: Path | str | None, max_side: int):
        self.root = Path(root).expanduser() if root else default_cache_dir()
        self.max_side = max_side

    def _entry(self, url: str) -> Path:
        key = hashlib.sha256(f"{self.max_side} {url}".encode()).hexdigest()
        return self.root / "urls" / key[:2] / f"{key}.json"

    def _blob(self, sha: str, suffix: str) -> Path:
        return self.root / "blobs" / sha[:2] / f"{sha}{suffix}"

    def get(self, url: str) -> Cached | None:
        """`url`'s stored copy, or None when it was never fetched (or its blob is gone)."""
        try:
            entry = json.loads(self._entry(url).read_text(encoding="utf-8"))
            sha, suffix = str(entry["sha256"]), str(entry["suffix"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        blob = self._blob(sha, suffix)
        return Cached(blob, sha, suffix, True) if blob.is_file() else None

    def put(self, url: str, data: bytes, suffix: str) -> Cached:
        """Store `data` (once per content) and remember that `url` gave it."""
        sha = hashlib.sha256(data).hexdigest()
        blob = self._blob(sha, suffix)
        try:
            if not blob.is_file():
                _write(blob, data)
            _write(self._entry(url), json.dumps({"sha256": sha, "suffix": suffix, "bytes": len(data)}).encode())
        except OSError as e:
            raise IndexBuildError(f"cannot write the URL image cache under {self.root} ({e.strerror or e}): free "
                                  "some space, or choose another folder with --fetch-cache DIR") from e
        return Cached(blob, sha, suffix, False)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def place(blob: Path, target: Path) -> None:
    """Put the cached `blob` at `target` (an index's image): a hard link where the file system allows (stored
    once on disk; the index keeps it when the cache is pruned), else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        os.link(blob, target)
    except OSError:
        shutil.copyfile(blob, target)
