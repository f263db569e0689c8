"""A tab's record in Gradio stays the size of the page: the leak per event of issue 15, found and fixed.

Gradio 6 (checked on 6.31) keeps, per tab, a copy of the page's components (`SessionState`). When an
event updates a component's properties (`gr.update(...)`, `gr.skip()`, or an output left out of a dict
returned by a handler or yielded by a generator, which Gradio fills with an update), it stores a new
instance of the component under the component's id, but that instance carries a fresh id of its own.
The next event that gives the component a value looks the component up by that fresh id, does not
find it, and stores it again under the fresh id, with a config entry: one more component copy (and
its page config) per event, kept for the tab's life. That was the Python memory growing with every
event (about 10 KB per event in the 15-line repro, more in the app, which updates many components).

`keep_session_ids()` makes a replacement component take the id it is stored under, so every event
writes to the same key; Gradio's page config for the tab then also holds the component's latest
value, as intended. Where Gradio's internals differ (another version), nothing is patched and the log
says so. tests/unit/ui/test_session_ids.py shows the growth without it.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

_MARK = "_iir_keeps_ids"  # set on the patched method: patch once


def keep_session_ids(environ=None) -> bool:
    """Patch Gradio's `SessionState.__setitem__` (once). Returns whether the patch is in place.
    `IIR_GRADIO_SESSION_FIX=0` leaves Gradio as it is (to measure the difference: bench/soak.py --compare)."""
    env = os.environ if environ is None else environ
    if env.get("IIR_GRADIO_SESSION_FIX", "1").strip().lower() in {"0", "false", "no", "off"}:
        return False
    try:
        from gradio.blocks import Block
        from gradio.state_holder import SessionState
    except ImportError:
        return False
    setitem = SessionState.__setitem__
    if getattr(setitem, _MARK, False):
        return True
    if not hasattr(SessionState, "__init__") or "blocks_config" not in SessionState.__init__.__code__.co_names:
        log.warning("this Gradio keeps tab records differently: per-tab memory may grow with each event (issue 15)")
        return False

    def __setitem__(self, key, value):
        current = self.blocks_config.blocks.get(key)
        if isinstance(value, Block) and current is not None and not current.stateful and value._id != key:
            value._id = key  # the replacement stands for the page's component `key`
        setitem(self, key, value)

    setattr(__setitem__, _MARK, True)
    SessionState.__setitem__ = __setitem__
    return True
