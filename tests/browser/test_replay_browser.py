"""The replay page (`study replay`) in Chromium: a static file that plays a task back step by step."""

from __future__ import annotations

import pytest
from conftest import SHOTS
from playwright.sync_api import expect

from interactive_ir.study.analysis.replay_html import write_replay
from interactive_ir.study.analysis.timeline import Replay, Step, TaskTimeline

pytestmark = pytest.mark.browser


def _replay() -> Replay:
    one = TaskTimeline("P1", 1, "t.jpg", "A", "found", [
        Step(0.0, 0.0, "description", 0, "a red dog"),
        Step(0.2, 0.2, "results", 0, "a red dog", shown=["a.jpg", "t.jpg"], marks={"a.jpg": False}, target_rank=2,
             target_position=2),
        Step(0.4, 0.2, "found", 0, "t.jpg")])
    two = TaskTimeline("P1", 2, "u.jpg", "B", "unfinished", [Step(0.0, 0.0, "description", 0, "a blue car")])
    return Replay("x.sqlite", "study", [one, two])


def test_replay_plays_a_task_and_switches_tasks(browser, tmp_path):
    path = write_replay(_replay(), tmp_path / "r.html")
    page = browser.new_page()
    page.on("request", lambda r: r.url.startswith("file:") or pytest.fail(f"the page fetched {r.url}"))
    page.goto(path.as_uri())
    visible = "section.task:not([hidden]) li.step:not(.later)"
    expect(page.locator(visible)).to_have_count(0)  # nothing played yet
    page.click("#fwd")
    expect(page.locator(visible)).to_have_count(1)
    expect(page.locator("section.task:not([hidden]) li.step.now")).to_contain_text("a red dog")
    page.select_option("#speed", "16")  # 0.2 s gaps at 16x
    page.click("#play")
    page.wait_for_function("document.querySelectorAll('section.task:not([hidden]) li.step:not(.later)').length == 3",
                           timeout=5000)
    assert page.inner_text("#play") == "Play" and page.inner_text("#clock") == "0.4 s"
    assert page.locator("section.task:not([hidden]) li.step.now").inner_text().startswith("0.4 s")
    expect(page.locator(".tile.irr")).to_have_count(1)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "replay_played.png"), full_page=True)
    page.select_option("#task", "1")
    assert page.locator("#task-0").is_hidden() and page.locator("#task-1").is_visible()
    expect(page.locator(visible)).to_have_count(0)
    page.click("#all")
    assert "a blue car" in page.locator("section.task:not([hidden]) li.step.now").inner_text()
    page.close()
