"""The page's components and their layout (`lay_out`), each showing an empty tab; `listeners` wires them
to the `events`. Gradio is imported only when a page is laid out."""

from dataclasses import dataclass, fields
from pathlib import Path

from interactive_ir.ui import filter_row, handlers, render
from interactive_ir.ui.state import UIState

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets" / "ui"
TITLE = "Interactive image search"
INTRO = ("Describe the image you have in mind, then narrow it down: answer the questions, mark results, or "
         "say how yours differs from one. Press **Found it** on your image to finish.")


def notes_markdown(notes, credit=None) -> str:
    """"About this app": what runs, then the served collection's credit (`index.credit.Credit`, from the index).
    Every visitor reads it (and `/config` carries it): no note names a secret or an internal address
    (`redact.public_text`)."""
    from interactive_ir.backends.redact import public_text

    notes = [public_text(n) for n in notes if n]
    text = "**Running on:**\n" + "\n".join(f"- {n}" for n in notes) if notes else ""
    if credit is not None:
        text += ("\n\n" if text else "") + f"**Credit:** {credit.markdown()}"
    return text


@dataclass
class Page:
    """The page's components that events read or change (`events.OUTPUTS` names the first twelve)."""

    state: object  # gr.State holding the tab's UIState
    status: object
    results: object
    dialogue: object
    strip: object
    reference: object
    desc: object
    answer_box: object
    caption_box: object
    upload: object
    skip_btn: object
    fb_btn: object
    new_btn: object
    clear_ref_btn: object
    questioner: object
    hide_seen: object
    fb_method: object
    comp_method: object
    api_option: object  # the HTTP API's inputs for what the page does with clicks (for scripts)
    api_question: object
    api_choose: object
    api_action: object
    api_id: object
    api_card: object
    export_csv: object  # the Export buttons (`_export`) and the hidden file they download
    export_json: object
    export_zip: object
    export_file: object
    share: object  # Copy link (its HTML carries the search's link)
    save_btn: object  # Save search (the session as JSON)
    open_btn: object  # Open saved search
    selection: object  # the ids selected on the page (hidden; cards.js keeps the selection)
    sel_zip: object  # hidden buttons the selection bar clicks: the selected images as a zip, their rows as CSV
    sel_csv: object
    login: object = None  # Sign in with Hugging Face (None: sign-in is off, `signin.sign_in_for`)
    sign_in_note: object = None  # whose model this visitor uses (with `login`)
    filters: object = None  # the filter row (`filter_row.FilterRow`), None for an index without metadata
    gallery: object = None  # the line under the results: the collection's credit, the photo demo's progress
    gallery_timer: object = None  # polls the photo demo's progress (None: no photo demo on this page)

    def outputs(self, names) -> list:
        """The components called `names`, in that order."""
        return [getattr(self, name) for name in names]


def lay_out(ctx, setup_notes, title: str) -> Page:
    """The page's components, laid out inside the caller's `gr.Blocks`, each showing an empty tab."""
    import gradio as gr

    from interactive_ir.index.credit import credit_of
    from interactive_ir.ui.photos import note as photo_note
    from interactive_ir.ui.serving.tabs import drop_tab, tab_limits

    js = (ASSETS / "cards.js").read_text()
    # a closed or idle tab's state is dropped (and its upload deleted) after `tab_ttl_s`
    parts = {"state": gr.State(UIState(), time_to_live=tab_limits().tab_ttl_s, delete_callback=drop_tab)}
    # one column, its parts placed by app.css (grid areas): on a wide screen the question bar and the
    # reference sit side by side under the search bar, the results take the whole width below; on a phone
    # the reference goes under the results and the question bar sticks to the bottom of the screen
    with gr.Column(elem_id="iir-page"):
        with gr.Row(elem_id="iir-top", equal_height=False):
            gr.Markdown(f"# {title}\n{INTRO}", elem_id="iir-head")
            with gr.Accordion("About this app", open=False, elem_id="iir-notes-panel"):
                gr.Markdown(notes_markdown(setup_notes, credit_of(getattr(ctx.engine.index, "manifest", None))),
                            elem_id="iir-notes")
            parts |= _sign_in(ctx)  # in the header: who the visitor is and whose model they use
        parts |= _search_column(ctx, js)
        parts["filters"] = filter_row.lay_out(ctx)  # date range, folder, tags, camera, order (issue 26)
        parts |= _dialogue_panel(ctx, js)
        parts |= _composed_panel(ctx)
        parts |= _results(ctx, js)
        parts |= photo_note.lay_out(ctx.engine, getattr(ctx, "photo_note", None))  # credit, photo progress
        with gr.Accordion("Earlier rounds", open=True, elem_id="iir-strip-panel"):
            parts["strip"] = gr.HTML(render.strip_html(ctx.engine, UIState()), elem_id="iir-strip", js_on_load=js)
        parts |= _share_controls()
        parts |= _options(ctx)
        parts |= _export()
    with gr.Row(visible=False):  # the HTTP API's inputs for what the page does with clicks (for scripts)
        parts |= _api_inputs()
    return Page(**{f.name: parts.get(f.name) for f in fields(Page)})


def _sign_in(ctx) -> dict:
    """Sign in with Hugging Face and what applies to this visitor, when sign-in is on (issue 27)."""
    import gradio as gr

    from interactive_ir.ui.signin import note

    if getattr(ctx, "sign_in", None) is None:
        return {}
    with gr.Column(elem_id="iir-sign-in", scale=0, min_width=260):
        login = gr.LoginButton(elem_id="iir-login", size="sm")
        says = gr.Markdown(note(ctx.sign_in), elem_id="iir-sign-in-note")
    return {"login": login, "sign_in_note": says}


def _search_column(ctx, js: str) -> dict:
    """The description, New search, and the status line with More like my marks."""
    import gradio as gr

    from interactive_ir.ui.events import DESC_FIRST

    m = ctx.modes
    with gr.Row(equal_height=True, elem_id="iir-search-row"):
        desc = gr.Textbox(label=DESC_FIRST, show_label=False, elem_id="iir-desc",  # the label is for screen readers
                          placeholder="Describe the image you are looking for, e.g. a cartoon cat on a red sofa",
                          lines=1, max_lines=4, submit_btn="Search", scale=5, min_width=200)
        new_btn = gr.Button("New search", elem_id="iir-new", scale=0, min_width=100)
    with gr.Row(equal_height=True, elem_id="iir-status-row"):
        status = gr.Markdown(render.status_md(UIState()), elem_id="iir-status")
        fb_btn = gr.Button("More like my marks", variant="secondary", elem_id="iir-feedback", size="md",
                           visible=m.feedback, scale=0, min_width=190,
                           interactive=False)
    return {"desc": desc, "new_btn": new_btn, "status": status, "fb_btn": fb_btn}


def _share_controls() -> dict:
    """Copy link, Save search and Open saved search, in a row under the earlier rounds (the grid above stays
    dense)."""
    import gradio as gr

    from interactive_ir.ui.events import share_html

    with gr.Row(equal_height=True, elem_id="iir-share-row"):
        return {"share": gr.HTML(share_html(UIState()), elem_id="iir-share", padding=False, min_width=0),
                "save_btn": gr.DownloadButton("Save search", elem_id="iir-save", size="md", scale=0, min_width=110,
                                              interactive=False),
                "open_btn": gr.UploadButton("Open saved search", elem_id="iir-open", size="md", scale=0, min_width=150,
                                            file_types=[".json"], type="filepath")}


def _results(ctx, js: str) -> dict:
    """The results: a grid of cards (the page head says the round; a click on a picture opens it large)."""
    import gradio as gr

    return {"results": gr.HTML(render.results_html(ctx.engine, UIState(), ctx.examples), elem_id="iir-results",
                               js_on_load=js, min_height=120)}


def _dialogue_panel(ctx, js: str) -> dict:
    """The system's question, the answer box and Skip."""
    import gradio as gr

    engine, m, off = ctx.engine, ctx.modes, ctx.questions_off
    with gr.Group(elem_id="iir-dialogue-panel"):
        dialogue = gr.HTML(render.dialogue_html(UIState(), m.questions, off, engine),
                           elem_id="iir-dialogue", js_on_load=js, padding=True)
        with gr.Row(equal_height=True, elem_id="iir-answer-row"):
            answer_box = gr.Textbox(label="Your answer", show_label=False, elem_id="iir-answer", lines=1,
                                    max_lines=4, submit_btn="Answer", interactive=False, scale=4, min_width=160,
                                    placeholder="Questions are off (no LLM)" if not m.questions
                                    else "Describe your image first")
            skip_btn = gr.Button("Skip question", elem_id="iir-skip", size="sm", interactive=False, scale=0,
                                 min_width=90)
    return {"dialogue": dialogue, "answer_box": answer_box, "skip_btn": skip_btn}


def _composed_panel(ctx) -> dict:
    """The reference image (chosen or uploaded) and the caption saying how the image differs."""
    import gradio as gr

    engine, m = ctx.engine, ctx.modes
    with gr.Group(elem_id="iir-composed-panel", visible=m.composed):
        with gr.Row(equal_height=True, elem_id="iir-ref-row"):
            reference = gr.HTML(render.reference_html(engine, UIState()), elem_id="iir-reference",
                                js_on_load=None, padding=True, min_width=160)
            upload = gr.File(label="Upload a reference image", file_types=["image"], type="filepath",
                             elem_id="iir-upload", height=72, visible=m.upload, scale=0, min_width=150)
        with gr.Row(equal_height=True, elem_id="iir-caption-row"):
            caption_box = gr.Textbox(label="How does your image differ from the reference?", show_label=False,
                                     elem_id="iir-caption", lines=1, max_lines=4, submit_btn="Search", scale=4,
                                     min_width=160,
                                     placeholder="How does yours differ? e.g. the same, but at night")
            clear_ref_btn = gr.Button("Clear reference", elem_id="iir-clear-ref", size="sm", scale=0, min_width=90)
    return {"reference": reference, "upload": upload, "caption_box": caption_box, "clear_ref_btn": clear_ref_btn}


def _options(ctx) -> dict:
    """The Options panel: the kind of questions, hiding seen images, and how each mode works."""
    import gradio as gr

    from interactive_ir.ui import inputs

    engine, m = ctx.engine, ctx.modes
    with gr.Accordion("Options", open=False, elem_id="iir-options"):
        has_llm = getattr(engine, "llm", None) is not None
        questioner = inputs.Radio(handlers.choices(handlers.QUESTIONER_CHOICES, has_llm), value="",
                              label="Questions", elem_id="iir-questioner", visible=m.questions)
        hides = bool(getattr(getattr(engine, "config", None), "hide_seen", False))  # engine's default
        hide_seen = gr.Checkbox(value=hides, label="Hide images already shown",
                                info="Off: each round shows the best images, those seen before marked "
                                     "\"seen\". On: each round shows only new images.",
                                elem_id="iir-hide-seen")
        fb_method = inputs.Radio(handlers.choices(handlers.FEEDBACK_CHOICES, has_llm), value="",
                             label="More like my marks: how", elem_id="iir-fb-method",
                             visible=m.feedback)
        comp_method = inputs.Radio(handlers.choices(handlers.COMPOSED_CHOICES, has_llm), value="",
                               label="Reference + caption: how", elem_id="iir-comp-method",
                               visible=m.composed)
    return {"questioner": questioner, "hide_seen": hide_seen, "fb_method": fb_method, "comp_method": comp_method}


def _export() -> dict:
    """Export: the page's results and the search's marks as CSV or JSON, the page's images as a zip (below
    the results: it never pushes them down)."""
    import gradio as gr

    with gr.Accordion("Export", open=False, elem_id="iir-export"):
        with gr.Row(equal_height=True):
            csv_btn = gr.Button("Download results (CSV)", elem_id="iir-export-csv", size="md", min_width=160)
            json_btn = gr.Button("Download results (JSON)", elem_id="iir-export-json", size="md", min_width=160)
            zip_btn = gr.Button("Download images (zip)", elem_id="iir-export-zip", size="md", min_width=160)
        file = gr.File(visible="hidden", elem_id="iir-export-file", interactive=False)
    return {"export_csv": csv_btn, "export_json": json_btn, "export_zip": zip_btn, "export_file": file,
            **_selection_inputs()}


def _selection_inputs() -> dict:
    """What the selection bar on the results (render.selection_bar_html, cards.js) uses: the selected ids and
    two hidden buttons it clicks to download them."""
    import gradio as gr

    return {"selection": gr.Textbox(visible="hidden", elem_id="iir-selection", label="selected ids"),
            "sel_zip": gr.Button("Download selected (zip)", visible="hidden", elem_id="iir-sel-zip"),
            "sel_csv": gr.Button("Download selected (CSV)", visible="hidden", elem_id="iir-sel-csv")}


def _api_inputs() -> dict:
    """Hidden inputs of the HTTP API's `choose` and `card` (what the page does with clicks, for scripts)."""
    import gradio as gr

    from interactive_ir.ui import inputs

    return {"api_option": inputs.Number(precision=0, label="option"), "api_question": gr.Textbox(label="question"),
            "api_choose": gr.Button("choose"), "api_action": gr.Textbox(label="card action"),
            "api_id": gr.Textbox(label="image id"), "api_card": gr.Button("card")}
