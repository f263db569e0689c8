"""The life of a browser tab's state on the server: bounded, and dropped when the tab closes or idles.

Gradio keeps a closed tab's state for an hour and every tab's session record (a copy of the page's
config) until 10,000 newer ones push it out. Here a tab's `gr.State` expires after `tab_ttl_s` without
use, closing a tab drops its whole session record at once (`on_tab_closed`, wired to `demo.unload`),
and `max_tabs` bounds how many records are kept at all. Dropping a state deletes its uploaded file.
Gradio's queue also keeps two records per tab that ever sent an event (a message queue, kept for the last
2,000 tabs, and a set of pending event ids, kept for every tab for ever: about 3.6 KB a tab, issue 29);
closing a tab drops those too (`forget_queue_records`). Both limits are read when the page is built
(`tab_limits()`), not at import. Gradio's per-event records of its queue are bounded once for the process
(`interactive_ir.ui.serving.process`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from interactive_ir.config import apply_env

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TabLimits:
    """How long and how many tabs' records are kept; each field can be set by env `IIR_<FIELD>`."""

    tab_ttl_s: float = 3600.0  # an idle tab's state is dropped after this (s)
    max_tabs: int = 2000  # most tabs whose records are kept (oldest go first)


def tab_limits(environ=None) -> TabLimits:
    """The limits from `IIR_TAB_TTL_S` and `IIR_MAX_TABS` (read now)."""
    return apply_env(TabLimits(), environ=environ)


def drop_tab(value) -> None:
    """`gr.State(delete_callback=...)`: a tab's `UIState` is being dropped; delete what it holds on disk."""
    redo = getattr(value, "redo", None)  # an upload kept for the round's model step (`handlers.held_upload`)
    for upload in (getattr(value, "upload", ""), getattr(getattr(redo, "tab", None), "upload", "")):
        if upload:
            from interactive_ir.ui.serving.uploads import default_store

            default_store().release(upload)
    if getattr(value, "upload", ""):
        value.upload = ""


def forget_queue_records(queue, session: str) -> bool:
    """Drop a closed tab's records in Gradio's queue (`Blocks._queue`): its set of pending event ids and its
    message queue, unless an event of the tab is still pending (its answer is then still to be read; Gradio
    drops them itself when that stream ends). Run on the server's event loop, where Gradio changes them.
    Returns whether they were dropped."""
    pending, messages = queue.pending_event_ids_session, queue.pending_messages_per_session
    if pending.get(session):
        return False
    pending.pop(session, None)
    messages.pop(session, None)
    return True


def _on_event_loop(fn, *args):
    """`fn(*args)` on the server's event loop when called from one of its worker threads (where Gradio runs
    a plain function listener), else here (a test, or no server)."""
    import anyio.from_thread

    try:
        return anyio.from_thread.run_sync(fn, *args)
    except RuntimeError:  # not a worker thread of an event loop
        return fn(*args)


def on_tab_closed(request) -> None:
    """`demo.unload(...)`: the tab closed; drop its state (calling `drop_tab`) and Gradio's records of it now
    (its session record, and its queue records: `forget_queue_records`), not an hour (or never) later."""
    session = getattr(request, "session_hash", None)
    app = getattr(getattr(request, "request", None), "app", None)
    holder = getattr(app, "state_holder", None)
    if not session or holder is None:
        return
    queue = getattr(getattr(app, "get_blocks", lambda: None)(), "_queue", None)
    if queue is not None and hasattr(queue, "pending_event_ids_session"):
        _on_event_loop(forget_queue_records, queue, session)
    try:
        holder.delete_state(session)
        with holder.lock:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
    except (AttributeError, KeyError, RuntimeError) as e:  # another Gradio version: it keeps the state an hour
        log.warning("cannot drop a closed tab's state (%s: %s)", type(e).__name__, e)
