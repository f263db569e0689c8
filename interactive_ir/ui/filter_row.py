"""The page's filter row (issue 26): date range, folder, tags and camera, each with its counts in the
collection (`Engine.facets`), the results' order (best match, newest, oldest) and the search box's syntax
in a help tip.

One code path: the row never filters by itself. It writes its filters into the query's text as the search
box would hold them (`query_language.row_tokens`), and the search runs that text like a typed one; a chip's
removal and a histogram bar's click edit the same text (`from_summary`). The row follows the search's
filters after each round, typed ones included (`synced`).
"""

from __future__ import annotations

from dataclasses import dataclass

from interactive_ir.errors import QueryError
from interactive_ir.ui import handlers
from interactive_ir.ui.filter_view import SORTS
from interactive_ir.ui.state import UIState

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

    facets = getattr(ctx.engine, "facets", dict)()
    if not facets:
        return None
    years, tags = facets.get("year", []), facets.get(tag_field(facets), [])
    years = years if len(years) > 1 else []  # one year: no range to choose
    dated = len(ctx.engine.date_histogram(ctx.engine.new_session())[1]) > 1  # dates of two months or more
    if not (years or dated or tags or facets.get("folder") or facets.get("camera")):
        return None  # nothing to choose (the demo gallery: one folder, its files' dates all alike): no row
    opts = {"show_label": False, "container": False, "scale": 0, "min_width": 130, "interactive": True}
    with gr.Row(equal_height=True, elem_id="iir-filters"):
        date_from = gr.Dropdown(_choices("From: any year", years), value="", label="From", elem_id="iir-f-from",
                                visible=bool(years), **opts)
        date_to = gr.Dropdown(_choices("To: any year", years), value="", label="To", elem_id="iir-f-to",
                              visible=bool(years), **opts)
        folder = gr.Dropdown(_choices("Any folder", facets.get("folder", [])), value="", label="Folder",
                             elem_id="iir-f-folder", visible="folder" in facets, **opts)
        tag = gr.Dropdown(_choices("Any tag", tags), value="", label="Tag", elem_id="iir-f-tags",  # one here;
                          visible=bool(tags), **opts)  # more typed in the box: tag:a tag:b
        camera = gr.Dropdown(_choices("Any camera", facets.get("camera", [])), value="", label="Camera",
                             elem_id="iir-f-camera", visible="camera" in facets, **opts)
        sort = gr.Dropdown([(v, k) for k, v in SORTS.items()], value="", label="Order", elem_id="iir-f-sort",
                           visible=dated, **opts)
        gr.HTML(f'<span class="iir-syntax" tabindex="0" role="note" title="{_attr(HELP)}" '
                f'aria-label="Search syntax: {_attr(HELP)}">Search syntax <b aria-hidden="true">?</b></span>',
                elem_id="iir-syntax", padding=False, min_width=0)
    return FilterRow(date_from, date_to, folder, tag, camera, sort)


def _attr(text: str) -> str:
    from html import escape

    return escape(text, quote=True)


# --- what the row does (handlers: engine, tab state, values -> tab state) ------------------------------------
def _search(engine, st: UIState, text: str) -> UIState:
    """Run `text` as a new search (its question follows in the model queue) and show it in the search box."""
    from interactive_ir.retrieval.query_language import parse_query

    st.box = text
    if not parse_query(text).text.strip():  # filters only: nothing to rank by yet
        st.notice = "Filters set: describe the image you are looking for and press Search."
        return st
    return handlers.start(engine, st, text, defer_question=True)


FIELDS = {"date": ("date",), "folder": ("folder",), "tags": ("tag", "tags"), "camera": ("camera",)}  # the
#          row's parts and the query's fields each one sets: a change replaces that part's filters only


def apply(engine, st: UIState, box: str, part: str, date_from="", date_to="", folder="", tags=(), camera="") -> UIState:
    """One part of the row changed (`part`, a key of FIELDS): the query in the search box (else the search's
    own) gets that part's filters in place of its own, and runs again; its other filters stay as typed."""
    from interactive_ir.errors import BadInputError
    from interactive_ir.retrieval.query_language import row_tokens, with_row_filters

    if part not in FIELDS:
        raise BadInputError(f"unknown filter {part!r}; choose one of {', '.join(FIELDS)}")
    tags = list(tags) if isinstance(tags, (list, tuple)) else [tags] if tags else []
    values = {"date": {"date_from": date_from, "date_to": date_to}, "folder": {"folder": folder},
              "tags": {"tags": tags}, "camera": {"camera": camera}}[part]
    return _search(engine, st, with_row_filters((box or "").strip() or query_of(st), row_tokens(**values), FIELDS[part]))


def query_of(st: UIState) -> str:
    """The search's query as typed (`st.query`), or, when the search came another way (a saved search opened),
    its description, filters and NOT terms written as a query."""
    from interactive_ir.retrieval.query_language import parse_query

    s = st.session
    if s is None:
        return st.query
    want = parse_query(s.filters or "").filters
    try:
        q = parse_query(st.query)
        if st.query and q.filters == want and list(q.nots) == list(s.not_terms):
            return st.query
    except QueryError:
        pass
    words = s.description or ""
    for f in want:  # a phrase is in the description too: once is enough
        if f.field == "phrase" and not f.negate:
            words = words.replace(f.value, "", 1)
    return " ".join([*words.split(), *(f"-{n}" for n in s.not_terms), *(f.token for f in want)])


def from_summary(engine, st: UIState, action: str, value: str) -> UIState:
    """A chip's ✕ ("unfilter": that filter or NOT term leaves the query) or a histogram bar ("when": only
    that year or month), searched again."""
    from interactive_ir.errors import BadInputError, SessionError
    from interactive_ir.retrieval.query_language import field_token, with_row_filters, without_token

    if not st.started:
        raise SessionError("there is no search yet: describe the image you are looking for first")
    if action == "unfilter":
        return _search(engine, st, without_token(query_of(st), value))
    if action == "when":
        return _search(engine, st, with_row_filters(query_of(st), [field_token("date", value)], FIELDS["date"]))
    raise BadInputError(f"unknown action {action!r}")


def set_sort(engine, st: UIState, sort: str) -> UIState:
    """The results' order (best match, newest or oldest first), for this search and the next ones."""
    from interactive_ir.errors import BadInputError

    sort = (sort or "").strip()
    if sort not in SORTS:
        raise BadInputError(f"unknown order {sort!r}; choose one of {', '.join(v for v in SORTS if v)}")
    st.sort = sort
    return st


def synced(st: UIState, facets: dict) -> tuple:
    """The row's values for the search's filters (typed or chosen): (from, to, folder, tags, camera)."""
    from interactive_ir.retrieval.query_language import parse_query

    s = st.session
    lo = hi = folder = camera = ""
    tags: list[str] = []
    for f in parse_query(s.filters if s is not None else "").filters:
        if f.negate:
            continue
        if f.field == "date":
            a, _, b = f.value.partition("..") if ".." in f.value else (f.value, "", f.value)
            lo, hi = a[:4], b[:4]
        elif f.field == "folder":
            folder = f.value
        elif f.field == "camera":
            camera = f.value
        elif f.field in ("tag", "tags"):
            tags.append(f.value)
    return lo, hi, folder, tags, camera


# --- events and wiring ---------------------------------------------------------------------------------
def wire(page, row: FilterRow, ctx, groups: dict) -> None:
    """The row's listeners: a change the person makes (`.input`) searches; each new round sets the row."""
    import gradio as gr

    from interactive_ir.ui import events

    state, outputs = page.state, page.outputs(events.OUTPUTS)
    facets = ctx.engine.facets()
    years = {v for v, _ in facets.get("year", [])}
    tag_values = {v.lower(): v for v, _ in facets.get(tag_field(facets), [])}
    cameras = {v.lower(): v for v, _ in facets.get("camera", [])}
    folders = {v for v, _ in facets.get("folder", [])}

    def on_change(part: str):
        def change(st, box, *values):
            return events.quick(ctx, apply, st, box, part, *values)
        return change

    def on_sort(st, value):
        return events.quick(ctx, set_sort, st, value or "")

    def on_round(st):
        lo, hi, folder, tags, camera = synced(st, facets)
        return (gr.Dropdown(value=lo if lo in years else ""), gr.Dropdown(value=hi if hi in years else ""),
                gr.Dropdown(value=folder if folder in folders else ""),
                gr.Dropdown(value=tag_values.get(tags[0].lower(), "") if len(tags) == 1 else ""),
                gr.Dropdown(value=cameras.get(camera.lower(), "")))

    parts = (row.date_from, "date"), (row.date_to, "date"), (row.folder, "folder"), (row.tags, "tags"), (row.camera, "camera")
    for comp, part in parts:
        comp.input(on_change(part), [state, page.desc, *row.inputs()], outputs, api_name=False, **groups["act"]).then(
            listeners_follow_up(ctx), [state], outputs, api_name=False, **groups["model"])
    row.sort.input(on_sort, [state, row.sort], outputs, api_name=False, **groups["ui"])
    page.results.change(on_round, [state], row.inputs(), api_name=False, **groups["ui"])


def listeners_follow_up(ctx):
    """The model steps that follow a round (its question), as the page's other actions do."""
    import types

    from interactive_ir.ui import events

    return types.MethodType(events.follow_up, ctx)
