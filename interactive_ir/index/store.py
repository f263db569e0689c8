"""The on-disk index and its loader.

An index folder holds:
- `image_emb.npy`: float16 (N, D) image vectors (for a caption index: the captions' vectors);
- `caption_emb.npy`: float16 (N, D) caption vectors, when captions exist and the embedder has vision;
- `faiss.index`: an exact fp16 inner-product index over [image | caption] rows (2*D wide with captions);
- `metadata.jsonl`: one row per image (id, relative path, captions, width, height, size, mtime);
- `manifest.json`: embedder spec, dimension, counts, times, version and file checksums.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from interactive_ir.errors import IndexLoadError
from interactive_ir.types import Vectors

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
FILES = ("image_emb.npy", "caption_emb.npy", "faiss.index", "metadata.jsonl")


@dataclass
class IndexRecord:
    """Metadata of one indexed image."""

    id: str  # path relative to the image root, posix separators: the image's stable id
    captions: list[str] = field(default_factory=list)  # human or generated captions, may be empty
    width: int = 0  # pixels, 0 when unknown (caption-only collections)
    height: int = 0
    bytes: int = 0  # file size when indexed (with mtime, detects changed files on update)
    mtime: float = 0.0

    @property
    def caption(self) -> str:
        return self.captions[0] if self.captions else ""


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(chunk):
            h.update(b)
    return h.hexdigest()


def rebuild_hint(index_dir: Path, manifest: dict | None = None) -> str:
    """The command that rebuilds `index_dir`, with absolute paths (it works from any folder)."""
    import shlex

    manifest = manifest or {}
    emb = manifest.get("embedder", "SPEC")
    root = manifest.get("image_root")
    root = str((Path(index_dir) / root).resolve()) if root else "IMAGES_DIR"
    cmd = ["python", "-m", "interactive_ir", "index", "--images", root]
    if manifest.get("captions_file"):
        cmd += ["--captions", manifest["captions_file"]]
    cmd += ["--out", str(Path(index_dir).resolve()), "--embedder", emb, "--rebuild"]
    return " ".join(shlex.quote(c) if c not in ("IMAGES_DIR",) else c for c in cmd)


class ImageIndex:
    """A loaded, read-only index. Thread-safe for concurrent searches."""

    def __init__(self, path: Path, manifest: dict, records: list[IndexRecord], faiss_index):
        self.path = Path(path)
        self.manifest = manifest
        self.records = records
        self.faiss_index = faiss_index
        self.ids = [r.id for r in records]
        self.row_of = {r.id: i for i, r in enumerate(records)}

    # --- facts -----------------------------------------------------------------------------------
    @property
    def embedder_spec(self) -> str:
        return self.manifest["embedder"]

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def has_captions(self) -> bool:
        """True when separate caption vectors exist (vision embedder + captions)."""
        return bool(self.manifest.get("caption_vectors"))

    @property
    def caption_only(self) -> bool:
        """True for a caption index (text embedder): image vectors are caption vectors."""
        return not self.manifest.get("has_vision", True)

    @cached_property
    def image_root(self) -> Path:
        root = Path(self.manifest.get("image_root", "."))
        return root if root.is_absolute() else (self.path / root).resolve()

    def __len__(self) -> int:
        return len(self.records)

    def image_path(self, row: int) -> Path:
        return self.image_root / self.records[row].id

    # --- vectors (memory-mapped, loaded on first use) --------------------------------------------
    @cached_property
    def image_vectors(self) -> np.ndarray:
        return np.load(self.path / "image_emb.npy", mmap_mode="r")

    @cached_property
    def caption_vectors(self) -> np.ndarray | None:
        p = self.path / "caption_emb.npy"
        return np.load(p, mmap_mode="r") if self.has_captions and p.exists() else None

    def vectors(self, rows, kind: str = "image") -> Vectors:
        """float32 copies of some rows' image (or caption) vectors."""
        src = self.caption_vectors if kind == "caption" and self.caption_vectors is not None else self.image_vectors
        return np.asarray(src[np.asarray(rows, dtype=np.int64)], dtype=np.float32)


def load_index(path: Path, *, expect_embedder: str | None = None, expect_dim: int | None = None,
               verify: bool = True) -> ImageIndex:
    """Load an index folder, checking the manifest, files and checksums.

    Errors name the problem and the command that fixes it.
    """
    import faiss

    path = Path(path)
    mpath = path / "manifest.json"
    if not path.is_dir():
        raise IndexLoadError(f"no index at {path}: build one with "
                             f"python -m interactive_ir index --images IMAGES_DIR --out {path}")
    if not mpath.is_file():
        raise IndexLoadError(f"{path} has no manifest.json: it is not an index or its build was interrupted; "
                             f"rebuild: {rebuild_hint(path)}")
    try:
        manifest = json.loads(mpath.read_text())
    except json.JSONDecodeError as e:
        raise IndexLoadError(f"{mpath} is corrupt ({e.msg}); rebuild: {rebuild_hint(path)}") from e
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexLoadError(f"{path} has index format {manifest.get('format_version')}, this version reads "
                             f"{FORMAT_VERSION}; rebuild: {rebuild_hint(path, manifest)}")
    if expect_embedder and manifest.get("embedder") != expect_embedder:
        raise IndexLoadError(
            f"index {path} was built with {manifest.get('embedder')} ({manifest.get('dim')}-d) but the embedder "
            f"is {expect_embedder}: search with --embedder {manifest.get('embedder')}, or rebuild: "
            f"{rebuild_hint(path, {**manifest, 'embedder': expect_embedder})}")
    if expect_dim and int(manifest.get("dim", -1)) != expect_dim:
        raise IndexLoadError(f"index {path} holds {manifest.get('dim')}-d vectors but the embedder gives "
                             f"{expect_dim}-d; rebuild: {rebuild_hint(path, manifest)}")
    for name, info in manifest.get("files", {}).items():
        f = path / name
        if not f.is_file():
            raise IndexLoadError(f"index {path} is missing {name}; rebuild: {rebuild_hint(path, manifest)}")
        if f.stat().st_size != info["bytes"] or (verify and sha256_file(f) != info["sha256"]):
            raise IndexLoadError(f"index file {f} is corrupt (checksum mismatch); rebuild: "
                                 f"{rebuild_hint(path, manifest)}")
    records = []
    with open(path / "metadata.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                records.append(IndexRecord(**{k: d[k] for k in IndexRecord.__dataclass_fields__ if k in d}))
    if len(records) != manifest["count"]:
        raise IndexLoadError(f"index {path}: metadata has {len(records)} rows but the manifest says "
                             f"{manifest['count']}; rebuild: {rebuild_hint(path, manifest)}")
    try:
        fi = faiss.read_index(str(path / "faiss.index"))
    except RuntimeError as e:
        raise IndexLoadError(f"{path / 'faiss.index'} cannot be read ({e}); rebuild: {rebuild_hint(path, manifest)}") from e
    if fi.ntotal != len(records):
        raise IndexLoadError(f"index {path}: faiss index has {fi.ntotal} rows, metadata {len(records)}; "
                             f"rebuild: {rebuild_hint(path, manifest)}")
    index = ImageIndex(path, manifest, records, fi)
    _ = index.image_vectors, index.caption_vectors  # map the files now: a later rebuild replaces, never edits, them
    return index


def make_faiss_index(image_vecs: np.ndarray, caption_vecs: np.ndarray | None):
    """Exact inner-product search over fp16 rows of [image | caption]."""
    import faiss

    rows = np.asarray(image_vecs, dtype=np.float32)
    if caption_vecs is not None:
        rows = np.concatenate([rows, np.asarray(caption_vecs, dtype=np.float32)], axis=1)
    index = faiss.IndexScalarQuantizer(rows.shape[1], faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    index.train(rows[:1] if len(rows) else np.zeros((1, rows.shape[1]), np.float32))  # fp16 needs no training
    if len(rows):
        index.add(np.ascontiguousarray(rows))
    return index
