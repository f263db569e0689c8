"""The caption cleaner (`ui.captions.plain_caption`): what a person reads on result cards and option labels."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from interactive_ir.ui.captions import ELLIPSIS, cut, plain_caption

MANIFEST = Path(__file__).resolve().parents[1] / "assets" / "demo" / "manifest.jsonl"


def _manifest_captions() -> list[str]:
    return [json.loads(line)["caption"] for line in MANIFEST.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("raw, plain", [
    ("clipart of Bulldog Puppy; keywords: mammal, dog, animals", "Bulldog puppy"),
    ("clipart of Stack of Books; keywords: education, book, books", "Stack of books"),
    ("clipart of Shield: A simple shield; keywords: weapon, logo, tool", "A simple shield"),
    ("clipart of Factory: industry; keywords: city, building, buildings", "Factory: industry"),
    ("clipart of Van Gogh 's Sun Flower; keywords: gogh, paint, work, van", "Van gogh's sun flower"),
    ("clipart of help-books-aj.svg; keywords: info, education", "Help books aj"),
    ("clipart of US Capitol Building; keywords: building", "US capitol building"),
    ("clipart of 1989 Chevrolet Celebrity Wagon: 1989 Chevrolet Celebrity Wagon [www.chevycelebrity.com]; "
     "keywords: wagon, auto", "1989 chevrolet celebrity wagon"),
    # COCO / Flickr-style captions: tokenised punctuation, lower case, double spaces
    ("a dog runs across the grass .", "A dog runs across the grass"),
    ("A man in a red shirt is climbing a rock face .", "A man in a red shirt is climbing a rock face"),
    ("Two young girls are playing on a   playground", "Two young girls are playing on a playground"),
    ("A boy does n't like the rain , so he stays inside .", "A boy doesn't like the rain, so he stays inside"),
    ("a black and white cat sitting on top of a laptop computer", "A black and white cat sitting on top of a laptop computer"),
    # file names and camera names
    ("IMG_0042.JPG", ""),
    ("DSC01234 beach at sunset.jpg", "Beach at sunset"),
    ("my_holiday_photo_03.png", "My holiday photo 03"),
    ("", ""),
    (None, ""),
])
def test_plain_caption(raw, plain):
    assert plain_caption(raw) == plain


def test_cut_at_a_word_boundary_with_an_ellipsis():
    text = "A little girl covered in paint sits in front of a painted rainbow with her hands in a bowl"
    short = plain_caption(text + " .", 40)
    assert short == "A little girl covered in paint sits in…"
    assert len(short) <= 40 and short.endswith(ELLIPSIS)
    assert text.startswith(short[:-1])  # whole words only
    assert cut("supercalifragilistic", 8) == "superca" + ELLIPSIS  # one long word: cut inside it
    assert plain_caption("A short one", 40) == "A short one"


def test_a_long_title_and_description_shows_the_part_that_fits():
    raw = ("clipart of Collection of passport stamps (feaux): A collection of feaux passport stamps. Good for "
           "use in travel brochures and the like; keywords: travel, stamp")
    assert plain_caption(raw, 40) == "Collection of passport stamps (feaux)"
    assert plain_caption(raw, 0).startswith("Collection of passport stamps (feaux): a collection of feaux")


def test_the_demo_manifest_reads_as_plain_words():
    caps = _manifest_captions()
    assert len(caps) >= 300 and sum("keywords:" in c for c in caps) > 300  # the raw metadata the page cleans
    for raw in caps:
        plain = plain_caption(raw, 80)
        assert plain, raw
        assert len(plain) <= 80, plain
        low = plain.lower()
        assert "keywords" not in low and not low.startswith("clipart of"), plain
        assert "  " not in plain and not re.search(r"\s[.,;:!?]", plain), plain
        assert not re.search(r"\.(png|svg|jpe?g)\b|www\.|https?://", low), plain
        assert plain[0] == plain[0].upper(), plain
        words = set(re.findall(r"[a-z0-9]+", raw.lower()))
        assert set(re.findall(r"[a-z0-9]+", low)) <= words | {"s", "t"}, (raw, plain)  # no word made up
