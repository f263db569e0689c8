"""bench/bench_belief_scale.py's GPU model and its device-path checks (issue 41): the modelled turn is the
counted device traffic at the device's bandwidth plus launches, syncs and the host's values, against the floor of
one read of the fp16 matrix; the device path (state and update on torch's CPU tensors) runs against the numpy
belief, and its traffic is counted with only a few values crossing to the host."""

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


def test_the_gpu_model_adds_traffic_launches_syncs_and_the_link():
    checks = [{"rows": 1000, "width": 1000, "bytes": 5e6 + 1000 * 4000, "upcast": 1000 * 1000, "ops": 50,
               "syncs": 4, "host_bytes": 2000},
              {"rows": 3000, "width": 1000, "bytes": 5e6 + 3000 * 4000, "upcast": 3000 * 1000, "ops": 50,
               "syncs": 4, "host_bytes": 2000}]
    buf = io.StringIO()
    with redirect_stdout(buf):
        scale.gpu_model(checks, [1_000_000, 10_000_000], bandwidth=1e12, link=1e9, launch_us=10, sync_us=100)
    rows = _rows(buf.getvalue())
    gb, dev, fixed, wire, turn, floor, ratio, lean, lean_ratio = rows[1_000_000]
    assert floor == pytest.approx(2.0)  # 1M rows x 1,000 x 2 bytes at 1 TB/s
    assert gb == pytest.approx(4.0, abs=0.01) and dev == pytest.approx(4.0, abs=0.01)  # 4,000 B a row (+5 MB)
    assert fixed == pytest.approx(0.5 + 0.4) and wire == pytest.approx(0.002, abs=1e-3)  # 50 x 10 us + 4 x 100 us
    assert turn == pytest.approx(dev + fixed + wire, abs=0.02) and ratio == pytest.approx(turn / floor, rel=0.02)
    assert lean == pytest.approx(turn - 2.0, abs=0.02)  # the fp32 copies (1,000 B a row, written and read) out
    assert "MODEL" in buf.getvalue()
    assert rows[10_000_000][2] == pytest.approx(fixed + 2 * scale.CLICK_CHUNK_OPS * 10 / 1000)  # 2 more click chunks
    assert rows[10_000_000][1] == pytest.approx(40.0, abs=0.1)  # the bytes grow with the rows


def test_the_device_path_runs_against_the_numpy_belief(tmp_path):
    pytest.importorskip("torch")
    path, _ = scale.index_of(tmp_path, 3000, "exact")
    check = scale.device_path(path, sessions=2, rounds=3)
    assert check["rows"] == 3000 and check["width"] == 1024
    assert check["device_ms"] > 0 and check["numpy_ms"] > 0 and check["ratio"] > 0


def test_the_device_traffic_is_counted_and_little_reaches_the_host(tmp_path):
    pytest.importorskip("torch")
    path, _ = scale.index_of(tmp_path, 3000, "exact")
    t = scale.device_traffic(path, rounds=3)
    assert t["rows"] == 3000 and t["ops"] >= 10 and t["syncs"] >= 2
    assert t["upcast"] >= 3000 * 1024 * 4  # at least one product over every row a turn (fp32 copies on the CPU)
    assert t["bytes"] >= 3000 * 1024 * 2 + t["upcast"]  # the fp16 matrix read at least once, and the copies
    assert t["host_bytes"] < 3000 * 8  # no whole-row array comes to the host: O(k + depth) values
