"""Shared test helpers (imported as `iir_testutils`: a unique name, unlike `conftest`)."""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FLICKR = SHARED / "data" / "flickr8k"
PHOTO_SAMPLE = ROOT / "tests" / "data" / "photo_sample"  # 48 generated captioned scenes (tests/data/make_photo_sample.py)
SAMPLE_ENV = "TEST_PHOTOS"  # "sample": use the generated sample even where Flickr8k is present


def photo_data() -> Path:
    """The captioned photos the end-to-end tests use: Flickr8k where ../shared/data holds it, else (or with
    TEST_PHOTOS=sample) the generated sample that ships with the tests. Both hold captions.jsonl
    ({image, captions: 5}) and images/."""
    import os

    if os.environ.get(SAMPLE_ENV) != "sample" and (FLICKR / "captions.jsonl").is_file() and (FLICKR / "images").is_dir():
        return FLICKR
    return PHOTO_SAMPLE


def photo_rows(root: Path | None = None) -> list[dict]:
    """The rows of `root`'s (default `photo_data()`) captions.jsonl whose image file exists."""
    root = photo_data() if root is None else root
    with open(root / "captions.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [r for r in rows if (root / "images" / r["image"]).is_file()]

COLOURS = ["red", "green", "blue", "yellow", "white", "black", "orange", "purple"]
THINGS = ["dog", "cat", "car", "boat", "house", "tree", "bird", "horse"]
PLACES = ["beach", "street", "park", "snow", "field", "river"]


def make_images(folder: Path, n: int = 24, seed: int = 0) -> dict[str, list[str]]:
    """Write `n` small generated PNGs (some in a subfolder) and return {relative path: captions}."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sub").mkdir(exist_ok=True)
    caps: dict[str, list[str]] = {}
    for i in range(n):
        colour, thing, place = COLOURS[i % len(COLOURS)], THINGS[(i // 2) % len(THINGS)], PLACES[i % len(PLACES)]
        im = Image.new("RGB", (48 + (i % 5) * 8, 40), tuple(rng.randrange(256) for _ in range(3)))
        d = ImageDraw.Draw(im)
        d.rectangle([rng.randrange(20), rng.randrange(20), 30 + rng.randrange(15), 30], fill=tuple(rng.randrange(256) for _ in range(3)))
        rel = f"sub/img{i:03d}.png" if i % 4 == 0 else f"img{i:03d}.png"
        im.save(folder / rel)
        caps[rel] = [f"a {colour} {thing} on the {place}", f"{thing} near a {place} number {i}"]
    return caps


def write_captions(path: Path, caps: dict[str, list[str]]) -> Path:
    with open(path, "w") as f:
        for k, v in caps.items():
            f.write(json.dumps({"image": k, "captions": v}) + "\n")
    return path


def build_tiny(tmp_path: Path, n: int = 24, dim: int = 32, captions: bool = True, seed: int = 0, embedder=None):
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    caps = make_images(tmp_path / "images", n, seed)
    cap_file = write_captions(tmp_path / "captions.jsonl", caps) if captions else None
    emb = embedder or make_embedder(f"fake:{dim}")
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "index", captions=cap_file), emb)
    return Retriever(load_index(tmp_path / "index"), emb), sorted(caps), caps




# the query-vector modes as they are without the belief on the page (`BeliefConfig.on_page`): for tests of what
# questions, feedback and composed search do to a query (the web app's default runs every action on the belief)
def query_modes():
    from interactive_ir.retrieval.belief import BeliefConfig

    return BeliefConfig(on_page=False)


def save_tiny_llm(folder: Path) -> Path:
    """A tiny randomly initialised Llama chat model with a word-level tokenizer over a..p, saved to `folder`
    (transformers:FOLDER loads it; nothing is downloaded). Its replies are random words."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = "<pad> <eos> <unk> a b c d e f g h i j k l m n o p".split()
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                               unk_token="<unk>")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                                   max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=1)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


YEARS = (2015, 2016, 2017, 2018, 2019, 2020)  # `build_dated`'s years, image n (in id order) in YEARS[n % 6]


def year_of(n: int) -> int:
    return YEARS[n % len(YEARS)]


def build_dated(tmp_path: Path, n: int = 24):
    """A tiny index (fake:32) whose images are dated by their file times, image n (in id order) on the 10th of
    month 3 + n % 6 of `year_of(n)`; every third one tagged "family", every sixth "beach" too; every fourth in
    sub/. Returns (its Retriever, the ids in order)."""
    import calendar
    import os

    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    caps = make_images(tmp_path / "images", n)
    ids = sorted(caps)
    with open(tmp_path / "captions.jsonl", "w") as f:
        for i, rel in enumerate(ids):
            t = calendar.timegm((year_of(i), 3 + i % 6, 10, 12, 0, 0))
            os.utime(tmp_path / "images" / rel, (t, t))
            row = {"image": rel, "captions": caps[rel]}
            if i % 3 == 0:
                row["tags"] = ["family"] + (["beach"] if i % 2 == 0 else [])
            f.write(json.dumps(row) + "\n")
    emb = make_embedder("fake:32")
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "index", captions=tmp_path / "captions.jsonl"), emb)
    return Retriever(load_index(tmp_path / "index"), emb), ids
