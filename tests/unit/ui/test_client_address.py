"""One client address for the whole app (issue 40, item 2): `serving.limits.client_of`, which believes
X-Forwarded-For only through uvicorn and only from `--trusted-proxies`; a forged header changes no key unless
the proxy is trusted; no other module reads the headers; one warning when a proxy is not trusted."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
from pathlib import Path

import pytest
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from interactive_ir.ui.serving.limits import client_of
from interactive_ir.ui.serving.process import trust_proxies
from interactive_ir.ui.serving.proxy_check import ProxyCheck, proxy_note, start_up_note, trusted_now
from interactive_ir.ui.signin import address

PACKAGE = Path(__file__).resolve().parents[3] / "interactive_ir"


def _through_uvicorn(trusted_flag: str, peer: str, headers: list[tuple[bytes, bytes]], inner=None):
    """The key the app's limits count for a request from `peer` with `headers`, served as app.py serves it:
    `--trusted-proxies trusted_flag` -> FORWARDED_ALLOW_IPS -> uvicorn's proxy middleware -> the app."""
    env: dict[str, str] = {}
    allowed = trust_proxies(trusted_flag, env)
    seen = {}

    async def app(scope, receive, send):
        seen["key"] = client_of(scope)
        seen["signin"] = address(_GrRequest(scope))

    outer = ProxyHeadersMiddleware(inner(app) if inner else app, trusted_hosts=allowed)
    scope = {"type": "http", "method": "GET", "path": "/", "client": (peer, 40000), "headers": headers}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, outer(scope, None, None)).result()
    return seen


class _GrRequest:
    """What a listener's `gr.Request` offers: `.client.host` from the scope, `.request.scope`."""

    def __init__(self, scope):
        from starlette.requests import Request

        self.request = Request(scope)
        self.client = self.request.client


FORGED = [(b"x-forwarded-for", b"6.6.6.6"), (b"x-real-ip", b"7.7.7.7")]


@pytest.mark.parametrize("peer", ["127.0.0.1", "203.0.113.9"])
def test_a_forged_header_changes_no_key_without_a_trusted_proxy(peer):
    seen = _through_uvicorn("", peer, FORGED)
    assert seen["key"] == peer
    assert seen["signin"] == address(_GrRequest({"type": "http", "client": (peer, 1), "headers": []}))


def test_a_trusted_proxys_header_names_the_client_and_a_forged_prefix_does_not():
    seen = _through_uvicorn("127.0.0.1", "127.0.0.1", [(b"x-forwarded-for", b"6.6.6.6, 198.51.100.4")])
    assert seen["key"] == "198.51.100.4"  # the address the proxy appended, not what the client wrote before it
    assert _through_uvicorn("127.0.0.1", "203.0.113.9", FORGED)["key"] == "203.0.113.9"  # not from that proxy
    assert _through_uvicorn("10.0.0.0/8", "10.16.3.80", [(b"x-forwarded-for", b"198.51.100.4")])["key"] == \
        "198.51.100.4"


def test_the_sign_in_budget_key_follows_the_same_address():
    one = _through_uvicorn("", "127.0.0.1", [(b"x-forwarded-for", b"6.6.6.1")])["signin"]
    two = _through_uvicorn("", "127.0.0.1", [(b"x-forwarded-for", b"6.6.6.2")])["signin"]
    assert one == two  # a fresh forged header is not a fresh visitor


def test_no_module_but_the_client_address_function_reads_proxy_headers():
    allowed = {"ui/serving/limits.py", "ui/serving/proxy_check.py"}
    # code, not prose: a header named in a string literal, the request's headers, the connection's client
    pattern = re.compile(r"""b?['"](x-forwarded-for|x-real-ip|forwarded|x-forwarded)['"]|request\.headers|"""
                         r"""\.client\.host|\[['"]client['"]\]|\.get\(['"]client['"]""", re.IGNORECASE)
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if str(p.relative_to(PACKAGE)) not in allowed and pattern.search(p.read_text()))
    assert readers == [], f"read the client through ui.serving.limits.client_of instead: {readers}"


def test_an_untrusted_local_proxy_is_named_once(caplog):
    caplog.set_level(logging.WARNING, "interactive_ir.ui.serving.proxy_check")
    notes = _through_uvicorn("", "127.0.0.1", FORGED, inner=lambda app: ProxyCheck(app, {"FORWARDED_ALLOW_IPS": ""}))
    assert notes["key"] == "127.0.0.1"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "--trusted-proxies 127.0.0.1" in lines[0] and "X-Forwarded-For" in lines[0]
    check = ProxyCheck(None, {"FORWARDED_ALLOW_IPS": ""})

    async def app(scope, receive, send):
        pass

    check.app = app
    scope = {"type": "http", "client": ("127.0.0.1", 1), "headers": FORGED}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        for _ in range(3):
            pool.submit(asyncio.run, check(scope, None, None)).result()
    assert len(caplog.records) == 2  # this check's one line; the earlier check said its own once


def test_when_nothing_is_said():
    none = trusted_now({"FORWARDED_ALLOW_IPS": ""})
    xff = [(b"x-forwarded-for", b"198.51.100.4")]
    assert proxy_note({"client": ("203.0.113.9", 1), "headers": xff}, none) == ""  # a public peer: a visitor's own header
    assert proxy_note({"client": ("127.0.0.1", 1), "headers": []}, none) == ""  # no proxy header
    trusted = trusted_now({"FORWARDED_ALLOW_IPS": "127.0.0.1"})
    assert proxy_note({"client": ("127.0.0.1", 1), "headers": xff}, trusted) == ""  # trusted
    # a trusted proxy's request whose client uvicorn replaced by a private address the header names
    assert proxy_note({"client": ("192.168.1.20", 1), "headers": [(b"x-forwarded-for", b"192.168.1.20")]},
                      trusted) == ""
    assert proxy_note({"client": ("10.16.3.80", 1), "headers": [(b"forwarded", b"for=198.51.100.4")]},
                      none).startswith("a request from 10.16.3.80 carries Forwarded")
    assert trusted_now({"FORWARDED_ALLOW_IPS": "*"}) is None  # all trusted: nothing to say


def test_a_space_without_trusted_proxies_is_told_at_start_up(caplog):
    assert "IIR_TRUSTED_PROXIES=10.0.0.0/8" in start_up_note({"SPACE_ID": "u/s", "FORWARDED_ALLOW_IPS": ""})
    assert start_up_note({"SPACE_ID": "u/s", "FORWARDED_ALLOW_IPS": "10.0.0.0/8"}) == ""
    assert start_up_note({"FORWARDED_ALLOW_IPS": ""}) == ""
    caplog.set_level(logging.WARNING)
    trust_proxies("", {"SPACE_ID": "u/s"})
    assert sum("this Space trusts no proxy" in r.getMessage() for r in caplog.records) == 1
    trust_proxies("10.0.0.0/8", {"SPACE_ID": "u/s"})
    assert sum("this Space trusts no proxy" in r.getMessage() for r in caplog.records) == 1
