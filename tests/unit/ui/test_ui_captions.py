"""The caption cleaner (`ui.captions.plain_caption`): what a person reads on result cards and option labels."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from interactive_ir.ui.captions import ELLIPSIS, cut, plain_caption

MANIFEST = Path(__file__).resolve().parents[3] / "assets" / "demo" / "manifest.jsonl"


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


# DOCCI-style descriptions (the photo demo, issue 25 D4): paragraphs of 100 words and more, opening with the
# camera's framing. Written for this test in DOCCI's manner, not copied from the dataset.
MUG = ("A medium-close-up, eye-level view of a white ceramic mug with a blue handle on a light wooden table. "
       "The mug is filled with black coffee, and a thin line of steam rises from it. Behind the mug is a window "
       "with white curtains that are partly open. The light comes from the left side of the image, casting a "
       "soft shadow of the mug to the right. A folded newspaper lies at the right edge of the table.")
BRIDGE = ("A view of the Golden Gate Bridge from Baker Beach on a foggy day. The two towers are red-orange, and "
          "the top of the far tower disappears into the fog. Small waves break on the sand in the front of the "
          "image, and a person in a blue jacket walks along the water with a black dog.")
SHELF = ("Three plastic toy dinosaurs stand in a row on a white shelf: a green T-rex, a blue stegosaurus and a "
         "red triceratops. The wall behind them is painted white, and each toy casts a small shadow to the right. "
         'A sticker on the shelf reads "DINO ZONE" in black letters.')


@pytest.mark.parametrize("text, card", [
    (MUG, "A white ceramic mug with a blue handle on a light wooden table"),  # framing off, first sentence
    (BRIDGE, "The Golden Gate Bridge from Baker Beach on a foggy day"),  # names kept as written
    (SHELF, "Three plastic toy dinosaurs stand in a row on a white shelf: a green T-rex, a blue…"),  # not a title
])
def test_a_long_description_gives_a_card_its_first_sentence(text, card):
    from interactive_ir.ui.render import CARD_CHARS

    short = plain_caption(text, CARD_CHARS)
    assert short == card and len(short) <= CARD_CHARS
    assert plain_caption(text) == text[:-1]  # the tooltip and the large view keep the whole description
    option = plain_caption(text, 40)
    assert len(option) <= 40 and card.startswith(option.rstrip(ELLIPSIS))


def test_photo_paragraphs_on_the_page_are_short_lines_and_the_index_keeps_them_whole(tmp_path):
    """The cleaner is for display only: an index built from DOCCI-style rows holds each paragraph whole (search
    reads it), while a picture option, the reference and the "You:" line show one short line each."""
    from iir_testutils import make_images

    from interactive_ir.backends import make_embedder
    from interactive_ir.core.session import Turn
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.modes.conversation.plugir.grounded import short_label
    from interactive_ir.types import Option, Question
    from interactive_ir.ui import render
    from interactive_ir.ui.state import UIState

    caps = make_images(tmp_path / "img", 3)
    with open(tmp_path / "caps.jsonl", "w") as f:
        for rel, text in zip(caps, (MUG, BRIDGE, SHELF)):
            f.write(json.dumps({"image": rel, "captions": [text]}) + "\n")
    build_index(BuildConfig(images=tmp_path / "img", out=tmp_path / "index", captions=tmp_path / "caps.jsonl"),
                make_embedder("fake:16"))
    index = load_index(tmp_path / "index")
    assert {r.caption for r in index.records} == {MUG, BRIDGE, SHELF}
    mug = next(r.id for r in index.records if r.caption == MUG)
    engine = type("Eng", (), {"index": index})()
    label = short_label(MUG, mug)  # what the engine records: the paragraph's first 60 characters
    q = Question("Which is closest to your image?", "choice", (Option(label, mug), Option("none of these")), 0)
    shown = re.findall(r'class="iir-opt-label">([^<]+)<', render.options_html(engine, q))
    assert shown[0] == "A white ceramic mug with a blue handle…" and len(shown[0]) <= render.OPTION_CHARS
    ref = render.reference_html(engine, UIState(reference=mug))
    assert "Reference: <b>A white ceramic mug with a blue handle on a light wooden table</b>" in ref
    t = Turn(round=1, kind="answer", user_text=f"closest to: {label}",
             extra={"choice": {"index": 0, "label": label, "image_id": mug}})
    assert render.answer_words(t) == "closest to: A white ceramic mug…"  # the framing off the recorded label
