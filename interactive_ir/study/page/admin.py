"""The study admin page at /admin: participants, completion, a download of the event log, and replay pages; in a
competition study, "Open task N" and "Close the open task".

It is off unless a password is set (env IIR_STUDY_ADMIN_PASSWORD); every action checks the sign-in.
The password is compared in constant time; a weak or example password (shorter than 12 characters,
or one of the usual examples such as `change-me`) is refused at start-up; failed sign-ins are
rate-limited per client and in total (`LoginLimiter`).
"""

# no `from __future__ import annotations` here: Gradio reads handler annotations at run time

import hmac
import logging
import secrets
import shutil
import threading
import time
from pathlib import Path

from interactive_ir.errors import BadInputError, IIRError
from interactive_ir.study.page.render import ADMIN_HEADERS
from interactive_ir.ui.serving.limits import Addresses, client_of

log = logging.getLogger("interactive_ir.study.admin")

ADMIN_ENV = "IIR_STUDY_ADMIN_PASSWORD"
EXPORT_ROUTE = "admin/export"  # the one-time downloads of the event log
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


class LoginLimiter:
    """Failed sign-ins slow down: after `free` failures a client waits `base_s`, doubling per failure up to
    `max_s`; more than `global_max` failures from untrusted clients within `window_s` hold back every
    untrusted client for the rest of the window. A client in `trusted` (the admin's own addresses) is never
    held back by others' failures, only by its own. A success clears the client's count."""

    def __init__(self, free: int = 3, base_s: float = 2.0, max_s: float = 900.0, global_max: int = 30,
                 window_s: float = 600.0, clock=time.monotonic, trusted: Addresses | None = None):
        self.free, self.base_s, self.max_s = free, base_s, max_s
        self.global_max, self.window_s, self.clock = global_max, window_s, clock
        self.trusted = trusted if trusted is not None else Addresses("")
        self._fails: dict[str, tuple[int, float]] = {}  # client -> (failures, blocked until)
        self._recent: list[float] = []
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """Seconds before `client` may try again (0: now)."""
        now = self.clock()
        with self._lock:
            own = max(0.0, self._fails.get(client, (0, 0.0))[1] - now)
            self._recent = [t for t in self._recent if now - t < self.window_s]
            if client not in self.trusted and len(self._recent) >= self.global_max:
                return max(own, self._recent[0] + self.window_s - now)
            return own

    def failed(self, client: str) -> None:
        now = self.clock()
        with self._lock:
            n = self._fails.get(client, (0, 0.0))[0] + 1
            delay = 0.0 if n <= self.free else min(self.max_s, self.base_s * 2 ** (n - self.free - 1))
            self._fails[client] = (n, now + delay)
            if client not in self.trusted:
                self._recent.append(now)
            if len(self._fails) > 10_000:  # bounded: forget the oldest clients
                for k in list(self._fails)[:5_000]:
                    del self._fails[k]

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._fails.pop(client, None)


class AdminGate:
    """The admin's sign-ins, without Gradio: the password behind a `LoginLimiter`, a one-time link printed in
    the server log (with it, the password is checked whatever the limiter says, so no attacker can lock the
    admin out), the signed-in keys (a key lives `session_s` after its last use) and the export downloads
    (served once, only to a live key, within `download_s`, never from Gradio's public file route)."""

    def __init__(self, password: str, limiter: LoginLimiter | None = None, clock=time.monotonic,
                 session_s: float = 3600.0, download_s: float = 600.0, announce=None):
        self.password, self.limiter, self.clock = password, limiter or LoginLimiter(), clock
        self.session_s, self.download_s = session_s, download_s
        self._announce = announce or (lambda text: log.warning("%s", text))
        self._keys: dict[str, float] = {}  # signed-in key -> last use
        self._downloads: dict[str, tuple[Path, float, str]] = {}  # token -> (file, offered at, key)
        self._lock = threading.Lock()
        self._once = ""
        if password:
            self._new_link()

    def _new_link(self) -> None:
        self._once = secrets.token_urlsafe(24)
        self._announce(f"study admin: a one-time sign-in link, not held back by failed sign-ins: /admin?once="
                       f"{self._once} (after the server's address; a new one is logged once it is used)")

    def link(self) -> str:
        return f"/admin?once={self._once}"

    def sign_in(self, given: str, client: str, once: str = "") -> tuple[str, str]:
        """(key, "") when signed in, else ("", why)."""
        if not self.password:
            return "", "The admin page is off"
        with_link = bool(once) and hmac.compare_digest(str(once).encode(), self._once.encode())
        wait = 0.0 if with_link else self.limiter.wait_s(client)
        if wait > 0:
            return "", f"Too many wrong passwords: try again in {int(wait) + 1} s, or use the sign-in link in the server log"
        if not check_password(given, self.password):
            if not with_link:
                self.limiter.failed(client)
            return "", "Wrong password"
        self.limiter.succeeded(client)
        if with_link:
            self._new_link()
        key = secrets.token_urlsafe(32)
        with self._lock:
            self._keys[key] = self.clock()
        return key, ""

    def signed_in(self, key: object) -> bool:
        if not isinstance(key, str) or not key:
            return False
        now = self.clock()
        with self._lock:
            for k in [k for k, t in self._keys.items() if now - t > self.session_s]:
                del self._keys[k]
            if key not in self._keys:
                return False
            self._keys[key] = now
            return True

    def offer(self, key: str, path: Path) -> str:
        """The one-time URL path of `path` for the signed-in `key` (PermissionError when not signed in)."""
        if not self.signed_in(key):
            raise PermissionError("sign in first")
        tok, now = secrets.token_urlsafe(32), self.clock()
        with self._lock:
            stale = [t for t, (_, at, _) in self._downloads.items() if now - at > self.download_s]
            gone = [self._downloads.pop(t)[0] for t in stale]
            self._downloads[tok] = (Path(path), now, key)
        for f in gone:  # offered, never fetched: deleted
            _remove(f)
        return f"/{EXPORT_ROUTE}/{tok}/{Path(path).name}"

    def take(self, tok: str) -> Path | None:
        """The file offered under `tok`, once, while its key is signed in and within `download_s`."""
        with self._lock:
            got = self._downloads.pop(str(tok), None)
        if got is None:
            return None
        path, at, key = got
        if self.clock() - at > self.download_s or not self.signed_in(key) or not path.is_file():
            return None
        return path

    def routes(self) -> list:
        """The download route (for the app's `routes`)."""
        from fastapi.routing import APIRoute
        from starlette.background import BackgroundTask
        from starlette.responses import FileResponse, PlainTextResponse

        def download(tok: str, name: str):
            path = self.take(tok)
            if path is None or path.name != name:
                return PlainTextResponse("not found", status_code=404)
            return FileResponse(path, filename=path.name, background=BackgroundTask(_remove, path))

        return [APIRoute(f"/{EXPORT_ROUTE}/{{tok}}/{{name}}", download, methods=["GET"], include_in_schema=False)]


def _remove(path: Path) -> None:
    """Delete an export (and the folder `StudyPage.export` made for it)."""
    if path.parent.name.startswith("iir-study-"):
        shutil.rmtree(path.parent, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def check_password(given: str, expected: str | None) -> bool:
    """True when a password is set and `given` matches it (constant-time comparison)."""
    return bool(expected) and hmac.compare_digest(str(given or "").encode(), expected.encode())


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
        with gr.Row() as login:
            pw = gr.Textbox(label="Password", type="password", max_lines=1, elem_id="iir-admin-password")
            login_btn = gr.Button("Sign in", variant="primary", elem_id="iir-admin-login")
        with gr.Column(visible=False) as panel:
            comp = _competition_controls(gr, page)  # first: the organiser's live controls
            summary = gr.Markdown("", elem_id="iir-admin-summary")
            table = gr.Dataframe(headers=ADMIN_HEADERS, interactive=False, elem_id="iir-admin-table")
            with gr.Row():
                refresh_btn = gr.Button("Refresh", elem_id="iir-admin-refresh")
                fmt = gr.Radio(["csv", "jsonl", "parquet"], value="csv", label="Export format")
                export_btn = gr.Button("Export the event log", variant="primary", elem_id="iir-admin-export")
            export_file = gr.HTML("", elem_id="iir-admin-file")
            with gr.Row():
                who = gr.Textbox(label="Participant to replay (blank: all)", max_lines=1, elem_id="iir-admin-who")
                replay_btn = gr.Button("Replay (HTML page)", elem_id="iir-admin-replay")
            replay_file = gr.HTML("", elem_id="iir-admin-replay-file")
        _wire_admin(gr, gate, page, (pw, login_btn, authed, login, panel, summary, table, refresh_btn, fmt,
                                     export_btn, export_file, who, replay_btn, replay_file, comp))
    return gate


def _wire_admin(gr, gate: AdminGate, page, parts) -> None:
    (pw, login_btn, authed, login, panel, summary, table, refresh_btn, fmt, export_btn, export_file, who, replay_btn,
     replay_file, comp) = parts

    def login_fn(given, request: gr.Request):
        once = str(dict(getattr(request, "query_params", None) or {}).get("once", ""))
        key, why = gate.sign_in(given, client_of(request), once)
        if not key:
            gr.Warning(why)
            return "", gr.update(visible=True), gr.update(visible=False), "", []
        text, rows = page.admin_view()
        return key, gr.update(visible=False), gr.update(visible=True), text, rows

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
    login_btn.click(login_fn, [pw], [authed, login, panel, summary, table])
    pw.submit(login_fn, [pw], [authed, login, panel, summary, table])
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
