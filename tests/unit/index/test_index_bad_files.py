"""Hand-edited and unsafe index folders: a one-line IndexLoadError naming the file and the fix, never a
traceback (issue 15); format-1 indices (metadata.jsonl) still load; `index verify` on demand."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from iir_testutils import build_tiny

from interactive_ir.errors import IndexLoadError
from interactive_ir.index import load_index


def to_format1(folder):
    """Rewrite a format-2 index as the previous version wrote it (metadata.jsonl, no kind)."""
    from interactive_ir.index.store import sha256_file

    m = json.loads((folder / "manifest.json").read_text())
    db = sqlite3.connect(folder / "metadata.sqlite")
    with open(folder / "metadata.jsonl", "w") as f:
        for i, caps, w, h, b, t in db.execute("SELECT id, captions, width, height, bytes, mtime FROM records ORDER BY row"):
            f.write(json.dumps({"id": i, "captions": json.loads(caps), "width": w, "height": h, "bytes": b,
                                "mtime": t}) + "\n")
    db.close()
    (folder / "metadata.sqlite").unlink()
    for k in ("kind", "index_params", "metadata", "link_roots"):
        m.pop(k, None)
    m["format_version"] = 1
    del m["files"]["metadata.sqlite"]
    m["files"]["metadata.jsonl"] = {"bytes": (folder / "metadata.jsonl").stat().st_size,
                                    "sha256": sha256_file(folder / "metadata.jsonl")}
    (folder / "manifest.json").write_text(json.dumps(m))
    return m


def edit_manifest(folder, fn):
    m = json.loads((folder / "manifest.json").read_text())
    m = fn(m)
    (folder / "manifest.json").write_text(json.dumps(m))


def edit_jsonl(folder, line_no, text):
    p = folder / "metadata.jsonl"
    lines = p.read_text().splitlines()
    lines[line_no] = text
    p.write_text("\n".join(lines) + "\n")
    edit_manifest(folder, lambda m: {**m, "files": {**m["files"], "metadata.jsonl": {
        "bytes": p.stat().st_size, "sha256": "edited"}}})


def garbage_npy(folder):
    p = folder / "image_emb.npy"
    p.write_bytes(b"\x93NUMPY garbage" + b"\0" * (p.stat().st_size - 14))  # same size: only parsing can tell


def wrong_rows(folder):
    a = np.load(folder / "image_emb.npy")
    np.save(folder / "image_emb.npy", a[:-1])
    edit_manifest(folder, lambda m: {**m, "files": {k: v for k, v in m["files"].items() if k != "image_emb.npy"}})


CASES = {  # the seven hand-edited files of issue 15, then a vectors file with the wrong row count
    "manifest without embedder": (lambda f: edit_manifest(f, lambda m: {k: v for k, v in m.items() if k != "embedder"}),
                                  'manifest.json has no "embedder"'),
    "manifest without count": (lambda f: edit_manifest(f, lambda m: {k: v for k, v in m.items() if k != "count"}),
                               'manifest.json has no "count"'),
    "non-numeric dim": (lambda f: edit_manifest(f, lambda m: {**m, "dim": "thirty-two"}), '"dim" must be an integer'),
    "manifest as a list": (lambda f: (f / "manifest.json").write_text("[1, 2]"), "a JSON list, not an object"),
    "broken metadata line": (lambda f: edit_jsonl(f, 2, '{"id": "img001.png", "capt'), "metadata.jsonl line 3 is not JSON"),
    "id-less metadata line": (lambda f: edit_jsonl(f, 0, '{"captions": []}'), 'metadata.jsonl line 1 has no "id"'),
    "garbage image_emb.npy": (garbage_npy, "image_emb.npy is not a readable .npy file"),
    "vectors with the wrong row count": (wrong_rows, r"image_emb.npy holds 4x32 vectors but the manifest promises 5x32"),
    "id climbing out": (lambda f: edit_jsonl(f, 1, '{"id": "../../etc/passwd.png"}'), r"climbs out of the image root"),
    "absolute id": (lambda f: edit_jsonl(f, 1, '{"id": "/etc/shadow"}'), "is an absolute path"),
    "image root /": (lambda f: edit_manifest(f, lambda m: {**m, "image_root": "/"}), "the whole file system"),
    "unknown kind": (lambda f: edit_manifest(f, lambda m: {**m, "kind": "lsh"}), "unknown index kind 'lsh'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hand_edited_index_gives_one_line_naming_file_and_fix(tmp_path, case, capsys):
    from interactive_ir.cli import main

    build_tiny(tmp_path, n=5)
    folder = tmp_path / "index"
    to_format1(folder)
    damage, msg = CASES[case]
    damage(folder)
    with pytest.raises(IndexLoadError, match=msg) as e:
        load_index(folder)
    text = str(e.value)
    assert "\n" not in text and str(folder) in text and "python -m interactive_ir index" in text
    # the CLI: one line on stderr, exit 1, no traceback
    assert main(["search", "--index", str(folder), "--text", "a dog", "--embedder", "fake:32"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_format1_index_still_loads_and_searches(tmp_path):
    r, ids, caps = build_tiny(tmp_path, n=6)
    before = [h.id for h in r.search_text("a red dog", k=6)]
    to_format1(tmp_path / "index")
    from interactive_ir.retrieval.retriever import Retriever

    old = Retriever(load_index(tmp_path / "index"), r.embedder)
    assert old.index.kind == "exact" and [h.id for h in old.search_text("a red dog", k=6)] == before
    assert old.index.records[old.index.row_of[ids[0]]].captions == caps[ids[0]]


def test_unsafe_id_in_sqlite_metadata_is_refused(tmp_path):
    build_tiny(tmp_path, n=5)
    db = sqlite3.connect(tmp_path / "index" / "metadata.sqlite")
    db.execute("UPDATE records SET id = '../outside.png' WHERE row = 2")
    db.commit()
    db.close()
    edit_manifest(tmp_path / "index", lambda m: {**m, "files": {k: {**v, "bytes": (tmp_path / "index" / k).stat().st_size}
                                                                for k, v in m["files"].items()}})
    with pytest.raises(IndexLoadError, match=r"row 2: id '../outside.png' climbs out of the image root"):
        load_index(tmp_path / "index")


def test_link_planted_after_the_build_is_refused(tmp_path):
    r, ids, caps = build_tiny(tmp_path, n=5)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not for the web")
    target = tmp_path / "images" / ids[1]
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(IndexLoadError, match="is a link to .*secret.png, outside the image root"):
        load_index(tmp_path / "index")
    with pytest.raises(IndexLoadError, match="outside the image root"):  # and per image, at any size
        r.index.image_path(r.index.row_of[ids[1]])


def test_links_seen_by_the_build_stay_servable(tmp_path):
    from iir_testutils import make_images

    from interactive_ir.backends import make_embedder
    from interactive_ir.index.builder import BuildConfig, build_index

    make_images(tmp_path / "src", 3)
    (tmp_path / "links").mkdir()
    for p in sorted((tmp_path / "src").rglob("*.png")):
        (tmp_path / "links" / p.name).symlink_to(p)
    build_index(BuildConfig(images=tmp_path / "links", out=tmp_path / "idx"), make_embedder("fake:8"))
    index = load_index(tmp_path / "idx")
    assert index.image_path(0).name == index.ids[0]
    m = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert m["link_roots"] == sorted({str((tmp_path / "src").resolve()), str((tmp_path / "src" / "sub").resolve())})


def test_images_root_slash_is_refused_at_build(tmp_path):
    from interactive_ir.backends import make_embedder
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.builder import BuildConfig, build_index

    with pytest.raises(BadInputError, match="whole file system"):
        build_index(BuildConfig(images=tmp_path.anchor, out=tmp_path / "idx"), make_embedder("fake:8"))


def test_verify_on_demand_finds_a_flipped_byte(tmp_path, capsys):
    from interactive_ir.cli import main

    build_tiny(tmp_path, n=5)
    folder = tmp_path / "index"
    assert main(["index", "verify", str(folder)]) == 0
    assert "checksums match" in capsys.readouterr().out
    p = folder / "caption_emb.npy"
    b = bytearray(p.read_bytes())
    b[-1] ^= 0xFF
    p.write_bytes(bytes(b))
    load_index(folder)  # a load checks sizes, not checksums
    assert main(["index", "verify", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "caption_emb.npy is corrupt (checksum mismatch)" in err and err.count("\n") == 1


def test_sqlite_metadata_is_lazy_and_behaves_like_the_old_list_and_dict(tmp_path):
    from interactive_ir.index.metadata import SqliteMetadata

    r, ids, caps = build_tiny(tmp_path, n=7)
    idx = r.index
    assert isinstance(idx.meta, SqliteMetadata) and not hasattr(idx, "_rows")
    assert list(idx.ids) == ids and len(idx.ids) == len(idx) == len(idx.records) == 7
    assert idx.row_of.get("nope.png") is None and "nope.png" not in idx.row_of and ids[3] in idx.ids
    assert idx.row_of[ids[3]] == 3 and idx.ids[-1] == ids[-1] and idx.ids[1:3] == ids[1:3]
    assert [rec.id for rec in idx.records] == ids and idx.records[2].caption == caps[ids[2]][0]
    assert {k: idx.row_of[k] for k in idx.row_of} == {k: i for i, k in enumerate(ids)}
    with pytest.raises(KeyError):
        idx.row_of["nope.png"]
    with pytest.raises(IndexError):
        idx.records[7]
