"""Issue 40 item 7: a link the build skipped adds no served folder (a skipped link to /etc/passwd widened the served
link roots to /etc), and the image route serves a link only from a folder an accepted file was in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from iir_testutils import make_images

from interactive_ir.backends import make_embedder
from interactive_ir.index.builder import BuildConfig, build_index
from interactive_ir.ui.serving import files


def _build(tmp_path: Path) -> dict:
    build_index(BuildConfig(images=tmp_path / "links", out=tmp_path / "idx"), make_embedder("fake:8"))
    return json.loads((tmp_path / "idx" / "manifest.json").read_text())


def test_a_skipped_link_adds_no_link_root(tmp_path):
    make_images(tmp_path / "links", 3)
    (tmp_path / "links" / "passwd.jpg").symlink_to("/etc/passwd")  # not an image: skipped
    noise = tmp_path / "elsewhere"
    noise.mkdir()
    (noise / "junk.png").write_bytes(b"not a png at all")
    (tmp_path / "links" / "junk.png").symlink_to(noise / "junk.png")  # unreadable: skipped
    m = _build(tmp_path)
    assert m["link_roots"] == []
    assert "/etc" not in m["link_roots"] and str(noise.resolve()) not in m["link_roots"]


def test_an_accepted_link_adds_its_folder(tmp_path):
    make_images(tmp_path / "src", 2)
    (tmp_path / "links").mkdir()
    for p in sorted((tmp_path / "src").glob("*.png")):
        (tmp_path / "links" / p.name).symlink_to(p)
    m = _build(tmp_path)
    assert m["link_roots"] == [str((tmp_path / "src").resolve())]


def test_a_link_root_serves_its_own_files_not_its_sub_folders(tmp_path):
    root, src = tmp_path / "links", tmp_path / "src"
    (src / "deeper").mkdir(parents=True)
    root.mkdir()
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 32
    (src / "a.png").write_bytes(png)
    (src / "deeper" / "b.png").write_bytes(png)
    (root / "a.png").symlink_to(src / "a.png")
    (root / "b.png").symlink_to(src / "deeper" / "b.png")
    roots = [str(src.resolve())]
    assert files.inside(root, "a.png", roots) == (src / "a.png").resolve()
    with pytest.raises(files.NotServed, match="outside the image root"):
        files.inside(root, "b.png", roots)  # a folder below a link root was never seen by the build


@pytest.mark.parametrize("system", ["/etc", "/proc/self", "/", ""])
def test_a_system_folder_is_never_a_link_root_whatever_the_manifest_says(tmp_path, system):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "p.png").symlink_to("/etc/hostname" if Path("/etc/hostname").exists() else "/etc/passwd")
    with pytest.raises(files.NotServed):
        files.inside(tmp_path / "images", "p.png", [system])
