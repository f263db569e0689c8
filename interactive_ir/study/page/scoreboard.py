"""The competition's scoreboard at /scoreboard: read-only, refreshed every few seconds, with no sign-in (it shows
participant ids, systems, correct and wrong submissions, times and KIS scores; never a target)."""

from __future__ import annotations

from interactive_ir.study.analysis.scoreboard import scoreboard, scoreboard_html

REFRESH_S = 5.0  # seconds between two refreshes of the scoreboard page


def scoreboard_page_html(log) -> str:
    """The scoreboard's HTML now (a clear message before any task has started)."""
    return scoreboard_html(scoreboard(log))


def add_scoreboard_page(demo, page) -> None:
    """The /scoreboard route of `demo` (a `StudyPage`'s log), refreshed every REFRESH_S seconds."""
    import gradio as gr

    log = page.runner.log
    with demo.route("Scoreboard", "/scoreboard", show_in_navbar=False):
        gr.Markdown(f"# Scoreboard: {page.study.title or page.study.study_id}")
        board = gr.HTML(lambda: scoreboard_page_html(log), elem_id="iir-scoreboard-box")  # current at each load
        timer = gr.Timer(REFRESH_S)
        timer.tick(lambda: scoreboard_page_html(log), None, board, show_progress="hidden")
        demo.load(lambda: scoreboard_page_html(log), None, board, show_progress="hidden")
