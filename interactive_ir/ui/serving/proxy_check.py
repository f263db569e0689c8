"""A warning, once, when the app sits behind a reverse proxy it does not trust.

The app's one client address is `limits.client_of`: the connection's address, which uvicorn replaces with
the X-Forwarded-For address only when the connection comes from a proxy named in `--trusted-proxies`
(`FORWARDED_ALLOW_IPS`, set by `process.trust_proxies`). Behind a proxy that is not named, every visitor is
the proxy's address: the per-client limits (uploads, the anonymous LLM budget, sign-in back-off, study
enrolment) become one budget shared by all. The app cannot tell a proxy from a visitor forging the header,
so it never believes the header by itself; it says so in the log:

- at start-up, on a Hugging Face Space (`SPACE_ID` set) with no trusted proxy (`start_up_note`);
- at the first request from a loopback or private address that carries proxy headers while that address
  is not trusted (`ProxyCheck`, ASGI middleware; one line for the process's life).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
from collections.abc import Mapping

from interactive_ir.ui.serving.limits import Addresses

log = logging.getLogger(__name__)

PROXY_HEADERS = (b"x-forwarded-for", b"x-real-ip", b"forwarded")  # what a reverse proxy adds
SPACE_PROXIES = "10.0.0.0/8"  # where a Hugging Face Space's own proxy connects from (an internal 10.x address)


def trusted_now(environ: Mapping[str, str] | None = None) -> Addresses | None:
    """The proxies uvicorn believes (`FORWARDED_ALLOW_IPS`); None when that is "*" or names something that
    is no address (a socket path, a host name): then nothing is said."""
    env = os.environ if environ is None else environ
    text = env.get("FORWARDED_ALLOW_IPS", "")
    if "*" in text:
        return None
    try:
        return Addresses(text)
    except ValueError:
        return None


def start_up_note(environ: Mapping[str, str] | None = None) -> str:
    """The start-up warning: on a Space with no trusted proxy, what to set; "" when there is nothing to say."""
    env = os.environ if environ is None else environ
    if not env.get("SPACE_ID") or (env.get("FORWARDED_ALLOW_IPS") or "").strip():
        return ""
    return ("this Space trusts no proxy: every visitor reaches the app through the Space's proxy, so the per-client "
            "limits (uploads, the anonymous LLM budget, sign-in back-off, study enrolment) may count them all as "
            f"one address; set the Space variable IIR_TRUSTED_PROXIES={SPACE_PROXIES} (the proxy's address is "
            "logged at the first request that comes through it)")


LOCAL = "127.0.0.0/8, ::1, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7"  # where a reverse proxy connects from


def _private(address: str) -> bool:
    return address in Addresses(LOCAL)


def _forwarded(headers) -> tuple[str, list[str]]:
    """(the first proxy header's name, the addresses it names) of a request, ("", []) without one."""
    for name, value in headers or ():
        if name in PROXY_HEADERS:
            text = value.decode("latin-1")
            if name == b"forwarded":
                text = ",".join(p.split("=", 1)[1] for p in text.replace(";", ",").split(",")
                                if p.strip().lower().startswith("for="))
            return name.decode(), [a.strip().strip('"').strip("[]") for a in text.split(",") if a.strip()]
    return "", []


def proxy_note(scope, trusted: Addresses | None) -> str:
    """The warning for a request that came through a proxy this app does not trust, or ""."""
    if trusted is None:
        return ""
    client = scope.get("client")
    peer = str(client[0]) if client else ""
    header, named = _forwarded(scope.get("headers"))
    # a trusted proxy's request has its client replaced by an address the header names: nothing to say
    if not header or not peer or peer in trusted or peer in named or not _private(peer):
        return ""
    example = f"{peer}" if ipaddress.ip_address(peer.strip("[]")).is_loopback else f"{peer} (or its network)"
    return (f"a request from {peer} carries {header.title()}, so it came through a proxy, but {peer} is not a trusted "
            f"proxy: every visitor behind it counts as {peer} for the per-client limits (uploads, the anonymous LLM "
            f"budget, sign-in back-off, study enrolment). If {peer} is your reverse proxy, start the app with "
            f"--trusted-proxies {example} (IIR_TRUSTED_PROXIES); on a Hugging Face Space, IIR_TRUSTED_PROXIES="
            f"{SPACE_PROXIES}. Said once.")


class ProxyCheck:
    """ASGI middleware: logs `proxy_note` for the first request that has one, then only passes requests on."""

    def __init__(self, app, environ: Mapping[str, str] | None = None):
        self.app = app
        self.trusted = trusted_now(environ)  # read when the server builds its middleware, after process.install
        self._said = threading.Event()

    async def __call__(self, scope, receive, send):
        if not self._said.is_set() and scope.get("type") in ("http", "websocket"):
            note = proxy_note(scope, self.trusted)
            if note and not self._said.is_set():
                self._said.set()
                log.warning(note)
        return await self.app(scope, receive, send)
