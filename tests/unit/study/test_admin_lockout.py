"""Issue 29, item 1 and 4: no one can lock the study admin out, X-Forwarded-For is believed only from the
configured proxies, weak passwords are refused before any model loads, the export needs a signed-in admin."""

# no `from __future__ import annotations`: Gradio reads a handler's annotations at run time

import json
import socket
import sys
from pathlib import Path

import pytest

from interactive_ir.errors import BadInputError
from interactive_ir.study.page.admin import AdminGate, LoginLimiter
from interactive_ir.ui.serving.limits import Addresses, WindowCounter

PASSWORD = "Vq8-2mZr!xT4pL"


def _gate(now, said, **limits):
    return AdminGate(PASSWORD, LoginLimiter(trusted=Addresses("127.0.0.1,::1"), clock=lambda: now[0], **limits),
                     clock=lambda: now[0], announce=said.append)


def _once(line: str) -> str:
    return line.split("once=")[1].split()[0]


def test_forty_failing_sources_then_the_right_password_from_a_41st_passes_at_once():
    now, said = [0.0], []
    gate = _gate(now, said)
    for i in range(40):  # the attack of the issue: 40 wrong passwords from 40 addresses in 2 s
        assert gate.sign_in("wrong", f"203.0.113.{i}") == ("", "Wrong password")
        now[0] += 0.05
    key, why = gate.sign_in(PASSWORD, "198.51.100.7")  # a 41st source, no failures of its own: at once
    assert key and why == "" and gate.signed_in(key)
    assert gate.sign_in(PASSWORD, "127.0.0.1")[0]  # and the admin's own address
    for _ in range(4):  # an attacker's own source does slow down
        gate.sign_in("wrong", "203.0.113.0")
    assert gate.limiter.wait_s("203.0.113.0") > 0 and "try again in" in gate.sign_in(PASSWORD, "203.0.113.0")[1]


def test_a_thousand_failing_sources_neither_lock_out_nor_grow_memory():
    now, said = [0.0], []
    gate = _gate(now, said, surge_sources=200, max_sources=300)
    for i in range(1000):
        gate.sign_in("wrong", f"10.{i // 250}.{i % 250}.1")
        now[0] += 0.01
    assert len(gate.limiter) <= 300 and gate.limiter.surging()  # bounded, and the surge is seen
    assert gate.sign_in(PASSWORD, "198.51.100.9")[0]  # a source without failures: at once
    assert gate.sign_in(PASSWORD, "::1")[0]
    # during the surge an unknown source's back-off starts at its first failure; the admin's addresses keep
    # their free tries
    gate.sign_in("wrong", "198.51.100.10")
    assert gate.limiter.wait_s("198.51.100.10") == 2.0
    gate.sign_in("wrong", "127.0.0.1")
    assert gate.limiter.wait_s("127.0.0.1") == 0
    now[0] += 601  # the window passed: no surge, free tries again
    assert not gate.limiter.surging()
    gate.sign_in("wrong", "198.51.100.11")
    assert gate.limiter.wait_s("198.51.100.11") == 0


def test_behind_an_untrusted_proxy_twelve_wrong_guesses_from_the_admins_address_leave_the_link_working():
    """Every visitor is the proxy's 127.0.0.1: an attacker's guesses hold that address back, the one-time link
    from the server log still signs the admin in (with the password), once."""
    now, said = [0.0], []
    gate = _gate(now, said)
    assert len(said) == 1 and "/admin?once=" in said[0] and "proxy" in said[0]  # the start-up log says so
    for _ in range(12):
        gate.sign_in("guess", "127.0.0.1")
        now[0] += 0.1
    key, why = gate.sign_in(PASSWORD, "127.0.0.1")
    assert key == "" and why.startswith("Too many wrong passwords") and "sign-in link in the server log" in why
    once = _once(said[0])
    assert gate.sign_in("wrong", "127.0.0.1", once) == ("", "Wrong password")  # still the password ...
    assert gate.limiter.wait_s("127.0.0.1") < 900  # ... and a wrong one with the link is not counted
    key, why = gate.sign_in(PASSWORD, "127.0.0.1", once)
    assert key and why == "" and len(said) == 2  # used: a new link is logged
    assert gate.limiter.wait_s("127.0.0.1") == 0  # a success clears the address


def test_the_one_time_link_is_single_use_and_expires():
    now, said = [0.0], []
    gate = AdminGate(PASSWORD, LoginLimiter(clock=lambda: now[0]), clock=lambda: now[0], announce=said.append,
                     link_s=3600)

    def held_back():
        for _ in range(20):
            gate.sign_in("wrong", "192.0.2.1")

    held_back()
    first = _once(said[0])
    assert gate.sign_in(PASSWORD, "192.0.2.1", first)[0]
    held_back()
    assert gate.sign_in(PASSWORD, "192.0.2.1", first)[0] == ""  # used: refused
    second = _once(said[1])
    assert second != first
    now[0] += 3601
    held_back()  # the link expired: refused, and a new link is logged
    assert gate.sign_in(PASSWORD, "192.0.2.1", second)[0] == "" and len(said) == 3
    assert gate.sign_in(PASSWORD, "192.0.2.1", "made-up")[0] == ""
    assert gate.sign_in(PASSWORD, "192.0.2.1", _once(said[2]))[0]


def test_a_clients_own_failures_still_slow_it_down():
    now = [0.0]
    lim = LoginLimiter(free=3, base_s=2, max_s=60, surge_sources=10, window_s=600, clock=lambda: now[0],
                       trusted=Addresses("10.1.0.0/16"))
    for _ in range(5):
        lim.failed("10.1.2.3")
    assert lim.wait_s("10.1.2.3") == 4 and lim.wait_s("10.1.2.4") == 0  # trusted, but its own failures count
    for i in range(20):
        lim.failed(f"192.0.2.{i}")
    assert lim.wait_s("192.0.2.200") == 0 and lim.wait_s("10.1.9.9") == 0  # others' failures hold no one back


def test_addresses_and_windows():
    a = Addresses("127.0.0.1, ::1, 10.0.0.0/8")
    assert "127.0.0.1" in a and "::1" in a and "10.2.3.4" in a and "11.0.0.1" not in a and "junk" not in a
    assert not Addresses("") and "127.0.0.1" not in Addresses("")
    with pytest.raises(ValueError, match="not an address"):
        Addresses("localhost-ish")
    now = [0.0]
    w = WindowCounter(10, clock=lambda: now[0], max_entries=5)
    assert w.take("a", 3, 5) and not w.take("a", 3, 5) and w.take("b", 3, 5)
    assert w.of("a") == 3 and w.total() == 6 and w.wait_s("a") == 10
    now[0] = 10
    assert w.of("a") == 0 and w.total() == 0 and w.wait_s("a") == 0
    for i in range(20):
        w.add(f"k{i}", 1)
    assert w.total() == 5  # bounded


def test_the_export_is_served_once_and_only_to_the_signed_in_admins_browser(tmp_path):
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    now = [0.0]
    gate = AdminGate(PASSWORD, clock=lambda: now[0], announce=lambda _: None, session_s=100, download_s=50)
    folder = tmp_path / "iir-study-x"
    folder.mkdir()
    f = folder / "s.events.csv"
    f.write_text("id,type\n1,enrol\n")
    with pytest.raises(PermissionError):
        gate.offer("made-up", f)
    assert gate.bind_token("made-up") == ""
    key, _ = gate.sign_in(PASSWORD, "127.0.0.1")
    app = FastAPI(routes=gate.routes())
    admin, other = TestClient(app), TestClient(app)
    bind = gate.bind_token(key)
    r = admin.get(f"/admin/bind/{bind}")
    assert r.status_code == 204 and "httponly" in r.headers["set-cookie"].lower()
    assert "samesite=strict" in r.headers["set-cookie"].lower() and r.headers["set-cookie"].startswith(gate.cookie)
    assert AdminGate(PASSWORD, announce=lambda _: None).cookie != gate.cookie  # one cookie per app (ports share)
    assert other.get(f"/admin/bind/{bind}").status_code == 404  # the bind token is single use
    url = gate.offer(key, f)
    assert other.get(url).status_code == 404  # another client with the URL: refused ...
    other.cookies.set(gate.cookie, "x" * 43)
    assert other.get(url).status_code == 404  # ... with a made-up cookie too
    assert admin.get(url.replace(url.split("/")[-2], "x" * 43)).status_code == 404  # a guessed token
    r = admin.get(url)  # the admin's browser: served (the others' tries did not use the offer up)
    assert r.status_code == 200 and r.text.startswith("id,type")
    assert admin.get(url).status_code == 404 and not f.exists()  # once, then the file is gone
    key2, _ = gate.sign_in(PASSWORD, "127.0.0.1")  # another admin session's cookie does not fit this key's offers
    second = TestClient(app)
    second.get(f"/admin/bind/{gate.bind_token(key2)}")
    f1 = tmp_path / "mine.csv"
    f1.write_text("x")
    assert second.get(gate.offer(key, f1)).status_code == 404
    f2 = tmp_path / "late.csv"
    f2.write_text("x")
    url2 = gate.offer(key, f2)
    now[0] += 60  # past download_s
    assert admin.get(url2).status_code == 404
    f3 = tmp_path / "never.csv"
    f3.write_text("x")
    gate.offer(key, f3)
    now[0] += 60
    gate.offer(key, f2)  # an offer never fetched is deleted once it has lapsed
    assert not f3.exists()
    now[0] += 200  # the sign-in has lapsed
    assert not gate.signed_in(key)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("proxies, seen", [("", "127.0.0.1"), ("127.0.0.1", "203.0.113.9")])
def test_forwarded_for_is_believed_only_from_configured_proxies(monkeypatch, proxies, seen):
    """Through Gradio's own server (uvicorn): a forged X-Forwarded-For from 127.0.0.1 names no one unless
    127.0.0.1 is a configured proxy."""
    gr = pytest.importorskip("gradio")
    import httpx

    from interactive_ir.ui.serving.limits import client_of
    from interactive_ir.ui.serving.process import trust_proxies

    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    env: dict[str, str] = {}
    trust_proxies(proxies, env)
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", env["FORWARDED_ALLOW_IPS"])

    def who(x, request: gr.Request):
        return client_of(request)

    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(who, [box], [box], api_name="who")
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        base = f"http://127.0.0.1:{port}/gradio_api/call/who"
        head = {"X-Forwarded-For": "203.0.113.9"}
        ev = httpx.post(base, json={"data": ["x"]}, headers=head, timeout=20).json()["event_id"]
        text = httpx.get(f"{base}/{ev}", headers=head, timeout=20).text
        data = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        assert data[-1] == [seen]
    finally:
        demo.close()


def test_a_weak_admin_password_is_refused_before_any_model_loads(monkeypatch, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    import app
    import interactive_ir.ui.startup as startup

    def no_models(*a, **k):
        raise AssertionError("models were loaded before the password was checked")

    monkeypatch.setattr(startup, "load_app", no_models)
    monkeypatch.setenv("IIR_STUDY_ADMIN_PASSWORD", "change-me")
    study = tmp_path / "s.yaml"
    study.write_text("study_id: s\nconditions: {A: text}\ntasks: [a]\n")
    cfg = startup.app_config(environ={}, study=study)
    with pytest.raises(BadInputError, match="example password"):
        app.build_page(cfg)


def test_a_wrong_password_is_answered_in_one_line_through_the_page(monkeypatch):
    """Through Gradio's server: wrong, huge and held-back sign-ins each get one short line (a warning), never
    an error or a traceback; the right password then gets the bind token for the download cookie."""
    gr = pytest.importorskip("gradio")
    import httpx

    from interactive_ir.study.page.admin import add_admin_page

    class Page:  # what /admin reads of a StudyPage
        study = type("S", (), {"study_id": "s", "competition": False})()

        def admin_view(self):
            return "0 participant(s)", []

    now, warned = [0.0], []
    monkeypatch.setattr(gr, "Warning", warned.append)  # the page's toast (the server runs in this process)
    gate = AdminGate(PASSWORD, LoginLimiter(clock=lambda: now[0]), clock=lambda: now[0], announce=lambda _: None)
    with gr.Blocks() as demo:
        gr.Markdown("the study page")
    add_admin_page(demo, Page(), PASSWORD, gate)
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)

    def sign_in(given):
        base = f"http://127.0.0.1:{port}/gradio_api/call/login_fn"
        ev = httpx.post(base, json={"data": [given]}, timeout=20).json()["event_id"]
        return httpx.get(f"{base}/{ev}", timeout=20).text

    try:
        for given in ["wrong", "x" * 100_000, "wrong", "wrong", "wrong"]:
            text = sign_in(given)
            assert "event: complete" in text and "Traceback" not in text and "xxxxxxxxxx" not in text
            note = warned.pop()
            assert not warned and "\n" not in note and len(note) < 200
        assert note.startswith("Too many wrong passwords")  # the 5th: held back, one line
        now[0] += 10_000
        text = sign_in(PASSWORD)
        data = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        assert len(data[-1][-1]) >= 40  # the bind token, for the browser's download cookie
    finally:
        demo.close()
