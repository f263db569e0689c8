"""`index --image-list FILE`: index a given subset of a folder; a list naming missing files writes nothing."""

from __future__ import annotations

import json

import pytest
from iir_testutils import make_images, write_captions

from interactive_ir.cli import main


@pytest.fixture
def images(tmp_path):
    caps = make_images(tmp_path / "images", 8)
    write_captions(tmp_path / "c.jsonl", caps)
    return tmp_path, sorted(caps)


def test_indexes_only_the_listed_images(images, capsys):
    tmp_path, names = images
    chosen = [names[5], names[1], names[3]]
    (tmp_path / "list.txt").write_text("# a subset\n" + "\n".join(chosen) + "\n\n" + names[1] + "\n")
    assert main(["index", "--images", str(tmp_path / "images"), "--image-list", str(tmp_path / "list.txt"),
                 "--out", str(tmp_path / "idx"), "--captions", str(tmp_path / "c.jsonl"), "--embedder", "fake:16"]) == 0
    assert "indexed 3 images" in capsys.readouterr().out
    assert main(["search", "--index", str(tmp_path / "idx"), "--text", "dog", "-k", "8", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    hits = hits["results"] if isinstance(hits, dict) else hits
    assert sorted(h["id"] for h in hits) == sorted(chosen)


@pytest.mark.parametrize("listed, msg", [
    (["{0}", "nope1.png", "sub/nope2.png", "nope3.png", "nope4.png"], "names 4 of 5 files not found"),
    (["../outside.png"], "'../outside.png'"),
    (["# only a comment"], "names no images"),
])
def test_missing_files_one_line_error_nothing_written(images, capsys, listed, msg):
    tmp_path, names = images
    (tmp_path / "outside.png").write_bytes((tmp_path / "images" / names[0]).read_bytes())
    (tmp_path / "list.txt").write_text("\n".join(x.format(names[0]) for x in listed) + "\n")
    assert main(["index", "--images", str(tmp_path / "images"), "--image-list", str(tmp_path / "list.txt"),
                 "--out", str(tmp_path / "o"), "--embedder", "fake:16"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and msg in err[0], err
    if "4 of 5" in msg:
        assert "'nope1.png', 'sub/nope2.png', 'nope3.png' and 1 more" in err[0]
    assert not (tmp_path / "o").exists()


def test_list_file_missing(images, capsys):
    tmp_path, _ = images
    assert main(["index", "--images", str(tmp_path / "images"), "--image-list", str(tmp_path / "absent.txt"),
                 "--out", str(tmp_path / "o"), "--embedder", "fake:16"]) == 1
    assert "--image-list" in capsys.readouterr().err and not (tmp_path / "o").exists()
