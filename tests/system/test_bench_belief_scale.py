"""bench/bench_belief_scale.py's GPU model and its device-path check (issue 41, deliverable 3): the modelled
turn adds the device's reads, the link and the host's update fitted through two measured sizes, against the
floor of one read of the fp16 matrix; the device path runs the belief over every row on torch's CPU tensors."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import bench_belief_scale as scale  # noqa: E402


def _rows(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0].replace(",", "").isdigit():
            out[int(cells[0].replace(",", ""))] = [float(c.rstrip("x")) for c in cells[1:]]
    return out


def test_the_gpu_model_adds_device_reads_link_and_the_host_line():
    checks = [{"rows": 1000, "width": 1000, "turn_ms": 5.0, "host_ms": 3.0, "products": 2.0, "returned_per_row": 40},
              {"rows": 3000, "width": 1000, "turn_ms": 9.0, "host_ms": 5.0, "products": 2.0, "returned_per_row": 40}]
    buf = io.StringIO()
    with redirect_stdout(buf):
        scale.gpu_model(checks, [1_000_000], bandwidth=1e12, link=1e10)
    dev, wire, host, turn, floor, ratio = _rows(buf.getvalue())[1_000_000]
    assert floor == pytest.approx(2.0)  # 1M rows x 1,000 x 2 bytes at 1 TB/s
    assert dev == pytest.approx(4.0) and wire == pytest.approx(4.0)  # two reads; 40 MB at 10 GB/s
    assert host == pytest.approx(2.0 + 1e-3 * 1_000_000)  # the line: 2 ms + 1 ms per thousand rows
    assert turn == pytest.approx(dev + wire + host, abs=0.1) and ratio == pytest.approx(turn / floor, rel=0.01)
    assert "MODEL" in buf.getvalue()


def test_the_device_path_runs_the_belief_over_every_row(tmp_path):
    pytest.importorskip("torch")
    path, _ = scale.index_of(tmp_path, 3000, "exact")
    check = scale.device_path(path, sessions=1, rounds=3)
    assert check["rows"] == 3000 and check["width"] == 1024 and check["products"] >= 1
    assert 0 < check["host_ms"] <= check["turn_ms"] and check["returned_per_row"] >= 4
