"""Issue 40 item 7, the command line: every bad input refused in one line (exit 1 or 2), no traceback, and never
a long echo of what was given."""

from __future__ import annotations

import pytest

from interactive_ir.cli import main


def _one_line(capsys, code_wanted: int, code: int, *words: str) -> str:
    err = capsys.readouterr().err
    assert code == code_wanted, err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("usage:", " "))]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert len(err) < 2000, err[:300]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("flag,value,words", [
    ("--limit", "-1", ("--limit", "0 or more")),
    ("--chunk-rows", "0", ("--chunk-rows", "from 1")),
    ("--workers", "1000000", ("--workers", "to 256")),
    ("--workers", "0", ("--workers",)),
    ("--batch-size", "-3", ("--batch-size",)),
    ("--fetch-timeout", "nan", ("--fetch-timeout", "out of range")),
    ("--fetch-retries", "x" * 100_000, ("--fetch-retries", "not a whole number")),
], ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "")
def test_index_flags_out_of_range_are_refused_by_the_parser(tmp_path, capsys, flag, value, words):
    with pytest.raises(SystemExit) as e:
        main(["index", "--images", str(tmp_path), "--out", str(tmp_path / "x"), "--embedder", "fake:8", flag, value])
    code = e.value.code
    _one_line(capsys, 2, code, *words)
    assert not (tmp_path / "x").exists()  # nothing built


@pytest.mark.parametrize("argv", [
    ["search", "--index", "nowhere", "--text", "x", "-k", "0"],
    ["search", "--index", "nowhere", "--text", "x", "--tau", "inf"],
    ["eval", "--index", "nowhere", "--queries", "q.jsonl", "--rounds", "-2"],
    ["eval", "--index", "nowhere", "--queries", "q.jsonl", "--user-noise", "1.5"],
    ["chat", "--index", "nowhere", "-k", "-5"],
    ["study", "simulate", "--participants", "0"],
])
def test_other_numeric_flags_have_ranges(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    _one_line(capsys, 2, e.value.code)


def test_a_huge_choice_is_not_echoed(capsys):
    with pytest.raises(SystemExit) as e:
        main(["search", "--index", "x", "--text", "y", "--method", "m" * 1_000_000])
    line = _one_line(capsys, 2, e.value.code, "--method")
    assert len(line) < 500


def test_image_query_on_a_device_is_not_a_regular_file(tmp_path, capsys):
    from iir_testutils import build_tiny

    build_tiny(tmp_path)
    assert main(["search", "--index", str(tmp_path / "index"), "--image", "/dev/zero"]) == 1
    line = _one_line(capsys, 1, 1, "/dev/zero", "not a regular image file")
    assert "does not exist" not in line


def test_metrics_on_a_binary_file_is_not_a_results_file(tmp_path, capsys):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\x00\xff\xfe\x80garbage" * 100)
    assert main(["metrics", str(path)]) == 1
    line = _one_line(capsys, 1, 1, "not a results file")
    assert "codec" not in line


def test_metrics_on_deeply_nested_json(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["metrics", str(path)]) == 1
    _one_line(capsys, 1, 1, "not a results file")


def test_hub_dataset_with_a_text_embedder_and_no_batch_size(tmp_path, monkeypatch):
    """`index --hf-dataset DIR --embedder text:...` without --batch-size passed batch_size=None to the embedder
    (a TypeError in the text embedder); now the embedder's own size is used."""
    from interactive_ir.assembly import models

    seen = {}

    class Stop(Exception):
        pass

    def make(kind, spec, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(models, "make", make)
    with pytest.raises(Stop):
        main(["-v", "index", "--hf-dataset", str(tmp_path), "--out", str(tmp_path / "x"), "--embedder", "text:any"])
    assert seen.get("batch_size", 1) is not None


def test_an_unexpected_exception_is_one_line_and_a_traceback_with_verbose(tmp_path, monkeypatch, capsys):
    from interactive_ir.commands import models_cmd

    def boom(args):
        raise ZeroDivisionError("x" * 10_000)

    monkeypatch.setattr(models_cmd, "run", boom)
    assert main(["models"]) == 1
    line = _one_line(capsys, 1, 1, "unexpected error", "ZeroDivisionError", "-v")
    assert len(line) < 400
    with pytest.raises(ZeroDivisionError):
        main(["-v", "models"])
