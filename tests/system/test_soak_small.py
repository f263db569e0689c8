"""bench/soak.py at a small size: the web app answers every event of several tabs through Gradio's HTTP
queue, Gradio's per-event records stay bounded, and a closed tab's state is dropped at once.

Boundedness is asserted loosely (object counts, not timings or RSS: the machine is shared)."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import pytest
from iir_testutils import query_modes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def app_server(tmp_path, monkeypatch):
    pytest.importorskip("gradio")
    import httpx  # noqa: F401 - the driver's client
    from iir_testutils import build_tiny

    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import build_demo, launch_options
    from interactive_ir.ui.serving import uploads
    from interactive_ir.ui.serving.process import install

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # a closed tab is noticed at the heartbeat stream's next line: each second here, not Gradio's 15 s
    monkeypatch.setenv("GRADIO_HEARTBEAT_INTERVAL", "1")
    monkeypatch.delenv("GRADIO_ANALYTICS_MAX_EVENTS", raising=False)
    monkeypatch.delenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", raising=False)
    monkeypatch.setenv("IIR_MALLOC_ARENAS", "0")  # glibc's arenas: this test process's own
    uploads.default_store.cache_clear()
    install()  # as app.py does, before the page is served
    r, _, _ = build_tiny(tmp_path, n=24)
    engine = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())
    demo = build_demo(engine)
    demo.queue(default_concurrency_limit=4)
    demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True,
                **launch_options(engine))
    yield demo
    demo.close()
    uploads.default_store.cache_clear()


def test_a_small_soak_answers_every_event_and_keeps_state_bounded(app_server):
    import httpx

    sys.path.insert(0, str(ROOT / "bench"))
    import soak

    demo = app_server
    client = httpx.Client(trust_env=False)
    fns = soak.endpoints(client, demo.local_url)
    tabs = [soak.Tab(client, demo.local_url, fns) for _ in range(3)]
    rng = random.Random(0)
    for step in range(12):
        for tab in tabs:
            soak.app_script(tab, step, rng)  # raises on an HTTP error or a failed event
    # no cross-talk: each tab's page shows its own description, never another tab's
    words = ["zebra", "violin", "tractor"]
    outs = {}
    for tab, w in zip(tabs, words):
        outs[w] = str(tab.send("start", [None, f"a {w} in the rain"]))
    for w, out in outs.items():
        assert w in out and not any(o in out for o in words if o != w)
    queue = demo._queue
    assert len(queue.event_analytics) <= 200  # Gradio keeps at most QUEUE_RECORDS events' records (default 10,000)
    holder = demo.server_app.state_holder
    assert all(t.session in holder.session_data for t in tabs)
    tabs[0].close()
    client.close()  # every heartbeat ends: the tabs are closed
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(t.session in holder.session_data for t in tabs):
        time.sleep(0.2)
    assert not any(t.session in holder.session_data for t in tabs)  # dropped at once, not an hour later
    # and Gradio's queue forgets them: it kept a set of event ids for every tab ever opened (issue 29)
    while time.monotonic() < deadline and any(t.session in queue.pending_event_ids_session for t in tabs):
        time.sleep(0.2)
    assert not any(t.session in queue.pending_event_ids_session for t in tabs)
    assert not any(t.session in queue.pending_messages_per_session for t in tabs)
