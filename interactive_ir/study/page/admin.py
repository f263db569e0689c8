"""The study admin page at /admin: participants, completion, a download of the event log, and replay pages; in a
competition study, "Open task N" and "Close the open task".

It is off unless a password is set (env IIR_STUDY_ADMIN_PASSWORD); every action checks the sign-in.
The password is compared in constant time; a weak or example password (shorter than 12 characters,
or one of the usual examples such as `change-me`) is refused at start-up; failed sign-ins are
rate-limited per client and in total (`LoginLimiter`).
"""

# no `from __future__ import annotations` here: Gradio reads handler annotations at run time

import hmac
import threading
import time

from interactive_ir.errors import BadInputError, IIRError
from interactive_ir.study.page.render import ADMIN_HEADERS

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


class LoginLimiter:
    """Failed sign-ins slow down: after `free` failures a client waits `base_s`, doubling per failure up to
    `max_s`; more than `global_max` failures from all clients within `window_s` lock sign-in for everyone
    for `window_s`. A success clears the client's count."""

    def __init__(self, free: int = 3, base_s: float = 2.0, max_s: float = 900.0, global_max: int = 30,
                 window_s: float = 600.0, clock=time.monotonic):
        self.free, self.base_s, self.max_s = free, base_s, max_s
        self.global_max, self.window_s, self.clock = global_max, window_s, clock
        self._fails: dict[str, tuple[int, float]] = {}  # client -> (failures, blocked until)
        self._recent: list[float] = []
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """Seconds before `client` may try again (0: now)."""
        now = self.clock()
        with self._lock:
            self._recent = [t for t in self._recent if now - t < self.window_s]
            if len(self._recent) >= self.global_max:
                return self._recent[0] + self.window_s - now
            return max(0.0, self._fails.get(client, (0, 0.0))[1] - now)

    def failed(self, client: str) -> None:
        now = self.clock()
        with self._lock:
            n = self._fails.get(client, (0, 0.0))[0] + 1
            delay = 0.0 if n <= self.free else min(self.max_s, self.base_s * 2 ** (n - self.free - 1))
            self._fails[client] = (n, now + delay)
            self._recent.append(now)
            if len(self._fails) > 10_000:  # bounded: forget the oldest clients
                for k in list(self._fails)[:5_000]:
                    del self._fails[k]

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._fails.pop(client, None)


def check_password(given: str, expected: str | None) -> bool:
    """True when a password is set and `given` matches it (constant-time comparison)."""
    return bool(expected) and hmac.compare_digest(str(given or "").encode(), expected.encode())


def _client(request) -> str:
    try:
        return str(request.client.host)
    except AttributeError:
        return "?"


def add_admin_page(demo, page, password: str, limiter: LoginLimiter | None = None) -> None:
    """The /admin route of `demo` (a `StudyPage`'s participants and export), behind `password`."""
    import gradio as gr

    with demo.route("Admin", "/admin", show_in_navbar=False):
        gr.Navbar(visible="hidden", main_page_name=False)  # no "Home" bar here either (one Navbar per page)
        gr.Markdown(f"# Study admin: {page.study.study_id}")
        if not password:
            gr.Markdown(f"The admin page is off: set the environment variable `{ADMIN_ENV}` and restart the app.")
            return
        authed = gr.State(False)
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
            export_file = gr.File(label="Download", interactive=False, elem_id="iir-admin-file")
            with gr.Row():
                who = gr.Textbox(label="Participant to replay (blank: all)", max_lines=1, elem_id="iir-admin-who")
                replay_btn = gr.Button("Replay (HTML page)", elem_id="iir-admin-replay")
            replay_file = gr.File(label="Replay page", interactive=False, elem_id="iir-admin-replay-file")

        limits = limiter or LoginLimiter()

        def login_fn(given, request: gr.Request):
            who = _client(request)
            wait = limits.wait_s(who)
            if wait > 0:
                gr.Warning(f"Too many wrong passwords: try again in {int(wait) + 1} s")
                return False, gr.update(visible=True), gr.update(visible=False), "", []
            if not check_password(given, password):
                limits.failed(who)
                gr.Warning("Wrong password")
                return False, gr.update(visible=True), gr.update(visible=False), "", []
            limits.succeeded(who)
            text, rows = page.admin_view()
            return True, gr.update(visible=False), gr.update(visible=True), text, rows

        def refresh_fn(ok):
            if not ok:
                raise gr.Error("sign in first")
            return page.admin_view()

        def export_fn(ok, f):
            if not ok:
                raise gr.Error("sign in first")
            try:
                return page.export(f)
            except IIRError as e:
                raise gr.Error(str(e)) from e

        def replay_fn(ok, participant):
            if not ok:
                raise gr.Error("sign in first")
            try:
                return page.replay(participant)
            except IIRError as e:
                raise gr.Error(str(e)) from e

        if comp is not None:
            _wire_competition(gr, page, authed, *comp)
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


def _wire_competition(gr, page, authed, state, n, open_btn, close_btn) -> None:
    def run(ok, fn, *args):
        if not ok:
            raise gr.Error("sign in first")
        try:
            return fn(*args)
        except IIRError as e:
            raise gr.Error(str(e)) from e

    open_btn.click(lambda ok, k: run(ok, page.open_task, k), [authed, n], [state])
    close_btn.click(lambda ok: run(ok, page.close_task), [authed], [state])
