"""Issue 29 item 6: the "paused" note is said on the turn the pause is first seen, not on every turn;
the page and /config show no absolute index path."""

from __future__ import annotations

import os

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

    app = str(Path(__file__).resolve().parents[3] / "app.py")
    for cmd in ([sys.executable, "-m", "interactive_ir", "--version"], [sys.executable, app, "--version"]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
        assert out.stdout.strip() == f"interactive_ir {__version__}"


def test_start_up_announces_each_stage_before_it_starts(tiny_index, caplog):
    import logging

    from interactive_ir.ui.startup import app_config, load_app

    with caplog.at_level(logging.INFO, logger="interactive_ir"):
        load_app(app_config(environ={}, index=tiny_index[0].index.path, llm="fake"))
    said = [r.getMessage() for r in caplog.records]
    first = next(i for i, m in enumerate(said) if m.startswith("loading the index"))
    ready = next(i for i, m in enumerate(said) if m.startswith("index and embedder ready"))
    llm = next(i for i, m in enumerate(said) if m.startswith("loading the LLM fake"))
    loaded = next(i for i, m in enumerate(said) if m.startswith("LLM fake loaded in"))
    assert first < ready < llm < loaded


def test_start_up_says_no_loading_line_for_an_llm_it_does_not_load(tiny_index, caplog):
    """With no LLM to load (none chosen, or the default rule gives none) no "loading the LLM" line: the note says
    why there is none."""
    import logging

    from interactive_ir.ui.startup import app_config, load_app

    for llm in ("none", ""):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="interactive_ir"):
            parts = load_app(app_config(environ={}, index=tiny_index[0].index.path, llm=llm))
        said = [r.getMessage() for r in caplog.records]
        assert not [m for m in said if "loading the LLM" in m or m.startswith("LLM ")], said
        assert any("No LLM" in n or "Questions are off" in n for n in parts.notes), parts.notes


def test_each_start_up_warning_is_logged_once(tiny_index, caplog):
    import logging

    from interactive_ir.ui.startup import app_config, load_app

    with caplog.at_level(logging.INFO, logger="interactive_ir"):
        parts = load_app(app_config(environ={}, index=tiny_index[0].index.path, llm="none", captioner="nosuch:x"))
    note = next(n for n in parts.notes if "nosuch:x" in n)
    said = [r for r in caplog.records if "nosuch:x" in r.getMessage()]
    assert [r.levelname for r in said] == ["WARNING"] and said[0].getMessage() == note


def test_the_demo_fallback_warning_is_logged_once(tmp_path, monkeypatch, caplog):
    import logging

    import interactive_ir.backends as backends
    from interactive_ir.assembly import app_index as demo
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.errors import BackendUnavailable
    from interactive_ir.ui import startup

    def unavailable(spec):
        raise BackendUnavailable(f"{spec} needs weights from the model hub, which cannot be reached")

    monkeypatch.setenv("IIR_INDICES_DIR", str(tmp_path))
    monkeypatch.setattr(demo, "_try_embedder", unavailable)
    monkeypatch.setattr(backends, "make_embedder", lambda spec, **kw: FakeEmbedder(dim=16))
    with caplog.at_level(logging.INFO, logger="interactive_ir"):
        parts = startup.load_app(startup.app_config(environ={}, llm="none"))
    assert any("falling back" in n for n in parts.notes)  # still on the page
    said = [r.levelname for r in caplog.records if "falling back" in r.getMessage()]
    assert said == ["WARNING"]


def test_no_progress_bar_goes_to_a_log_that_is_not_a_terminal(monkeypatch):
    import io

    import numpy as np

    from interactive_ir.backends import _torch
    from interactive_ir.backends.embedders import TextEmbedder

    monkeypatch.setattr("sys.stderr", io.StringIO())  # a log file
    items = [1, 2, 3]
    assert _torch.progress(items, 3, "embedding", enabled=True) is items
    asked = {}

    class Model:
        def encode(self, texts, batch_size, show_progress_bar, convert_to_numpy):
            asked["bar"] = show_progress_bar
            return np.ones((len(texts), 4), np.float32)

    emb = TextEmbedder.__new__(TextEmbedder)
    emb.model, emb.batch_size, emb.show_progress, emb.dim = Model(), 2, True, 4
    emb.embed_texts(["a caption"] * 20)
    assert asked["bar"] is False


def test_the_suite_runs_torch_threads_passive_so_a_busy_machine_does_not_stall_it():
    """torch reads OMP_WAIT_POLICY when it loads; the suite's conftest sets it before any test imports torch."""
    assert os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE"
