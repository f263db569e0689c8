"""The independent soak client (bench/soak_tabs.py, issue 29 deliverable 2): tabs open and close, each
keeps to its own words, and every event is answered. Starts `python app.py` (fake LLM, a generated index):
marked integration (about 30 s)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import soak_tabs  # noqa: E402


@pytest.mark.integration
def test_tabs_opening_and_closing_get_every_event_answered_and_no_cross_talk():
    res = soak_tabs.soak(events=150, tabs=4, per_tab=10, warmup=0.2, close_wait=1)
    assert res["events"] == 150 and res["n_errors"] == 0, res["errors"]
    assert res["tabs_opened"] >= 15  # each tab closed after its 10 events and another opened
    assert res["crosstalk"] == 0 and res["heartbeat_drops"] == 0
    assert res["rss_warm_mb"] > 50 and res["rss_closed_mb"] > 50  # read from the app process itself
