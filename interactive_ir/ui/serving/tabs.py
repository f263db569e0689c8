"""The life of a browser tab's state on the server: bounded, and dropped when the tab closes or idles.

Gradio's queue also keeps a record of its last 10,000 events and rebuilds a pandas summary of all of
them after every event (for its /monitoring page): that is most of the memory that grows with use
(issue 15: 41-62 MB per 1,000 events). `bound_queue_records()` caps it at `QUEUE_RECORDS` events and
rebuilds the summary rarely; call it before `demo.queue()`. See bench/soak.py for the figures.

Gradio keeps a closed tab's state for an hour and every tab's session record (a copy of the page's
config) until 10,000 newer ones push it out. Here a tab's `gr.State` expires after `TAB_TTL_S` without
use, closing a tab drops its whole session record at once (`on_tab_closed`, wired to `demo.unload`),
and `MAX_TABS` bounds how many records are kept at all. Dropping a state deletes its uploaded file.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from interactive_ir.config import apply_env

log = logging.getLogger(__name__)

QUEUE_RECORDS = 200  # events Gradio's queue keeps records of (its default: 10,000)


@dataclass(frozen=True)
class TabConfig:
    """How long and how many tabs' states are kept; each field can be set by env `IIR_<FIELD>`."""

    tab_ttl_s: float = 3600.0  # an idle tab's state is dropped after this (s)
    max_tabs: int = 2000  # most tabs whose records are kept (oldest go first)


def tab_config(environ=None) -> TabConfig:
    """The defaults, then `IIR_TAB_TTL_S` / `IIR_MAX_TABS`, read when called."""
    return apply_env(TabConfig(), "IIR_", environ)


def __getattr__(name: str):
    """`TAB_TTL_S` and `MAX_TABS`: read from the environment when asked for, not at import."""
    if name == "TAB_TTL_S":
        return tab_config().tab_ttl_s
    if name == "MAX_TABS":
        return tab_config().max_tabs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bound_queue_records() -> None:
    """Cap Gradio's per-event records (read by `Blocks.queue()`); an operator's own settings win."""
    os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", str(QUEUE_RECORDS))
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000000")  # the summary: rebuilt rarely, not per event


def drop_tab(value) -> None:
    """`gr.State(delete_callback=...)`: a tab's `UIState` is being dropped; delete what it holds on disk."""
    upload = getattr(value, "upload", "")
    if upload:
        from interactive_ir.ui.serving.uploads import default_store

        default_store().release(upload)
        value.upload = ""


def on_tab_closed(request) -> None:
    """`demo.unload(...)`: the tab closed; drop its state (calling `drop_tab`) and Gradio's record of it now,
    not an hour later."""
    session = getattr(request, "session_hash", None)
    app = getattr(getattr(request, "request", None), "app", None)
    holder = getattr(app, "state_holder", None)
    if not session or holder is None:
        return
    try:
        holder.delete_state(session)
        with holder.lock:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
    except (AttributeError, KeyError, RuntimeError) as e:  # another Gradio version: it keeps the state an hour
        log.warning("cannot drop a closed tab's state (%s: %s)", type(e).__name__, e)
