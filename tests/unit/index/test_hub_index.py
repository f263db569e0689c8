"""Issue 27: index a Hub dataset, push an index to the Hub, load one from hf://USER/NAME.

Everything runs against tests/hub_standin.py, a local stand-in for the Hub on 127.0.0.1 that speaks the
Hub's real HTTP API; huggingface_hub's own clients talk to it through HF_ENDPOINT.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from hub_standin import StandInHub

from interactive_ir.cli import main
from interactive_ir.errors import BadInputError, HubError, HubUnreachableError, IndexLoadError

TOKEN = "hf_standin_token"
COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40)]


def _png(colour, size=(24, 18)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def _parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=2)
    return buf.getvalue()


def dataset_rows() -> list[dict]:
    """4 distinct images in 6 rows: photo p0 twice (its captions merge), one broken image."""
    rows = [{"image": {"bytes": _png(c), "path": f"p{i}.png"}, "pid": f"p{i}", "caption": [f"a {n} square"],
             "licence": "cc0"} for i, (c, n) in enumerate(zip(COLOURS, ["red", "green", "blue", "yellow"]))]
    rows.append({"image": {"bytes": _png(COLOURS[0]), "path": "p0.png"}, "pid": "p0", "caption": ["a crimson block"],
                 "licence": "cc0"})
    rows.append({"image": {"bytes": b"not an image at all", "path": "bad.png"}, "pid": "bad", "caption": ["broken"],
                 "licence": "cc0"})
    return rows


@pytest.fixture
def hub(tmp_path, monkeypatch):
    standin = StandInHub(TOKEN)
    standin.add_repo("dataset", "alice/squares", {"README.md": b"# squares\n",
                                                   "data/train-00000-of-00001.parquet": _parquet(dataset_rows()),
                                                   "data/test-00000-of-00001.parquet": _parquet(dataset_rows()[:1])})
    standin.add_repo("dataset", "alice/secret", {"data/train.parquet": _parquet(dataset_rows()[:2])}, private=True)
    standin.add_repo("dataset", "alice/noimage", {"data/train.parquet": _parquet([{"text": "a", "x": 1}])})
    url = standin.start()
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    import huggingface_hub.constants

    # an earlier test's go_offline() may have set the library's module constant (read once, at import)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    yield standin
    standin.stop()


def _build(out: Path, *extra: str) -> int:
    return main(["index", "--hf-dataset", "alice/squares", "--id-column", "pid", "--out", str(out),
                 "--embedder", "fake:16", "--workers", "1", *extra])


def test_index_a_hub_dataset_streams_rows_stores_images_once(hub, tmp_path, capsys):
    from interactive_ir.index import load_index

    assert _build(tmp_path / "idx") == 0
    out = capsys.readouterr().out
    assert "indexed 4 images from 6 rows" in out and "broken image" in out
    idx = load_index(tmp_path / "idx", verify=True)
    assert sorted(idx.ids) == ["p0.png", "p1.png", "p2.png", "p3.png"]
    assert sorted(p.name for p in (tmp_path / "idx" / "images").iterdir()) == ["p0.png", "p1.png", "p2.png", "p3.png"]
    assert idx.records[idx.row_of["p0.png"]].captions == ["a red square", "a crimson block"]  # two rows, one image
    assert Path(idx.image_file(idx.row_of["p2.png"])).read_bytes() == _png(COLOURS[2])
    cols = [json.loads(line) for line in (tmp_path / "idx" / "columns.jsonl").read_text().splitlines()]
    assert {c["id"] for c in cols} == {"p0.png", "p1.png", "p2.png", "p3.png"} and cols[0]["licence"] == "cc0"
    assert idx.manifest["source"]["hf_dataset"] == "alice/squares" and idx.manifest["image_root"] == "images"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_limit_and_split(hub, tmp_path):
    from interactive_ir.index import load_index

    assert _build(tmp_path / "two", "--limit", "2") == 0
    assert len(load_index(tmp_path / "two")) == 2
    assert _build(tmp_path / "test", "--split", "test") == 0
    assert list(load_index(tmp_path / "test").ids) == ["p0.png"]
    assert _build(tmp_path / "none", "--split", "validation") == 1  # names the splits there are


def test_bad_datasets_give_one_clear_line(hub, tmp_path, capsys, monkeypatch):
    rc = main(["index", "--hf-dataset", "alice/noimage", "--out", str(tmp_path / "a"), "--embedder", "fake:16"])
    err = capsys.readouterr().err
    assert rc == 1 and "no image column 'image'" in err and "text, x" in err
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_home"))  # no saved token either
    rc = main(["index", "--hf-dataset", "alice/secret", "--out", str(tmp_path / "b"), "--embedder", "fake:16"])
    err = capsys.readouterr().err
    assert rc == 1 and "private" in err and "HF_TOKEN" in err and TOKEN not in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # with the token the private dataset indexes
    assert main(["index", "--hf-dataset", "alice/secret", "--out", str(tmp_path / "b"), "--embedder", "fake:16"]) == 0


def test_local_parquet_folder_and_imagefolder_take_the_same_path(tmp_path):
    from interactive_ir.index import load_index

    (tmp_path / "pq").mkdir()
    (tmp_path / "pq" / "train.parquet").write_bytes(_parquet(dataset_rows()))
    assert main(["index", "--hf-dataset", str(tmp_path / "pq"), "--out", str(tmp_path / "i1"),
                 "--embedder", "fake:16", "--workers", "1"]) == 0
    assert len(load_index(tmp_path / "i1")) == 4  # content hashes: the repeated image is stored once
    folder = tmp_path / "imgs"
    folder.mkdir()
    for i, c in enumerate(COLOURS[:3]):
        (folder / f"x{i}.png").write_bytes(_png(c))
    (folder / "metadata.jsonl").write_text("".join(json.dumps({"file_name": f"x{i}.png", "text": f"thing {i}"}) + "\n"
                                                   for i in range(3)))
    assert main(["index", "--hf-dataset", str(folder), "--out", str(tmp_path / "i2"), "--embedder", "fake:16"]) == 0
    idx = load_index(tmp_path / "i2")
    assert sorted(idx.ids) == ["x0.png", "x1.png", "x2.png"] and idx.records[idx.row_of["x1.png"]].captions == ["thing 1"]


def _pushed(hub, tmp_path) -> Path:
    assert _build(tmp_path / "idx") == 0
    assert main(["index", "push", str(tmp_path / "idx"), "--repo", "alice/squares-index", "--license", "cc0-1.0"]) == 0
    return tmp_path / "idx"


def test_push_uploads_index_images_and_a_card(hub, tmp_path, capsys):
    _pushed(hub, tmp_path)
    files = hub.repos[("dataset", "alice/squares-index")].files
    assert {"manifest.json", "faiss.index", "image_emb.npy", "metadata.sqlite", "README.md", "images/p3.png"} <= set(files)
    card = files["README.md"].decode()
    assert "fake:16" in card and "| images | 4" in card and "cc0-1.0" in card and "IIR_INDEX=hf://alice/squares-index" in card
    assert "IIR_INDEX=hf://alice/squares-index" in capsys.readouterr().out


def test_push_needs_a_token(hub, tmp_path, monkeypatch, capsys):
    assert _build(tmp_path / "idx") == 0
    monkeypatch.delenv("HF_TOKEN")
    assert main(["index", "push", str(tmp_path / "idx"), "--repo", "alice/x"]) == 1
    assert "token" in capsys.readouterr().err and ("dataset", "alice/x") not in hub.repos


def test_search_an_index_from_the_hub_then_from_the_cache(hub, tmp_path, capsys):
    _pushed(hub, tmp_path)
    capsys.readouterr()
    assert main(["search", "--index", "hf://alice/squares-index", "--text", "a red square", "-k", "2", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits["results"] if isinstance(hits, dict) else hits) == 2
    hub.requests.clear()
    from interactive_ir.index.hub_index import pull_index

    again = pull_index("hf://alice/squares-index")
    assert not [r for r in hub.requests if "image_emb.npy" in r[1] or "/images/" in r[1]]  # nothing downloaded again
    hub.stop()  # the Hub goes away: the cached copy still loads
    from interactive_ir.index import load_index

    assert pull_index("hf://alice/squares-index") == again and len(load_index(again)) == 4


def test_corrupt_download_is_refused_and_not_kept(hub, tmp_path):
    _pushed(hub, tmp_path)
    repo = hub.repos[("dataset", "alice/squares-index")]
    good = repo.files["image_emb.npy"]
    repo.served["image_emb.npy"] = good[:-4] + b"\x00\x00\x00\x01"  # same size, other bytes
    from interactive_ir.index.hub_index import pull_index

    with pytest.raises(HubError, match="checksum"):
        pull_index("hf://alice/squares-index")
    cache = Path(os.environ["HF_HOME"]) / "hub"
    assert not [p for p in cache.rglob("image_emb.npy")]  # no snapshot link left
    blobs = [p for p in cache.rglob("blobs/*")]
    assert all(p.read_bytes() != repo.served["image_emb.npy"] for p in blobs)
    repo.served.clear()  # the next try downloads it again and succeeds
    assert (pull_index("hf://alice/squares-index") / "manifest.json").is_file()


def test_another_embedders_index_is_refused_before_download(hub, tmp_path):
    _pushed(hub, tmp_path)
    hub.requests.clear()
    from interactive_ir.index.hub_index import pull_index

    with pytest.raises(IndexLoadError, match="built with fake:16, not fake:32"):
        pull_index("hf://alice/squares-index", expect_embedder="fake:32")
    assert [r for r in hub.requests if "manifest.json" in r[1]] and not [r for r in hub.requests if ".npy" in r[1]]


def test_unreachable_hub_at_start_serves_the_demo_with_a_note(hub, tmp_path, monkeypatch):
    from iir_testutils import make_images, write_captions

    from interactive_ir.assembly import app_index as demo

    caps = make_images(tmp_path / "gallery", 6)
    write_captions(tmp_path / "gallery" / "manifest.jsonl", caps)
    monkeypatch.setattr(demo, "DEMO_IMAGES", tmp_path / "gallery")
    monkeypatch.setattr(demo, "DEMO_CAPTIONS", tmp_path / "gallery" / "manifest.jsonl")
    monkeypatch.setenv("IIR_INDICES_DIR", str(tmp_path / "indices"))
    hub.stop()
    s = demo.prepare(index=Path("hf://alice/squares-index"), embedder_spec="fake:16")
    assert len(s.retriever.index) == 6
    assert any("cannot be reached" in n and "demo gallery" in n for n in s.notes)
    from interactive_ir.index.hub_index import pull_index

    with pytest.raises(HubUnreachableError):
        pull_index("hf://alice/squares-index")


def test_hub_spec_parsing():
    from interactive_ir.index.hub_index import is_hub_spec, parse_spec

    assert parse_spec("hf://alice/idx@v1") == ("dataset", "alice/idx", "v1")
    assert parse_spec(str(Path("hf://models/alice/idx"))) == ("model", "alice/idx", "")  # Path folds the //
    assert is_hub_spec(Path("hf://a/b")) and not is_hub_spec(Path("indices/hf"))
    with pytest.raises(BadInputError):
        parse_spec("hf://just-a-name")
