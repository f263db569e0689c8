"""The web app's page over the engine. `build_demo(engine, notes)` returns a `gr.Blocks`; Gradio is
imported only when a page is built."""

from interactive_ir.ui.page import build_demo, launch_options

__all__ = ["build_demo", "launch_options"]
