"""The page's view of a search's filters (issue 26): chips for the active filters and NOT terms (a click
removes one), a histogram of the matches' dates (a click on a bar keeps that year or month), and the
results' order by date. Plain HTML; the buttons go through the results' click handler (`cards.js`), as
actions "unfilter" and "when" (`card_actions`, `filter_handlers`)."""

from __future__ import annotations

from html import escape

SORTS = {"": "Best match", "newest": "Newest first", "oldest": "Oldest first"}  # the results' order


def _esc(text) -> str:
    return escape(str(text), quote=True)


def chips(session) -> list[str]:
    """The session's active filters and NOT terms as typed (`folder:trips`, `-leash`), in the query's order."""
    from interactive_ir.retrieval.query_language import parse_query

    if session is None or not (session.filters or session.not_terms):
        return []
    return [f.label() for f in parse_query(session.filters or "").filters] + [f"-{n}" for n in session.not_terms]


def chips_html(session) -> str:
    labels = chips(session)
    if not labels:
        return ""
    return ('<span class="iir-chips" role="list" aria-label="Active filters">' + "".join(
        f'<button type="button" class="iir-chip" role="listitem" data-action="unfilter" data-id="{_esc(c)}" '
        f'title="Remove this filter and search again" aria-label="Remove filter {_esc(c)}">{_esc(c)} '
        '<span aria-hidden="true">✕</span></button>' for c in labels) + "</span>")


def histogram_html(unit: str, counts: list[tuple[str, int]]) -> str:
    """Bars of the matches per year (or month); each bar's button keeps that period (`date:2019`)."""
    if len(counts) < 2:  # one bar says nothing the label would not
        return ""
    top = max(n for _, n in counts) or 1
    total = sum(n for _, n in counts)
    bars = "".join(
        f'<button type="button" class="iir-bar" data-action="when" data-id="{_esc(label)}" '
        f'title="{_esc(label)}: {n} match{"es" if n != 1 else ""}; click to keep only these" '
        f'aria-label="{_esc(label)}: {n}"><span style="height:{max(8, round(100 * n / top))}%"></span></button>'
        for label, n in counts)
    first, last = counts[0][0], counts[-1][0]
    span = first if first == last else f"{first}–{last}"
    return (f'<span class="iir-hist" data-unit="{unit}" role="group" aria-label="Matches by {unit}">'
            f'<span class="iir-hist-label">{total} dated matches by {unit}, {_esc(span)}</span>'
            f'<span class="iir-hist-bars">{bars}</span></span>')


def summary_html(engine, st) -> str:
    """The line over the results: chips, the date histogram of the matches, the order when it is by date."""
    s = st.session
    if s is None or not s.turns:
        return ""
    hist = getattr(engine, "date_histogram", None)
    unit, counts = hist(s) if hist is not None else ("", [])
    order = f'<span class="iir-order">{_esc(SORTS[st.sort])}</span>' if st.sort in SORTS and st.sort else ""
    body = chips_html(s) + histogram_html(unit, counts) + order
    return f'<div class="iir-filter-summary">{body}</div>' if body else ""


def by_date(hits, dates: dict[str, float], sort: str) -> list:
    """`hits` newest or oldest first (`sort`), those without a date last, ties in their order; as they are for
    "" (best match)."""
    if sort not in ("newest", "oldest"):
        return list(hits)
    dated = [h for h in hits if h.id in dates]
    dated.sort(key=lambda h: dates[h.id], reverse=sort == "newest")  # stable: ties keep the ranking
    return dated + [h for h in hits if h.id not in dates]
