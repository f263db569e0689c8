"""Model faults stay contained: a hung LLM server costs one stage deadline, then a circuit breaker stops
calling it; malformed replies become a plain note and a logged warning; another tab's search never waits.
Servers are local fakes on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time

import pytest

pytest.importorskip("openai")

from iir_testutils import query_modes

from interactive_ir.backends import make_llm  # noqa: E402
from interactive_ir.backends.guard import BackendPaused, CircuitBreaker, MalformedReply, status_note  # noqa: E402
from interactive_ir.errors import BackendError  # noqa: E402


class RawServer:
    """Accepts connections on 127.0.0.1; `reply` is None (never answers) or the raw HTTP body bytes to send."""

    def __init__(self, reply: bytes | None = None, content_type: str = "application/json"):
        self.reply, self.content_type = reply, content_type
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.connections = 0
        self.held: list[socket.socket] = []
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            if self.reply is None:
                self.held.append(conn)  # accept and never answer
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: " + self.content_type.encode() + b"\r\nContent-Length: "
                         + str(len(self.reply)).encode() + b"\r\nConnection: close\r\n\r\n" + self.reply)

    def close(self):
        self._stop = True
        self.sock.close()
        for c in self.held:
            c.close()


@pytest.fixture
def servers(monkeypatch):
    for k in ("OPENAI_API_KEY", "IIR_LLM_API_KEY", "OPENAI_BASE_URL", "IIR_LLM_BASE_URL", "IIR_LLM_TIMEOUT_S",
              "IIR_LLM_DEADLINE_S", "IIR_LLM_MAX_RETRIES", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
              "https_proxy", "all_proxy"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    made = []

    def make(*a, **kw):
        made.append(RawServer(*a, **kw))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_a_hung_server_costs_one_deadline_across_retries_then_the_breaker_stops_calling_it(servers):
    srv = servers(None)
    llm = make_llm(f"openai:m@{srv.url}", timeout_s=60, deadline_s=0.8, max_retries=3, backoff_s=0.05,
                   breaker_failures=2, breaker_pause_s=30)
    for _ in range(2):
        t = time.monotonic()
        with pytest.raises(BackendError, match="no reply from"):
            llm.generate(["a question please"])
        assert time.monotonic() - t < 20  # the 60 s timeout and 3 retries fit in the 0.8 s deadline (generous)
    seen = srv.connections
    t = time.monotonic()
    with pytest.raises(BackendPaused, match="paused after 2 failed calls"):
        llm.generate(["another"])
    # refused without calling the server (a call would be a BackendError after the deadline), and without first
    # sitting out the 30 s pause (generous: a loaded machine never takes 10 s to refuse)
    assert srv.connections == seen and time.monotonic() - t < 10
    engine = type("E", (), {"llm": llm})()
    assert "Questions are paused" in status_note(engine) and "still work" in status_note(engine)


def test_the_breaker_lets_one_trial_through_after_the_pause_and_closes_on_success():
    now = [0.0]
    b = CircuitBreaker("the LLM x", failures=2, pause_s=10, clock=lambda: now[0])
    b.failure("boom")
    b.before_call()  # one failure: still closed
    b.failure("boom")
    with pytest.raises(BackendPaused, match="about 10 s"):
        b.before_call()
    now[0] = 11.0
    b.before_call()  # the trial
    with pytest.raises(BackendPaused):
        b.before_call()  # only one trial at a time
    b.success()
    b.before_call()
    assert not b.is_open and status_note(type("E", (), {"llm": None})()) == ""


@pytest.mark.parametrize("body, content_type, why", [
    (b"\xff\xfe\x00garbage", "application/json", "not JSON, not even UTF-8"),
    (b"<html><body>Bad gateway</body></html>", "text/html", "an HTML page"),
    (json.dumps({"id": "x", "object": "chat.completion"}).encode(), "application/json", "no choices"),
    (json.dumps({"choices": []}).encode(), "application/json", "empty choices"),
    (json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": ""}}]}).encode(),
     "application/json", "empty content"),
    (json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]}).encode(),
     "application/json", "null content"),
])
def test_malformed_replies_are_a_plain_note_and_a_logged_warning(servers, caplog, body, content_type, why):
    srv = servers(body, content_type)
    llm = make_llm(f"openai:m@{srv.url}", deadline_s=5, max_retries=0)
    with caplog.at_level(logging.WARNING, logger="interactive_ir.backends.llm_openai"):
        with pytest.raises(MalformedReply) as e:
            llm.generate(["hello"])
    msg = str(e.value)
    assert "unusable reply" in msg and "codec" not in msg and "Traceback" not in msg, why
    assert any(r.levelno == logging.WARNING and "malformed reply" in r.getMessage() for r in caplog.records), why


def test_a_malformed_reply_becomes_a_note_on_the_turn_not_an_error_page(servers, tiny_index):
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui.state import UIState

    srv = servers(b"\xff\xfe\x00", "application/json")
    r, _, _ = tiny_index
    eng = build_engine(r, llm=make_llm(f"openai:m@{srv.url}", deadline_s=5, max_retries=0), config=EngineConfig(k=4), belief=query_modes())
    st = h.start(eng, UIState(), "a red dog", defer_question=True)
    st = h.ask_question(eng, st)  # the question stage fails: a note, the search goes on
    err = st.session.last.error
    assert "unusable reply" in err and "codec" not in err
    h.toggle_mark(eng, st, st.current_ids[0], True)  # the tab's next requests work
    assert st.marks


def test_a_hung_llm_server_never_delays_another_tabs_plain_search(servers, tiny_index):
    """Two tabs wait on a hung LLM for their questions; a third tab's search answers at once meanwhile."""
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui.state import UIState

    srv = servers(None)
    r, _, _ = tiny_index
    llm = make_llm(f"openai:m@{srv.url}", timeout_s=60, deadline_s=8, max_retries=3, breaker_failures=5)
    eng = build_engine(r, llm=llm, config=EngineConfig(k=4), belief=query_modes())
    asking = [h.start(eng, UIState(), f"a {c} dog", defer_question=True) for c in ("red", "blue")]
    threads = [threading.Thread(target=h.ask_question, args=(eng, st)) for st in asking]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    while srv.connections < 2 and time.monotonic() - t0 < 6:  # both questions are now waiting on the server
        time.sleep(0.01)
    assert srv.connections >= 2
    t = time.monotonic()
    other = h.start(eng, UIState(), "a green car", defer_question=True)
    searched = time.monotonic() - t
    still_waiting = any(th.is_alive() for th in threads)
    for th in threads:
        th.join(30)
    # the search ended while both questions still waited (they wait out their 8 s deadline): generous on a loaded machine
    assert other.current_ids and still_waiting and searched < 6
    assert all("did not answer: it timed out" in st.session.last.error for st in asking)  # and each gets a plain note


def test_at_start_up_the_page_says_which_llm_server_is_unreachable_and_questions_pause(servers, tmp_path):
    from iir_testutils import build_tiny

    from interactive_ir.ui.startup import app_config, load_app

    build_tiny(tmp_path)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()  # nothing listens there now
    parts = load_app(app_config(environ={}, index=tmp_path / "index", llm=f"openai:m@{closed}"))
    assert any("is not reachable" in n and "questions pause" in n for n in parts.notes), parts.notes
    assert not any("Questions and query rewriting" in n for n in parts.notes)
    assert "Questions are paused" in status_note(parts.engine)

    up = servers(json.dumps({"object": "list", "data": []}).encode())
    parts = load_app(app_config(environ={}, index=tmp_path / "index", llm=f"openai:m@{up.url}"))
    assert any("Questions and query rewriting" in n and "Its server answers" in n for n in parts.notes), parts.notes
    assert status_note(parts.engine) == ""


def test_a_cancelled_call_stops_waiting_and_never_counts_against_the_breaker(servers):
    from interactive_ir.backends.cancel import CancelToken
    from interactive_ir.errors import Cancelled

    srv = servers(None)  # never answers
    llm = make_llm(f"openai:m@{srv.url}", timeout_s=60, deadline_s=60, max_retries=3, backoff_s=0.05,
                   breaker_failures=1, breaker_pause_s=30)
    for prompts in (["one question"], ["a batch", "of two"]):
        token, box = CancelToken(), {}

        def call(prompts=prompts, token=token, box=box):
            try:
                box["result"] = llm.generate(prompts, cancel=token)
            except BaseException as e:  # handed to the test
                box["error"] = e

        t = threading.Thread(target=call, daemon=True)
        t.start()
        while srv.connections < len(prompts) and t.is_alive():  # the requests are in flight
            t.join(0.02)
        token.cancel()
        t.join(20)  # far below the 60 s deadline: only so a broken build cannot hang the run
        assert not t.is_alive() and isinstance(box.get("error"), Cancelled)
    assert not llm.breaker.is_open  # one real failure (breaker_failures=1) would have opened it
    seen = srv.connections
    with pytest.raises(Cancelled):  # an already cancelled call sends nothing
        llm.generate(["late"], cancel=token)
    assert srv.connections == seen


def test_a_cancelled_trial_call_lets_the_next_call_be_the_trial():
    now = [0.0]
    b = CircuitBreaker("the LLM x", failures=1, pause_s=10, clock=lambda: now[0])
    b.failure("boom")
    now[0] = 11.0
    b.before_call()  # the trial ...
    b.cancelled()  # ... was superseded: neither a success nor a failure
    b.before_call()  # so the next call is the trial (not refused for ever)
    b.failure("still down")
    with pytest.raises(BackendPaused):
        b.before_call()
