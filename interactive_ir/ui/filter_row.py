"""The page's filter row (issue 26), its components: date range, folder, tags and camera, each with its counts in
the collection (`Engine.facets`), the results' order (best match, newest, oldest) and the search box's syntax
in a help tip.

The row never filters by itself: what a change does is in `filter_handlers` (it edits the query's text and
searches again), its page events in `filter_events`, its listeners in the page's table (`listeners`).
"""

from __future__ import annotations

from dataclasses import dataclass

from interactive_ir.ui.filter_view import SORTS

TAG_FIELDS = ("tags", "tag")  # the metadata file's field the row's tag list offers


@dataclass
class FilterRow:
    """The row's components (`lay_out`); None for a field the collection holds no value of."""

    date_from: object
    date_to: object
    folder: object
    tags: object
    camera: object
    sort: object

    def inputs(self) -> list:
        return [self.date_from, self.date_to, self.folder, self.tags, self.camera]


def _choices(any_label: str, counts) -> list[tuple[str, str]]:
    return [(any_label, "")] + [(f"{v} ({n:,})", v) for v, n in counts]


def tag_field(facets: dict) -> str:
    return next((f for f in TAG_FIELDS if facets.get(f)), "")


def lay_out(ctx) -> FilterRow | None:
    """The filter row under the search box; None (no row) for an index without metadata."""
    import gradio as gr

    from interactive_ir.retrieval.query_language import HELP
    from interactive_ir.ui import inputs

    facets = ctx.facets
    if not facets:
        return None
    years, tags = facets.get("year", []), facets.get(tag_field(facets), [])
    years = years if len(years) > 1 else []  # one year: no range to choose
    dated = len(ctx.engine.date_histogram(ctx.engine.new_session())[1]) > 1  # dates of two months or more
    if not (years or dated or tags or facets.get("folder") or facets.get("camera")):
        return None  # nothing to choose (the demo gallery: one folder, its files' dates all alike): no row
    opts = {"show_label": False, "container": False, "scale": 0, "min_width": 130, "interactive": True}
    with gr.Row(equal_height=True, elem_id="iir-filters"):
        date_from = inputs.Dropdown(_choices("From: any year", years), value="", label="From", elem_id="iir-f-from",
                                visible=bool(years), **opts)
        date_to = inputs.Dropdown(_choices("To: any year", years), value="", label="To", elem_id="iir-f-to",
                              visible=bool(years), **opts)
        folder = inputs.Dropdown(_choices("Any folder", facets.get("folder", [])), value="", label="Folder",
                             elem_id="iir-f-folder", visible="folder" in facets, **opts)
        tag = inputs.Dropdown(_choices("Any tag", tags), value="", label="Tag", elem_id="iir-f-tags",  # one here;
                          visible=bool(tags), **opts)  # more typed in the box: tag:a tag:b
        camera = inputs.Dropdown(_choices("Any camera", facets.get("camera", [])), value="", label="Camera",
                             elem_id="iir-f-camera", visible="camera" in facets, **opts)
        sort = inputs.Dropdown([(v, k) for k, v in SORTS.items()], value="", label="Order", elem_id="iir-f-sort",
                           visible=dated, **opts)
        gr.HTML(f'<span class="iir-syntax" tabindex="0" role="note" title="{_attr(HELP)}" '
                f'aria-label="Search syntax: {_attr(HELP)}">Search syntax <b aria-hidden="true">?</b></span>',
                elem_id="iir-syntax", padding=False, min_width=0)
    return FilterRow(date_from, date_to, folder, tag, camera, sort)


def _attr(text: str) -> str:
    from html import escape

    return escape(text, quote=True)
