"""ui/serving/malloc_trim.py: the web app hands glibc's free heap pages back every IIR_MALLOC_TRIM_S seconds
(issue 29: at 200 tabs a burst's peak stayed in RSS as free heap chunks), on one thread per process."""

from __future__ import annotations

import platform
import threading

import pytest

from interactive_ir.ui.serving import malloc_trim
from interactive_ir.ui.serving.malloc_trim import start_malloc_trim, stop_malloc_trim, trim_every_s


class FakeLibc:
    def __init__(self):
        self.calls = []
        self.called = threading.Event()

    def malloc_trim(self, pad):
        self.calls.append(pad)
        self.called.set()
        return 1


@pytest.fixture(autouse=True)
def no_trimmer_left():
    stop_malloc_trim()
    yield
    stop_malloc_trim()


def test_the_thread_trims_every_period_once_per_process():
    lib = FakeLibc()
    assert start_malloc_trim({"IIR_MALLOC_TRIM_S": "0.01"}, lib) == 0.01
    assert lib.called.wait(5) and lib.calls[0] == 0  # malloc_trim(0): every free page, keeping no pad
    other = FakeLibc()
    assert start_malloc_trim({"IIR_MALLOC_TRIM_S": "0.01"}, other) == 0.01
    threading.Event().wait(0.1)
    assert other.calls == []  # one trimming thread per process
    names = [t.name for t in threading.enumerate()]
    assert names.count("iir-malloc-trim") == 1


def test_zero_trims_never_and_a_bad_value_says_what_to_write():
    lib = FakeLibc()
    assert start_malloc_trim({"IIR_MALLOC_TRIM_S": "0"}, lib) is None
    assert "iir-malloc-trim" not in [t.name for t in threading.enumerate()]
    assert trim_every_s({}) == malloc_trim.DEFAULT_EVERY_S == 60
    for bad in ("soon", "-1", "nan", "inf"):
        with pytest.raises(ValueError, match="IIR_MALLOC_TRIM_S must be 0 .* got"):
            trim_every_s({"IIR_MALLOC_TRIM_S": bad})
    assert start_malloc_trim({}, object()) is None  # a C library without malloc_trim: nothing to do


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_install_starts_the_trimmer_with_glibc(monkeypatch):
    from interactive_ir.ui.serving.process import install

    env = {"IIR_MALLOC_ARENAS": "0", "IIR_GRADIO_SESSION_FIX": "0"}
    assert install(env).malloc_trim_s == 60
    assert "iir-malloc-trim" in [t.name for t in threading.enumerate()]
    with pytest.raises(ValueError, match="IIR_MALLOC_TRIM_S"):
        install({**env, "IIR_MALLOC_TRIM_S": "often"})
