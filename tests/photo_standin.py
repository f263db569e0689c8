"""A tiny photo dataset in the DOCCI mirror's layout, for the stand-in Hub (tests/hub_standin.py).

`docci_files(n)` gives the files of a Hub dataset repo like `not-lain/docci`: `data/train-0000K-of-0000N.parquet`
(and one test shard), each row `image` ({bytes, path}: a JPEG), `example_id` ("train_00001") and
`description`, a DOCCI-style paragraph (framing, then the scene, then details, several sentences) written
from the generated photo sample's captions (tests/data/photo_sample). `serve_docci(hub)` adds it under the
photo demo's default name, so the defaults themselves are what the tests exercise.
"""

from __future__ import annotations

import io
import json

from iir_testutils import PHOTO_SAMPLE

REPO = "not-lain/docci"  # the photo demo's default dataset (PhotoDemoConfig.dataset)
FRAMINGS = ("A medium-close-up, eye-level view of", "An outdoor, high-angle view of", "A close-up view of",
            "A wide, eye-level view of")


def sample_rows(n: int) -> list[dict]:
    """The first `n` photos of the generated sample with a DOCCI-style description each."""
    rows = [json.loads(line) for line in (PHOTO_SAMPLE / "captions.jsonl").read_text().splitlines() if line.strip()]
    out = []
    for i, r in enumerate(rows[:n]):
        first = r["captions"][0].rstrip(" .")
        scene = first[0].lower() + first[1:]
        others = [c.rstrip(" .") for c in r["captions"][1:4]]
        description = (f"{FRAMINGS[i % len(FRAMINGS)]} {scene}. " + ". ".join(others) + ". The light is even "
                       "and there are no people in the image, and nothing else stands out in the background.")
        data = (PHOTO_SAMPLE / "images" / r["image"]).read_bytes()
        out.append({"image": {"bytes": data, "path": r["image"]}, "example_id": f"train_{i:05d}",
                    "description": description, "first_caption": r["captions"][0]})
    return out


def parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=4)
    return buf.getvalue()


def docci_files(n: int = 8, shards: int = 2, drop: tuple[str, ...] = ()) -> dict[str, bytes]:
    """The repo's files: `n` train rows over `shards` Parquet shards, one test shard, a card. `drop`: columns
    left out (a mirror without them)."""
    rows = [{k: v for k, v in r.items() if k not in drop and k != "first_caption"} for r in sample_rows(n)]
    per = -(-n // shards)
    files = {"README.md": b"---\nlicense: cc-by-4.0\n---\n# docci (stand-in)\n"}
    for s in range(shards):
        files[f"data/train-{s:05d}-of-{shards:05d}.parquet"] = parquet(rows[s * per:(s + 1) * per])
    files["data/test-00000-of-00001.parquet"] = parquet(rows[:1])
    return files


def serve_docci(hub, n: int = 8, repo: str = REPO, **options):
    return hub.add_repo("dataset", repo, docci_files(n, **options))
