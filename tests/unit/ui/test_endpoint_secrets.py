"""An LLM endpoint's URL carries a password and an API key, and its server fails (HTTP 500, no answer, refused):
no visitor ever reads either secret or the server's host and port (the "Running on" panel, the page's /config, the
status line, the dialogue, a failure note), the log never holds either secret, and every note is whole sentences.
The servers are local fakes on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai")

from iir_testutils import build_tiny, query_modes  # noqa: E402

from interactive_ir.errors import BackendError  # noqa: E402

USER, PASSWORD, KEY = "bob", "hunter2pw", "SEKRETapikey"


class Failing:
    """An OpenAI-compatible server on 127.0.0.1 that fails as `how` says: "500" (every request answered HTTP 500,
    whose body names the host), "timeout" (accepts, never answers) or "refused" (nothing listens)."""

    def __init__(self, how: str):
        self.how, self._server, self._held = how, None, []
        if how == "500":
            class Handler(BaseHTTPRequestHandler):
                def log_message(self, *args) -> None:
                    pass

                def _fail(self) -> None:
                    body = json.dumps({"error": {"message": f"upstream 127.0.0.1:{self.server.server_port} broke"}})
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body.encode())

                do_GET = _fail

                def do_POST(self) -> None:
                    self.rfile.read(int(self.headers.get("Content-Length", 0)))
                    self._fail()

            self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            threading.Thread(target=self._server.serve_forever, daemon=True).start()
            self.port = self._server.server_address[1]
        else:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
            if how == "timeout":
                sock.listen(64)
                self._sock = sock
                threading.Thread(target=self._hold, daemon=True).start()
            else:
                sock.close()  # refused: nothing listens there now

    def _hold(self) -> None:
        while True:
            try:
                self._held.append(self._sock.accept()[0])
            except OSError:
                return

    @property
    def url(self) -> str:
        return f"http://{USER}:{PASSWORD}@127.0.0.1:{self.port}/v1?api_key={KEY}"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        elif self.how == "timeout":
            self._sock.close()
            for c in self._held:
                c.close()


@pytest.fixture(params=["500", "timeout", "refused"])
def failing(request, monkeypatch):
    for k in ("OPENAI_API_KEY", "IIR_LLM_API_KEY", "OPENAI_BASE_URL", "IIR_LLM_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY",
              "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "IIR_LLM", "HF_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for k, v in {"TIMEOUT_S": "0.5", "DEADLINE_S": "1", "MAX_RETRIES": "1", "BACKOFF_S": "0.05", "PROBE_TIMEOUT_S": "0.5",
                 "BREAKER_FAILURES": "100"}.items():
        monkeypatch.setenv(f"IIR_LLM_{k}", v)
    server = Failing(request.param)
    yield server
    server.close()


def leaks(text: str, port: int, host: bool = True) -> list[str]:
    """What `text` gives away: either secret, and (`host`) the server's address."""
    found = [s for s in (PASSWORD, KEY, f"{USER}:") if s in text]
    if host:
        found += [s for s in ("127.0.0.1", f":{port}", str(port)) if s in text]
    return found


def sentences(note: str) -> bool:
    """A note of whole sentences: it ends with a full stop (or an ellipsis after a whole word), no word cut."""
    note = re.sub(r"[*_`⚠✓]", "", note).strip()
    return bool(note) and (note.endswith((".", "?", "!")) or bool(re.search(r"\w…$", note)))


def test_the_running_on_panel_and_the_pages_config_name_no_secret_and_no_host(failing, tmp_path, caplog):
    from interactive_ir.ui.layout import notes_markdown
    from interactive_ir.ui.page import build_demo
    from interactive_ir.ui.startup import app_config, load_app

    build_tiny(tmp_path)
    with caplog.at_level(logging.DEBUG):
        parts = load_app(app_config(environ={}, index=tmp_path / "index", llm=f"openai:m@{failing.url}"))
        panel = notes_markdown(parts.notes)
        demo = build_demo(parts.engine, parts.notes)
        config = json.dumps(demo.get_config_file(), default=str)
    assert "m (an OpenAI-compatible endpoint)" in panel or "OpenAI-compatible server" in panel, panel
    assert not leaks(panel, failing.port), panel
    assert not leaks(config, failing.port) and "Running on" in config
    assert not leaks(caplog.text, failing.port, host=False), caplog.text  # the owner's log: the host, no secret


def test_failure_notes_on_the_status_line_and_in_the_dialogue_name_no_secret_and_no_host(failing, tiny_index, caplog):
    from interactive_ir.backends import make_llm
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import events, render, work
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui.state import UIState

    llm = make_llm(f"openai:m@{failing.url}")
    engine = build_engine(tiny_index[0], llm=llm, config=EngineConfig(k=4), belief=query_modes())
    shown: list[str] = []
    with caplog.at_level(logging.DEBUG):
        st = h.start(engine, UIState(), "a red dog on the beach", later=True)
        st.questioner = st.session.options.questioner = "llm"
        while (job := work.claim(st)) is not None:  # the page's model steps: each lands as a note
            try:
                work.adopt(engine, st, job, work.run(engine, job))
            except BackendError as e:
                work.failed(st, job, f"⚠ {events.failure_note(job.step, e)}")
            shown.append(render.status_md(st))
        h.answer(engine, st, "it is brown", later=True)
        while (job := work.claim(st)) is not None:
            try:
                work.adopt(engine, st, job, work.run(engine, job))
            except BackendError as e:
                work.failed(st, job, f"⚠ {events.failure_note(job.step, e)}")
            shown.append(render.status_md(st))
        shown.append(render.dialogue_html(st, True, "", engine))
        with pytest.raises(BackendError) as raised:
            llm.generate(["hello"])
    notes = [events.failure_note("ask", raised.value), events.failure_note("refine", raised.value),
             events.message(raised.value)]
    errors = [t.error for t in st.session.turns if t.error]
    assert errors, "the failing model left no note on the turns"  # the failure did reach the page
    for text in [*shown, *notes]:
        assert not leaks(text, failing.port), text
    for note in notes:
        assert sentences(note), note
    assert "did not answer" in notes[0] and "OpenAI-compatible endpoint" in notes[0], notes[0]
    assert not leaks(caplog.text, failing.port, host=False), caplog.text
    assert f"http://***@127.0.0.1:{failing.port}/v1?api_key=***" in caplog.text  # the owner's log: the redacted URL
    assert "question model failed" in caplog.text or "could not prepare a question" in caplog.text
    assert not leaks(str(raised.value), failing.port, host=False)  # the owner's message: the host, never a secret
