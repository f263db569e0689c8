"""Index builder and loader: formats, skips, updates, atomic writes, manifest checks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from iir_testutils import build_tiny, make_images, write_captions

from interactive_ir.backends import make_captioner, make_embedder
from interactive_ir.errors import BadInputError, IndexBuildError, IndexLoadError
from interactive_ir.index import load_index
from interactive_ir.index.builder import BuildConfig, build_index


def test_build_writes_all_files_and_manifest(tmp_path):
    r, ids, caps = build_tiny(tmp_path)
    m = json.loads((tmp_path / "index" / "manifest.json").read_text())
    assert m["embedder"] == "fake:32" and m["dim"] == 32 and m["count"] == len(ids) == 24
    assert set(m["files"]) == {"image_emb.npy", "caption_emb.npy", "faiss.index", "metadata.sqlite"}
    assert m["kind"] == "exact" and m["format_version"] == 2
    assert np.load(tmp_path / "index" / "image_emb.npy").dtype == np.float16
    rec = r.index.records[r.index.row_of["sub/img000.png"]]
    assert rec.captions == caps["sub/img000.png"] and rec.width == 48 and rec.height == 40
    assert r.index.image_path(0).exists()


def test_corrupt_and_bomb_images_are_skipped(tmp_path, monkeypatch):
    from PIL import Image

    make_images(tmp_path / "images", 6)
    (tmp_path / "images" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    Image.new("RGB", (300, 300)).save(tmp_path / "images" / "huge.png")
    monkeypatch.setenv("IIR_MAX_PIXELS", "50000")
    rep = build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "idx"), make_embedder("fake:8"))
    assert rep.count == 6 and {s[0] for s in rep.skipped} == {"broken.jpg", "huge.png"}
    assert "megapixels" in dict(rep.skipped)["huge.png"]
    assert json.loads((tmp_path / "idx" / "manifest.json").read_text())["skipped"] == 2


def test_rerun_embeds_only_new_images(tmp_path):
    from PIL import Image

    emb = make_embedder("fake:16")
    make_images(tmp_path / "images", 8)
    cfg = BuildConfig(images=tmp_path / "images", out=tmp_path / "idx")
    first = build_index(cfg, emb)
    before = load_index(tmp_path / "idx")
    Image.new("RGB", (20, 20), (1, 2, 3)).save(tmp_path / "images" / "new.png")
    second = build_index(cfg, emb)
    assert (first.embedded, second.embedded, second.reused, second.count) == (8, 1, 8, 9)
    after = load_index(tmp_path / "idx")
    for i in before.ids:
        assert np.array_equal(before.vectors([before.row_of[i]]), after.vectors([after.row_of[i]]))


def test_other_embedder_needs_rebuild(tmp_path):
    make_images(tmp_path / "images", 4)
    cfg = BuildConfig(images=tmp_path / "images", out=tmp_path / "idx")
    build_index(cfg, make_embedder("fake:16"))
    with pytest.raises(IndexBuildError, match="--rebuild"):
        build_index(cfg, make_embedder("fake:8"))
    cfg.rebuild = True
    assert build_index(cfg, make_embedder("fake:8")).count == 4


def test_interrupted_build_leaves_previous_index(tmp_path, monkeypatch):
    import interactive_ir.index.writer as b

    make_images(tmp_path / "images", 4)
    cfg = BuildConfig(images=tmp_path / "images", out=tmp_path / "idx")
    build_index(cfg, make_embedder("fake:16"))
    (tmp_path / "images" / "img001.png").unlink()

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(b, "make_index", boom)
    with pytest.raises(KeyboardInterrupt):
        build_index(cfg, make_embedder("fake:16"))
    assert len(load_index(tmp_path / "idx")) == 4  # the old index, untouched
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_interrupted_first_build_leaves_nothing_loadable(tmp_path, monkeypatch):
    import interactive_ir.index.writer as b

    make_images(tmp_path / "images", 3)
    monkeypatch.setattr(b, "make_index", lambda *a: (_ for _ in ()).throw(RuntimeError("disk full")))
    with pytest.raises(RuntimeError):
        build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "idx"), make_embedder("fake:8"))
    with pytest.raises(IndexLoadError, match="no index"):
        load_index(tmp_path / "idx")


@pytest.mark.parametrize("damage,msg", [
    (lambda p: (p / "faiss.index").write_bytes(b"junk"), "corrupt"),
    (lambda p: (p / "metadata.sqlite").unlink(), "missing metadata.sqlite"),
    (lambda p: (p / "manifest.json").write_text("{"), "manifest.json is corrupt"),
    (lambda p: (p / "manifest.json").unlink(), "no manifest.json"),
])
def test_damaged_index_errors_name_the_fix(tmp_path, damage, msg):
    build_tiny(tmp_path, n=5)
    damage(tmp_path / "index")
    with pytest.raises(IndexLoadError, match=msg) as e:
        load_index(tmp_path / "index")
    assert "python -m interactive_ir index" in str(e.value)


def test_empty_and_missing_folders(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInputError, match="no images"):
        build_index(BuildConfig(images=tmp_path / "empty", out=tmp_path / "i"), make_embedder("fake:8"))
    with pytest.raises(BadInputError, match="does not exist"):
        build_index(BuildConfig(images=tmp_path / "nope", out=tmp_path / "i"), make_embedder("fake:8"))


def test_captions_naming_missing_images(tmp_path):
    caps = make_images(tmp_path / "images", 4)
    caps["ghost.jpg"] = ["not here"]
    f = write_captions(tmp_path / "c.jsonl", caps)
    cfg = BuildConfig(images=tmp_path / "images", out=tmp_path / "i", captions=f)
    with pytest.raises(BadInputError, match="1 images that are not under"):
        build_index(cfg, make_embedder("fake:8"))
    cfg.skip_missing_captions = True
    assert build_index(cfg, make_embedder("fake:8")).count == 4


def test_caption_index_with_text_style_embedder(tmp_path):
    """A caption-only embedder indexes captions; images without one are skipped and counted."""
    from interactive_ir.backends.embedders import FakeEmbedder

    class TextOnly(FakeEmbedder):
        has_vision = False

        def embed_images(self, images):
            raise AssertionError("must not be called")

    caps = make_images(tmp_path / "images", 6)
    del caps["img001.png"]
    f = write_captions(tmp_path / "c.jsonl", caps)
    emb = TextOnly(16, spec="textonly")
    rep = build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "i", captions=f), emb)
    assert rep.count == 5 and rep.skipped[0][0] == "img001.png"
    idx = load_index(tmp_path / "i")
    assert idx.caption_only and not idx.has_captions
    want = emb.embed_texts(caps["img002.png"]).mean(0)
    got = idx.vectors([idx.row_of["img002.png"]])[0]
    assert np.allclose(got, want / np.linalg.norm(want), atol=2e-3)


def test_caption_index_reads_image_headers_only(tmp_path, monkeypatch):
    """A caption index never decodes pixels (build throughput): only each image's size is read."""
    import interactive_ir.index.builder as b
    from interactive_ir.backends.embedders import FakeEmbedder

    class TextOnly(FakeEmbedder):
        has_vision = False

    caps = make_images(tmp_path / "images", 5)
    f = write_captions(tmp_path / "c.jsonl", caps)
    monkeypatch.setattr(b, "open_image", lambda *a, **k: (_ for _ in ()).throw(AssertionError("decoded")))
    rep = build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "i", captions=f), TextOnly(8, spec="t"))
    idx = load_index(tmp_path / "i")
    assert rep.count == 5 and idx.records[idx.row_of["sub/img000.png"]].width == 48


def test_caption_index_build_reports_progress_during_the_build(tmp_path):
    """A caption-only build smaller than TEXT_GROUP still reports progress PROGRESS_STEPS times, not only at 100%."""
    import interactive_ir.index.builder as b
    from interactive_ir.backends.embedders import FakeEmbedder

    class TextOnly(FakeEmbedder):
        has_vision = False

    caps = make_images(tmp_path / "images", 16)
    f = write_captions(tmp_path / "c.jsonl", caps)
    seen = []
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "i", captions=f, batch_size=2),
                TextOnly(8, spec="t"), progress=lambda done, total, msg="": seen.append((done, total)))
    assert seen == [(2 * i, 16) for i in range(1, b.PROGRESS_STEPS + 1)]


def test_caption_index_encodes_many_images_captions_per_call(tmp_path, monkeypatch):
    """Caption-only builds hand TEXT_GROUP images' captions to one encode() call (which sorts them by length
    before its forward batches), not one call per --batch-size images; the vectors are the same."""
    import interactive_ir.index.builder as b
    from interactive_ir.backends.embedders import FakeEmbedder

    calls = []

    class TextOnly(FakeEmbedder):
        has_vision = False

        def embed_texts(self, texts):
            calls.append(len(texts))
            return super().embed_texts(texts)

    caps = make_images(tmp_path / "images", 10)
    f = write_captions(tmp_path / "c.jsonl", caps)
    monkeypatch.setattr(b, "TEXT_GROUP", 4)
    monkeypatch.setattr(b, "PROGRESS_STEPS", 1)
    emb = TextOnly(8, spec="t")
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "i", captions=f, batch_size=2), emb)
    per_image = sorted(len(caps[k]) for k in caps)
    assert len(calls) == 3 and sum(calls) == sum(per_image)  # 10 images in groups of 4, not 5 calls of 2
    idx = load_index(tmp_path / "i")
    for k in caps:
        want = emb.embed_texts(caps[k]).mean(0)
        assert np.allclose(idx.vectors([idx.row_of[k]])[0], want / np.linalg.norm(want), atol=2e-3)


def test_build_streams_rows_to_disk(tmp_path, monkeypatch):
    """Rows reach the writer batch by batch (no whole-collection array), in id order."""
    import interactive_ir.index.writer as w

    sizes = []
    real = w.IndexWriter.add

    def spy(self, records, image_vecs, caption_vecs=None):
        sizes.append(len(records))
        return real(self, records, image_vecs, caption_vecs)

    monkeypatch.setattr(w.IndexWriter, "add", spy)
    caps = make_images(tmp_path / "images", 10)
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "i", batch_size=3), make_embedder("fake:8"))
    assert sizes == [3, 3, 3, 1] and list(load_index(tmp_path / "i").ids) == sorted(caps)


def test_captioner_fills_missing_captions(tmp_path):
    make_images(tmp_path / "images", 3)
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "i"), make_embedder("fake:8"),
                captioner=make_captioner("fake"))
    idx = load_index(tmp_path / "i")
    assert all(r.caption.startswith("a mostly ") for r in idx.records) and idx.has_captions


def test_out_that_is_not_an_index_is_refused_untouched(tmp_path):
    """--out never replaces a folder of other files (or a file): the user's files stay."""
    make_images(tmp_path / "images", 3)
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.tex").write_text("three years of work")
    (tmp_path / "afile").write_text("keep me")
    emb = make_embedder("fake:8")
    for out, msg in ((tmp_path / "thesis", "not an index"), (tmp_path / "images", "not an index"),
                     (tmp_path / "afile", "is a file")):
        with pytest.raises(BadInputError, match=msg):
            build_index(BuildConfig(images=tmp_path / "images", out=out), emb)
    assert (tmp_path / "thesis" / "thesis.tex").read_text() == "three years of work"
    assert (tmp_path / "afile").read_text() == "keep me" and len(list((tmp_path / "images").iterdir())) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "images", "thesis"]  # no leftovers
    (tmp_path / "empty").mkdir()
    assert build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "empty"), emb).count == 3


def test_large_jpeg_records_its_file_size_not_the_draft_size(tmp_path):
    from PIL import Image

    (tmp_path / "images").mkdir()
    Image.new("RGB", (3000, 2200), (10, 120, 200)).save(tmp_path / "images" / "big.jpg", quality=60)
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "idx"), make_embedder("fake:8"))
    rec = load_index(tmp_path / "idx").records[0]
    assert (rec.width, rec.height) == (3000, 2200)


def test_rebuild_hint_runs_from_anywhere(tmp_path, monkeypatch):
    """The command printed for a damaged index has absolute paths and the captions file, and it works."""
    import shlex

    from interactive_ir.cli import main

    caps = make_images(tmp_path / "images", 5)
    f = write_captions(tmp_path / "c.jsonl", caps)
    monkeypatch.chdir(tmp_path)
    assert main(["index", "--images", "images", "--captions", "c.jsonl", "--out", "idx", "--embedder", "fake:8"]) == 0
    (tmp_path / "idx" / "faiss.index").write_bytes(b"junk")
    with pytest.raises(IndexLoadError) as e:
        load_index(tmp_path / "idx")
    cmd = shlex.split(str(e.value).split("rebuild: ", 1)[1])
    assert cmd[:4] == ["python", "-m", "interactive_ir", "index"]
    assert cmd[cmd.index("--captions") + 1] == str(f.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(cmd[3:]) == 0
    assert load_index(tmp_path / "idx").records[0].captions  # captions kept
