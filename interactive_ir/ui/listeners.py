"""The page's listeners, in one block: which event runs on which trigger, with which inputs, in which queue
group and under which HTTP API name.

Queue groups: retrieval ("act") and clicks ("mark", "ui") never wait behind model steps ("model", the
queue's default limit); every submit counts (`trigger_mode="multiple"`: nothing is dropped), and each
action's model work follows it (`.then`).
"""

from __future__ import annotations

import types

from interactive_ir.ui import events
from interactive_ir.ui.events import Action, PageContext
from interactive_ir.ui.layout import Page


def bind(fn, ctx):
    """`fn(ctx, ...)` as Gradio calls it: `ctx` bound first (a bound method), the rest of the signature and its
    type hints (`gr.EventData`, `gr.Request`) and the function's name (the default API name) kept."""
    return types.MethodType(fn, ctx)


def queue_groups(search_concurrency: int, click_concurrency: int, results) -> dict[str, dict]:
    """Each group's listener options: "act" (an action's retrieval, its progress shown on `results`), "model"
    (model steps), "mark" (marks: a group of their own, so they never wait behind another tab's New search
    or upload) and "ui" (the other clicks). Clicks take milliseconds; within a tab, `events.quick` keeps
    them in order."""
    return {
        "act": {"concurrency_id": "act", "concurrency_limit": search_concurrency, "trigger_mode": "multiple",
                "show_progress": "minimal", "show_progress_on": [results]},
        "model": {"concurrency_id": "model", "concurrency_limit": "default", "trigger_mode": "multiple",
                  "show_progress": "hidden"},
        "mark": {"concurrency_id": "mark", "concurrency_limit": click_concurrency, "trigger_mode": "multiple",
                 "show_progress": "hidden"},
        "ui": {"concurrency_id": "ui", "concurrency_limit": click_concurrency, "trigger_mode": "multiple",
               "show_progress": "hidden"},
    }


def wire(demo, page: Page, ctx: PageContext, *, search_concurrency: int, click_concurrency: int) -> None:
    """Every listener of the page (call inside its `gr.Blocks`)."""
    groups = queue_groups(search_concurrency, click_concurrency, page.results)
    act, model, marks, cheap = groups["act"], groups["model"], groups["mark"], groups["ui"]
    state, outputs = page.state, page.outputs(events.OUTPUTS)
    follow_up = bind(events.follow_up, ctx)
    for trigger, name, inputs, clear in (
            (page.desc.submit, "start", [state, page.desc], ("upload",)),  # a new search drops a pending upload
            (page.answer_box.submit, "answer", [state, page.answer_box], ("answer",)),
            (page.skip_btn.click, "skip", [state], ()),
            (page.fb_btn.click, "feedback", [state, page.fb_method], ()),
            (page.caption_box.submit, "relative", [state, page.caption_box, page.comp_method], ("caption", "upload"))):
        trigger(bind(events.act, Action(ctx, name, clear)), inputs, outputs, api_name=name, **act).then(
            follow_up, [state], outputs, api_name=f"{name}_model", **model)
    page.dialogue.click(bind(events.on_choose, ctx), [state], outputs, api_name="on_choose", **act).then(
        follow_up, [state], outputs, api_name="choose_model", **model)
    # the same through the HTTP API (option number from 0, the question's text as shown): for scripts
    page.api_choose.click(bind(events.act, Action(ctx, "choose")), [state, page.api_option, page.api_question],
                          outputs, api_name="choose", **act)
    page.api_card.click(bind(events.card, ctx), [state, page.api_action, page.api_id], outputs, api_name="card",
                        **marks)
    page.results.click(bind(events.on_card, ctx), [state], outputs, **marks).then(  # "More like this": its question
        follow_up, [state], outputs, api_name=False, **model)
    page.strip.click(bind(events.on_card, ctx), [state], outputs, **marks)  # "Found" under an earlier round
    page.upload.upload(bind(events.on_upload, ctx), [state, page.upload], outputs, **cheap)
    page.upload.clear(bind(events.on_clear_upload, ctx), [state], outputs, **cheap)
    page.clear_ref_btn.click(bind(events.on_clear_reference, ctx), [state], outputs, **cheap)
    page.new_btn.click(bind(events.on_new, ctx), [state], outputs, **cheap)
    page.questioner.change(bind(events.on_questioner, ctx), [state, page.questioner], outputs, **cheap)
    page.hide_seen.input(bind(events.on_hide_seen, ctx), [state, page.hide_seen], outputs, **cheap)
    _wire_share(demo, page, ctx, act, model, cheap)
    if page.sign_in_note is not None:  # whose model this visitor uses, said on load (signing in reloads the page)
        demo.load(bind(events.on_sign_in_note, ctx), None, [page.sign_in_note], api_name="sign_in_note",
                  **cheap)
    if page.filters is not None:  # the filter row (issue 26): it edits the query and searches again
        from interactive_ir.ui import filter_row

        filter_row.wire(page, page.filters, ctx, groups)
    demo.unload(events.on_close)
    wire_export(page, ctx, cheap)
    from interactive_ir.ui.photos import note as photo_note

    photo_note.wire(demo, page, ctx, cheap)  # the photo demo's progress note (when it is on)


def wire_export(page: Page, ctx: PageContext, cheap: dict) -> None:
    """The Export buttons: each writes its file into the hidden file component, then the browser downloads it."""
    def export_of(kind: str):
        def export(st):
            return events.export_file(ctx, st, kind)
        return export

    for btn, kind in ((page.export_csv, "csv"), (page.export_json, "json"), (page.export_zip, "zip")):
        btn.click(export_of(kind), [page.state], [page.export_file], api_name=f"export_{kind}", **cheap).then(
            None, [page.export_file], None, js=events.DOWNLOAD_JS)

    def selection_of(kind: str):
        def export(st, selection):
            return events.export_selection(ctx, st, kind, selection)
        return export

    # the selection bar's downloads (cards.js clicks these hidden buttons): the selected ids, then the file
    for btn, kind in ((page.sel_zip, "zip"), (page.sel_csv, "csv")):
        btn.click(None, None, [page.selection], js=events.SELECTED_JS, api_name=False, queue=False).then(
            selection_of(kind), [page.state, page.selection], [page.export_file], api_name=False, **cheap).then(
            None, [page.export_file], None, js=events.DOWNLOAD_JS)


def _wire_share(demo, page: Page, ctx: PageContext, act: dict, model: dict, cheap: dict) -> None:
    """A shared link (`?q=...`) runs its search on load; the link and Save search follow the results; Open
    saved search restores a saved session."""
    state, outputs = page.state, page.outputs(events.OUTPUTS)
    options = [page.questioner, page.hide_seen]
    demo.load(bind(events.on_shared_link, ctx), [state], outputs, api_name=False, **act).then(
        bind(events.on_sync_options, ctx), [state], options, api_name=False, **cheap).then(
        bind(events.follow_up, ctx), [state], outputs, api_name=False, **model).then(
        None, None, None, js=events.LOADED_JS, api_name=False, queue=False)
    page.results.change(bind(events.on_share_refresh, ctx), [state], [page.share, page.save_btn], api_name=False,
                        **cheap)
    page.open_btn.upload(bind(events.on_open_saved, ctx), [state, page.open_btn], outputs, api_name=False,
                         **cheap).then(bind(events.on_sync_options, ctx), [state], options, api_name=False, **cheap)
