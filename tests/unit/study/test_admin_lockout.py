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


def test_forty_forged_addresses_do_not_lock_the_admin_out():
    now = [0.0]
    said = []
    gate = AdminGate(PASSWORD, LoginLimiter(trusted=Addresses("127.0.0.1,::1"), clock=lambda: now[0]),
                     clock=lambda: now[0], announce=said.append)
    for i in range(40):  # the attack of the issue: 40 wrong passwords from 40 made-up addresses in 2 s
        gate.sign_in("wrong", f"203.0.113.{i}")
        now[0] += 0.05
    assert gate.sign_in(PASSWORD, "198.51.100.7")[0] == ""  # a stranger's address is held back ...
    key, why = gate.sign_in(PASSWORD, "127.0.0.1")  # ... the admin's own address is not
    assert key and why == "" and gate.signed_in(key)
    # from anywhere, the one-time link in the server log lets the password through, once
    assert len(said) == 1 and "/admin?once=" in said[0]
    once = said[0].split("once=")[1].split()[0]
    assert gate.sign_in("wrong", "198.51.100.7", once) == ("", "Wrong password")  # still the password
    key, why = gate.sign_in(PASSWORD, "198.51.100.7", once)
    assert key and len(said) == 2  # used: a new link is logged, the old one no longer passes
    assert gate.sign_in(PASSWORD, "198.51.100.7", once)[0] == ""
    assert gate.sign_in(PASSWORD, "198.51.100.8", said[1].split("once=")[1].split()[0])[0]


def test_a_clients_own_failures_still_slow_it_down():
    now = [0.0]
    lim = LoginLimiter(free=3, base_s=2, max_s=60, global_max=10, window_s=600, clock=lambda: now[0],
                       trusted=Addresses("10.1.0.0/16"))
    for _ in range(5):
        lim.failed("10.1.2.3")
    assert lim.wait_s("10.1.2.3") == 4 and lim.wait_s("10.1.2.4") == 0  # trusted, but its own failures count
    for i in range(10):
        lim.failed(f"192.0.2.{i}")
    assert lim.wait_s("192.0.2.200") > 0 and lim.wait_s("10.1.9.9") == 0


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


def test_the_export_is_served_once_and_only_to_a_signed_in_admin(tmp_path):
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
    key, _ = gate.sign_in(PASSWORD, "127.0.0.1")
    url = gate.offer(key, f)
    client = TestClient(FastAPI(routes=gate.routes()))
    assert client.get(url.replace(url.split("/")[-2], "x" * 43)).status_code == 404  # a guessed token
    r = client.get(url)
    assert r.status_code == 200 and r.text.startswith("id,type")
    assert client.get(url).status_code == 404 and not f.exists()  # once, then the file is gone
    f2 = tmp_path / "late.csv"
    f2.write_text("x")
    url2 = gate.offer(key, f2)
    now[0] += 60  # past download_s
    assert client.get(url2).status_code == 404
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
