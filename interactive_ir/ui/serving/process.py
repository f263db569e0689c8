"""Process-wide settings of the web app, installed once by its entry (`app.py`) before the server starts.

Each is a fix for memory that grew with use (issue 15); none belongs to a page, so building a page
(`build_demo`, `build_study_demo`) changes nothing in the process:

- glibc's malloc arenas limited (`malloc_arenas`), before any server thread starts;
- glibc's free heap pages handed back every minute (`malloc_trim`), so a burst's peak does not stay;
- Gradio's queue keeps records of its last `QUEUE_RECORDS` events, not 10,000 (read by `Blocks.queue()`);
- Gradio's per-tab records stay the size of the page (`session_ids`: a patch of its `SessionState`);
- uvicorn believes X-Forwarded-For only from the configured proxies (`trust_proxies`), not from 127.0.0.1:
  else anyone on the machine, or any client behind a local proxy, chooses the address the limits count
  (on a Space with none configured, one warning says what to set: `proxy_check`).

An operator's own settings win (MALLOC_ARENA_MAX, GRADIO_ANALYTICS_*); `IIR_MALLOC_ARENAS=0`,
`IIR_MALLOC_TRIM_S=0` and `IIR_GRADIO_SESSION_FIX=0` leave glibc and Gradio as they are. Installing twice changes nothing more.
"""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from dataclasses import dataclass

QUEUE_RECORDS = 200  # events Gradio's queue keeps records of (its default: 10,000)


@dataclass(frozen=True)
class Installed:
    """What `install` set."""

    malloc_arenas: int | None  # the arena limit set; None: left to glibc (or to the operator's MALLOC_ARENA_MAX)
    session_ids_kept: bool  # Gradio's SessionState keeps one record per component (the patch is in place)
    queue_records: str  # GRADIO_ANALYTICS_MAX_EVENTS as it now stands
    trusted_proxies: str = ""  # FORWARDED_ALLOW_IPS as it now stands ("" = no proxy is believed)
    malloc_trim_s: float | None = None  # seconds between malloc trims; None: none (IIR_MALLOC_TRIM_S=0, not glibc)


def bound_queue_records(environ: MutableMapping[str, str] | None = None) -> str:
    """Cap Gradio's per-event records (read by `Blocks.queue()`); an operator's own settings win.

    Gradio's queue keeps a record of its last 10,000 events and rebuilds a pandas summary of all of them
    after every event (for its /monitoring page): that was most of the memory that grew with use (issue 15:
    41-62 MB per 1,000 events). Here it keeps `QUEUE_RECORDS` and rebuilds the summary rarely (bench/soak.py)."""
    env = os.environ if environ is None else environ
    env.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", str(QUEUE_RECORDS))
    env.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000000")
    return env["GRADIO_ANALYTICS_MAX_EVENTS"]


def trust_proxies(proxies: str, environ: MutableMapping[str, str] | None = None) -> str:
    """Make uvicorn (which Gradio starts without naming them) believe X-Forwarded-For only from `proxies`
    (addresses or networks, comma-separated; "" = none). Its own default trusts 127.0.0.1, so behind a local
    proxy, or for anyone on the machine, a forged header chose the client address. An operator's own
    FORWARDED_ALLOW_IPS wins when `proxies` is empty. Raises ValueError for an item that is no address."""
    from interactive_ir.ui.serving.limits import Addresses
    from interactive_ir.ui.serving.proxy_check import start_up_note

    env = os.environ if environ is None else environ
    Addresses(proxies)  # checked
    if proxies.strip():
        env["FORWARDED_ALLOW_IPS"] = ",".join(x.strip() for x in proxies.split(",") if x.strip())
    else:
        env.setdefault("FORWARDED_ALLOW_IPS", "")
    note = start_up_note(env)  # on a Space with no trusted proxy: what to set (ProxyCheck says it at a request)
    if note:
        logging.getLogger(__name__).warning(note)
    return env["FORWARDED_ALLOW_IPS"]


def install(environ: MutableMapping[str, str] | None = None, trusted_proxies: str = "") -> Installed:
    """Install the process's settings from `environ` (default: the process environment, which Gradio and
    glibc read). Call once, first, from the app's entry. Raises ValueError for a bad IIR_MALLOC_ARENAS or
    IIR_MALLOC_TRIM_S, or an unparsable `trusted_proxies`."""
    from interactive_ir.ui.serving.malloc_arenas import limit_malloc_arenas
    from interactive_ir.ui.serving.malloc_trim import start_malloc_trim, trim_every_s
    from interactive_ir.ui.serving.session_ids import keep_session_ids

    env = os.environ if environ is None else environ
    trim_every_s(env)  # checked before anything changes
    arenas = limit_malloc_arenas(env)  # first: threads started later share the one arena
    return Installed(arenas, keep_session_ids(env), bound_queue_records(env), trust_proxies(trusted_proxies, env),
                     start_malloc_trim(env))
