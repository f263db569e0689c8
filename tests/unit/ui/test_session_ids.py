"""Gradio's per-tab record stays the size of the page when handlers update components (issue 15's leak
per event): interactive_ir.ui.serving.session_ids. Run with IIR_GRADIO_SESSION_FIX=0 in a fresh process to see
it fail (the record grows by one component per event)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def generator_app(monkeypatch):
    gr = pytest.importorskip("gradio")
    pytest.importorskip("httpx")
    from interactive_ir.ui.serving.session_ids import keep_session_ids

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    keep_session_ids()
    with gr.Blocks() as demo:
        box = gr.Textbox()
        out = gr.HTML()
        status = gr.Markdown()
        button = gr.Button("go")

        def step(text):
            yield {status: "working"}  # `out` and `button` left out: Gradio gives them an update
            yield {out: f"<p>{text}</p>", status: "done", button: gr.update(interactive=True)}

        box.submit(step, [box], [out, status, button], api_name="step")
    demo.queue(default_concurrency_limit=2)
    demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True)
    yield demo, out
    demo.close()


def test_a_tabs_record_does_not_grow_with_events(generator_app):
    import httpx

    sys.path.insert(0, str(ROOT / "bench"))
    import soak

    demo, out = generator_app
    client = httpx.Client(trust_env=False)
    fns = soak.endpoints(client, demo.local_url)
    tab = soak.Tab(client, demo.local_url, fns)
    holder = demo.server_app.state_holder

    def record_size():
        st = holder.session_data[tab.session]
        return len(st.blocks_config.blocks), len(st.config_values)

    tab.send("step", ["first"])
    before = record_size()
    for i in range(30):
        tab.send("step", [f"text {i}"])
    assert record_size() == before  # without the fix: 30 more components and config entries
    # the tab's page config holds the latest value of the page's own component
    assert holder.session_data[tab.session].config_values[out._id]["props"]["value"] == "<p>text 29</p>"
    tab.close()
    client.close()


def test_it_can_be_turned_off(monkeypatch):
    from interactive_ir.ui.serving.session_ids import keep_session_ids

    assert keep_session_ids({"IIR_GRADIO_SESSION_FIX": "0"}) is False
