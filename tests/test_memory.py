"""interactive_ir.ui.memory: glibc's arena limit and the periodic malloc_trim, with a fake C library."""

from __future__ import annotations

import importlib.util
import logging
import threading
from pathlib import Path

import pytest

from interactive_ir.ui import memory
from interactive_ir.ui.memory import M_ARENA_MAX, MemoryConfig, keep_memory_flat, memory_config, start_trimmer


class FakeStop:
    """A stop event whose wait() records its timeout and says "stop" after `n` waits (no real sleeping)."""

    def __init__(self, n: int):
        self.n, self.waits = n, []

    def wait(self, timeout=None) -> bool:
        self.waits.append(timeout)
        return len(self.waits) > self.n


class FakeLibc:
    def __init__(self, mallopt_result: int = 1):
        self.calls: list[tuple] = []
        self.mallopt_result = mallopt_result

    def mallopt(self, param, value):
        self.calls.append(("mallopt", param, value))
        return self.mallopt_result

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))
        return 1


def test_the_trimmer_trims_once_per_interval_until_stopped():
    trims = []
    stop = FakeStop(3)
    start_trimmer(7.5, lambda: trims.append(1), stop).join(5)
    assert stop.waits == [7.5] * 4  # waits the interval before each trim, and once more before stopping
    assert len(trims) == 3


def test_a_failing_trim_ends_the_thread_with_a_log_line(caplog):
    def boom():
        raise OSError("no")

    stop = FakeStop(10)
    with caplog.at_level(logging.ERROR, logger="interactive_ir.ui.memory"):
        start_trimmer(1, boom, stop).join(5)
    assert len(stop.waits) == 1 and "no longer trimmed" in caplog.text


def test_keep_memory_flat_limits_arenas_and_trims_every_interval():
    lib, stop = FakeLibc(), FakeStop(2)
    thread = keep_memory_flat(MemoryConfig(malloc_trim_s=3, malloc_arena_max=2), lib=lib, stop=stop)
    thread.join(5)
    assert lib.calls == [("mallopt", M_ARENA_MAX, 2), ("malloc_trim", 0), ("malloc_trim", 0)]
    assert stop.waits == [3, 3, 3]


def test_each_setting_can_be_turned_off_by_env():
    lib = FakeLibc()
    cfg = memory_config({"IIR_MALLOC_TRIM_S": "0", "IIR_MALLOC_ARENA_MAX": "4"})
    assert keep_memory_flat(cfg, lib=lib) is None  # no trimming thread
    assert lib.calls == [("mallopt", M_ARENA_MAX, 4)]
    lib = FakeLibc()
    thread = keep_memory_flat(memory_config({"IIR_MALLOC_ARENA_MAX": "0", "IIR_MALLOC_TRIM_S": "60"}), lib=lib,
                              stop=FakeStop(0))
    thread.join(5)
    assert lib.calls == []  # arenas left to glibc; stopped before the first trim


def test_a_refused_mallopt_is_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="interactive_ir.ui.memory"):
        keep_memory_flat(MemoryConfig(malloc_trim_s=0, malloc_arena_max=2), lib=FakeLibc(mallopt_result=0))
    assert "M_ARENA_MAX" in caplog.text


def test_without_glibc_nothing_is_done_and_the_log_says_so_at_debug(caplog):
    with caplog.at_level(logging.DEBUG, logger="interactive_ir.ui.memory"):
        assert keep_memory_flat(MemoryConfig(), lib=None) is None
    records = [r for r in caplog.records if r.name == "interactive_ir.ui.memory"]
    assert len(records) == 1 and records[0].levelno == logging.DEBUG and "not glibc" in records[0].getMessage()


def test_glibc_is_found_only_where_it_is(monkeypatch):
    monkeypatch.setattr(memory.platform, "system", lambda: "Darwin")
    assert memory.glibc() is None
    monkeypatch.undo()
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("this machine's C library is not glibc")
    lib = memory.glibc()
    assert lib is not None and lib.malloc_trim(0) in (0, 1)  # the real call: 1 when memory was returned


@pytest.mark.parametrize("env, name", [({"IIR_MALLOC_TRIM_S": "-1"}, "IIR_MALLOC_TRIM_S"),
                                       ({"IIR_MALLOC_ARENA_MAX": "-2"}, "IIR_MALLOC_ARENA_MAX"),
                                       ({"IIR_MALLOC_TRIM_S": "often"}, "IIR_MALLOC_TRIM_S")])
def test_bad_settings_are_refused_with_their_name(env, name):
    with pytest.raises(ValueError, match=name):
        memory_config(env)


def test_app_refuses_a_bad_setting_before_loading_anything(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("iir_app", Path(__file__).resolve().parent.parent / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    started = []
    monkeypatch.setattr(memory, "start_trimmer", lambda *a, **k: started.append(a) or threading.Thread())
    monkeypatch.setenv("IIR_MALLOC_TRIM_S", "-5")
    assert app.main([]) == 2
    assert "IIR_MALLOC_TRIM_S" in capsys.readouterr().err and not started
