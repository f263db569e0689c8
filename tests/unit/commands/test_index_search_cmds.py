"""CLI round trip index -> search on generated images, and bad input: one-line errors, non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from iir_testutils import ROOT, make_images, write_captions

from interactive_ir.cli import main


@pytest.fixture
def built(tmp_path, capsys):
    caps = make_images(tmp_path / "images", 12)
    write_captions(tmp_path / "c.jsonl", caps)
    assert main(["index", "--images", str(tmp_path / "images"), "--out", str(tmp_path / "idx"),
                 "--captions", str(tmp_path / "c.jsonl"), "--embedder", "fake:16", "--batch-size", "5"]) == 0
    assert "indexed 12 images" in capsys.readouterr().out
    return tmp_path, caps


def test_round_trip_json(built, capsys):
    tmp_path, caps = built
    assert main(["search", "--index", str(tmp_path / "idx"), "--text", "a red dog on the beach", "-k", "3", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 3 and set(hits[0]) == {"id", "path", "score", "caption"}
    assert hits[0]["caption"] == caps[hits[0]["id"]][0]
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]


def test_image_query_finds_itself(built, capsys):
    tmp_path, _ = built
    assert main(["search", "--index", str(tmp_path / "idx"), "--image", str(tmp_path / "images" / "img002.png"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["id"] == "img002.png"


@pytest.mark.parametrize("args,msg", [
    (["search", "--index", "{idx}", "--text", ""], "query is empty"),
    (["search", "--index", "{idx}", "--text", "x" * 10_000], "10,000 characters"),
    (["search", "--index", "{idx}", "--image", "{tmp}/c.jsonl"], "not a readable image"),
    (["search", "--index", "{tmp}/nothing", "--text", "dog"], "no index at"),
    (["search", "--index", "{idx}", "--text", "dog", "--embedder", "fake:8"], "built with fake:16"),
    (["index", "--images", "{tmp}/missing", "--out", "{tmp}/o", "--embedder", "fake:8"], "does not exist"),
    (["index", "--images", "{tmp}/images", "--out", "{tmp}/o", "--embedder", "fake:8", "--captions", "{tmp}/bad.csv"], "two columns"),
    (["index", "--images", "{tmp}/images", "--out", "{tmp}/o", "--embedder", "nope:1"], "unknown embedder spec"),
])
def test_bad_input_one_line_error(built, capsys, args, msg):
    tmp_path, _ = built
    (tmp_path / "bad.csv").write_text("justone\n")
    args = [a.format(idx=tmp_path / "idx", tmp=tmp_path) for a in args]
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and msg in err[0]
    assert not (tmp_path / "o").exists()


def test_module_entry_point_and_models_listing():
    out = subprocess.run([sys.executable, "-m", "interactive_ir", "models"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0
    for usage in ("open_clip:ARCH:PRETRAINED", "hf:REPO_OR_DIR", "text:REPO_OR_DIR", "fake:DIM", "openai-vision:MODEL[@BASE_URL]"):
        assert usage in out.stdout


def test_import_is_light():
    code = "import sys, interactive_ir, interactive_ir.engine, interactive_ir.backends; " \
           "print(sorted(m for m in ('torch','transformers','gradio','open_clip','sentence_transformers','faiss') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("word", ["none", "off", "OFF"])
def test_index_reads_captioner_and_embedder_as_the_assembly_does(tmp_path, capsys, monkeypatch, word):
    """`--captioner none|off` is no captioner (the one "no model" vocabulary, not a spec the backend refuses), and
    without --embedder the index is built with IIR_EMBEDDER (the one default-embedder rule)."""
    from interactive_ir.index import load_index

    make_images(tmp_path / "images", 4)
    monkeypatch.setenv("IIR_EMBEDDER", "fake:8")
    assert main(["index", "--images", str(tmp_path / "images"), "--out", str(tmp_path / "idx"),
                 "--captioner", word]) == 0
    assert "indexed 4 images" in capsys.readouterr().out
    index = load_index(tmp_path / "idx")
    assert index.embedder_spec == "fake:8" and not index.has_captions
