"""bench/soak_belief.py at a tiny size: sessions held open, one RSS row per round, pooled and whole paths
(figures unchecked: a tiny soak says nothing about memory, only that the script runs and prints its table)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("pooled", [True, False])
def test_soak_belief_tiny(tmp_path, pooled):
    args = [sys.executable, "bench/soak_belief.py", "--size", "3000", "--tabs", "3", "--rounds", "3",
            "--keep", str(tmp_path)] + (["--pooled"] if pooled else [])
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "IIR_BELIEF_POOL": "200"})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    assert [r.split("|")[1].strip().split()[0] for r in rows] == ["0", "1", "2", "3"]
    assert ("pooled" in done.stdout) == pooled and "mean growth of private memory per round" in done.stdout
