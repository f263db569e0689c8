"""The committed demo gallery (assets/demo) and its generator (scripts/make_demo_gallery.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo"
MANIFEST = DEMO / "manifest.jsonl"
SCRIPT = ROOT / "scripts" / "make_demo_gallery.py"
MAX_TOTAL_BYTES = 12 * 1024 * 1024


def _load_script():
    spec = importlib.util.spec_from_file_location("make_demo_gallery", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


gallery = _load_script()


def _rows() -> list[dict]:
    return [json.loads(line) for line in MANIFEST.read_text(encoding="utf-8").splitlines() if line.strip()]


# ------------------------------------------------------------------------------- the committed gallery


def test_manifest_has_at_least_300_unique_existing_images():
    rows = _rows()
    assert len(rows) >= 300
    names = [r["image"] for r in rows]
    assert len(set(names)) == len(names), "duplicate image names in manifest.jsonl"
    for name in names:
        assert "/" not in name and "\\" not in name and name == name.strip()
        assert (DEMO / name).is_file(), f"{name} is in manifest.jsonl but not in assets/demo"


def test_every_image_file_is_listed_in_the_manifest():
    listed = {r["image"] for r in _rows()}
    on_disk = {p.name for p in DEMO.iterdir() if p.suffix.lower() in {".png", ".jpg", ".jpeg"}}
    assert on_disk == listed


def test_manifest_rows_have_captions_source_and_license():
    for r in _rows():
        assert isinstance(r["caption"], str) and len(r["caption"].split()) >= 3, r
        assert r["captions"] and all(isinstance(c, str) and c.strip() for c in r["captions"]), r
        assert r["caption"] in r["captions"]
        assert r["source"].startswith("openclipart (Debian openclipart-png"), r
        assert r["source_path"].startswith("/usr/share/openclipart/png/"), r
        assert r["license"] == "public domain"


def test_captions_are_distinct_and_name_a_subject():
    caps = [r["caption"] for r in _rows()]
    assert len(set(caps)) == len(caps)
    for c in caps:
        title = c.removeprefix("clipart of ").split(";")[0].split(":")[0]
        assert any(ch.isalpha() for ch in title), c


def test_gallery_mixes_categories():
    cats = {r["image"].split("_", 1)[0] for r in _rows()}
    assert {"animals", "food", "transportation", "people", "buildings", "plants"} <= cats
    assert len(cats) >= 10


def test_images_open_as_small_rgb_and_total_size_is_bounded():
    total = 0
    for r in _rows():
        path = DEMO / r["image"]
        total += path.stat().st_size
        with Image.open(path) as im:
            im.verify()
        with Image.open(path) as im:
            assert max(im.size) <= 256, (r["image"], im.size)
            assert im.mode in {"RGB", "P", "L"}, (r["image"], im.mode)  # no alpha: flattened on white
    assert total < MAX_TOTAL_BYTES, f"gallery images take {total / 1e6:.1f} MB"


def test_sources_md_states_license_and_regeneration():
    text = (DEMO / "SOURCES.md").read_text(encoding="utf-8")
    assert "public domain" in text.lower()
    assert "openclipart-png" in text and "openclipart-svg" in text
    assert "python scripts/make_demo_gallery.py --out assets/demo" in text


def test_manifest_reads_as_a_captions_file():
    from interactive_ir.index.captions_io import read_captions

    caps = read_captions(MANIFEST)
    rows = _rows()
    assert len(caps) == len(rows)
    assert caps[rows[0]["image"]] == rows[0]["captions"]


# ------------------------------------------------------------------------------- generator: metadata

SVG_TEMPLATE = """<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:cc="http://web.resource.org/cc/"
     xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
     xmlns:xlink="http://www.w3.org/1999/xlink">
  <metadata><rdf:RDF><cc:Work rdf:about="">
    <dc:title>{title}</dc:title>
    <dc:description>{description}</dc:description>
    <dc:subject><rdf:Bag>{keywords}</rdf:Bag></dc:subject>
    <dc:publisher><cc:Agent><dc:title>Open Clip Art Library</dc:title></cc:Agent></dc:publisher>
    <dc:creator><cc:Agent><dc:title>{creator}</dc:title></cc:Agent></dc:creator>
  </cc:Work></rdf:RDF></metadata>
  {body}
</svg>
"""


def _svg(title="", description="", keywords=(), creator="Jane Doe", body="<rect width='9' height='9'/>"):
    kws = "".join(f"<rdf:li>{k}</rdf:li>" for k in keywords)
    return SVG_TEMPLATE.format(title=title, description=description, keywords=kws, creator=creator, body=body)


def test_read_svg_metadata_takes_the_work_title_not_the_agents(tmp_path):
    p = tmp_path / "a.svg"
    p.write_text(_svg("Red Apple", "a shiny apple", ["fruit", "food"], creator="Jane Doe"))
    meta = gallery.read_svg_metadata(p)
    assert meta == gallery.SvgMeta("Red Apple", "a shiny apple", ("fruit", "food"), "Jane Doe")


def test_read_svg_metadata_none_for_broken_or_metadata_free_files(tmp_path):
    broken = tmp_path / "b.svg"
    broken.write_text("<svg><metadata>")
    bare = tmp_path / "c.svg"
    bare.write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    assert gallery.read_svg_metadata(broken) is None
    assert gallery.read_svg_metadata(bare) is None


def test_has_external_image_flags_file_links_but_not_inline_data(tmp_path):
    linked = tmp_path / "l.svg"
    linked.write_text(_svg("Tux", body='<image xlink:href="/home/me/tux.png" width="9" height="9"/>'))
    inline = tmp_path / "i.svg"
    inline.write_text(_svg("Tux", body='<image xlink:href="data:;base64,iVBORw0" width="9" height="9"/>'))
    assert gallery.has_external_image(linked)
    assert not gallery.has_external_image(inline)


VOCAB = frozenset({"red", "apple", "dog", "bored", "house", "cat", "jigsaw", "blue", "cheetah", "contour", "hot"})


@pytest.mark.parametrize(
    "raw, stem, creator, expected",
    [
        ("Red Apple", "red_apple_01", "Jane Doe", "Red Apple"),
        ("  bored_dog 03 ", "bored_dog_01", "", "bored dog"),
        ("", "x", "", None),  # empty
        ("12345", "x", "", None),  # just numbers
        ("Lemon SVG theme", "apple", "", None),  # icon-theme name
        ("Part of the Flat Icon Collection (Wed Aug 25 23:29:46 2004)", "cat", "", None),
        ("Jane Doe", "house", "Jane Doe", None),  # the author, not the picture
        ("House Jane Doe", "house", "Jane Doe", "House"),  # author's name cut out of the title
        ("Cavallo", "cavallo_01", "", None),  # not English
        ("Le mie tigri preferite", "x", "", None),
        ("Red cavallo apple", "x", "", "Red cavallo apple"),  # 2 of 3 words English
        ("Clipart by Nicu Buculei - contour_chipmunk", "contour_cheetah", "Nicu Buculei", "contour cheetah"),
        ("Clipart by Nicu Buculei - jigsaw_red_10", "jigsaw_blue_05", "Nicu Buculei", "jigsaw blue"),
        ("Clipart by Nicu Buculei - jigsaw_blue_10", "jigsaw_blue_05", "Nicu Buculei", "jigsaw blue"),
        ("apple (email: jane@example.org)", "apple", "", "apple"),
    ],
)
def test_clean_title(raw, stem, creator, expected):
    assert gallery.clean_title(raw, stem, creator, VOCAB) == expected


def test_clean_title_keeps_other_languages_without_a_vocabulary():
    assert gallery.clean_title("Cavallo", "cavallo_01", "", None) == "Cavallo"


def test_is_english_accepts_simple_plurals():
    assert gallery.is_english("red apples", VOCAB)
    assert gallery.is_english("cats", VOCAB)
    assert not gallery.is_english("gatti", VOCAB)
    assert not gallery.is_english("12 34", VOCAB)


def test_clean_description_drops_junk_and_repeats():
    assert gallery.clean_description("HASH(0x862bbb8)", "ireland") == ""
    assert gallery.clean_description("EPS converted from http://aiga.org", "bus") == ""
    assert gallery.clean_description("mail me at jane@example.org", "apple") == ""
    assert gallery.clean_description("Red apple.", "red apple") == ""  # says nothing new
    assert gallery.clean_description("a hot red apple!", "apple") == "a hot red apple"
    assert gallery.clean_description("Simbolo delle scatole", "apple", VOCAB) == ""  # not English
    long = "word " * 60
    out = gallery.clean_description(long, "apple")
    assert out.endswith("...") and len(out) <= 143


def test_clean_keywords_drops_plumbing_author_and_duplicates():
    raw = ["hash", "", "0x862bbb8", "fruit", "Jane", "jane doe", "rome,italy", "x@y.org", "fruit", "red apple",
           "collanttuttonudoelasticocomfort", "lemon_theme_icon", "icons"]
    kws = gallery.clean_keywords(raw, ("food", "fruits_and_nuts"), "Red Apple", "Jane Doe")
    assert kws == ("fruit", "rome", "italy", "food", "fruits and nuts")


def test_build_caption_reads_as_a_sentence():
    assert gallery.build_caption("red apple", "", ["fruit", "food"]) == "clipart of red apple; keywords: fruit, food"
    assert gallery.build_caption("dog", "a bored dog", []) == "clipart of dog: a bored dog"
    assert gallery.build_caption("x y", "", [str(i) for i in range(20)], max_keywords=2) == (
        "clipart of x y; keywords: 0, 1"
    )


def test_slugify_and_title_key():
    assert gallery.slugify("Crème Brûlée (B&W) #2") == "creme-brulee-b-w-2"
    assert gallery.slugify("!!!") == "x"
    assert len(gallery.slugify("a" * 100)) == 24
    assert gallery.title_key("Hot Dog (B and W)") == gallery.title_key("hot dog") == "hot dog"


# ------------------------------------------------------------------------------- generator: selection


def test_round_robin_takes_weight_items_per_round_until_exhausted():
    order = list(gallery._round_robin([iter("abcde"), iter("XY"), iter("zz")], [2, 1, 0]))
    assert order == ["a", "b", "X", "c", "d", "Y", "e"]


def _cand(path: str, title: str):
    parts = tuple(Path(path).parent.parts)
    return gallery.Candidate(Path("/png") / path, Path("/svg") / path, parts, title, "", ())


def test_interleave_is_deterministic_and_alternates_categories():
    cands = [_cand(f"animals/a{i}.png", f"animal {i}") for i in range(6)]
    cands += [_cand(f"food/f{i}.png", f"food {i}") for i in range(6)]
    first = [c.title for c in gallery.interleave(cands, seed=3)]
    again = [c.title for c in gallery.interleave(list(reversed(cands)), seed=3)]
    assert first == again  # input order does not matter, the seed does
    assert sorted(first) == sorted(c.title for c in cands)
    w = gallery.CATEGORY_WEIGHTS["animals"]
    assert gallery.CATEGORY_WEIGHTS["food"] == w
    heads = [t.split()[0] for t in first[: 2 * w]]
    assert heads == ["animal"] * w + ["food"] * w


# ------------------------------------------------------------------------------- generator: images


def _canvas(size=(400, 300), box=(100, 100, 300, 200), color=(200, 30, 30, 255)):
    im = Image.new("RGBA", size, (0, 0, 0, 0))  # transparent background
    im.paste(Image.new("RGBA", (box[2] - box[0], box[3] - box[1]), color), box[:2])
    return im


def test_fit_image_flattens_on_white_crops_to_the_drawing_and_shrinks():
    out = gallery.fit_image(_canvas(), max_side=128, min_content_side=50)
    assert out.mode == "RGB"
    # drawing is 200x100; 4% margin = 8 px each side -> 216x116, shrunk to fit 128 -> 128x69
    assert out.size == (128, 69)
    assert out.getpixel((0, 0)) == (255, 255, 255)  # margin: transparent became white
    assert out.getpixel((64, 34)) == (200, 30, 30)


def test_fit_image_rejects_blank_tiny_and_strip_drawings():
    blank = Image.new("RGBA", (300, 300), (0, 0, 0, 0))
    assert gallery.fit_image(blank, 256, 50) is None
    tiny = _canvas(box=(10, 10, 40, 40))  # 30 px drawing on a 400 px canvas
    assert gallery.fit_image(tiny, 256, 50) is None
    strip = _canvas(box=(0, 100, 400, 120))  # 400x20 line
    assert gallery.fit_image(strip, 256, 50) is None


def test_encode_png_quantizes_big_files(tmp_path):
    import random

    rng = random.Random(0)
    noisy = Image.new("RGB", (200, 200))
    noisy.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(200 * 200)])
    small = gallery.encode_png(noisy, max_bytes=10_000)
    full = gallery.encode_png(noisy, max_bytes=10**9)
    assert len(small) < len(full)
    p = tmp_path / "n.png"
    p.write_bytes(small)
    with Image.open(p) as im:
        assert im.mode == "P" and im.size == (200, 200)


# ------------------------------------------------------------------------------- generator: end to end


def _fake_tree(root: Path) -> tuple[Path, Path, Path]:
    png_root, svg_root = root / "png", root / "svg"
    items = [
        ("animals/dogs/bored_dog_01", "Bored dog", ["mammal", "dog"]),
        ("animals/cats/cat_01", "cat", ["mammal"]),
        ("animals/cats/cat_02", "Cat", ["mammal"]),  # same title as cat_01: only one is kept
        ("food/red_apple", "Red Apple", ["fruit"]),
        ("food/numbers", "1234", ["fruit"]),  # meaningless title: skipped
        ("buildings/house", "House", ["home"]),
        ("buildings/blank", "blue house", []),  # blank picture: skipped
    ]
    for rel, title, kws in items:
        (png_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (svg_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (svg_root / f"{rel}.svg").write_text(_svg(title, "", kws))
        img = _canvas() if "blank" not in rel else Image.new("RGBA", (300, 300), (0, 0, 0, 0))
        img.save(png_root / f"{rel}.png")
    words = root / "words"
    words.write_text("\n".join(sorted(VOCAB)) + "\n")
    return png_root, svg_root, words


def test_build_gallery_end_to_end(tmp_path):
    png_root, svg_root, words = _fake_tree(tmp_path)
    out = tmp_path / "demo"
    out.mkdir()
    (out / "animals_old_0099.png").write_bytes(b"stale")  # from an earlier run: removed
    (out / "README.txt").write_text("keep me")  # not ours: kept
    entries = gallery.build_gallery(out, 4, png_root=png_root, svg_root=svg_root, words=words, max_side=64)
    assert len(entries) == 4
    assert not (out / "animals_old_0099.png").exists() and (out / "README.txt").exists()
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [r["image"] for r in rows] == [e.image for e in entries]
    captions = {r["caption"] for r in rows}
    assert "clipart of Bored dog; keywords: mammal, dog, animals, dogs" in captions
    assert "clipart of Red Apple; keywords: fruit, food" in captions
    assert "clipart of House; keywords: home, buildings" in captions
    assert sum(c.lower().startswith("clipart of cat;") for c in captions) == 1
    for r in rows:
        assert gallery.IMAGE_NAME_RE.match(r["image"]), r["image"]
        assert r["license"] == "public domain" and r["captions"] == [r["caption"]]
        assert Path(r["source_path"]).is_relative_to(png_root)
        with Image.open(out / r["image"]) as im:
            assert max(im.size) <= 64 and im.mode == "RGB"
    assert "4 clipart images" in (out / "SOURCES.md").read_text()
    # same inputs, same gallery
    again = gallery.build_gallery(tmp_path / "demo2", 4, png_root=png_root, svg_root=svg_root, words=words,
                                  max_side=64)
    assert [e.caption for e in again] == [e.caption for e in entries]


def test_build_gallery_says_when_too_few_images(tmp_path):
    png_root, svg_root, words = _fake_tree(tmp_path)
    with pytest.raises(gallery.GalleryError, match="only 4 usable images"):
        gallery.build_gallery(tmp_path / "o", 10, png_root=png_root, svg_root=svg_root, words=words)


def test_missing_package_error_gives_the_apt_get_command(tmp_path):
    with pytest.raises(gallery.GalleryError, match="apt-get install -y openclipart-png openclipart-svg"):
        gallery.check_roots(tmp_path / "nope", tmp_path)


def test_missing_word_list_error_names_the_package(tmp_path):
    with pytest.raises(gallery.GalleryError, match="apt-get install -y wamerican"):
        gallery.load_english_words(tmp_path / "no-words")


def test_main_returns_2_and_logs_the_hint_when_packages_are_missing(tmp_path, caplog):
    rc = gallery.main(["--out", str(tmp_path / "o"), "--png-root", str(tmp_path / "none"),
                       "--svg-root", str(tmp_path / "none")])
    assert rc == 2
    assert "openclipart-png is not installed" in caplog.text
