"""Reading captions files: JSONL, COCO captions JSON, CSV/TSV `image,caption`.

All forms return {image key: [captions]}; an image key is a path relative to the image folder
(or a bare file name, matched against file names when unique).
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

from interactive_ir.errors import CaptionsFormatError


def read_captions(path: Path) -> dict[str, list[str]]:
    path = Path(path)
    if not path.is_file():
        raise CaptionsFormatError(f"captions file {path} does not exist")
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    if not text.strip():
        raise CaptionsFormatError(f"captions file {path} is empty")
    suffix = path.suffix.lower()
    if suffix in {".csv", ".tsv", ".txt"}:
        caps = _read_table(text, path, "\t" if suffix == ".tsv" or "\t" in text.splitlines()[0] else ",")
    elif suffix == ".json":
        caps = _read_json(text, path)
    else:
        caps = _read_jsonl(text, path)
    if not caps:
        raise CaptionsFormatError(f"captions file {path} holds no captions")
    return caps


def _read_jsonl(text: str, path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except RecursionError as e:
            raise CaptionsFormatError(f"{path}:{n}: JSON nested too deeply; expected one object per line") from e
        except json.JSONDecodeError as e:
            raise CaptionsFormatError(f"{path}:{n}: not valid JSON ({e.msg}); expected one object per line "
                                      'like {"image": "a.jpg", "caption": "..."}') from e
        if not isinstance(row, dict) or not isinstance(row.get("image") or row.get("file_name"), str):
            raise CaptionsFormatError(f'{path}:{n}: each line needs an "image" key naming the image file')
        key = row.get("image") or row.get("file_name")
        caps = row.get("captions", row.get("caption", []))
        caps = [caps] if isinstance(caps, str) else caps
        if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
            raise CaptionsFormatError(f'{path}:{n}: "caption" must be a string or "captions" a list of strings')
        out[key].extend(c.strip() for c in caps if c.strip())
    return dict(out)


def _read_json(text: str, path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(text)
    except RecursionError as e:
        raise CaptionsFormatError(f"{path}: JSON nested too deeply to be a captions file") from e
    except json.JSONDecodeError as e:
        raise CaptionsFormatError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    if isinstance(data, dict) and ("images" in data or "annotations" in data):  # COCO captions
        images, anns = data.get("images"), data.get("annotations")
        if not isinstance(images, list) or not isinstance(anns, list):
            raise CaptionsFormatError(f'{path}: COCO captions JSON needs lists "images" and "annotations"')
        bad = next((x for x in images + anns if not isinstance(x, dict)), None)
        if bad is not None:
            raise CaptionsFormatError(f'{path}: COCO "images" and "annotations" must hold objects, found {bad!r:.60}')
        names = {img["id"]: img["file_name"] for img in images if "id" in img and isinstance(img.get("file_name"), str)}
        out: dict[str, list[str]] = defaultdict(list)
        for ann in anns:
            name = names.get(ann.get("image_id"))
            if name is None:
                raise CaptionsFormatError(f"{path}: annotation {ann.get('id')} names unknown image_id {ann.get('image_id')}")
            if isinstance(ann.get("caption"), str) and ann["caption"].strip():
                out[name].append(ann["caption"].strip())
        return dict(out)
    if isinstance(data, dict) and all(isinstance(v, (str, list)) for v in data.values()):
        return {k: [v] if isinstance(v, str) else [c for c in v if isinstance(c, str)] for k, v in data.items()}
    if isinstance(data, list):
        return _read_jsonl("\n".join(json.dumps(r) for r in data), path)
    raise CaptionsFormatError(f"{path}: unrecognised JSON captions format; use COCO captions JSON, JSONL "
                              '{"image": ..., "caption": ...}, or CSV image,caption')


def _read_table(text: str, path: Path, delimiter: str) -> dict[str, list[str]]:
    rows = list(csv.reader(text.splitlines(), delimiter=delimiter))
    if rows and [c.strip().lower() for c in rows[0][:2]] == ["image", "caption"]:
        rows = rows[1:]
    out: dict[str, list[str]] = defaultdict(list)
    for n, row in enumerate(rows, 2):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) < 2:
            raise CaptionsFormatError(f"{path}:{n}: expected two columns image{delimiter}caption, got {row!r}")
        key = row[0].strip().split("#")[0]  # Flickr8k.token.txt form "img.jpg#0"
        cap = delimiter.join(row[1:]).strip()
        if cap:
            out[key].append(cap)
    return dict(out)


def match_captions(captions: dict[str, list[str]], rel_paths: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Map caption keys to indexed relative paths. Returns (by rel path, keys that name no image)."""
    by_rel = set(rel_paths)
    by_name: dict[str, list[str]] = defaultdict(list)
    for r in rel_paths:
        by_name[Path(r).name].append(r)
    out: dict[str, list[str]] = {}
    missing = []
    for key, caps in captions.items():
        k = key.replace("\\", "/").lstrip("./")
        if k in by_rel:
            out.setdefault(k, []).extend(caps)
        elif len(by_name.get(Path(k).name, [])) == 1:
            out.setdefault(by_name[Path(k).name][0], []).extend(caps)
        else:
            missing.append(key)
    return out, missing
