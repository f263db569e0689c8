"""Issue 26 D4 and D8 on the page: the filter row (facets with counts, one code path with the search box),
chips, sort by date and the date histogram of the matches."""

from __future__ import annotations

import calendar

import numpy as np
import pytest
from iir_testutils import YEARS, build_dated, year_of

from interactive_ir.errors import BadInputError, QueryError
from interactive_ir.index import filters
from interactive_ir.retrieval.query_language import parse_query, row_tokens, with_row_filters, without_token


@pytest.fixture(scope="module")
def dated(tmp_path_factory):
    """24 images (every fourth in sub/), each dated by its file time in one of six years, some tagged."""
    from interactive_ir.engine import EngineConfig, build_engine

    r, ids = build_dated(tmp_path_factory.mktemp("dated"))
    return build_engine(r, llm=None, config=EngineConfig(k=6, fold_similarity=0)), ids


def _db(engine):
    return engine.index.meta.sql()


# --- facets, date counts, dates ---------------------------------------------------------------------------
def test_facets_count_folders_years_and_user_fields(dated):
    engine, ids = dated
    f = filters.facets(_db(engine))
    in_sub = sum(1 for i in ids if i.startswith("sub/"))
    assert f["folder"] == [("sub", in_sub)]  # the top folder ("") is no choice
    assert f["year"] == [(str(y), sum(1 for n in range(24) if year_of(n) == y)) for y in YEARS]
    assert dict(f["tags"]) == {"family": 8, "beach": 4}
    assert "camera" not in f  # no EXIF: no camera to offer
    sub_rows = engine.retriever.filter_rows(parse_query("folder:sub").filters)
    scoped = filters.facets(_db(engine), sub_rows)
    assert scoped["folder"] == [("sub", in_sub)] and sum(n for _, n in scoped["year"]) == in_sub
    assert engine.facets() == f


def test_facets_of_an_index_without_metadata_are_empty():
    assert filters.facets(None) == {} and filters.date_counts(None) == ("", []) and filters.dates_of(None, [1]) == {}


def test_date_counts_by_year_then_by_month_over_the_matches(dated):
    engine, ids = dated
    unit, counts = filters.date_counts(_db(engine))
    assert unit == "year" and [y for y, _ in counts] == [str(y) for y in YEARS] and sum(n for _, n in counts) == 24
    rows = engine.retriever.filter_rows(parse_query("date:2019").filters)
    unit, counts = filters.date_counts(_db(engine), rows)  # one year: by month
    want = sorted({f"2019-{3 + n % 6:02d}" for n in range(24) if year_of(n) == 2019})
    assert unit == "month" and [m for m, _ in counts] == want and sum(n for _, n in counts) == len(rows)
    assert filters.date_counts(_db(engine), np.zeros(0, np.int64)) == ("", [])


def test_dates_of_gives_each_rows_date(dated):
    engine, ids = dated
    got = engine.dates_of([ids[0], ids[7], "nope.png"])
    assert got == {ids[0]: calendar.timegm((year_of(0), 3, 10, 12, 0, 0)),
                   ids[7]: calendar.timegm((year_of(7), 3 + 7 % 6, 10, 12, 0, 0))}


# --- the row's query text: the same language as the search box ------------------------------------------------
def test_row_tokens_are_the_search_boxs_filters():
    assert row_tokens("2016", "2018", "trips", ["family", "new year"], "Canon EOS 80D") == [
        "date:2016..2018", "folder:trips", "tag:family", 'tag:"new year"', 'camera:"Canon EOS 80D"']
    assert row_tokens("2016", "2016") == ["date:2016"] and row_tokens("", "2018") == ["date:..2018"]
    assert row_tokens() == []
    with pytest.raises(QueryError, match="date:2019..2016"):
        row_tokens("2019", "2016")
    with pytest.raises(QueryError, match="quote"):
        row_tokens(folder='a"b')


def test_the_row_replaces_only_its_own_fields_and_a_chip_removes_one_token():
    q = 'dog -leash "red kite" folder:old date:2019-06 -folder:work tag:x'
    assert with_row_filters(q, ["folder:trips"], ("folder",)) == \
        'dog -leash "red kite" date:2019-06 -folder:work tag:x folder:trips'
    assert with_row_filters(q, []) == 'dog -leash "red kite" -folder:work'
    assert without_token(q, "-leash") == 'dog "red kite" folder:old date:2019-06 -folder:work tag:x'
    assert without_token(q, "folder:nope") == q


# --- the page's handlers ------------------------------------------------------------------------------------
def test_a_folder_from_the_row_searches_like_the_same_typed_query_and_its_chip_removal_restores(dated):
    from interactive_ir.ui import card_actions, filter_handlers, filter_view
    from interactive_ir.ui.handlers import start
    from interactive_ir.ui.state import UIState

    engine, ids = dated
    st = start(engine, UIState(), "a red dog on the beach")
    plain = list(st.session.last.shown)
    st = filter_handlers.apply(engine, st, "a red dog on the beach", "folder", folder="sub")
    assert st.box == "a red dog on the beach folder:sub" and st.session.filters == "folder:sub"
    shown = st.session.last.shown
    assert shown and all(i.startswith("sub/") for i in shown)
    typed = engine.search_text(engine.new_session(), "a red dog on the beach folder:sub").shown
    assert shown == typed  # one code path: the row's filter is the typed one
    assert filter_view.chips(st.session) == ["folder:sub"]
    assert 'data-action="unfilter" data-id="folder:sub"' in filter_view.summary_html(engine, st)
    st = card_actions.run(engine, st, "unfilter", "folder:sub")
    assert st.session.filters == "" and list(st.session.last.shown) == plain and st.box == "a red dog on the beach"


def test_the_row_keeps_typed_filters_of_other_fields_and_a_bar_keeps_its_year(dated):
    from interactive_ir.ui import card_actions, filter_handlers
    from interactive_ir.ui.handlers import start
    from interactive_ir.ui.state import UIState

    engine, ids = dated
    st = start(engine, UIState(), "a dog -blue date:2016..2019")
    st = filter_handlers.apply(engine, st, "", "tags", tags=["family"])  # an empty box: the search's own query
    assert st.query == "a dog -blue date:2016..2019 tag:family"
    assert filter_handlers.synced(st, engine.facets()) == ("2016", "2019", "", ["family"], "")
    st = card_actions.run(engine, st, "when", "2018")
    assert st.query == "a dog -blue tag:family date:2018"
    dates = engine.dates_of(st.session.last.shown)
    assert dates and all(2018 == int(np.datetime64(int(t), "s").astype(object).year) for t in dates.values())
    with pytest.raises(BadInputError, match="unknown filter"):
        filter_handlers.apply(engine, st, "", "colour")


def test_filters_without_words_wait_for_a_description(dated):
    from interactive_ir.ui import filter_handlers
    from interactive_ir.ui.state import UIState

    engine, _ = dated
    st = filter_handlers.apply(engine, UIState(), "", "folder", folder="sub")
    assert not st.started and st.box == "folder:sub" and "describe" in st.notice.lower()


# --- sort by date, histogram ----------------------------------------------------------------------------------
def test_sort_by_date_orders_the_cards_and_keeps_their_ranks(dated):
    from interactive_ir.ui import filter_handlers, render
    from interactive_ir.ui.handlers import start
    from interactive_ir.ui.state import UIState

    engine, ids = dated
    st = start(engine, UIState(), "a green cat")
    shown = list(st.session.last.shown)
    dates = engine.dates_of(shown)

    def order(html):
        import re
        return re.findall(r'<article class="[^"]*" data-id="([^"]+)" data-rank="(\d+)"', html)

    assert [i for i, _ in order(render.results_html(engine, st))] == shown
    for sort, rev in (("newest", True), ("oldest", False)):
        st = filter_handlers.set_sort(engine, st, sort)
        got = order(render.results_html(engine, st))
        assert [i for i, _ in got] == sorted(shown, key=lambda i: dates[i], reverse=rev)
        assert {i: int(r) for i, r in got} == {i: n for n, i in enumerate(shown, 1)}  # each card keeps its rank
    with pytest.raises(BadInputError, match="unknown order"):
        filter_handlers.set_sort(engine, st, "random")


def test_by_date_puts_undated_results_last_in_their_order():
    from types import SimpleNamespace as H

    from interactive_ir.ui.filter_view import by_date

    hits = [H(id=x) for x in "abcde"]
    dates = {"b": 3.0, "d": 1.0, "e": 3.0}
    assert [h.id for h in by_date(hits, dates, "newest")] == ["b", "e", "d", "a", "c"]
    assert [h.id for h in by_date(hits, dates, "oldest")] == ["d", "b", "e", "a", "c"]
    assert [h.id for h in by_date(hits, dates, "")] == list("abcde")


def test_the_histogram_counts_the_filtered_matches(dated):
    from interactive_ir.ui import filter_view
    from interactive_ir.ui.handlers import start
    from interactive_ir.ui.state import UIState

    engine, ids = dated
    st = start(engine, UIState(), "a dog folder:sub")
    unit, counts = engine.date_histogram(st.session)
    in_sub = [n for n, i in enumerate(ids) if i.startswith("sub/")]
    assert unit == "year" and dict(counts) == {str(y): sum(1 for n in in_sub if year_of(n) == y)
                                               for y in YEARS if any(year_of(n) == y for n in in_sub)}
    html = filter_view.summary_html(engine, st)
    assert f"{len(in_sub)} dated matches by year" in html and html.count('data-action="when"') == len(counts)


def test_a_chip_of_a_search_opened_another_way_removes_from_its_own_query(dated):
    """A saved search opened (no query typed in this tab, or another one): the chip edits the search's own query."""
    from interactive_ir.ui import card_actions, filter_handlers
    from interactive_ir.ui.handlers import start
    from interactive_ir.ui.state import UIState

    engine, _ = dated
    st = start(engine, UIState(), 'a dog "red dog" -blue folder:sub tag:family')
    st.query = "a cat folder:other"  # stale: as after Open saved search
    assert filter_handlers.query_of(st) == 'a dog -blue "red dog" folder:sub tag:family'
    st = card_actions.run(engine, st, "unfilter", "tag:family")
    assert st.session.filters == '"red dog" folder:sub' and st.session.not_terms == ["blue"]
    assert st.session.description == "a dog red dog"
