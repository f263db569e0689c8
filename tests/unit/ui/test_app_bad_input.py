"""Issue 40 item 7, app.py: a port in use, an address this machine does not have, a host that does not resolve,
flags out of range and `--sign-in on` with the Hub unreachable each end in one line (no traceback), before the
index and models load."""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

import pytest


def _app():
    spec = importlib.util.spec_from_file_location("iir_app", Path(__file__).resolve().parents[3] / "app.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(autouse=True)
def _environment_kept():
    """app.main sets process settings in os.environ (TQDM_DISABLE, ...): put it back for the tests after."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def app(monkeypatch):
    mod = _app()
    loaded = []
    monkeypatch.setattr(mod, "build_page", lambda *a, **k: loaded.append(a) or (_ for _ in ()).throw(AssertionError(
        "the page was built: the check came too late")))
    mod.loaded = loaded
    return mod


def _line(capsys) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("app.py")]
    assert len(err) == 1, err
    assert "Traceback" not in err[0] and len(err[0]) < 400
    return err[0]


def test_a_port_in_use_is_one_line_before_anything_loads(app, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert app.main(["--host", "127.0.0.1", "--port", str(port), "--llm", "none"]) == 1
    assert "port is in use" in _line(capsys) and not app.loaded


@pytest.mark.parametrize("host, words", [("192.0.2.123", "cannot listen on 192.0.2.123"),
                                         ("no-such-host.invalid", "does not resolve")])
def test_an_unbindable_host_is_one_line(app, capsys, host, words):
    assert app.main(["--host", host, "--port", str(_free_port()), "--llm", "none"]) == 1
    assert words in _line(capsys) and not app.loaded


@pytest.mark.parametrize("argv", [["--port", "70000"], ["--port", "-1"], ["--port", "x" * 100_000], ["-k", "0"],
                                  ["--concurrency", "0"], ["--queue-size", "nan"]], ids=range(6))
def test_flags_out_of_range_are_one_short_line(app, capsys, argv):
    with pytest.raises(SystemExit) as e:
        app.main(argv)
    assert e.value.code == 2
    assert len(_line(capsys)) < 400


def test_sign_in_on_with_the_hub_unreachable_is_one_line(app, capsys, monkeypatch):
    import huggingface_hub

    def offline(*a, **k):
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.delenv("SYSTEM", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_xxxxxxxxxxxxxxxx")
    monkeypatch.setattr(huggingface_hub, "whoami", offline)
    assert app.main(["--host", "127.0.0.1", "--port", str(_free_port()), "--llm", "none", "--sign-in", "on"]) == 1
    line = _line(capsys)
    assert "--sign-in off" in line and "ConnectionError" in line and not app.loaded


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_free_port_passes_the_check():
    assert _app().check_listen("127.0.0.1", _free_port()) == ""
