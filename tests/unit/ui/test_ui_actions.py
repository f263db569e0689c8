"""The page's action table (`ui/listeners.py`) and card-action table (`ui/card_actions.py`), read from the code:
every row holds the functions themselves, of the modules that own them; every action a button can send has a
row; the HTTP API keeps its names (issue 37 D5)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from iir_testutils import build_dated, query_modes

ROOT = Path(__file__).resolve().parents[3]
UI = ROOT / "interactive_ir" / "ui"
# the HTTP API's named endpoints of the default page (scripts, soak.py and the docs call them by these names)
API_NAMES = {"start", "start_model", "answer", "answer_model", "skip", "skip_model", "feedback", "feedback_model",
             "relative", "relative_model", "on_choose", "choose_model", "choose", "card", "on_card", "on_card_1",
             "on_upload", "on_clear_upload", "on_clear_reference", "on_new", "on_questioner", "on_hide_seen",
             "export_csv", "export_json", "export_zip"}


@pytest.fixture(scope="module")
def page_rows(tmp_path_factory):
    """(the page's Blocks, its Page, its action table, the engine) over a dated index (so the filter row is on), fake backends."""
    gr = pytest.importorskip("gradio")
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import events, listeners
    from interactive_ir.ui.layout import lay_out

    r, _ = build_dated(tmp_path_factory.mktemp("dated"))
    engine = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=6, fold_similarity=0), belief=query_modes())
    ctx = events.page_context(engine)
    with gr.Blocks() as demo:
        page = lay_out(ctx, (), "t")
        rows = listeners.actions(demo, page)
    return demo, page, rows, engine


def _all(rows):
    for row in rows:
        yield row
        yield from _all(row.then)


def test_every_row_holds_event_and_handler_functions_of_their_modules(page_rows):
    from interactive_ir.ui import events, listeners

    _, page, rows, _ = page_rows
    assert page.filters is not None  # the filter row's rows are in the table too
    groups = set(listeners.queue_groups(1, 1, None))
    for row in _all(rows):
        assert row.group in groups, row
        if row.event is None:  # a browser-side step: all it does is its JavaScript
            assert row.js and row.handler is None, row
            continue
        assert inspect.isfunction(row.event), row
        assert row.event.__module__ in ("interactive_ir.ui.events", "interactive_ir.ui.filter_events"), row
        first = next(iter(inspect.signature(row.event).parameters))
        if row.handler is None:
            assert first == "ctx", row  # bound to the page's context
            continue
        assert first == "action" and row.event in (events.act, events.quick_act), row
        assert inspect.isfunction(row.handler), row
        assert row.handler.__module__ in ("interactive_ir.ui.handlers", "interactive_ir.ui.filter_handlers"), row
        if row.event is events.act:  # its retrieval now, its models' part later (`later=True`)
            assert "later" in inspect.signature(row.handler).parameters, row


def test_rows_start_on_a_trigger_and_chains_follow_it(page_rows):
    demo, page, rows, _ = page_rows
    components = {id(c) for c in vars(page).values() if c is not None}
    components |= {id(c) for c in vars(page.filters).values()}
    for row in rows:
        owner = getattr(row.trigger, "__self__", None)
        assert owner is demo or id(owner) in components, row
        for step in _all(row.then):
            assert step.trigger is None, step
    model_steps = [s for r in rows for s in r.then if s.group == "model"]
    assert model_steps and all(s.event.__name__ == "follow_up" for s in model_steps)
    for row in rows:  # an action's model step follows its retrieval, never a click's
        if any(s.group == "model" for s in row.then):
            assert row.group in ("act", "mark"), row


def test_the_page_offers_the_same_http_api(page_rows):
    """Wired, the table gives the page's HTTP API its names, queue groups and model steps as before."""
    import gradio as gr

    from interactive_ir.ui import build_demo

    built = build_demo(page_rows[3])
    assert isinstance(built, gr.Blocks)
    fns = list(built.fns.values())
    named = {f.api_name: f for f in fns if isinstance(f.api_name, str) and not f.api_name.startswith(("false", "js_fn"))}
    assert set(named) - {"on_close", "sign_in_note"} == API_NAMES
    assert {n: named[n].concurrency_id for n in ("start", "card", "on_card", "on_new", "start_model")} == \
        {"start": "act", "card": "mark", "on_card": "mark", "on_new": "ui", "start_model": "model"}
    by_id = {f._id: f for f in fns}
    for name in ("start", "answer", "skip", "feedback", "relative"):
        step = named[f"{name}_model"]
        assert by_id[step.trigger_after] is named[name] and step.fn.__name__ == "follow_up"


def test_every_action_a_button_can_send_has_a_row():
    from interactive_ir.ui import card_actions, render

    sent = set(render.ACTIONS)  # a result card's buttons (`render._button`)
    for path in (*UI.glob("*.py"), *(ROOT / "assets" / "ui").glob("*.js")):
        sent |= set(re.findall(r'data-action="([a-z_]+)"', path.read_text()))  # the page's other buttons
    js = (ROOT / "assets" / "ui" / "cards.js").read_text()
    acts = re.search(r"const IIR_ACTS = \{([^}]*)\}", js)
    assert acts, "cards.js: its keyboard actions (IIR_ACTS) moved"
    sent |= set(re.findall(r'"([a-z_]+)"', acts.group(1)))  # r / n / f on a card press its buttons
    in_browser = set(re.findall(r'b\.dataset\.action === "([a-z_]+)"\) \{', js))  # handled in the browser
    assert in_browser == {"open", "unfold"}
    sent -= in_browser | {"choose"}  # a question's option: the dialogue's own listener (`events.on_choose`)
    assert sent <= set(card_actions.CARD_ACTIONS), sent - set(card_actions.CARD_ACTIONS)
    # the table has no dead row: "closest" is sent by scripts only (the HTTP API's `card`; the belief's page
    # sends "like", which its handler turns into a closest click)
    assert set(card_actions.CARD_ACTIONS) - sent == {"closest"}


def test_every_card_action_holds_a_handler_function_that_takes_its_arguments():
    from interactive_ir.ui import card_actions

    for name, row in card_actions.CARD_ACTIONS.items():
        assert inspect.isfunction(row.handler), name
        assert row.handler.__module__ in ("interactive_ir.ui.handlers", "interactive_ir.ui.filter_handlers",
                                          "interactive_ir.ui.work"), name
        params = list(inspect.signature(row.handler).parameters)
        n = 2 + row.uses_id + len(row.args)  # engine, tab state, the button's id, the fixed arguments
        inspect.signature(row.handler).bind(*range(n), **row.kwargs)  # raises when they do not fit
        assert params[:2] == ["engine", "st"], name


def test_a_card_action_runs_its_handler_and_an_unknown_one_is_refused(tmp_path):
    from iir_testutils import build_tiny

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.errors import BadInputError
    from interactive_ir.ui import card_actions, handlers
    from interactive_ir.ui.state import UIState

    r, _, _ = build_tiny(tmp_path, n=24)
    engine = build_engine(r, config=EngineConfig(k=6), belief=query_modes())
    st = handlers.start(engine, UIState(), "a red dog")
    first, second = st.current_ids[:2]
    st = card_actions.run(engine, st, "relevant", first)
    st = card_actions.run(engine, st, "irrelevant", second)
    assert st.marks == {first: True, second: False}
    st = card_actions.run(engine, st, "relevant", first)  # again: the mark goes
    assert st.marks == {second: False}
    with pytest.raises(BadInputError, match="unknown action 'delete'"):
        card_actions.run(engine, st, "delete", first)


def test_no_ui_module_looks_a_handler_up_by_its_name():
    for path in UI.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"getattr\((handlers|events|filter_handlers|card_actions|work)\b", text), path
