"""ui/malloc_arenas.py: the web app limits glibc to one malloc arena before its threads start (issue 15:
with glibc's default arenas the soak grew ~11 MB per 10,000 events, with one under 1 MB)."""

from __future__ import annotations

import platform

import pytest

from interactive_ir.ui.serving.malloc_arenas import M_ARENA_MAX, glibc, limit_malloc_arenas


class FakeLibc:
    def __init__(self, answer=1):
        self.calls, self.answer = [], answer

    def mallopt(self, param, value):
        self.calls.append((param, value))
        return self.answer


def test_one_arena_by_default_and_the_operators_settings_win():
    lib = FakeLibc()
    assert limit_malloc_arenas({}, lib) == 1 and lib.calls == [(M_ARENA_MAX, 1)]
    assert limit_malloc_arenas({"IIR_MALLOC_ARENAS": "4"}, lib) == 4 and lib.calls[-1] == (M_ARENA_MAX, 4)
    quiet = FakeLibc()
    assert limit_malloc_arenas({"IIR_MALLOC_ARENAS": "0"}, quiet) is None  # glibc's default, to measure
    assert limit_malloc_arenas({"MALLOC_ARENA_MAX": "2"}, quiet) is None  # glibc read the operator's own
    assert quiet.calls == []


def test_a_refused_limit_is_logged_and_a_bad_value_says_what_to_write(caplog):
    assert limit_malloc_arenas({}, FakeLibc(answer=0)) is None
    assert "could not limit malloc arenas" in caplog.text
    with pytest.raises(ValueError, match="IIR_MALLOC_ARENAS must be 0 .* got 'many'"):
        limit_malloc_arenas({"IIR_MALLOC_ARENAS": "many"}, FakeLibc())
    with pytest.raises(ValueError, match="IIR_MALLOC_ARENAS"):
        limit_malloc_arenas({"IIR_MALLOC_ARENAS": "-1"}, FakeLibc())


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_glibc_takes_the_limit():
    assert glibc() is not None
    assert limit_malloc_arenas({"IIR_MALLOC_ARENAS": "8"}) == 8  # this process's own glibc (8: its default-ish)


def test_app_py_refuses_a_bad_arena_setting_before_loading_anything(monkeypatch, capsys):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("iir_app", Path(__file__).resolve().parents[3] / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    monkeypatch.setenv("IIR_MALLOC_ARENAS", "lots")
    assert app.main(["--llm", "none"]) == 2
    assert "IIR_MALLOC_ARENAS must be 0" in capsys.readouterr().err
