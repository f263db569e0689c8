"""Who may use the study's /admin page, without Gradio: the password behind a per-source back-off
(`LoginLimiter`), a one-time sign-in link from the server log that no back-off holds back (`AdminGate`), the
signed-in keys, and the event log's downloads, served once and only to the browser that signed in (a cookie
set for that sign-in, never a bearer URL).

A source is the app's one client address (`ui.serving.limits.client_of`, which believes X-Forwarded-For only
from `--trusted-proxies`). Behind a proxy the app does not trust, every visitor is the proxy's address: the
one-time link still signs the admin in, whatever the others did.
"""

# no `from __future__ import annotations`: FastAPI reads the routes' annotations (`Request`) at run time

import hmac
import logging
import secrets
import shutil
import threading
import time
from collections import OrderedDict
from pathlib import Path

from interactive_ir.ui.serving.limits import Addresses

log = logging.getLogger("interactive_ir.study.admin")

EXPORT_ROUTE = "admin/export"  # the one-time downloads of the event log
BIND_ROUTE = "admin/bind"  # where the signed-in browser gets the cookie its downloads need
COOKIE = "iir_study_admin"  # the download cookie's name (HttpOnly, SameSite=Strict), with a suffix per gate


class LoginLimiter:
    """Failed sign-ins slow down, per source: after `free` failures a source waits `base_s`, doubling per
    failure up to `max_s`; a success clears it. Only a source's own failures hold it back, so the right
    password from a source without failures always passes at once, however many sources failed.

    Memory is bounded: at most `max_sources` sources are remembered (the least recently failed forgotten
    first). Against a spread-out guessing attack, when more than `surge_sources` distinct untrusted sources
    failed within `window_s`, an untrusted source's back-off starts at its first failure (no free tries);
    sources in `trusted` (the admin's own addresses) keep their free tries."""

    def __init__(self, free: int = 3, base_s: float = 2.0, max_s: float = 900.0, surge_sources: int = 200,
                 window_s: float = 600.0, max_sources: int = 10_000, clock=time.monotonic,
                 trusted: Addresses | None = None):
        self.free, self.base_s, self.max_s = free, base_s, max_s
        self.surge_sources, self.window_s, self.max_sources = surge_sources, window_s, max_sources
        self.clock = clock
        self.trusted = trusted if trusted is not None else Addresses("")
        self._fails: OrderedDict[str, tuple[int, float]] = OrderedDict()  # source -> (failures, blocked until)
        self._recent: OrderedDict[str, float] = OrderedDict()  # untrusted source -> its last failure, oldest first
        self._lock = threading.Lock()

    def wait_s(self, source: str) -> float:
        """Seconds before `source` may try again (0: now)."""
        with self._lock:
            return max(0.0, self._fails.get(source, (0, 0.0))[1] - self.clock())

    def surging(self) -> bool:
        """More than `surge_sources` distinct untrusted sources failed within the window."""
        with self._lock:
            return self._surging(self.clock())

    def _surging(self, now: float) -> bool:
        while self._recent and now - next(iter(self._recent.values())) >= self.window_s:
            self._recent.popitem(last=False)
        return len(self._recent) > self.surge_sources

    def failed(self, source: str) -> None:
        now = self.clock()
        with self._lock:
            trusted = source in self.trusted
            if not trusted:
                self._recent[source] = now
                self._recent.move_to_end(source)
                while len(self._recent) > self.max_sources:
                    self._recent.popitem(last=False)
            free = self.free if trusted or not self._surging(now) else 0
            n = self._fails.pop(source, (0, 0.0))[0] + 1
            delay = 0.0 if n <= free else min(self.max_s, self.base_s * 2 ** (n - free - 1))
            self._fails[source] = (n, now + delay)  # to the end: the most recently failed
            while len(self._fails) > self.max_sources:
                self._fails.popitem(last=False)

    def succeeded(self, source: str) -> None:
        with self._lock:
            self._fails.pop(source, None)

    def __len__(self) -> int:
        return len(self._fails)


class AdminGate:
    """The admin's sign-ins: the password behind a `LoginLimiter`; a one-time link printed in the server log
    (with it, the password is checked whatever the limiter says, so no attacker can lock the admin out; used
    or older than `link_s`, a new one is logged); the signed-in keys (a key lives `session_s` after its last
    use); and the export downloads (served once, within `download_s`, only to the browser that signed in with
    that key: it holds the key's cookie, set through a single-use bind token)."""

    def __init__(self, password: str, limiter: LoginLimiter | None = None, clock=time.monotonic,
                 session_s: float = 3600.0, download_s: float = 600.0, link_s: float = 86_400.0, announce=None):
        self.password, self.clock = password, clock
        self.limiter = limiter if limiter is not None else LoginLimiter()
        self.session_s, self.download_s, self.link_s = session_s, download_s, link_s
        self._announce = announce or (lambda text: log.warning("%s", text))
        self._keys: dict[str, tuple[float, str]] = {}  # signed-in key -> (last use, its download cookie)
        self._binds: dict[str, tuple[str, float]] = {}  # single-use bind token -> (key, made at)
        self._downloads: dict[str, tuple[Path, float, str]] = {}  # token -> (file, offered at, key)
        self._lock = threading.Lock()
        self._once, self._once_at = "", 0.0
        # cookies ignore ports: two study apps on one host (or a restart) each get their own cookie
        self.cookie = f"{COOKIE}_{secrets.token_hex(4)}"
        if password:
            self._new_link()

    def _new_link(self) -> None:
        self._once, self._once_at = secrets.token_urlsafe(24), self.clock()
        hours = self.link_s / 3600
        self._announce(f"study admin: one-time sign-in link /admin?once={self._once} (after the server's address; "
                       f"with the password it signs in whatever the failed sign-ins, also behind a proxy where every "
                       f"visitor has one address; single use, {hours:g} h; a new one is logged after use or expiry)")

    def link(self) -> str:
        return f"/admin?once={self._once}"

    def _link_ok(self, once: str) -> bool:
        """`once` is the live one-time link's token (an expired link is replaced by a new, logged one)."""
        if not self._once:
            return False
        if self.clock() - self._once_at > self.link_s:
            self._new_link()
            return False
        return bool(once) and hmac.compare_digest(str(once).encode(), self._once.encode())

    def sign_in(self, given: str, client: str, once: str = "") -> tuple[str, str]:
        """(key, "") when signed in, else ("", why: one line)."""
        if not self.password:
            return "", "The admin page is off"
        with_link = self._link_ok(once)
        wait = 0.0 if with_link else self.limiter.wait_s(client)
        if wait > 0:
            return "", (f"Too many wrong passwords from your address: try again in {int(wait) + 1} s, or use "
                        "the one-time sign-in link in the server log")
        if not check_password(given, self.password):
            if not with_link:
                self.limiter.failed(client)
            log.info("study admin: a wrong password from %s", str(client)[:64])
            return "", "Wrong password"
        self.limiter.succeeded(client)
        if with_link:
            self._new_link()
        key = secrets.token_urlsafe(32)
        with self._lock:
            self._keys[key] = (self.clock(), secrets.token_urlsafe(32))
        return key, ""

    def signed_in(self, key: object) -> bool:
        return self._touch(key) is not None

    def _touch(self, key: object) -> str | None:
        """The live key's download cookie (its last use now), or None."""
        if not isinstance(key, str) or not key:
            return None
        now = self.clock()
        with self._lock:
            for k in [k for k, (t, _) in self._keys.items() if now - t > self.session_s]:
                del self._keys[k]
            if key not in self._keys:
                return None
            cookie = self._keys[key][1]
            self._keys[key] = (now, cookie)
            return cookie

    def bind_token(self, key: str) -> str:
        """A single-use token (valid `download_s`) that gives the browser of `key` its download cookie at
        `BIND_ROUTE` ("" when `key` is not signed in)."""
        if not self.signed_in(key):
            return ""
        tok, now = secrets.token_urlsafe(32), self.clock()
        with self._lock:
            for t in [t for t, (_, at) in self._binds.items() if now - at > self.download_s]:
                del self._binds[t]
            self._binds[tok] = (key, now)
        return tok

    def bind(self, tok: object) -> str | None:
        """The download cookie for a bind token, once (None: unknown, used or lapsed)."""
        with self._lock:
            got = self._binds.pop(str(tok), None)
        if got is None or self.clock() - got[1] > self.download_s:
            return None
        return self._touch(got[0])

    def offer(self, key: str, path: Path) -> str:
        """The one-time URL path of `path` for the signed-in `key` (PermissionError when not signed in)."""
        if not self.signed_in(key):
            raise PermissionError("sign in first")
        tok, now = secrets.token_urlsafe(32), self.clock()
        with self._lock:
            stale = [t for t, (_, at, _) in self._downloads.items() if now - at > self.download_s]
            gone = [self._downloads.pop(t)[0] for t in stale]
            self._downloads[tok] = (Path(path), now, key)
        for f in gone:  # offered, never fetched: deleted
            remove_export(f)
        return f"/{EXPORT_ROUTE}/{tok}/{Path(path).name}"

    def take(self, tok: str, cookie: object = None) -> Path | None:
        """The file offered under `tok`, once, to the browser holding its key's cookie, while the key is signed
        in and within `download_s`. A request without the right cookie leaves the offer in place."""
        with self._lock:
            got = self._downloads.get(str(tok))
        if got is None:
            return None
        path, at, key = got
        want = self._touch(key)
        if want is None or not isinstance(cookie, str) or not hmac.compare_digest(cookie.encode(), want.encode()):
            log.warning("study admin: an export link was requested without the signed-in admin's cookie")
            return None
        with self._lock:
            if self._downloads.pop(str(tok), None) is None:  # another request of the same browser took it
                return None
        if self.clock() - at > self.download_s or not path.is_file():
            return None
        return path

    def routes(self) -> list:
        """The bind and download routes (for the app's `routes`)."""
        from fastapi.routing import APIRoute
        from starlette.background import BackgroundTask
        from starlette.requests import Request
        from starlette.responses import FileResponse, PlainTextResponse, Response

        def bind(tok: str, request: Request):
            cookie = self.bind(tok)
            if cookie is None:
                return PlainTextResponse("not found", status_code=404)
            r = Response(status_code=204)
            r.set_cookie(self.cookie, cookie, max_age=int(self.session_s), httponly=True, samesite="strict",
                         secure=request.url.scheme == "https", path="/")
            return r

        def download(tok: str, name: str, request: Request):
            path = self.take(tok, request.cookies.get(self.cookie))
            if path is None or path.name != name:
                return PlainTextResponse("not found", status_code=404)
            return FileResponse(path, filename=path.name, background=BackgroundTask(remove_export, path))

        return [APIRoute(f"/{BIND_ROUTE}/{{tok}}", bind, methods=["GET"], include_in_schema=False),
                APIRoute(f"/{EXPORT_ROUTE}/{{tok}}/{{name}}", download, methods=["GET"], include_in_schema=False)]


def remove_export(path: Path) -> None:
    """Delete an export (and the folder `StudyPage.export` made for it)."""
    if path.parent.name.startswith("iir-study-"):
        shutil.rmtree(path.parent, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def check_password(given: str, expected: str | None) -> bool:
    """True when a password is set and `given` matches it (constant-time comparison)."""
    return bool(expected) and hmac.compare_digest(str(given or "").encode(), expected.encode())
