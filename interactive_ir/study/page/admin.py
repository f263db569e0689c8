"""The study admin page at /admin: participants, completion, a download of the event log, and replay pages; in a
competition study, "Open task N" and "Close the open task".

It is off unless a password is set (env IIR_STUDY_ADMIN_PASSWORD); every action checks the sign-in.
The password is compared in constant time; a weak or example password (shorter than 12 characters,
or one of the usual examples such as `change-me`) is refused at start-up; failed sign-ins slow down per
source only (`admin_gate.LoginLimiter`), and the one-time link in the server log signs in whatever they did.
Right after a sign-in the page fetches its download cookie (`BIND_ROUTE`): an export link works only in the
browser that signed in.
"""

# no `from __future__ import annotations` here: Gradio reads handler annotations at run time

import logging
from pathlib import Path

from interactive_ir.errors import BadInputError, IIRError
from interactive_ir.study.page.admin_gate import (  # noqa: F401 (the gate's names, as callers import them)
    BIND_ROUTE,
    EXPORT_ROUTE,
    AdminGate,
    LoginLimiter,
    check_password,
)
from interactive_ir.study.page.render import ADMIN_HEADERS
from interactive_ir.ui import inputs
from interactive_ir.ui.serving.limits import client_of

log = logging.getLogger("interactive_ir.study.admin")

ADMIN_ENV = "IIR_STUDY_ADMIN_PASSWORD"
MIN_PASSWORD = 12
EXAMPLE_PASSWORDS = {"change-me", "changeme", "change-me-please", "password", "password123", "letmein",
                     "admin", "secret", "s3cret", "123456789012", "correct-horse-battery-staple", "qwertyuiop12"}


def check_password_strength(password: str) -> None:
    """BadInputError when the admin password is weak or an example (checked at start-up)."""
    if not password:
        return
    low = password.lower()
    if low in EXAMPLE_PASSWORDS or low.strip("-_ 0123456789") in EXAMPLE_PASSWORDS:
        raise BadInputError(f"{ADMIN_ENV} is an example password: choose your own, e.g. "
                            "python -c 'import secrets; print(secrets.token_urlsafe(18))'")
    if len(password) < MIN_PASSWORD or len(set(password)) < 6:
        raise BadInputError(f"{ADMIN_ENV} is too weak: use at least {MIN_PASSWORD} characters, not one repeated "
                            "pattern, e.g. python -c 'import secrets; print(secrets.token_urlsafe(18))'")


# the signed-in browser's download cookie: the bind route sits next to /admin (as the export links do)
BIND_JS = ("(t) => { if (t) { fetch(new URL('" + BIND_ROUTE.split("/", 1)[1] + "/' + t, "
           "location.href.split(/[?#]/)[0].replace(/\\/?$/, '/')), {credentials: 'same-origin'}); } return []; }")


def add_admin_page(demo, page, password: str, gate: AdminGate | None = None) -> AdminGate:
    """The /admin route of `demo` (a `StudyPage`'s participants and export), behind `password`; returns its
    `AdminGate`, whose `routes()` serve the exports."""
    import gradio as gr

    gate = gate or AdminGate(password)
    with demo.route("Admin", "/admin", show_in_navbar=False):
        gr.Navbar(visible="hidden", main_page_name=False)  # no "Home" bar here either (one Navbar per page)
        gr.Markdown(f"# Study admin: {page.study.study_id}")
        if not password:
            gr.Markdown(f"The admin page is off: set the environment variable `{ADMIN_ENV}` and restart the app.")
            return gate
        authed = gr.State("")  # the signed-in key
        bind = gr.Textbox("", visible="hidden", elem_id="iir-admin-bind")  # a single-use token for the download cookie
        with gr.Row() as login:
            pw = gr.Textbox(label="Password", type="password", max_lines=1, elem_id="iir-admin-password")
            login_btn = gr.Button("Sign in", variant="primary", elem_id="iir-admin-login")
        with gr.Column(visible=False) as panel:
            comp = _competition_controls(gr, page)  # first: the organiser's live controls
            summary = gr.Markdown("", elem_id="iir-admin-summary")
            table = gr.Dataframe(headers=ADMIN_HEADERS, interactive=False, elem_id="iir-admin-table")
            with gr.Row():
                refresh_btn = gr.Button("Refresh", elem_id="iir-admin-refresh")
                fmt = inputs.Radio(["csv", "jsonl", "parquet"], value="csv", label="Export format")
                export_btn = gr.Button("Export the event log", variant="primary", elem_id="iir-admin-export")
            export_file = gr.HTML("", elem_id="iir-admin-file")
            with gr.Row():
                who = gr.Textbox(label="Participant to replay (blank: all)", max_lines=1, elem_id="iir-admin-who")
                replay_btn = gr.Button("Replay (HTML page)", elem_id="iir-admin-replay")
            replay_file = gr.HTML("", elem_id="iir-admin-replay-file")
        _wire_admin(gr, gate, page, (pw, login_btn, authed, login, panel, summary, table, refresh_btn, fmt,
                                     export_btn, export_file, who, replay_btn, replay_file, comp, bind))
    return gate


def _wire_admin(gr, gate: AdminGate, page, parts) -> None:
    (pw, login_btn, authed, login, panel, summary, table, refresh_btn, fmt, export_btn, export_file, who, replay_btn,
     replay_file, comp, bind) = parts

    def login_fn(given, request: gr.Request):
        once = str(dict(getattr(request, "query_params", None) or {}).get("once", ""))[:200]
        key, why = gate.sign_in(given, client_of(request), once)
        if not key:
            gr.Warning(why)
            return "", gr.update(visible=True), gr.update(visible=False), "", [], ""
        text, rows = page.admin_view()
        return key, gr.update(visible=False), gr.update(visible=True), text, rows, gate.bind_token(key)

    def refresh_fn(key):
        if not gate.signed_in(key):
            raise gr.Error("sign in first")
        return page.admin_view()

    def offered(key, path: Path) -> str:
        url = gate.offer(key, path).lstrip("/")
        return (f'<a href="{url}" download="{path.name}">Download {path.name}</a> '
                "(one download, within 10 minutes, while you are signed in)")

    def export_fn(key, f):
        return _gated(gr, gate, key, lambda: offered(key, Path(page.export(f))))

    def replay_fn(key, participant):
        return _gated(gr, gate, key, lambda: offered(key, Path(page.replay(participant))))

    if comp is not None:
        _wire_competition(gr, gate, page, authed, *comp)
    signed = [authed, login, panel, summary, table, bind]
    for ev in (login_btn.click, pw.submit):  # then the browser fetches its download cookie
        ev(login_fn, [pw], signed).then(None, [bind], None, js=BIND_JS)
    refresh_btn.click(refresh_fn, [authed], [summary, table])
    export_btn.click(export_fn, [authed, fmt], [export_file])
    replay_btn.click(replay_fn, [authed, who], [replay_file])


def _competition_controls(gr, page):
    """A competition study's "Open task N" and "Close" (None for other studies)."""
    if not page.study.competition:
        return None
    with gr.Group(elem_id="iir-admin-competition"):
        state = gr.Markdown(page.competition_md, elem_id="iir-admin-competition-state")
        with gr.Row():
            n = gr.Number(label="Task", value=1, minimum=1, maximum=len(page.runner.tasks), precision=0,
                          elem_id="iir-admin-task")
            open_btn = gr.Button("Open task", variant="primary", elem_id="iir-admin-open")
            close_btn = gr.Button("Close the open task", variant="stop", elem_id="iir-admin-close")
    return state, n, open_btn, close_btn


def _wire_competition(gr, gate: AdminGate, page, authed, state, n, open_btn, close_btn) -> None:
    open_btn.click(lambda key, k: _gated(gr, gate, key, lambda: page.open_task(k)), [authed, n], [state])
    close_btn.click(lambda key: _gated(gr, gate, key, page.close_task), [authed], [state])


def _gated(gr, gate: AdminGate, key, action):
    """`action()` for a signed-in admin (the session `key`); an engine error becomes the page's message."""
    if not gate.signed_in(key):
        raise gr.Error("sign in first")
    try:
        return action()
    except IIRError as e:
        raise gr.Error(str(e)) from e
