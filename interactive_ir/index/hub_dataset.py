"""Rows of a captioned image dataset, streamed: a Hugging Face Hub dataset's Parquet files, a local folder
of Parquet files, or a local ImageFolder (images with an optional metadata.jsonl / metadata.csv).

`iter_rows` reads Parquet files one at a time in batches of `BATCH_ROWS` rows (pyarrow `iter_batches`),
so memory holds one batch whatever the dataset's size; the helpers below read one row's image, id and
captions. `dataset_stage.stage_rows` writes the rows out (each distinct image once, URLs fetched) and
`hub_index.build_from_dataset` builds an index from them with the usual folder builder.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from interactive_ir.errors import BadInputError, HubError, HubUnreachableError
from interactive_ir.index.imageio import FORMATS, checked_suffix  # noqa: F401 (the staging's names for them)

log = logging.getLogger(__name__)

BATCH_ROWS = 64  # rows per Parquet batch held in memory
CAPTION_COLUMNS = ("caption", "captions", "text", "sentences")  # tried in order when --caption-column is not given
SPLIT_WORDS = {"train", "test", "validation", "valid", "val", "dev"}
COLUMNS_FILE = "columns.jsonl"  # the rows' other columns, one JSON object per row: {"id": image id, column: value}
#                                  (a column named "id" is kept as "dataset_id")


@dataclass
class DatasetSource:
    """Where the rows come from and which columns are what."""

    name: str  # Hub dataset id (USER/NAME) or a local folder (Parquet files, or an ImageFolder)
    config: str = ""  # Hub dataset config (subset): the folder its Parquet files are under; "" = any
    split: str = "train"  # the Parquet files whose path names this split (all of them when none names a split)
    image_column: str = "image"  # column holding the image ({"bytes", "path"} struct, bytes, a local path or a URL)
    url_column: str = ""  # column holding image URLs, fetched at build time; "" = the image column, else a column of
    #                       http(s) URLs found in the first rows when there is no image column
    caption_column: str = ""  # column holding a caption or a list of captions; "" = the first of CAPTION_COLUMNS present
    id_column: str = ""  # column holding a stable id per image; "" = the file name (ImageFolder) or content hash
    limit: int = 0  # stop after this many distinct images (0 = all)
    revision: str = ""  # Hub revision (branch, tag or commit); "" = main

    @property
    def local(self) -> bool:
        return self.name.startswith((".", "/", "~")) or Path(self.name).expanduser().exists()


@dataclass
class StageReport:
    images: int = 0  # distinct images written
    rows: int = 0  # rows read
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (row or file, reason)
    url_column: str = ""  # the column whose URLs were fetched ("" when every image came as bytes or a file)
    url_found: list[str] = field(default_factory=list)  # the URL columns found when none was named (the first taken)
    fetch: object = None  # `url_images.FetchStats` of the URLs fetched (None: no URL)


def is_local(name: str) -> bool:
    return DatasetSource(name).local


# --- finding the Parquet files -------------------------------------------------------------------


def choose_files(paths: list[str], config: str, split: str, where: str) -> list[str]:
    """The Parquet files of `config` / `split` among `paths` (posix, relative to the dataset's root)."""
    files = [p for p in paths if p.endswith(".parquet")]
    if not files:
        raise BadInputError(f"{where} holds no Parquet files: give a dataset with Parquet data (the Hub converts most "
                            "datasets), or a local folder of Parquet files or images")
    if config:
        chosen = [p for p in files if config in p.split("/")[:-1]]
        if not chosen:
            configs = sorted({p.split("/")[0] for p in files if "/" in p})
            raise BadInputError(f"{where} has no config {config!r}: its Parquet folders are {', '.join(configs) or 'none'}")
        files = chosen
    words = [set(re.split(r"[/._-]", p)) for p in files]
    named = [p for p, w in zip(files, words) if split in w]
    if named:
        return sorted(named)
    present = sorted(set().union(*words) & SPLIT_WORDS)
    if present:
        raise BadInputError(f"{where} has no split {split!r}: its files name {', '.join(present)}; pass --split")
    return sorted(files)


def _hub_files(src: DatasetSource) -> Iterator[Path]:
    """The chosen Parquet files of a Hub dataset, downloaded into the Hub cache one at a time."""
    from huggingface_hub import HfApi, hf_hub_download

    from interactive_ir.backends.hub import hub_cache_dir, hub_endpoint, hub_token

    where = f"dataset {src.name}"
    token = hub_token()
    try:
        paths = HfApi(endpoint=hub_endpoint(), token=token).list_repo_files(
            src.name, repo_type="dataset", revision=src.revision or None)
    except Exception as e:  # noqa: BLE001 - translated below, others re-raised
        _raise_hub(e, where)
    for path in choose_files(list(paths), src.config, src.split, where):
        try:
            yield Path(hf_hub_download(src.name, path, repo_type="dataset", revision=src.revision or None,
                                       endpoint=hub_endpoint(), token=token, cache_dir=hub_cache_dir()))
        except Exception as e:  # noqa: BLE001
            _raise_hub(e, where)


def _raise_hub(e: Exception, where: str):
    from interactive_ir.backends.hub import hub_failure

    why = hub_failure(e, where)
    if why is None:
        raise e
    unreachable = "cannot be reached" in why
    raise (HubUnreachableError if unreachable else HubError)(why) from e


# --- rows ---------------------------------------------------------------------------------------------


def iter_rows(src: DatasetSource) -> Iterator[tuple[dict, Path | None]]:
    """(row as a dict, the folder its local image paths are relative to or None), streamed."""
    if not src.local:
        for f in _hub_files(src):
            yield from ((row, None) for row in _parquet_rows(f, src))
        return
    root = Path(src.name).expanduser().resolve()
    if not root.is_dir():
        raise BadInputError(f"--hf-dataset {src.name} is not a folder: give a Hub dataset id (USER/NAME) or a local "
                            "folder of Parquet files or images")
    parquet = [p.relative_to(root).as_posix() for p in root.rglob("*.parquet")]
    if parquet:
        for rel in choose_files(parquet, src.config, src.split, str(root)):
            yield from ((row, root) for row in _parquet_rows(root / rel, src))
        return
    if (root / src.split).is_dir():
        root = root / src.split  # ImageFolder with split folders (train/, test/)
    yield from ((row, root) for row in _imagefolder_rows(root, src))


def _parquet_rows(path: Path, src: DatasetSource) -> Iterator[dict]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise BadInputError(f"{path.name} is not a readable Parquet file ({str(e)[:160]})") from e
    names = pf.schema_arrow.names
    _check_columns(names, src, path.name)
    for batch in pf.iter_batches(batch_size=BATCH_ROWS):
        yield from batch.to_pylist()


def _check_columns(names: list[str], src: DatasetSource, where: str) -> None:
    """The columns named by flags exist (the image column is chosen from the first rows: `choose_columns`)."""
    for flag, col in (("--caption-column", src.caption_column), ("--id-column", src.id_column),
                      ("--url-column", src.url_column)):
        if col and col not in names:
            raise BadInputError(f"{where} has no column {col!r} ({flag}): its columns are {', '.join(names)}")


def _imagefolder_rows(root: Path, src: DatasetSource) -> Iterator[dict]:
    """ImageFolder: metadata.jsonl / metadata.csv rows (file_name names the image), else every image file."""
    from interactive_ir.index.imageio import list_images

    meta_jsonl, meta_csv = root / "metadata.jsonl", root / "metadata.csv"
    if meta_jsonl.is_file() or meta_csv.is_file():
        rows = _metadata_rows(meta_jsonl if meta_jsonl.is_file() else meta_csv)
        first = next(rows, None)
        if first is None:
            raise BadInputError(f"{root}: its metadata file has no rows")
        if "file_name" not in first:
            raise BadInputError(f"{root}: its metadata file needs a file_name column naming each image")
        for row in _chain(first, rows):
            yield {**{k: v for k, v in row.items() if k != "file_name"}, src.image_column: {"path": row["file_name"]}}
        return
    files = list_images(root)
    if not files:
        raise BadInputError(f"{root} holds no images and no Parquet files")
    for p in files:
        yield {src.image_column: {"path": p.relative_to(root).as_posix()}}


def _chain(first: dict, rest: Iterator[dict]) -> Iterator[dict]:
    yield first
    yield from rest


def _metadata_rows(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        if path.suffix == ".csv":
            yield from csv.DictReader(fh)
            return
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    raise BadInputError(f"{path}:{n}: not valid JSON ({e.msg})") from e


# --- one row's image, id and captions -------------------------------------------------------------------


def image_bytes(cell, root: Path | None) -> tuple[bytes, str]:
    """(the image's bytes, its file name or "") from an image cell; BadInputError when there is none."""
    path = ""
    if isinstance(cell, dict):
        data, path = cell.get("bytes"), cell.get("path") or ""
        if data:
            return bytes(data), Path(path).name
    elif isinstance(cell, (bytes, bytearray)):
        return bytes(cell), ""
    elif isinstance(cell, str):
        path = cell
    if not path:
        raise BadInputError("the image cell is empty")
    if root is None:
        raise BadInputError(f"the image cell names a file ({path[:80]}) but holds no bytes")
    p = (root / path).resolve()
    if not str(p).startswith(str(root) + "/") or not p.is_file():
        raise BadInputError(f"the image file {path[:80]} is not under {root}")
    return p.read_bytes(), path


def image_id(row: dict, src: DatasetSource, digest: str, name: str, suffix: str, local: bool) -> str:
    """The image's id (its file name under the index's image folder); `digest`: the sha256 of its bytes."""
    if src.id_column:
        raw = str(row.get(src.id_column, "")).strip()
        if not raw:
            raise BadInputError(f"its {src.id_column!r} is empty")
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", raw).strip("._")[:120] or hashlib.sha256(raw.encode()).hexdigest()[:20]
        return stem if stem.lower().endswith(suffix) else stem + suffix
    if local and name:
        return re.sub(r"[^A-Za-z0-9._/-]+", "_", name).lstrip("./")
    return digest[:20] + suffix


def row_captions(row: dict, column: str) -> list[str]:
    value = row.get(column) if column else None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [c.strip() for c in value if isinstance(c, str) and c.strip()]


def jsonable(value):
    if isinstance(value, (bytes, bytearray)):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items() if not isinstance(v, (bytes, bytearray))}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
