"""bench/gpu_check.py's own logic on the CPU (issue 41): rows print as they finish and survive a run that is
killed, a broken check is a NO row and the rest go on, filling the GPU backs off where the allocator refuses,
and the belief's plain-torch turn computes what the belief does (torch CPU tensors and a fake allocator)."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import gpu_check  # noqa: E402


def test_rows_are_printed_as_each_check_finishes_and_a_broken_check_is_a_no_row():
    out = io.StringIO()
    report = gpu_check.Report(out)
    report.add("first", True, "1 ms")
    assert out.getvalue().splitlines()[-1].startswith("first") and " yes " in out.getvalue()

    def broken(rep):
        raise RuntimeError("CUDA error: an illegal memory access")

    report.run("broken", broken)
    report.run("after", lambda rep: rep.add("after", True, "ran"))
    lines = out.getvalue().splitlines()
    assert [ln.split()[0] for ln in lines[1:]] == ["first", "broken", "after"]
    assert " NO " in lines[2] and "illegal memory access" in lines[2] and not report.ok


def test_a_run_killed_by_the_machine_keeps_the_rows_it_printed():
    code = ("import sys, time; sys.path.insert(0, 'bench'); import gpu_check\n"
            "r = gpu_check.Report(); r.add('exact 1,000,000', True, 'p50 1.4 ms'); time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        lines, deadline = [], time.monotonic() + 90
        while time.monotonic() < deadline and not any(ln.startswith("exact") for ln in lines):
            lines.append(proc.stdout.readline())
    finally:
        proc.kill()  # the machine's time limit, while the next check still runs
        proc.wait()
    assert any(ln.startswith("exact 1,000,000") and " yes " in ln for ln in lines), lines


class _OOM(RuntimeError):
    pass


class FakeTorch:
    """A GPU that reports `reported` bytes free but whose allocator honours only `real` (fragmentation,
    another process): an allocation past it raises, as torch.cuda.OutOfMemoryError does."""

    uint8 = "uint8"

    def __init__(self, reported: int, real: int):
        self.reported, self.real, self.held, self.asked = reported, real, 0, []
        fake = self

        class cuda:  # noqa: N801 - torch.cuda's shape
            OutOfMemoryError = _OOM

            @staticmethod
            def mem_get_info():
                return fake.reported - fake.held, fake.reported

            @staticmethod
            def empty_cache():
                pass

        self.cuda = cuda

    def empty(self, n, dtype=None, device=None):
        self.asked.append(n)
        if self.held + n > self.real:
            raise _OOM(f"CUDA out of memory. Tried to allocate {n} bytes")
        self.held += n
        return n


def test_filling_the_gpu_backs_off_where_the_allocator_refuses():
    mib = gpu_check.MIB
    t = FakeTorch(reported=4096 * mib, real=3000 * mib + 123_456)
    hogs = gpu_check.fill_device(t)
    assert sum(hogs) == t.held <= t.real and t.real - t.held < 2 * mib  # as full as the allocator allows
    assert max(t.asked) <= 256 * mib  # in chunks: never one allocation of nearly everything
    roomy = FakeTorch(reported=2048 * mib, real=2048 * mib)
    assert sum(gpu_check.fill_device(roomy)) >= 2048 * mib - 2 * mib


def test_the_belief_turn_in_plain_torch_is_the_beliefs_update():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    n, d, chosen = 500, gpu_check.DIM, 3
    m = rng.standard_normal((n, d)).astype(np.float32) / d ** 0.5
    q = rng.standard_normal((d, 11)).astype(np.float32) / d ** 0.5
    logp = np.log(np.full(n, 1.0 / n))
    seen = np.zeros(n, bool)
    seen[[4, 9, 100]] = True
    new, top = gpu_check.belief_turn(torch, torch.from_numpy(m), torch.from_numpy(logp).float(),
                                     torch.from_numpy(seen), torch.from_numpy(q), chosen)
    s = m @ q
    click = s[:, 1:] / 0.3
    lse = np.log(np.exp(click).sum(axis=1))
    want = logp + click[:, chosen] - lse
    want -= np.log(np.exp(want).sum())
    assert np.allclose(new.numpy(), want, atol=1e-4)
    page = np.where(seen, -np.inf, want + s[:, 0] / 0.05)
    assert sorted(top.tolist()) == sorted(np.argsort(-page)[:20].tolist()) and not set(top.tolist()) & {4, 9, 100}
