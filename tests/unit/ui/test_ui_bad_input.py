"""Issue 40 item 7, the page: bad input through the page's events and the HTTP API is refused in one short line
(the project's own error, never an unexpected one logged with a traceback) and the tab is left as it was."""

from __future__ import annotations

import json
import logging
import types

import pytest
from iir_testutils import build_tiny, query_modes

gr = pytest.importorskip("gradio")

from interactive_ir.backends.llms import FakeLLM  # noqa: E402
from interactive_ir.engine import EngineConfig, build_engine  # noqa: E402
from interactive_ir.errors import BadInputError  # noqa: E402
from interactive_ir.ui import events, handlers, inputs, share  # noqa: E402
from interactive_ir.ui.state import UIState  # noqa: E402

HUGE = "x" * 1_000_000


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    r, _, _ = build_tiny(tmp_path_factory.mktemp("tiny"))
    engine = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())
    return events.page_context(engine)


@pytest.fixture
def started(ctx):
    return handlers.start(ctx.engine, UIState(), "a red dog on the beach")


def _clean(st: UIState, caplog) -> str:
    """The tab's notice after a refusal: one short line, and nothing logged as unexpected."""
    assert st.notice.startswith("⚠"), st.notice
    assert "\n" not in st.notice and len(st.notice) < 400, st.notice[:200]
    assert "Something went wrong" not in st.notice, st.notice
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records[0].getMessage()[:200]
    return st.notice


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), "abc", [1], {"a": 1}, 1.5, True, HUGE],
                         ids=["nan", "inf", "-inf", "str", "list", "dict", "1.5", "bool", "huge"])
def test_choose_refuses_what_is_not_an_option_number(ctx, started, caplog, value):
    shown_before = list(started.current_ids)
    events.act(events.Action(ctx, handlers.choose), started, value, "")
    notice = _clean(started, caplog)
    assert "not an option" in notice.lower()
    assert started.current_ids == shown_before


@pytest.mark.parametrize("value, index", [(2, 2), (2.0, 2), ("1", 1), ("-1", -1)])
def test_an_option_number_is_read_from_an_int_a_whole_float_or_digits(value, index):
    assert handlers.option_index(value) == index


@pytest.mark.parametrize("data", [[1, 2], "index", 3, True, [HUGE]], ids=["list", "str", "int", "bool", "huge"])
@pytest.mark.parametrize("on", ["choose", "card"])
def test_event_data_that_is_not_an_object(ctx, started, caplog, data, on):
    evt = types.SimpleNamespace(_data=data)
    (events.on_choose if on == "choose" else events.on_card)(ctx, started, evt)
    assert "must be an object" in _clean(started, caplog)


def test_a_huge_image_id_is_not_echoed(ctx, started, caplog):
    events.on_card(ctx, started, types.SimpleNamespace(_data={"action": "relevant", "id": HUGE}))
    assert "xxxx" in _clean(started, caplog)
    events.on_card(ctx, started, types.SimpleNamespace(_data={"action": HUGE, "id": "a"}))
    _clean(started, caplog)


def test_a_radio_value_outside_its_choices_is_refused_without_its_echo():
    radio = inputs.Radio([("Auto", ""), ("Picture questions", "grounded")], value="", label="Questions")
    assert radio.preprocess("grounded") == "grounded" and radio.preprocess(None) is None
    for bad in (HUGE, ["grounded"], {"a": 1}, 3.5):
        with pytest.raises(gr.Error) as e:
            radio.preprocess(bad)
        assert len(str(e.value)) < 300 and "Questions" in str(e.value)


def test_a_dropdown_value_outside_its_choices_is_refused_without_its_echo():
    box = inputs.Dropdown([("Any folder", ""), ("trips", "trips")], value="", label="Folder")
    assert box.preprocess("trips") == "trips"
    with pytest.raises(gr.Error) as e:
        box.preprocess(HUGE)
    assert len(str(e.value)) < 300


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "abc", [1], HUGE], ids=["nan", "inf", "str", "list", "h"])
def test_the_api_option_number_hands_what_it_cannot_round_to_the_handler(value):
    number = inputs.Number(precision=0, label="option")
    assert number.preprocess(2.0) == 2
    assert number.preprocess(value) is value  # then `handlers.option_index` refuses it in one line
    with pytest.raises(BadInputError):
        handlers.option_index(number.preprocess(value))


def test_a_deeply_nested_saved_search_is_not_a_saved_search(ctx, started, caplog, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    events.on_open_saved(ctx, started, str(path))
    assert "deep.json is not a saved search" in _clean(started, caplog)
    nested = tmp_path / "nested.json"
    nested.write_text('{"turns": ' + "[" * 100_000 + "]" * 100_000 + "}")
    events.on_open_saved(ctx, started, str(nested))
    assert "not a saved search" in _clean(started, caplog)


def test_a_saved_search_that_is_a_folder_or_missing(ctx, started, caplog, tmp_path):
    for path in (tmp_path, tmp_path / "gone.json"):
        events.on_open_saved(ctx, started, str(path))
        assert "not a saved search" in _clean(started, caplog)


def test_a_shared_link_with_deeply_nested_rounds_runs_its_first_search():
    actions, note = share.parse_rounds("[" * 100_000 + "]" * 100_000)
    assert actions == [] and "could not be read" in note
    actions, _ = share.parse_rounds(json.dumps([["s"]]))
    assert actions == [["s"]]


def test_an_unknown_questioner_is_not_echoed(ctx, started, caplog):
    events.on_questioner(ctx, started, HUGE)
    assert "unknown kind of question" in _clean(started, caplog).lower()


def test_an_unexpected_error_message_is_cut(ctx, started, caplog):
    def boom(engine, st):
        raise RuntimeError(HUGE)

    with caplog.at_level(logging.CRITICAL):
        events.quick(ctx, boom, started)
    assert len(started.notice) < 400 and "Something went wrong" in started.notice
