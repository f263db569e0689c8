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
