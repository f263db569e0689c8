"""The life of a browser tab's state on the server: bounded, and dropped when the tab closes or idles.

Gradio keeps a closed tab's state for an hour and every tab's session record (a copy of the page's
config) until 10,000 newer ones push it out. Here a tab's `gr.State` expires after `TAB_TTL_S` without
use, closing a tab drops its whole session record at once (`on_tab_closed`, wired to `demo.unload`),
and `MAX_TABS` bounds how many records are kept at all. Dropping a state deletes its uploaded file.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

TAB_TTL_S = float(os.environ.get("IIR_TAB_TTL_S", 3600))  # an idle tab's state is dropped after this (s)
MAX_TABS = int(os.environ.get("IIR_MAX_TABS", 2000))  # most tabs whose records are kept (oldest go first)


def drop_tab(value) -> None:
    """`gr.State(delete_callback=...)`: a tab's `UIState` is being dropped; delete what it holds on disk."""
    upload = getattr(value, "upload", "")
    if upload:
        from interactive_ir.ui.uploads import default_store

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
