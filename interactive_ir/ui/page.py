"""The web app's page: `build_demo(engine, notes)` lays it out (`layout`) and wires its listeners (`listeners`)
to the events (`events`); `launch_options(engine)` says how to serve it.

Building a page changes nothing else in the process: the app's entry installs the process's settings once
(`interactive_ir.ui.serving.process`).
"""

from interactive_ir.ui import render
from interactive_ir.ui.layout import ASSETS, TITLE


def build_demo(engine, setup_notes=(), *, questions_off_reason: str = "", title: str = TITLE,
               search_concurrency: int = 4, click_concurrency: int = 8, examples=render.EXAMPLES, sign_in=None,
               photo_note=None):
    """The Gradio page over a shared, read-only `engine`; per-tab state lives in `gr.State`.

    `search_concurrency`: actions' retrievals running at once (model steps use the queue's default limit).
    `click_concurrency`: marks running at once, in a queue group of their own; other clicks (New search,
    upload, options) the same, in another. Events of one tab still change its state one at a time.
    `examples`: descriptions offered on the empty page (a click runs the search).
    `sign_in`: a `backends.visitor_llm.SignInConfig` (None: from the environment, `IIR_SIGN_IN` ...).
    `photo_note`: the photo demo's progress note (`photos.note.PhotoNote`; None: the photo demo is off).
    """
    import gradio as gr

    from interactive_ir.ui import events, listeners
    from interactive_ir.ui.i18n import translate_page
    from interactive_ir.ui.layout import lay_out
    from interactive_ir.ui.serving.uploads import delete_cache

    ctx = events.page_context(engine, questions_off_reason, examples, sign_in, photo_note)
    with gr.Blocks(title=title, delete_cache=delete_cache(), fill_width=True) as demo:
        page = lay_out(ctx, setup_notes, title)
        listeners.wire(demo, page, ctx, search_concurrency=search_concurrency, click_concurrency=click_concurrency)
    translate_page(demo)  # the page's text in the browser's language (`i18n.py`; launch_options passes the catalogue)
    return demo


def launch_options(engine) -> dict:
    """Keyword arguments for `demo.launch()`: the page's CSS, the image route (indexed images and kept uploads,
    by token: no folder is opened to Gradio's file route), the served index's name (`iir/served`: the photo
    switch's reload check) and the upload limits."""
    from starlette.middleware import Middleware

    from interactive_ir.ui.i18n import catalogue
    from interactive_ir.ui.photos.note import served_route
    from interactive_ir.ui.serving.files import media_routes
    from interactive_ir.ui.serving.proxy_check import ProxyCheck
    from interactive_ir.ui.serving.tabs import tab_limits
    from interactive_ir.ui.serving.upload_guard import UploadGuard
    from interactive_ir.ui.serving.uploads import default_store

    store = default_store()
    return {
        "css_paths": [ASSETS / "app.css"],
        "js": (ASSETS / "page.js").read_text(),  # after "Use as reference": the caption box in view, focused
        "max_file_size": store.policy.max_bytes,
        "state_session_capacity": tab_limits().max_tabs,
        "app_kwargs": {"routes": [*media_routes(engine.index, store), served_route(engine.index)],
                       "middleware": [Middleware(ProxyCheck), Middleware(UploadGuard)]},
        "i18n": catalogue(),  # the page's text in English, German, Spanish and Chinese
    }
