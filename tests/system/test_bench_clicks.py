"""bench/bench_clicks.py at a tiny size: it builds the split, finds the hard targets, runs every row for two
judges and prints one table line per (judge, row) with a paired interval and a verdict (figures unchecked)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from iir_testutils import COLOURS, PLACES, THINGS, make_images

ROOT = Path(__file__).resolve().parents[2]


def write_data(root: Path, n: int) -> Path:
    caps = make_images(root / "images", n, seed=0)
    with open(root / "captions.jsonl", "w") as f:
        for i, rel in enumerate(sorted(caps)):
            colour, thing, place = COLOURS[i % 8], THINGS[(i // 3) % 8], PLACES[(i // 2) % 6]
            five = [f"a {colour} {thing} on the {place}", f"a {thing} near a {place}",
                    f"the {colour} {thing} at the {place}", f"{colour} {thing} in the {place}",
                    f"one {thing} by the {place}"]
            f.write(json.dumps({"image": rel, "captions": five, "split": "dev"}) + "\n")
    return root


def test_bench_clicks_tiny(tmp_path):
    data = write_data(tmp_path / "data", 40)
    out = tmp_path / "clicks.json"
    rows = "paging,click@25,question@25,typing,paging@overlook,typing@overlook,shuffled-page,wrong-marks"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_clicks.py"), "--n", "40", "--data", str(data),
                           "--embedder", "fake:32", "--judges", "words,bm25", "--protocols", rows, "--rounds", "2",
                           "-k", "5", "--work", str(tmp_path / "work"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("| words |") or ln.startswith("| bm25 |")]
    assert len(lines) == 2 * 8, done.stdout
    figures = json.loads(out.read_text())
    assert figures["hard_targets"] > 0 and figures["n"] == 40
    by = {(r["judge"], r["row"]): r for r in figures["rows"]}
    for judge in ("words", "bm25"):
        assert by[(judge, "paging")]["goal"] == "baseline" and "result" not in by[(judge, "paging")]
        for row in ("click@25", "question@25", "typing", "typing@overlook", "shuffled-page", "wrong-marks"):
            r = by[(judge, row)]
            assert r["result"] in ("PASS", "FAIL") and r["ci"][0] <= r["diff"] <= r["ci"][1]
            assert r["targets"] == figures["hard_targets"]
        assert by[(judge, "typing@overlook")]["overlook"] == 0.2 and by[(judge, "click@25")]["noise"] == 0.25
    # judge-free rows ran once: the same figures under both judges
    assert by[("words", "paging")]["found"] == by[("bm25", "paging")]["found"]


def load_bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_clicks", ROOT / "bench" / "bench_clicks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_clicks"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_paired_interval_and_verdicts():
    import numpy as np

    b = load_bench()
    same = np.array([True, False, True, False])
    assert b.paired_interval(same, same, 0) == (0.0, 0.0, 0.0)
    assert b.paired_interval(np.ones(8, bool), np.zeros(8, bool), 0) == (100.0, 100.0, 100.0)
    better = np.array([True] * 30 + [False] * 70)
    worse = np.array([False] * 30 + [False] * 70)
    diff, lo, hi = b.paired_interval(better, worse, 0)
    assert diff == 30.0 and 0 < lo < diff < hi
    click = b.make_row("click@25")
    assert (click.protocol, click.noise, click.goal, click.baseline) == ("user:click", 0.25, 10.0, "paging")
    assert b.verdict(click, 12.0, 1.0, 20.0) == "PASS"
    assert b.verdict(click, 12.0, -1.0, 20.0) == "FAIL"  # the interval touches zero
    assert b.verdict(click, 8.0, 2.0, 14.0) == "FAIL"  # short of the goal
    bad = b.make_row("wrong-marks")
    assert b.verdict(bad, -5.0, -9.0, -1.0) == "PASS" and b.verdict(bad, -5.0, -9.0, 0.5) == "FAIL"
    assert b.make_row("typing@overlook").baseline == "paging@overlook"


def test_click_information_tiny(tmp_path):
    """bench/click_information.py at a tiny size: the agreement line, a fitted click model's information, and a
    found-% row per click model and noise, for each judge; the exact judge's ceiling is at least the fitted
    model's (it is the user's own judge)."""
    data = write_data(tmp_path / "data", 40)
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "click_information.py"), "--n", "40", "--data",
                           str(data), "--embedder", "fake:32", "--judges", "words,bm25", "--rounds", "2", "-k", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.count("## judge ") == 2 and out.count("nats of a click's information") == 2
    rows = [ln.split("|") for ln in out.splitlines() if ln.startswith("| ") and "%" not in ln and "---" not in ln
            and "click model" not in ln]
    assert len(rows) == 2 * 3 * 2  # judges x models x noises
    found = {(r[1].strip(), r[2].strip()): float(r[3]) for r in rows[:6]}
    exact = [v for (m, _), v in found.items() if m.startswith("exact")]
    assert exact and all(0.0 <= v <= 100.0 for v in found.values())
