"""The web app's process settings are installed once by its entry (`ui.serving.process.install`): building a
page changes nothing in the process, settings are read when the page is built, and the page's events are
plain functions of (context, tab state, values) that return the page's outputs."""

from __future__ import annotations

import os

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.ui.state import UIState

GRADIO_VARS = ("GRADIO_ANALYTICS_MAX_EVENTS", "GRADIO_ANALYTICS_CACHE_FREQUENCY")


@pytest.fixture
def engine(tiny_index, tmp_path, monkeypatch):
    from interactive_ir.ui.serving import uploads

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    uploads.default_store.cache_clear()
    r, _, _ = tiny_index
    yield build_engine(r, llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())
    uploads.default_store.cache_clear()


@pytest.fixture
def session_state(monkeypatch):
    """Gradio's SessionState with its own, unpatched `__setitem__` (restored after the test)."""
    gr_state = pytest.importorskip("gradio.state_holder")
    original = gr_state.SessionState.__setitem__

    def plain(self, key, value):
        return original(self, key, value)

    monkeypatch.setattr(gr_state.SessionState, "__setitem__", plain)
    return gr_state.SessionState


def test_building_the_page_changes_nothing_in_the_process(engine, session_state, monkeypatch):
    from interactive_ir.ui import build_demo

    for name in GRADIO_VARS:
        monkeypatch.delenv(name, raising=False)
    before_env, before_setitem = dict(os.environ), session_state.__setitem__
    build_demo(engine, ["a note"])
    assert dict(os.environ) == before_env
    assert session_state.__setitem__ is before_setitem  # Gradio is not patched by a page


def test_install_sets_the_process_settings_and_an_operators_own_win(session_state):
    from interactive_ir.ui.serving.process import QUEUE_RECORDS, Installed, install

    env = {"IIR_MALLOC_ARENAS": "0", "IIR_MALLOC_TRIM_S": "0"}  # glibc left as it is (tests/test_malloc_*.py)
    assert install(env) == Installed(None, True, str(QUEUE_RECORDS))
    assert env["GRADIO_ANALYTICS_MAX_EVENTS"] == str(QUEUE_RECORDS) and env["GRADIO_ANALYTICS_CACHE_FREQUENCY"]
    assert getattr(session_state.__setitem__, "_iir_keeps_ids", False)
    own = {"IIR_MALLOC_ARENAS": "0", "IIR_MALLOC_TRIM_S": "0", "GRADIO_ANALYTICS_MAX_EVENTS": "50"}
    assert install(own) == Installed(None, True, "50")  # already patched above: installing twice changes nothing
    with pytest.raises(ValueError, match="IIR_MALLOC_ARENAS"):
        install({"IIR_MALLOC_ARENAS": "lots"})


def test_the_session_fix_can_be_left_off(session_state):
    from interactive_ir.ui.serving.process import install

    got = install({"IIR_MALLOC_ARENAS": "0", "IIR_GRADIO_SESSION_FIX": "0"})
    assert got.session_ids_kept is False and not getattr(session_state.__setitem__, "_iir_keeps_ids", False)


def test_tab_limits_are_read_when_the_page_is_built(engine, monkeypatch):
    from interactive_ir.ui import build_demo, launch_options
    from interactive_ir.ui.serving.tabs import TabLimits, tab_limits

    assert tab_limits({}) == TabLimits(3600.0, 2000)
    monkeypatch.setenv("IIR_TAB_TTL_S", "5")
    monkeypatch.setenv("IIR_MAX_TABS", "7")
    assert tab_limits() == TabLimits(5.0, 7)
    demo = build_demo(engine)
    state = next(b for b in demo.blocks.values() if type(b).__name__ == "State")
    assert state.time_to_live == 5.0
    assert launch_options(engine)["state_session_capacity"] == 7


def test_events_are_plain_functions_of_the_tab(engine):
    pytest.importorskip("gradio")
    from interactive_ir.ui import events, handlers

    ctx = events.page_context(engine)
    st = UIState()
    out = events.act(events.Action(ctx, handlers.start, ("upload",)), st, "a red dog")
    assert len(out) == len(events.OUTPUTS) and out[0] is st and st.started
    assert out[events.OUTPUTS.index("upload")] is None  # the cleared upload
    first = st.current_ids[0]
    out = events.card(ctx, st, "relevant", first)
    assert st.marks == {first: True} and out[events.OUTPUTS.index("state")] is st
    out = events.on_new(ctx, st)
    assert not st.started and out[events.OUTPUTS.index("desc")].label == events.DESC_FIRST
    with pytest.warns(UserWarning, match="no search yet"):  # gr.Warning, outside a request
        refused = events.act(events.Action(ctx, handlers.answer), st, "blue")  # refused: the state stays
    assert refused[0] is st and st.notice.startswith("⚠") and not st.started
