"""A dataset's image URLs fetched by a few threads into the URL cache, for `hub_dataset.stage_rows`.

`UrlImages.submit(url)` returns a future of the URL's `Cached` stored copy: from the cache when a run
before fetched it, else fetched (`url_fetch.fetch`), checked as an image and stored (`stored_copy`). A URL
asked for again while in flight shares that fetch. The future's exception is a `FetchError` for a URL that
gives no image; `stats` counts hits, fetches and failures by kind, and `progress(stats)` is called after
each URL (the `index` command draws its bar from it).

Stored copies: an image whose longer side is over `max_side` (1024 by default) is kept as a JPEG of that
size. The page never shows more (it shows files over 1024 px or 400 KB as 512-px thumbnails), the embedder
reads 224-336 px, and a web-scale dataset's originals average several megapixels: the copy keeps what
the index needs at a fraction of the disk, and the page still shows the image when its URL goes away.
`max_side` 0 keeps every file as fetched.
"""

from __future__ import annotations

import io
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from interactive_ir.errors import BadInputError
from interactive_ir.index.url_cache import Cached, UrlCache
from interactive_ir.index.url_fetch import FetchConfig, FetchError, fetch, new_client

JPEG_QUALITY = 90  # of a shrunk copy


@dataclass
class FetchStats:
    """What the URLs of one staging run gave."""

    cached: int = 0  # URLs whose stored copy was in the cache (not fetched)
    fetched: int = 0  # URLs fetched and stored now
    failed: Counter = field(default_factory=Counter)  # URLs that gave no image, by kind ("http", "timeout", ...)
    bytes: int = 0  # bytes downloaded
    seconds: float = 0.0  # wall time from the first URL to the last
    max_side: int = 0  # the stored copies' longest side (0: as fetched)

    @property
    def done(self) -> int:
        return self.cached + self.fetched + sum(self.failed.values())

    def failures(self) -> str:
        """"3 HTTP errors, 1 timeout" (kinds by count), or ""."""
        return ", ".join(f"{n} {kind}" for kind, n in self.failed.most_common())


def stored_copy(data: bytes, max_side: int) -> tuple[bytes, str]:
    """(the bytes to store, their suffix): `data` itself when it is an image no longer than `max_side` on
    either side, else a JPEG shrunk to it. FetchError("not an image" / "too large") otherwise."""
    from PIL import Image, ImageOps

    from interactive_ir.index.imageio import checked_suffix, max_pixels

    try:
        suffix = checked_suffix(data)
    except BadInputError as e:
        raise FetchError("not an image", str(e)) from e
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                w, h = im.size
                if w * h > max_pixels():
                    raise FetchError("too large", f"{w}x{h} pixels, over the {max_pixels() / 1e6:.0f} MP limit")
                if not max_side or max(w, h) <= max_side:
                    return data, suffix
                im.draft("RGB", (max_side, max_side))  # a JPEG decodes at a reduced size
                small = _rgb(ImageOps.exif_transpose(im))
                small.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise FetchError("too large", f"more pixels than PIL decodes safely ({str(e)[:80]})") from e
    except (OSError, ValueError, SyntaxError) as e:
        raise FetchError("not an image", f"a broken image ({str(e)[:100]})") from e
    out = io.BytesIO()
    small.save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return out.getvalue(), ".jpg"


def _rgb(im):
    """`im` as RGB, transparent parts on white."""
    from PIL import Image

    if im.mode in ("RGBA", "LA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return im.convert("RGB")


class UrlImages:
    """Fetches URLs into `UrlCache` with `cfg.workers` threads; use as a context manager."""

    def __init__(self, cfg: FetchConfig, progress: Callable[[FetchStats], None] | None = None):
        self.cfg = cfg
        self.cache = UrlCache(cfg.cache_dir or None, cfg.max_side)
        self.stats = FetchStats(max_side=cfg.max_side)
        self.progress = progress
        self._pool: ThreadPoolExecutor | None = None
        self._client = None
        self._lock = threading.Lock()
        self._inflight: dict[str, Future] = {}
        self._t0 = 0.0

    @property
    def window(self) -> int:
        """URLs to keep asked for ahead of the row being written (enough to keep every thread busy)."""
        return 4 * self.cfg.workers

    def __enter__(self) -> UrlImages:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()

    def submit(self, url: str) -> Future:
        """A future of `url`'s `Cached` copy (shared with a fetch of the same URL still in flight)."""
        with self._lock:
            if url in self._inflight:
                return self._inflight[url]
            if self._pool is None:
                self._t0 = time.monotonic()
                self._client = new_client(self.cfg)
                self._pool = ThreadPoolExecutor(self.cfg.workers, thread_name_prefix="iir-fetch")
            fut = self._pool.submit(self._one, url)
            self._inflight[url] = fut
        fut.add_done_callback(lambda _f, u=url: self._forget(u))
        return fut

    def _forget(self, url: str) -> None:
        with self._lock:
            self._inflight.pop(url, None)

    def _one(self, url: str) -> Cached:
        got = self.cache.get(url)
        size = 0
        try:
            if got is None:
                if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                    raise FetchError("bad url", f"not an http or https URL ({str(url)[:80]})")
                body = fetch(url, self.cfg, self._client)
                size = len(body.data)
                try:
                    data, suffix = stored_copy(body.data, self.cfg.max_side)
                except FetchError as e:
                    sent = body.content_type.split(";")[0].strip()
                    if e.kind == "not an image" and sent and not sent.startswith("image/"):
                        raise FetchError(e.kind, f"not an image (the server sent {sent})") from e
                    raise
                got = self.cache.put(url, data, suffix)
        except FetchError as e:
            self._count(failed=e.kind)
            raise
        self._count(cached=got.hit, size=size)
        return got

    def _count(self, failed: str = "", cached: bool = False, size: int = 0) -> None:
        with self._lock:
            if failed:
                self.stats.failed[failed] += 1
            elif cached:
                self.stats.cached += 1
            else:
                self.stats.fetched += 1
            self.stats.bytes += size
            self.stats.seconds = time.monotonic() - self._t0
        if self.progress is not None:
            self.progress(self.stats)
