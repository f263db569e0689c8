"""The filter row's page event (issue 26): after each round the row shows the search's filters, typed ones
included. (A change the person makes runs an action of `filter_handlers`: the page's listeners table.)"""

# no `from __future__ import annotations`: Gradio reads the events' annotations at run time

from interactive_ir.ui.events import PageContext
from interactive_ir.ui.filter_handlers import synced
from interactive_ir.ui.filter_row import tag_field
from interactive_ir.ui.state import UIState


def on_filter_round(ctx: PageContext, st: UIState):
    """The row's values (from, to, folder, tag, camera) for the search's filters; a value the row does not offer
    shows as "any"."""
    import gradio as gr

    facets = ctx.facets
    years = {v for v, _ in facets.get("year", [])}
    tag_values = {v.lower(): v for v, _ in facets.get(tag_field(facets), [])}
    cameras = {v.lower(): v for v, _ in facets.get("camera", [])}
    folders = {v for v, _ in facets.get("folder", [])}
    lo, hi, folder, tags, camera = synced(st, facets)
    return (gr.Dropdown(value=lo if lo in years else ""), gr.Dropdown(value=hi if hi in years else ""),
            gr.Dropdown(value=folder if folder in folders else ""),
            gr.Dropdown(value=tag_values.get(tags[0].lower(), "") if len(tags) == 1 else ""),
            gr.Dropdown(value=cameras.get(camera.lower(), "")))
