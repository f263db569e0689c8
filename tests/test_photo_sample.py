"""The generated captioned photo sample that ships with the tests (issue 31, item 2): the end-to-end tests
use it where Flickr8k is absent, so it must be whole, small, and say what its pictures show."""

from __future__ import annotations

import json
import sys

from iir_testutils import PHOTO_SAMPLE, ROOT, SAMPLE_ENV, photo_data, photo_rows


def test_the_sample_is_whole_small_and_in_flickr8ks_layout():
    from PIL import Image

    rows = [json.loads(line) for line in open(PHOTO_SAMPLE / "captions.jsonl", encoding="utf-8")]
    assert len(rows) >= 24 and len({r["image"] for r in rows}) == len(rows)
    assert all(len(r["captions"]) == 5 and all(c.strip() for c in r["captions"]) for r in rows)
    assert all(len(set(r["captions"])) == 5 for r in rows)  # five different sentences, as five people write
    files = sorted(p.name for p in (PHOTO_SAMPLE / "images").iterdir())
    assert files == sorted(r["image"] for r in rows)  # no image without captions, no captions without an image
    for name in files:
        with Image.open(PHOTO_SAMPLE / "images" / name) as im:
            im.verify()
    size = sum(p.stat().st_size for p in PHOTO_SAMPLE.rglob("*") if p.is_file())
    assert size < 1_000_000, f"the sample is {size} bytes"


def test_the_captions_are_those_of_the_drawn_scenes():
    sys.path.insert(0, str(ROOT / "tests" / "data"))
    import make_photo_sample as m

    rows = [json.loads(line) for line in open(PHOTO_SAMPLE / "captions.jsonl", encoding="utf-8")]
    assert [r["captions"] for r in rows] == [m.captions(sc) for sc in m.scenes()]
    one = m.scenes()[1]  # a scene of two things names both, with their colours and the background
    colour, thing = one["right"]
    assert all(thing in c for c in m.captions(one)) and all(one["left"][1] in c for c in m.captions(one))
    assert sum(colour in c for c in m.captions(one)) >= 4


def test_the_sample_stands_in_where_asked(monkeypatch):
    monkeypatch.setenv(SAMPLE_ENV, "sample")
    assert photo_data() == PHOTO_SAMPLE
    assert len(photo_rows()) == len(list((PHOTO_SAMPLE / "images").iterdir()))
