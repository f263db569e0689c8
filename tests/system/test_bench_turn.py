"""bench/bench_turn.py runs at a tiny size: --compare against a checkout (here: this one), --profile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "bench_turn.py"
TINY = ["--size", "2000", "--sessions", "1", "--turns", "2", "--styles", "sample"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_compare_runs_both_sides_alternately_and_checks_the_turns(tmp_path):
    p = run("--compare", str(ROOT), "--pairs", "2", "--index", str(tmp_path / "index"), *TINY)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    rows = [line for line in lines if line.startswith("| 1 |") or line.startswith("| 2 |") or line.startswith("| all |")]
    assert len(rows) == 3
    # the same code on both sides: every turn (1 describe + 2 answers, twice per side) is identical
    assert "identical turns (results, scores, question, RCE and KL records) old vs new: 6 of 6" in p.stdout
    assert (tmp_path / "index" / "manifest.json").is_file()  # written once, reused by every child


def test_compare_refuses_a_folder_that_is_not_a_checkout(tmp_path):
    p = run("--compare", str(tmp_path), "--pairs", "1", *TINY)
    assert p.returncode == 2 and "is not a checkout of this project" in p.stderr


def test_profile_prints_where_the_answer_turns_went(tmp_path):
    p = run("--skip-smollm2", "--profile", "2", "--index", str(tmp_path / "index"), *TINY)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "### cProfile (process CPU time) of 2 answer turns, by own time" in p.stdout
    assert "| fake LLM, 2,000 images, sample | answer (round >= 1) | 2 |" in p.stdout
