"""Issue 29 item 6: the "paused" note is said on the turn the pause is first seen, not on every turn;
the page and /config show no absolute index path."""

from __future__ import annotations

from interactive_ir.backends.guard import CircuitBreaker
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.ui import events
from interactive_ir.ui import handlers as h
from interactive_ir.ui.state import UIState


def _dialogue(ctx, st) -> str:
    out = events.view(ctx, st)
    return next(v for v in out if isinstance(v, str) and "iir-" in v and ("paused" in v or "dialog" in v.lower())) \
        if any(isinstance(v, str) and "Questions are paused" in v for v in out) else ""


def test_the_paused_note_is_said_once_per_pause(tiny_index):
    now = [0.0]
    llm = FakeLLM()
    llm.breaker = CircuitBreaker("the LLM", failures=1, pause_s=60, clock=lambda: now[0])
    engine = build_engine(tiny_index[0], llm=llm, config=EngineConfig(k=4))
    ctx = events.page_context(engine)
    st = h.start(engine, UIState(), "a red dog", later=True)
    assert "paused" not in _dialogue(ctx, st)
    llm.breaker.failure("boom")  # the breaker opens
    assert "Questions are paused" in _dialogue(ctx, st)
    assert "Questions are paused" in _dialogue(ctx, st)  # the same turn drawn again keeps it
    st = h.start(engine, st, "a blue cat", later=True)  # New search: a new turn
    assert _dialogue(ctx, st) == ""
    now[0] = 61.0
    llm.breaker.before_call()  # the trial call ...
    llm.breaker.failure("boom again")  # ... fails: a new pause, said once more
    assert "Questions are paused" in _dialogue(ctx, st)


def test_the_models_and_data_panel_shows_no_absolute_path(tiny_index, tmp_path):
    from interactive_ir.ui.startup import app_config, load_app

    folder = tiny_index[0].index.path
    parts = load_app(app_config(environ={}, index=folder, llm="none"))
    text = "\n".join(parts.notes)
    assert f"index {folder.name} (" in text and str(folder.parent) not in text


def test_version_flags():
    import subprocess
    import sys
    from pathlib import Path

    from interactive_ir import __version__

    app = str(Path(__file__).resolve().parents[1] / "app.py")
    for cmd in ([sys.executable, "-m", "interactive_ir", "--version"], [sys.executable, app, "--version"]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
        assert out.stdout.strip() == f"interactive_ir {__version__}"


def test_start_up_announces_each_stage_before_it_starts(tiny_index, caplog):
    import logging

    from interactive_ir.ui.startup import app_config, load_app

    with caplog.at_level(logging.INFO, logger="interactive_ir"):
        load_app(app_config(environ={}, index=tiny_index[0].index.path, llm="none"))
    said = [r.getMessage() for r in caplog.records]
    first = next(i for i, m in enumerate(said) if m.startswith("loading the index"))
    ready = next(i for i, m in enumerate(said) if m.startswith("index and embedder ready"))
    llm = next(i for i, m in enumerate(said) if m.startswith("loading the LLM"))
    assert first < ready < llm
