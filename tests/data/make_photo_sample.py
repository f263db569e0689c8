"""Draw the small captioned photo sample the end-to-end tests use where Flickr8k is absent (issue 31, item 2).

48 scenes of coloured objects (a ball, a box, a tent, a tree, a car, a kite, a house, a flower) on six
backgrounds (a grassy field, a sandy beach, snowy ground, a night sky, a room, a street), drawn with PIL from
a fixed seed, each with 5 captions written from what was drawn, in Flickr8k's captions.jsonl layout:
{"image": "shapes_000.jpg", "captions": [5 sentences], "split": "dev" | "train"}. Generated, so it ships
with the tests under the project's licence. Regenerate (only when changing the drawing) with

    python tests/data/make_photo_sample.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "photo_sample"
N = 48
SEED = 31
W, H = 128, 96
COLOURS = {"red": (210, 30, 30), "blue": (30, 60, 210), "yellow": (240, 210, 20), "orange": (245, 130, 20),
           "purple": (130, 40, 170), "pink": (250, 140, 190), "black": (15, 15, 15), "white": (250, 250, 250)}
# background: (sky, ground, how the captions name it: on ..., in ..., bare)
BACKGROUNDS = {
    "grass": ((120, 180, 240), (60, 160, 50), ("on green grass", "in a grassy field", "a park")),
    "beach": ((110, 190, 250), (235, 215, 150), ("on a sandy beach", "by the sea", "the beach")),
    "snow": ((170, 175, 185), (245, 245, 250), ("on snowy ground", "in the snow", "a winter scene")),
    "night": ((15, 20, 60), (30, 40, 40), ("under a night sky", "in the dark", "a night scene")),
    "room": ((225, 205, 170), (130, 85, 50), ("on a wooden floor", "in a room", "an indoor scene")),
    "street": ((150, 160, 175), (90, 90, 95), ("on a grey street", "in the city", "a street")),
}
THINGS = {"ball": "round ball", "box": "square box", "tent": "pointed tent", "tree": "leafy tree",
          "car": "small car", "kite": "flying kite", "house": "little house", "flower": "big flower"}


def _draw(d, thing: str, rgb, x: int, y: int, s: int) -> None:
    """`thing` in colour `rgb` standing at (x, y) on the ground line, size `s` pixels."""
    if thing == "ball":
        d.ellipse([x, y - s, x + s, y], fill=rgb)
    elif thing == "box":
        d.rectangle([x, y - s, x + s, y], fill=rgb)
    elif thing == "tent":
        d.polygon([(x, y), (x + s, y), (x + s // 2, y - s)], fill=rgb)
    elif thing == "tree":
        d.rectangle([x + s // 2 - 2, y - s // 2, x + s // 2 + 2, y], fill=(100, 60, 20))
        d.ellipse([x, y - s - s // 3, x + s, y - s // 3], fill=rgb)
    elif thing == "car":
        d.rectangle([x, y - s // 2, x + s, y - s // 6], fill=rgb)
        d.rectangle([x + s // 4, y - 3 * s // 4, x + 3 * s // 4, y - s // 2], fill=rgb)
        for cx in (x + s // 5, x + 4 * s // 5):
            d.ellipse([cx - s // 8, y - s // 4, cx + s // 8, y], fill=(20, 20, 20))
    elif thing == "kite":
        cx, cy = x + s // 2, y - 2 * s
        d.polygon([(cx, cy - s // 2), (cx + s // 3, cy), (cx, cy + s // 2), (cx - s // 3, cy)], fill=rgb)
        d.line([(cx, cy + s // 2), (cx - s // 3, y)], fill=(40, 40, 40))
    elif thing == "house":
        d.rectangle([x, y - s, x + s, y], fill=rgb)
        d.polygon([(x - 3, y - s), (x + s + 3, y - s), (x + s // 2, y - s - s // 2)], fill=(120, 40, 30))
    else:  # flower
        d.line([(x + s // 2, y), (x + s // 2, y - s // 2)], fill=(30, 120, 30), width=2)
        d.ellipse([x + s // 4, y - s, x + 3 * s // 4, y - s // 2], fill=rgb)


def scenes(n: int = N, seed: int = SEED) -> list[dict]:
    """`n` distinct scenes {bg, left: (colour, thing), right: (colour, thing) | None}, drawn from `seed`."""
    rng, out, seen = random.Random(seed), [], set()
    bgs, cols, things = list(BACKGROUNDS), list(COLOURS), list(THINGS)
    while len(out) < n:
        bg = bgs[len(out) % len(bgs)]
        left = (rng.choice(cols), rng.choice(things))
        right = (rng.choice(cols), rng.choice(things)) if len(out) % 3 else None
        key = (bg, left, right)
        if key in seen or (right and right[1] == left[1]):
            continue
        seen.add(key)
        out.append({"bg": bg, "left": left, "right": right})
    return out


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def captions(sc: dict) -> list[str]:
    """Five sentences about a scene, worded differently as five people would."""
    on, into, bare = BACKGROUNDS[sc["bg"]][2]
    (c1, t1), right = sc["left"], sc["right"]
    if right is None:
        return [f"{_a(c1).capitalize()} {t1} {on} .", f"A single {c1} {THINGS[t1]} {into}",
                f"There is one {c1} {t1} in {bare} .", f"{bare.capitalize()} with {_a(c1)} {t1} .", f"The {t1} is {c1} ."]
    c2, t2 = right
    return [f"{_a(c1).capitalize()} {t1} and {_a(c2)} {t2} {on} .",
            f"{c1.capitalize()} {THINGS[t1]} beside {_a(c2)} {THINGS[t2]} {into}",
            f"{_a(c2).capitalize()} {t2} to the right of {_a(c1)} {t1} .",
            f"{bare.capitalize()} with {_a(c1)} {t1} and {_a(c2)} {t2} .",
            f"Two things : {_a(t1)} that is {c1} and {_a(t2)} that is {c2} ."]


def draw(sc: dict, rng: random.Random):
    from PIL import Image, ImageDraw

    sky, ground, _ = BACKGROUNDS[sc["bg"]]
    im = Image.new("RGB", (W, H), sky)
    d = ImageDraw.Draw(im)
    horizon = 55 + rng.randrange(10)
    d.rectangle([0, horizon, W, H], fill=ground)
    if sc["bg"] == "night":
        d.ellipse([100, 8, 116, 24], fill=(245, 240, 200))
    base = horizon + 20 + rng.randrange(10)
    (c1, t1), right = sc["left"], sc["right"]
    _draw(d, t1, COLOURS[c1], 8 + rng.randrange(12), base, 30 + rng.randrange(8))
    if right:
        _draw(d, right[1], COLOURS[right[0]], 70 + rng.randrange(12), base, 30 + rng.randrange(8))
    return im


def main(out: Path = OUT) -> None:
    (out / "images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED + 1)
    with open(out / "captions.jsonl", "w", encoding="utf-8") as f:
        for i, sc in enumerate(scenes()):
            name = f"shapes_{i:03d}.jpg"
            draw(sc, rng).save(out / "images" / name, quality=80)
            f.write(json.dumps({"image": name, "captions": captions(sc), "split": "dev" if i % 4 == 0 else "train"}) + "\n")


if __name__ == "__main__":
    main()
