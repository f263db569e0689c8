"""One place that takes secrets and internal addresses out of text about model endpoints.

Two audiences, two functions:

- `redact_text` is for the owner (the log, `config`, eval headers, error messages): every URL inside the text
  keeps its scheme, host, port and path, but loses its user-info (`https://user:pass@host` ->
  `https://***@host`) and the values of query parameters that carry credentials (`?api_key=`, `token=`,
  `key=`, `sig=`, ...); `Authorization: Bearer ...`-like values and bare API keys (`sk-...`, `hf_...`) go too.
- `public_text` is for visitors (the page: the "Running on" panel, so `/config`, the status line, the dialogue):
  `redact_text`, then every URL and every host:port (requests' `HTTPConnectionPool(host='10.0.0.5', port=8000)`,
  httpx's `for url: http://...`, a bare `10.0.0.5:8000`) becomes "the model's server".

`public_reason(e)` is a backend failure as a visitor reads it: the backend's own visitor sentence (`PUBLIC_ATTR`
on the exception, e.g. "the language model (an OpenAI-compatible endpoint) did not answer: it timed out")
where it set one, else `public_text` of the message; `whole_sentences` keeps either within a length by cutting at
a sentence end, or at a word with an ellipsis, never mid-word.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote, urlsplit, urlunsplit

HIDDEN = "***"  # what a secret becomes
SERVER = "the model's server"  # what an internal address becomes for a visitor
PUBLIC_ATTR = "public"  # the attribute of a BackendError holding its visitor sentence
NOTE_CHARS = 300  # a visitor's failure note at most this long (cut at a sentence or word)

# query parameters whose values are credentials (compared lower-case, "-" read as "_")
SECRET_PARAMS = frozenset({
    "api_key", "apikey", "key", "token", "access_token", "auth", "auth_token", "authorization", "sig", "signature",
    "secret", "client_secret", "password", "pass", "pwd", "code", "session", "sessionid", "credential",
    "x_amz_signature", "x_amz_credential", "x_amz_security_token", "hf_token", "bearer", "jwt", "id_token",
    "refresh_token", "private_token", "sas", "se", "sp", "sv", "sr",
})
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]{1,15}://[^\s'\"<>`()\[\]{}]+", re.I)
_AUTH_VALUE = re.compile(
    r"(?i)\b(authorization|proxy-authorization|x-api-key|api[_-]?key|access[_-]?token|auth[_-]?token|token|password|"
    r"passwd|secret)(\s*[:=]\s*)(?:(bearer|basic|token)\s+)?['\"]?[^\s'\",;&)]+")
_SCHEME_VALUE = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]{8,}")
_PARAM = re.compile(r"([?&;])([\w.%\-]+)=([^\s&#'\"<>()]*)")  # a query parameter outside a full URL (a path)
_BARE_KEYS = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{12,}|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|"
                        r"AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9\-]{10,})\b")
_POOL = re.compile(r"\b\w*ConnectionPool\(host=['\"][^'\"]*['\"],\s*port=\d+\)")
_HOST_KW = re.compile(r"\bhost=['\"][^'\"]+['\"](?:,\s*port=\d+)?")
_HOST_PORT = re.compile(r"(?<![\w.\-/@])(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:]+\]|localhost|[a-z0-9\-]+(?:\.[a-z0-9\-]+)+)"
                        r":\d{2,5}\b", re.I)
_IPV4 = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])")


def _secret_param(name: str) -> bool:
    return name.lower().replace("-", "_") in SECRET_PARAMS


def _redact_param(pair: str) -> str:
    """One `name=value` of a query string with a credential's value hidden; a bare value (no name) is hidden."""
    name, eq, _ = pair.partition("=")
    if not eq:
        return HIDDEN if pair else pair
    return f"{name}={HIDDEN}" if _secret_param(unquote(name)) else pair


def redact_url(url: str) -> str:
    """`url` without its user-info and credential query values (scheme, host, port and path kept)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. a bad IPv6 literal: nothing of it is safe to keep
        return f"{url.partition(':')[0]}://{HIDDEN}" if "://" in url else HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rpartition('@')[2]}"
    query = "&".join(_redact_param(p) for p in parts.query.split("&")) if parts.query else ""
    fragment = HIDDEN if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_text(text: object) -> str:
    """`text` with every URL in it through `redact_url`, and header-like secrets and bare API keys hidden."""
    out = _URL.sub(lambda m: redact_url(m.group(0)), str(text or ""))
    out = _PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={HIDDEN}" if _secret_param(unquote(m.group(2)))
                     and m.group(3) != HIDDEN else m.group(0), out)
    out = _AUTH_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{(m.group(3) + ' ') if m.group(3) else ''}{HIDDEN}", out)
    out = _SCHEME_VALUE.sub(lambda m: f"{m.group(1)} {HIDDEN}", out)
    return _BARE_KEYS.sub(HIDDEN, out)


# public services a note may link to (a dataset's page, the inference router, a licence): shown as they are
PUBLIC_HOSTS = ("huggingface.co", "hf.co", "openai.com", "github.com", "wikimedia.org", "wikipedia.org",
                "creativecommons.org", "pypi.org", "pytorch.org")


def _public_url(url: str) -> bool:
    """A URL a visitor may read: a public service's over http(s), or a non-network reference (`hf://...`)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https", "ws", "wss", "ftp"):
        return parts.scheme.lower() in ("hf", "mailto")
    return not parts.port and any(host == h or host.endswith("." + h) for h in PUBLIC_HOSTS)


def hide_hosts(text: str) -> str:
    """`text` with every URL (but a public service's), connection pool and host:port said as "the model's
    server"."""
    out = _URL.sub(lambda m: m.group(0) if _public_url(m.group(0)) else SERVER, text)
    out = _POOL.sub(SERVER, out)
    out = _HOST_KW.sub(SERVER, out)
    out = _HOST_PORT.sub(SERVER, out)
    return _IPV4.sub(SERVER, out)


def public_text(text: object) -> str:
    """`text` as a visitor may read it: no secret (`redact_text`) and no internal address (`hide_hosts`)."""
    return hide_hosts(redact_text(text))


def public_spec(spec: str) -> str:
    """A model spec as a visitor may read it: `openai:MODEL@URL` -> `openai:MODEL` (any address dropped)."""
    spec = str(spec or "")
    name, colon, args = spec.partition(":")
    model, at, where = args.partition("@")
    if at and (("://" in where) or "." in where or ":" in where):
        return public_text(f"{name}{colon}{model}")
    return public_text(spec)


def whole_sentences(text: str, limit: int = NOTE_CHARS) -> str:
    """`text` (one line) within `limit` characters: whole sentences where they fit, else cut at a word with "…"."""
    text = " ".join(str(text or "").split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", head)]
    if ends and ends[-1] >= limit // 3:
        return head[:ends[-1]]
    cut = head[:limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:(-")
    return (cut or head[:limit - 1]) + "…"


def public_reason(e: BaseException, limit: int = NOTE_CHARS) -> str:
    """A failure as a visitor reads it: the backend's visitor sentence (`PUBLIC_ATTR`) or the message through
    `public_text`, within `limit` (`whole_sentences`)."""
    said = getattr(e, PUBLIC_ATTR, "") or public_text(str(e).strip() or type(e).__name__)
    return whole_sentences(said, limit)


def public_clause(e: BaseException, limit: int = NOTE_CHARS) -> str:
    """`public_reason` without its full stop, to go inside a sentence ("the question model failed: <clause>; ...")."""
    return public_reason(e, limit).rstrip(". ")


def log_failure(logger: logging.Logger, step: str, e: BaseException) -> None:
    """The owner's log line for a model failure a visitor is told about (`public_clause`): the whole message,
    secrets redacted (the host kept: the owner needs it)."""
    logger.warning("%s failed: %s", step, redact_text(str(e) or type(e).__name__))


def with_public(error: BaseException, sentence: str) -> BaseException:
    """`error` carrying `sentence` as what a visitor is told (`public_reason`)."""
    setattr(error, PUBLIC_ATTR, sentence)
    return error


class RedactSecrets(logging.Filter):
    """A log handler's filter: each record's message through `redact_text` (for libraries that log URLs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is the logging module's to report
            return True
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


CLIENT_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "openai._base_client", "urllib3",
                  "urllib3.connectionpool", "requests")  # HTTP clients that log request URLs and headers


def redact_client_logs(names=CLIENT_LOGGERS) -> None:
    """`RedactSecrets` on the loggers of the HTTP clients a model backend uses (once each): their request lines
    ("HTTP Request: POST http://user:pass@host/...") reach the log without the secrets, whatever the handlers."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())
