"""The page's listeners, in one table (`actions`): per row the trigger (a component's event), the event function
(`events`) and the handler it runs (`handlers`, `filter_handlers`), the inputs, the queue group, the HTTP API
name and what follows in a chain (`then`: an action's model step, a browser-side step). `wire` wires every row
the same way, in the table's order (the order of Gradio's endpoints).

Queue groups: retrieval ("act") and clicks ("mark", "ui") never wait behind model steps ("model", the
queue's default limit); every submit counts (`trigger_mode="multiple"`: nothing is dropped), and each
action's model work follows it (`.then`). The buttons in the results send card actions (`card_actions`).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from interactive_ir.ui import events, filter_events, filter_handlers, handlers
from interactive_ir.ui.events import Action, PageContext
from interactive_ir.ui.layout import Page

NO_API = False  # `api_name` of an event the HTTP API does not offer


@dataclass(frozen=True)
class Row:
    """One listener of the page (or a step in a row's chain, `then`, whose `trigger` is None)."""

    trigger: Callable | None  # the component's event (`page.desc.submit`, `demo.load`); None: follows the row before
    event: Callable | None  # the event function (`events.*`, context first); None: a browser-side step (`js`)
    inputs: Sequence = ()  # the components whose values it takes (the tab's state first)
    outputs: Sequence = ()  # the components it sets (most: the page's `events.OUTPUTS`)
    group: str = "ui"  # queue group (`queue_groups`): "act", "model", "mark", "ui" or "browser" (no queue)
    handler: Callable | None = None  # what an action's event (`events.act`, `events.quick_act`) runs
    clear: tuple[str, ...] = ()  # the boxes an action empties once done (`events.view`)
    api_name: str | bool | None = None  # its HTTP API name (None: the event's own name; NO_API: none)
    js: str | None = None  # JavaScript run in the browser (with `event` None: all it does)
    then: tuple[Row, ...] = ()  # what follows it, one after the other (an action's model step: `model_step`)
    fn_only: bool = False  # the trigger takes the function alone (Gradio's `unload`: no inputs, no queue)


def bind(fn, ctx):
    """`fn(ctx, ...)` as Gradio calls it: `ctx` bound first (a bound method), the rest of the signature and its
    type hints (`gr.EventData`, `gr.Request`) and the function's name (the default API name) kept."""
    return types.MethodType(fn, ctx)


def queue_groups(search_concurrency: int, click_concurrency: int, results) -> dict[str, dict]:
    """Each group's listener options: "act" (an action's retrieval, its progress shown on `results`), "model"
    (model steps), "mark" (marks: a group of their own, so they never wait behind another tab's New search
    or upload), "ui" (the other clicks) and "browser" (steps that run in the browser only). Clicks take
    milliseconds; within a tab, `events.quick` keeps them in order."""
    return {
        "act": {"concurrency_id": "act", "concurrency_limit": search_concurrency, "trigger_mode": "multiple",
                "show_progress": "minimal", "show_progress_on": [results]},
        "model": {"concurrency_id": "model", "concurrency_limit": "default", "trigger_mode": "multiple",
                  "show_progress": "hidden"},
        "mark": {"concurrency_id": "mark", "concurrency_limit": click_concurrency, "trigger_mode": "multiple",
                 "show_progress": "hidden"},
        "ui": {"concurrency_id": "ui", "concurrency_limit": click_concurrency, "trigger_mode": "multiple",
               "show_progress": "hidden"},
        "browser": {"queue": False},
    }


def model_step(page: Page, api_name: str | bool = NO_API) -> Row:
    """An action's model step (`events.follow_up`: refine, then ask), after its retrieval."""
    return Row(None, events.follow_up, [page.state], page.outputs(events.OUTPUTS), "model", api_name=api_name)


def actions(demo, page: Page) -> list[Row]:
    """The page's listeners, in the order they are wired."""
    state, out = page.state, page.outputs(events.OUTPUTS)
    return [
        # actions: retrieval at once ("act"), the models' part after it
        Row(page.desc.submit, events.act, [state, page.desc], out, "act", handler=handlers.describe,
            clear=("upload",), api_name="start", then=(model_step(page, "start_model"),)),  # drops a pending upload
        Row(page.answer_box.submit, events.act, [state, page.answer_box], out, "act", handler=handlers.answer,
            clear=("answer",), api_name="answer", then=(model_step(page, "answer_model"),)),
        Row(page.skip_btn.click, events.act, [state], out, "act", handler=handlers.skip, api_name="skip",
            then=(model_step(page, "skip_model"),)),
        Row(page.fb_btn.click, events.act, [state, page.fb_method], out, "act", handler=handlers.feedback,
            api_name="feedback", then=(model_step(page, "feedback_model"),)),
        Row(page.caption_box.submit, events.act, [state, page.caption_box, page.comp_method], out, "act",
            handler=handlers.relative, clear=("caption", "upload"), api_name="relative",
            then=(model_step(page, "relative_model"),)),
        Row(page.dialogue.click, events.on_choose, [state], out, "act", api_name="on_choose",
            then=(model_step(page, "choose_model"),)),  # a question's option (its handler: `handlers.choose`)
        # the same through the HTTP API (option number from 0, the question's text as shown): for scripts
        Row(page.api_choose.click, events.act, [state, page.api_option, page.api_question], out, "act",
            handler=handlers.choose, api_name="choose"),
        Row(page.api_card.click, events.card, [state, page.api_action, page.api_id], out, "mark", api_name="card"),
        # the buttons in the results (`card_actions`); "More like this" asks its question after
        Row(page.results.click, events.on_card, [state], out, "mark", then=(model_step(page),)),
        Row(page.strip.click, events.on_card, [state], out, "mark"),  # "Found" under an earlier round
        # clicks without models
        Row(page.upload.upload, events.on_upload, [state, page.upload], out),
        Row(page.upload.clear, events.on_clear_upload, [state], out),
        Row(page.clear_ref_btn.click, events.on_clear_reference, [state], out),
        Row(page.new_btn.click, events.on_new, [state], out),
        Row(page.questioner.change, events.on_questioner, [state, page.questioner], out),
        Row(page.hide_seen.input, events.on_hide_seen, [state, page.hide_seen], out),
        *_share_rows(demo, page),
        *_sign_in_rows(demo, page),
        *_filter_rows(page),
        Row(demo.unload, events.on_close, fn_only=True),  # the tab closed: its state goes now
        *_export_rows(page),
    ]


def _share_rows(demo, page: Page) -> list[Row]:
    """A shared link (`?q=...`) runs its search on load; the link and Save search follow the results; Open
    saved search restores a saved session. The Options panel then shows the tab's settings."""
    state, out = page.state, page.outputs(events.OUTPUTS)
    sync = Row(None, events.on_sync_options, [state], [page.questioner, page.hide_seen], api_name=NO_API)
    loaded = Row(None, None, api_name=NO_API, group="browser", js=events.LOADED_JS)  # scripts wait for this
    return [
        Row(demo.load, events.on_shared_link, [state], out, "act", api_name=NO_API,
            then=(sync, model_step(page), loaded)),
        Row(page.results.change, events.on_share_refresh, [state], [page.share, page.save_btn], api_name=NO_API),
        Row(page.open_btn.upload, events.on_open_saved, [state, page.open_btn], out, api_name=NO_API,
            then=(sync,)),
    ]


def _sign_in_rows(demo, page: Page) -> list[Row]:
    """Whose model this visitor uses, said on load (signing in reloads the page); none with sign-in off."""
    if page.sign_in_note is None:
        return []
    return [Row(demo.load, events.on_sign_in_note, [], [page.sign_in_note], api_name="sign_in_note")]


def _filter_rows(page: Page) -> list[Row]:
    """The filter row (issue 26): a change the person makes (`.input`) edits the query and searches again (its
    question follows); each new round sets the row. None for an index without metadata."""
    row = page.filters
    if row is None:
        return []
    state, out, values = page.state, page.outputs(events.OUTPUTS), [page.state, page.desc, *row.inputs()]
    parts = ((row.date_from, filter_handlers.filter_dates), (row.date_to, filter_handlers.filter_dates),
             (row.folder, filter_handlers.filter_folder), (row.tags, filter_handlers.filter_tags),
             (row.camera, filter_handlers.filter_camera))
    return [*(Row(comp.input, events.quick_act, values, out, "act", handler=handler, api_name=NO_API,
                  then=(model_step(page),)) for comp, handler in parts),
            Row(row.sort.input, events.quick_act, [state, row.sort], out, handler=filter_handlers.set_sort,
                api_name=NO_API),
            Row(page.results.change, filter_events.on_filter_round, [state], row.inputs(), api_name=NO_API)]


def _export_rows(page: Page) -> list[Row]:
    """The Export buttons: each writes its file into the hidden file component, then the browser downloads it;
    the selection bar's (cards.js clicks these hidden buttons) first read the selected ids."""
    state, file = page.state, page.export_file
    download = Row(None, None, [file], group="browser", js=events.DOWNLOAD_JS)
    return [
        Row(page.export_csv.click, events.on_export_csv, [state], [file], api_name="export_csv", then=(download,)),
        Row(page.export_json.click, events.on_export_json, [state], [file], api_name="export_json",
            then=(download,)),
        Row(page.export_zip.click, events.on_export_zip, [state], [file], api_name="export_zip", then=(download,)),
        *(Row(btn.click, None, [], [page.selection], "browser", api_name=NO_API, js=events.SELECTED_JS,
              then=(Row(None, fn, [state, page.selection], [file], api_name=NO_API), download))
          for btn, fn in ((page.sel_zip, events.on_export_selected_zip),
                          (page.sel_csv, events.on_export_selected_csv))),
    ]


def _listen(row: Row, after, ctx: PageContext, groups: dict):
    """Wire one row: on its trigger, or after `after` (the row before it in a chain); returns the dependency."""
    fn = None
    if row.event is not None:
        fn = bind(row.event, Action(ctx, row.handler, row.clear) if row.handler is not None else ctx)
    kwargs = {"api_name": row.api_name} if row.api_name is not None else {}
    if row.js is not None:
        kwargs["js"] = row.js
    if row.fn_only:
        return row.trigger(fn)
    listen = row.trigger if after is None else after.then
    return listen(fn, list(row.inputs), list(row.outputs), **kwargs, **groups.get(row.group, {}))


def wire(demo, page: Page, ctx: PageContext, *, search_concurrency: int, click_concurrency: int) -> None:
    """Every listener of the page (call inside its `gr.Blocks`): each row of `actions`, then its chain."""
    groups = queue_groups(search_concurrency, click_concurrency, page.results)
    for row in actions(demo, page):
        dep = _listen(row, None, ctx, groups)
        for step in row.then:
            dep = _listen(step, dep, ctx, groups)
    from interactive_ir.ui.photos import note as photo_note

    photo_note.wire(demo, page, ctx, groups["ui"])  # the photo demo's progress note (when it is on)
