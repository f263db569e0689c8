"""What the page's filter row does (issue 26): handlers (engine, tab state, values -> tab state) that write the
row's filters into the query's text as the search box would hold them (`query_language.row_tokens`) and search
that text like a typed one; a chip's removal and a histogram bar's click edit the same text (`unfilter`,
`keep_period`). `synced` gives the row's values for a search's filters, typed ones included. The row's
components are in `filter_row`, its page events in `filter_events`, its wiring in `listeners`.
"""

from __future__ import annotations

from interactive_ir.errors import QueryError
from interactive_ir.ui import handlers
from interactive_ir.ui.filter_view import SORTS
from interactive_ir.ui.state import UIState


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


# one handler per part of the row (the page's listeners table names each one): a change of that part searches again
def filter_dates(engine, st: UIState, box: str, date_from="", date_to="", folder="", tags=(), camera="") -> UIState:
    return apply(engine, st, box, "date", date_from, date_to, folder, tags, camera)


def filter_folder(engine, st: UIState, box: str, date_from="", date_to="", folder="", tags=(), camera="") -> UIState:
    return apply(engine, st, box, "folder", date_from, date_to, folder, tags, camera)


def filter_tags(engine, st: UIState, box: str, date_from="", date_to="", folder="", tags=(), camera="") -> UIState:
    return apply(engine, st, box, "tags", date_from, date_to, folder, tags, camera)


def filter_camera(engine, st: UIState, box: str, date_from="", date_to="", folder="", tags=(), camera="") -> UIState:
    return apply(engine, st, box, "camera", date_from, date_to, folder, tags, camera)


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


def unfilter(engine, st: UIState, token: str) -> UIState:
    """A chip's ✕ (card action "unfilter"): that filter or NOT term leaves the query, searched again."""
    from interactive_ir.retrieval.query_language import without_token

    _require_search(st)
    return _search(engine, st, without_token(query_of(st), token))


def keep_period(engine, st: UIState, period: str) -> UIState:
    """A histogram bar (card action "when"): only that year or month, searched again."""
    from interactive_ir.retrieval.query_language import field_token, with_row_filters

    _require_search(st)
    return _search(engine, st, with_row_filters(query_of(st), [field_token("date", period)], FIELDS["date"]))


def _require_search(st: UIState) -> None:
    from interactive_ir.errors import SessionError

    if not st.started:
        raise SessionError("there is no search yet: describe the image you are looking for first")


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
