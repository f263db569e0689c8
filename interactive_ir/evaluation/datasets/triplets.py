"""Composed-retrieval triplets (reference image, relative caption, target) as evaluation queries.

Each loader reads a benchmark's own annotation file, as released, and returns `Query` objects whose
`reference` is the reference image, `description` the relative caption and `target` the target image
(`relevant`: further ground-truth targets, CIRCO). With a reference, round 0 of the composed protocols
is that reference changed as the caption says (A Sanity Check on Composed Image Retrieval), not a text search.

| benchmark | file | fields read |
|---|---|---|
| CIRR | `captions/cap.rc2.val.json` (a list) | `pairid`, `reference`, `target_hard`, `caption`, `img_set.members` (subset) |
| FashionIQ | `captions/cap.{dress,shirt,toptee}.val.json` (a list) | `candidate`, `target`, `captions` (two, joined "and") |
| CIRCO | `annotations/val.json` (a list) | `id`, `reference_img_id`, `target_img_id`, `relative_caption`, `gt_img_ids` |
| FISD | a JSON list or JSONL | `reference`, `target`, `instruction` (or `caption`/`relative_caption`), optional `id`, `type` |

Image ids are what the files name (CIRR's `dev-147-1-img0`, FashionIQ's `B00006M009`, CIRCO's COCO
numbers); `eval` matches them to the index by file name stem (`resolve_targets`). A file of another
format is a one-line error that names the benchmark and the fields it lacks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.query_records import Query


def _load(path: Path, what: str):
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{what} annotation file not found: {path} (download the benchmark and pass its file)")
    text = path.read_text(encoding="utf-8-sig")
    try:
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInputError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}): expected the {what} file") from e


def _rows(data, path: Path, what: str, needs: tuple[str, ...]) -> list[Mapping]:
    if not isinstance(data, list) or not data:
        raise BadInputError(f"{path}: expected a non-empty JSON list of {what} triplets")
    for i, row in enumerate(data):
        missing = [k for k in needs if not isinstance(row, Mapping) or row.get(k) in (None, "", [])]
        if missing:
            raise BadInputError(f"{path}[{i}] lacks {', '.join(missing)}: this is not a {what} file "
                                f"(expected {', '.join(needs)})")
    return data


def load_cirr(path: Path) -> list[Query]:
    data = _rows(_load(path, "CIRR"), path, "CIRR", ("pairid", "reference", "target_hard", "caption"))
    return [Query(qid=f"cirr-{r['pairid']}", target=str(r["target_hard"]), description=str(r["caption"]).strip(),
                  reference=str(r["reference"]), subset=_subset(r), meta={"benchmark": "cirr"}) for r in data]


def _subset(r: Mapping) -> tuple[str, ...]:
    """CIRR's subset group: the members of the triplet's img_set but the reference (empty when absent)."""
    members = (r.get("img_set") or {}).get("members") if isinstance(r.get("img_set"), Mapping) else None
    return tuple(str(m) for m in members or () if str(m) != str(r["reference"]))


def load_fashioniq(path: Path) -> list[Query]:
    data = _rows(_load(path, "FashionIQ"), path, "FashionIQ", ("candidate", "target", "captions"))
    out = []
    for i, r in enumerate(data):
        caps = [c.strip() for c in r["captions"] if isinstance(c, str) and c.strip()]
        out.append(Query(qid=f"fiq-{i}", target=str(r["target"]), description=" and ".join(caps),
                         reference=str(r["candidate"]), meta={"benchmark": "fashioniq"}))
    return out


def load_circo(path: Path) -> list[Query]:
    data = _rows(_load(path, "CIRCO"), path, "CIRCO",
                 ("id", "reference_img_id", "target_img_id", "relative_caption"))
    return [Query(qid=f"circo-{r['id']}", target=str(r["target_img_id"]), description=str(r["relative_caption"]).strip(),
                  reference=str(r["reference_img_id"]),
                  relevant=tuple(str(g) for g in r.get("gt_img_ids") or () if str(g) != str(r["target_img_id"])),
                  meta={"benchmark": "circo", "shared_concept": r.get("shared_concept", "")}) for r in data]


def load_fisd(path: Path) -> list[Query]:
    data = _load(path, "FISD")
    if isinstance(data, list):  # the instruction may be named caption or relative_caption
        data = [dict(r, instruction=r.get("instruction") or r.get("relative_caption") or r.get("caption"))
                if isinstance(r, Mapping) else r for r in data]
    data = _rows(data, path, "FISD", ("reference", "target", "instruction"))
    return [Query(qid=f"fisd-{r.get('id', i)}", target=str(r["target"]), description=str(r["instruction"]).strip(),
                  reference=str(r["reference"]), meta={"benchmark": "fisd", "type": r.get("type", "")})
            for i, r in enumerate(data)]


LOADERS: dict[str, Callable[[Path], list[Query]]] = {
    "cirr": load_cirr, "fashioniq": load_fashioniq, "circo": load_circo, "fisd": load_fisd}


def load_triplets(kind: str, path: Path) -> list[Query]:
    loader = LOADERS.get(kind.strip().lower())
    if loader is None:
        raise BadInputError(f"unknown triplet benchmark {kind!r}; choose one of {', '.join(LOADERS)}")
    return loader(Path(path))
