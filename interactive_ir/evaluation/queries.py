"""Queries for simulated users: read and write the queries JSONL, and make one from a captions file.

A query is one search for one target image::

    {"id": "q1", "target": "<image id>", "description": "...", "captions": ["...", ...],
     "relevant": ["<id>", ...], "dialog": [["question", "answer"], ...]}

``target`` and ``description`` are required. ``captions`` is what the simulated user knows about the
target (it answers questions and writes relative captions from them); ``id`` defaults to the target;
``relevant`` (other ground-truth relevant ids, for feedback) and ``dialog`` (a fixed dialogue to replay)
are optional.

`make_queries` holds captions out so the caption-space benchmark needs no vision weights: of each
image's captions, one goes into the index, one becomes the first description, and the rest are the
simulated user's knowledge. The index caption is never shown to the simulated user, so answers and
relative captions cannot simply quote what the index stores.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.dialogues import read_dialogues
from interactive_ir.evaluation.query_records import (
    Query,
    looks_like_jsonl,
    parse_queries_jsonl,
    query_from_record,
    unique_ids,
)

__all__ = ["HoldOut", "Query", "looks_like_jsonl", "make_queries", "parse_queries_jsonl", "query_from_record",
           "read_caption_rows", "read_queries", "unique_ids", "write_index_captions", "write_queries"]


def read_queries(path: Path) -> list[Query]:
    """Read a queries JSONL, or a ChatIR/PlugIR/VisDial dialogue JSON (see `dialogues.read_dialogues`)."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"queries file not found: {path}")
    text = path.read_text(encoding="utf-8-sig")
    if not text.strip():
        raise BadInputError(f"queries file {path} is empty")
    if not looks_like_jsonl(text) or (path.suffix.lower() == ".json" and len(text.strip().splitlines()) == 1):
        return read_dialogues(path)
    return parse_queries_jsonl(text, path)


def write_queries(path: Path, queries: Sequence[Query]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q.to_dict(), ensure_ascii=False) + "\n")
    return path


# --- holding captions out ------------------------------------------------------------------------


@dataclass(frozen=True)
class HoldOut:
    """What `make_queries` produced."""

    index_captions: dict[str, list[str]]  # image -> [the one caption the index gets], every image of the split
    queries: list[Query]  # one per target, in seeded random order (so `--limit N` later picks a random N)
    skipped: list[str]  # images with fewer than 2 captions (indexed, but no query)


def read_caption_rows(path: Path, split: str | None = None) -> list[tuple[str, list[str]]]:
    """(image, captions) pairs of a captions file, optionally only those whose "split" field matches.

    JSONL rows may carry a "split" field (Flickr8k's `captions.jsonl` does); other formats go through
    `captions_io.read_captions`, which has no splits.
    """
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"captions file not found: {path}")
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        rows: dict[str, list[str]] = {}
        seen_split = False
        for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise BadInputError(f"{path}:{n}: not valid JSON ({e.msg})") from e
            image = row.get("image") or row.get("file_name") if isinstance(row, dict) else None
            if not isinstance(image, str):
                raise BadInputError(f'{path}:{n}: each line needs an "image" key')
            seen_split = seen_split or "split" in row
            if split is not None and row.get("split") != split:
                continue
            caps = row.get("captions", row.get("caption", []))
            caps = [caps] if isinstance(caps, str) else caps
            if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
                raise BadInputError(f'{path}:{n}: "captions" must be a list of strings')
            rows.setdefault(image, []).extend(c.strip() for c in caps if c.strip())
        if split is not None and not seen_split:
            raise BadInputError(f'{path} has no "split" field: drop --split {split}')
        if not rows:
            raise BadInputError(f"{path} holds no images" + (f" in split {split!r}" if split else ""))
        return list(rows.items())
    if path.suffix.lower() == ".json":
        karpathy = _karpathy_rows(path, split)
        if karpathy is not None:
            return karpathy
    if split is not None:
        raise BadInputError(f"--split needs a JSONL captions file with a \"split\" field or a Karpathy split file "
                            f"(dataset_coco.json, dataset_flickr30k.json); {path} has no splits")
    from interactive_ir.index.captions_io import read_captions

    return list(read_captions(path).items())


def _karpathy_rows(path: Path, split: str | None) -> list[tuple[str, list[str]]] | None:
    """(image, captions) of a Karpathy split file (COCO / Flickr30k / Flickr8k `dataset_*.json`: {"images":
    [{"filename", "filepath"?, "split", "sentences": [{"raw"}]}]}); None when the file is of another kind.
    Karpathy's "restval" counts as "train"."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise BadInputError(f"{path} is not valid JSON ({e.msg} at line {e.lineno})") from e
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list) or not images or not isinstance(images[0], dict) or "sentences" not in images[0]:
        return None
    rows = []
    for i, im in enumerate(images):
        name, sents = im.get("filename"), im.get("sentences")
        if not isinstance(name, str) or not isinstance(sents, list):
            raise BadInputError(f'{path}: images[{i}] needs "filename" and a "sentences" list (Karpathy split file)')
        im_split = "train" if im.get("split") == "restval" else im.get("split")
        if split is not None and im_split != split:
            continue
        rel = f"{im['filepath']}/{name}" if im.get("filepath") else name
        caps = [s.get("raw", "").strip() for s in sents if isinstance(s, dict) and str(s.get("raw", "")).strip()]
        rows.append((rel, caps))
    if not rows:
        raise BadInputError(f"{path} holds no images" + (f" in split {split!r}" if split else ""))
    return rows


def make_queries(rows: Sequence[tuple[str, Sequence[str]]], limit: int | None = None, seed: int = 0) -> HoldOut:
    """Split each image's captions into index / description / knowledge (see the module docstring).

    Each image's captions are shuffled by a generator seeded with (seed, image), so an image's split
    does not depend on the others or on `limit`. Queries come in an order shuffled by `seed`; `limit`
    keeps the first N of that order (a seeded random sample). Every image still gets an index caption.
    """
    if limit is not None and limit < 1:
        raise BadInputError(f"--limit must be at least 1, got {limit}")
    index_captions: dict[str, list[str]] = {}
    queries: list[Query] = []
    skipped: list[str] = []
    for image, caps in rows:
        caps = [c.strip() for c in caps if c and c.strip()]
        if not caps:
            skipped.append(image)
            continue
        caps = list(dict.fromkeys(caps))  # drop exact duplicates, keep order
        rng = random.Random(f"{seed}:{image}")
        rng.shuffle(caps)
        index_captions[image] = [caps[0]]
        if len(caps) < 2:
            skipped.append(image)
            continue
        queries.append(Query(qid=image, target=image, description=caps[1], captions=tuple(caps[2:])))
    random.Random(seed).shuffle(queries)
    if limit is not None:
        queries = queries[:limit]
    return HoldOut(index_captions, queries, skipped)


def write_index_captions(path: Path, captions: Mapping[str, Sequence[str]]) -> Path:
    """The index's captions as JSONL `{"image": ..., "captions": [...]}` (what `index --captions` reads)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for image, caps in captions.items():
            f.write(json.dumps({"image": image, "captions": list(caps)}, ensure_ascii=False) + "\n")
    return path
