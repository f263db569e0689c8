"""Fetching one image URL of a dataset at index time, politely and safely.

`fetch(url, cfg, client)` GETs `url` with a User-Agent naming the project, follows at most MAX_REDIRECTS
redirects (to http or https only), retries a 429 or 5xx answer or a dropped connection `cfg.retries` times
with exponential backoff (a Retry-After header wins, up to MAX_WAIT_S), and gives up on a request slower
than `cfg.timeout_s` in all or a body larger than `cfg.max_bytes`. Every failure is a `FetchError` whose
`kind` names it; the staging report counts skipped rows by kind.

SSRF: a dataset's URLs are user input, and a Space that indexes one must not be made to read its own
network (a cloud's metadata address, a database on localhost). Each host is resolved once, its addresses
checked, and the connection made to a checked address itself (the URL's host goes in the Host header and
in TLS's SNI, so certificates are still verified against the host): a second DNS answer cannot swap in
another address, and every redirect is checked the same way. Loopback, private, link-local and other non-global
addresses are refused unless `cfg.allow_private` is set (tests, a lab's own image server). Connections
are not kept alive: a pooled connection is keyed by address, and two hosts on one address must not share
one TLS session. Proxy variables are ignored (the check is about where the connection goes).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from interactive_ir.config import apply_env, apply_overrides
from interactive_ir.errors import BadInputError

ENV_PREFIX = "IIR_FETCH_"
USER_AGENT = "interactive_ir/0.1 (image search index builder; fetches each image once and caches it)"
MAX_REDIRECTS = 5
MAX_ADDRESSES = 3  # addresses of a host tried in turn when a connection is refused (IPv6 first, then IPv4 ...)
MAX_WAIT_S = 60.0  # longest wait before a retry, whatever Retry-After says
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
CHUNK = 64 * 1024
FLAGS = {"workers": "--fetch-workers", "timeout_s": "--fetch-timeout", "max_bytes": "--fetch-max-bytes",
         "retries": "--fetch-retries", "backoff_s": "--fetch-backoff", "max_side": "--fetch-max-side",
         "cache_dir": "--fetch-cache", "allow_private": "--fetch-allow-private"}  # the `index` flag of each field


@dataclass(frozen=True)
class FetchConfig:
    """Fetching a dataset's image URLs at index time (env IIR_FETCH_<FIELD>; `index --fetch-*` flags)."""

    workers: int = 4  # URLs fetched at once (a few, to be polite to the image hosts)
    timeout_s: float = 20.0  # seconds one request may take in all (connect, answer, body); a slower URL's row is skipped
    max_bytes: int = 20_000_000  # a larger response is not read and its row is skipped
    retries: int = 3  # further tries after a 429 or 5xx answer or a dropped connection (a timeout is not retried)
    backoff_s: float = 1.0  # wait before the first retry, doubled for each next one (a Retry-After header wins, up to 60 s)
    max_side: int = 1024  # longest side of the stored copy in pixels (larger images are shrunk to a JPEG); 0 = store as fetched
    cache_dir: str = ""  # the fetched images, content-addressed, shared by re-runs and re-indexing; "" = IIR_CACHE_DIR/url-images
    allow_private: bool = False  # also fetch from loopback, private and link-local addresses (off: a dataset's URLs cannot reach this machine's network)
    user_agent: str = USER_AGENT  # the User-Agent header of every request


def fetch_config(environ=None, **overrides) -> FetchConfig:
    """`FetchConfig` with the environment's `IIR_FETCH_*` applied, then non-None `overrides` (flags); checked."""
    try:
        cfg = apply_overrides(apply_env(FetchConfig(), ENV_PREFIX, environ), **overrides)
    except ValueError as e:
        raise BadInputError(str(e)) from e
    for name, low in (("workers", 1), ("timeout_s", 0.01), ("max_bytes", 1), ("retries", 0), ("backoff_s", 0),
                      ("max_side", 0)):
        if getattr(cfg, name) < low:
            raise BadInputError(f"{ENV_PREFIX}{name.upper()} ({FLAGS[name]}) must be at least {low}, got "
                                f"{getattr(cfg, name)}")
    return cfg


class FetchError(BadInputError):
    """One URL could not be fetched; `kind` names why ("http", "timeout", "too large", "private address", ...)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Fetched:
    data: bytes  # the body
    content_type: str  # its Content-Type header ("" when none)
    url: str  # the URL that answered (after redirects)


def new_client(cfg: FetchConfig, verify=True):
    """An httpx client for `fetch` (shared by the fetching threads; close it when done). `verify`: httpx's
    (True: the system's certificate authorities; an `ssl.SSLContext` for a test's own)."""
    try:
        import httpx
    except ImportError as e:
        raise BadInputError("fetching image URLs needs httpx: pip install httpx (huggingface_hub and gradio "
                            "bring it)") from e
    return httpx.Client(follow_redirects=False, trust_env=False, timeout=httpx.Timeout(cfg.timeout_s), verify=verify,
                        limits=httpx.Limits(max_connections=cfg.workers, max_keepalive_connections=0),
                        headers={"User-Agent": cfg.user_agent, "Accept": "image/*,*/*;q=0.5"})


def fetch(url: str, cfg: FetchConfig, client, sleep=time.sleep) -> Fetched:
    """The body of `url`, following redirects; `FetchError` when it cannot be had (see the module's notes)."""
    import httpx

    for _ in range(MAX_REDIRECTS + 1):
        status, headers, data = _with_retries(url, cfg, client, sleep)
        if status in REDIRECT_STATUS:
            location = headers.get("location", "")
            if not location:
                raise FetchError("http", f"HTTP {status} without a Location")
            try:
                url = str(httpx.URL(url).join(location))
            except (httpx.InvalidURL, ValueError) as e:
                raise FetchError("redirect", f"a redirect to a malformed URL ({location[:80]})") from e
            if not url.startswith(("http://", "https://")):
                raise FetchError("redirect", f"a redirect to a non-http URL ({url.split(':', 1)[0]}:)")
            continue
        if status != 200:
            raise FetchError("http", f"HTTP {status}")
        return Fetched(data, headers.get("content-type", ""), url)
    raise FetchError("redirect", f"more than {MAX_REDIRECTS} redirects")


def _with_retries(url: str, cfg: FetchConfig, client, sleep) -> tuple[int, dict, bytes]:
    """(status, lower-case headers, body) of one GET, retrying 429, 5xx and dropped connections."""
    import httpx

    for attempt in range(cfg.retries + 1):
        last = attempt == cfg.retries
        try:
            status, headers, data = _get(url, cfg, client)
        except httpx.TimeoutException as e:
            raise FetchError("timeout", f"no answer within {cfg.timeout_s:g} s") from e
        except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as e:  # dropped: perhaps passing
            if last:
                raise FetchError("unreachable", f"the connection dropped ({_first_line(e)})") from e
            sleep(min(cfg.backoff_s * 2 ** attempt, MAX_WAIT_S))
            continue
        except (httpx.TransportError, OSError) as e:  # refused, TLS failure: not retried
            raise FetchError("unreachable", f"the connection failed ({_first_line(e)})") from e
        except httpx.HTTPError as e:  # a body that does not decode (Content-Encoding), ...
            raise FetchError("bad response", f"a malformed response ({_first_line(e)})") from e
        if status not in RETRY_STATUS or last:
            if status in RETRY_STATUS:
                raise FetchError("http", f"HTTP {status} after {cfg.retries + 1} tries")
            return status, headers, data
        sleep(_wait(headers.get("retry-after", ""), cfg.backoff_s * 2 ** attempt))
    raise AssertionError("unreachable")  # the loop returns or raises


def _get(url: str, cfg: FetchConfig, client) -> tuple[int, dict, bytes]:
    """One GET of `url` from a checked address of its host (the next one when a connection is refused)."""
    import httpx

    u, host_header, extensions, addresses = pinned(url, cfg.allow_private)
    for i, address in enumerate(addresses):
        try:
            return _get_from(str(u.copy_with(host=address)), host_header, extensions, cfg, client)
        except httpx.ConnectError:
            if i == len(addresses) - 1:
                raise
    raise AssertionError("unreachable")  # `pinned` gives at least one address


def _get_from(target: str, host_header: str, extensions: dict, cfg: FetchConfig, client) -> tuple[int, dict, bytes]:
    """One GET of `target` (a URL naming an address); the body only for a 200, read up to `cfg.max_bytes`."""
    start = time.monotonic()
    with client.stream("GET", target, headers={"Host": host_header}, extensions=extensions) as r:
        headers = {k.lower(): v for k, v in r.headers.items()}
        if r.status_code != 200:
            return r.status_code, headers, b""
        size = headers.get("content-length", "")
        if size.isdigit() and int(size) > cfg.max_bytes:
            raise FetchError("too large", f"too large ({int(size):,} bytes; the limit is {cfg.max_bytes:,})")
        chunks, total = [], 0
        for chunk in r.iter_bytes(CHUNK):
            total += len(chunk)
            if total > cfg.max_bytes:
                raise FetchError("too large", f"too large (over {cfg.max_bytes:,} bytes)")
            if time.monotonic() - start > cfg.timeout_s:
                raise FetchError("timeout", f"slower than {cfg.timeout_s:g} s")
            chunks.append(chunk)
        return 200, headers, b"".join(chunks)


def pinned(url: str, allow_private: bool):
    """(`url` parsed, its Host header, the request's extensions (TLS's SNI), the checked addresses of its host)."""
    import httpx

    try:
        u = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as e:
        raise FetchError("bad url", f"not a URL ({url[:80]})") from e
    if u.scheme not in ("http", "https"):
        raise FetchError("bad url", f"not an http or https URL ({url[:80]})")
    if not u.host:
        raise FetchError("bad url", f"a URL without a host ({url[:80]})")
    port = u.port or (443 if u.scheme == "https" else 80)
    addresses = checked_addresses(u.host, port, allow_private)
    return u, u.netloc.decode("ascii"), ({"sni_hostname": u.host} if u.scheme == "https" else {}), addresses


def checked_addresses(host: str, port: int, allow_private: bool) -> list[str]:
    """The addresses of `host` that may be fetched from (at most MAX_ADDRESSES, the resolver's order);
    FetchError when none may (or none resolves)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as e:
        raise FetchError("unreachable", f"{host} does not resolve") from e
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    allowed = [a for a in addresses if allow_private or is_public(a)]
    if not allowed:
        raise FetchError("private address", f"{host} is a private, loopback or link-local address ({addresses[0]}): "
                         f"not fetched unless {ENV_PREFIX}ALLOW_PRIVATE=1 (--fetch-allow-private)")
    return allowed[:MAX_ADDRESSES]


def is_public(address: str) -> bool:
    """Is `address` a global unicast address (not loopback, private, link-local, shared, reserved, multicast)?"""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _wait(retry_after: str, default: float) -> float:
    """Seconds to wait before a retry: the Retry-After header (seconds or a date), else `default`; capped."""
    value = retry_after.strip()
    wait = default
    if value.isdigit():
        wait = float(value)
    elif value:
        try:
            wait = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            wait = default
    return max(0.0, min(wait, MAX_WAIT_S))


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [e.__class__.__name__])[0][:120]
