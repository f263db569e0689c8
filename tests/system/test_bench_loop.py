"""bench/bench_loop.py at a tiny size: it starts the app, drives every action through the HTTP API and
prints its table with nothing refused (the figures and the latency goal are not checked here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("gradio_client", reason="gradio_client is not installed")


def test_bench_loop_runs_every_action_and_nothing_is_refused():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_loop.py"), "--sessions", "1", "--sleeps", "0.2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr[-3000:]  # 1: the latency goal missed on a busy machine
    text = out.stdout
    for action in ("describe", "answer", "skip", "mark", "more", "relative", "new search while asking"):
        row = next((line for line in text.splitlines() if line.startswith(f"| {action} |")), "")
        assert row and row.split("|")[2].strip() == "1", (action, text)
    assert "refused: 0; errors: 0" in text, text
    assert "goal (results p95 <= 1 s" in text


def test_bench_loop_refuses_bad_options():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_loop.py"), "--sleeps", "soon"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--sleeps takes numbers" in out.stderr
