"""`python -m interactive_ir metrics` end to end through cli.main."""

from __future__ import annotations

import json
import math

import pytest

from interactive_ir.cli import main


def write(tmp_path, content: str):
    path = tmp_path / "ranks.json"
    path.write_text(content, encoding="utf-8")
    return path


def test_round_trip_prints_one_json_object(tmp_path, capsys):
    # PlugIR Appendix B, Tables 6 and 7 (methods A and B as two queries) plus an unretrieved query
    path = write(tmp_path, json.dumps({"A": [100, 100, 100], "B": [100, 10, 100], "C": [None, 2]}))
    assert main(["metrics", str(path), "--k", "1,10", "--n-images", "1000"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # the whole of stdout is one JSON object
    assert out["n_queries"] == 3 and out["n_rounds"] == 3 and out["n_images"] == 1000
    # C: best ranks 1001, 2, 2 -> ln(1001*2)/4 + ln(2)/2
    c = math.log(1001 * 2) / 4 + math.log(2) / 2
    assert out["bri"] == pytest.approx((math.log(100) + 1.25 * math.log(10) + c) / 3)
    assert out["hits@10"] == pytest.approx([0.0, 2 / 3, 2 / 3])
    assert out["recall@10"] == pytest.approx([0.0, 2 / 3, 1 / 3])
    assert out["hits@1"] == [0.0, 0.0, 0.0]
    assert out["success_rate@10"] == pytest.approx(2 / 3)
    assert out["rounds_to_success@10"] == 1.0
    assert "hits@5" not in out
    assert len(out["rank_percentile"]) == 3


def test_default_ks_and_no_n_images(tmp_path, capsys):
    path = write(tmp_path, '{"q": [3, 1]}')
    assert main(["metrics", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"hits@1", "hits@5", "hits@10"} <= set(out)
    assert out["hits@1"] == [0.0, 1.0]
    assert out["bri"] == pytest.approx(math.log(3) / 2)
    assert "rank_percentile" not in out


@pytest.mark.parametrize(
    "content, match",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2, 3]", "JSON object"),
        ("{}", "no queries"),
        ('{"q": [0, 1]}', "below 1"),
        ('{"q": [1.5]}', "whole number"),
        ('{"q": []}', "no rounds"),
    ],
)
def test_bad_file_contents_give_one_line_error(tmp_path, capsys, content, match):
    path = write(tmp_path, content)
    assert main(["metrics", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0]


def test_missing_file(tmp_path, capsys):
    assert main(["metrics", str(tmp_path / "nope.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ranks file not found") and "nope.json" in err


@pytest.mark.parametrize("ks", ["a,b", "0", "5,-1", ","])
def test_bad_k(tmp_path, capsys, ks):
    path = write(tmp_path, '{"q": [1]}')
    assert main(["metrics", str(path), "--k", ks]) == 1
    assert capsys.readouterr().err.startswith("error: --k must be")


def test_rank_above_n_images(tmp_path, capsys):
    path = write(tmp_path, '{"q": [1, 20]}')
    assert main(["metrics", str(path), "--n-images", "10"]) == 1
    err = capsys.readouterr().err
    assert "query 'q', round 1" in err and "exceeds the index size" in err
