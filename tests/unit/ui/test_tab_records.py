"""A closed tab's records in Gradio's queue go with it (issue 29): Gradio kept a message queue (for the last
2,000 tabs) and a set of event ids (for every tab ever opened) per session, about 5.7 KB a tab that no
closing dropped. bench/soak.py's small soak checks the same through a served page (test_soak_small.py)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from interactive_ir.ui.serving.tabs import forget_queue_records, on_tab_closed


def fake_queue(pending: dict[str, set[str]]):
    from gradio.queueing import AsyncQueue
    from gradio.utils import LRUCache

    messages = LRUCache(2000)
    for session in pending:
        messages[session] = AsyncQueue()
    return SimpleNamespace(pending_event_ids_session=dict(pending), pending_messages_per_session=messages)


def test_a_closed_tabs_queue_records_are_dropped_unless_an_event_is_pending():
    pytest.importorskip("gradio")
    queue = fake_queue({"done": set(), "busy": {"event-1"}, "other": set()})
    assert forget_queue_records(queue, "done") is True
    assert "done" not in queue.pending_event_ids_session and "done" not in queue.pending_messages_per_session
    assert forget_queue_records(queue, "busy") is False  # its answer is still to be read: Gradio drops it then
    assert queue.pending_event_ids_session["busy"] == {"event-1"} and "busy" in queue.pending_messages_per_session
    assert "other" in queue.pending_event_ids_session  # another tab's records stay
    assert forget_queue_records(queue, "never-seen") is True  # a tab that sent no event: nothing to drop


def test_closing_a_tab_drops_its_session_and_queue_records():
    pytest.importorskip("gradio")
    queue = fake_queue({"tab-a": set(), "tab-b": set()})
    holder = SimpleNamespace(session_data={"tab-a": object(), "tab-b": object()}, time_last_used={"tab-a": 1},
                             lock=threading.Lock(), delete_state=lambda session: None)
    app = SimpleNamespace(state_holder=holder, get_blocks=lambda: SimpleNamespace(_queue=queue))
    on_tab_closed(SimpleNamespace(session_hash="tab-a", request=SimpleNamespace(app=app)))
    assert "tab-a" not in holder.session_data and "tab-a" not in queue.pending_event_ids_session
    assert "tab-a" not in queue.pending_messages_per_session
    assert "tab-b" in holder.session_data and "tab-b" in queue.pending_event_ids_session
