"""The on-disk index and its loader.

An index folder holds:
- `image_emb.npy`: float16 (N, D) image vectors (for a caption index: the captions' vectors);
- `caption_emb.npy`: float16 (N, D) caption vectors, when captions exist and the embedder has vision;
- `faiss.index`: an inner-product index over [image | caption] rows (2*D wide with captions) of the
  manifest's `kind` (exact fp16, ivf-pq or hnsw: `kinds.py`), opened memory-mapped;
- `metadata.sqlite`: one row per image (id, relative path, captions, width, height, size, mtime), read
  lazily (`metadata.py`); format-1 indices have `metadata.jsonl` instead;
- `manifest.json`: embedder spec, dimension, counts, kind and its parameters, times, version and file
  checksums (hashed at build and by `index verify`; a load checks sizes only, unless asked).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from functools import cached_property
from pathlib import Path

import numpy as np

from interactive_ir.errors import IndexLoadError
from interactive_ir.index.metadata import IndexRecord, unsafe_id_reason  # noqa: F401 - IndexRecord re-exported
from interactive_ir.types import Vectors

log = logging.getLogger(__name__)

FORMAT_VERSION = 2  # written by this version: metadata in SQLite, index kind in the manifest
READABLE_VERSIONS = (1, 2)  # 1: metadata.jsonl, always exact
FILES = ("image_emb.npy", "caption_emb.npy", "faiss.index", "metadata.sqlite")
LOAD_TIME_LINK_CHECK_MAX = 200_000  # up to this many images, loading scans every id and looks for links out of the root


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(chunk):
            h.update(b)
    return h.hexdigest()


def rebuild_hint(index_dir: Path, manifest: dict | None = None) -> str:
    """The command that rebuilds `index_dir`, with absolute paths (it works from any folder)."""
    import shlex

    manifest = manifest if isinstance(manifest, dict) else {}
    emb = manifest.get("embedder", "SPEC")
    root = manifest.get("image_root")
    root = str((Path(index_dir) / root).resolve()) if isinstance(root, str) and root else "IMAGES_DIR"
    cmd = ["python", "-m", "interactive_ir", "index", "--images", root]
    if isinstance(manifest.get("captions_file"), str):
        cmd += ["--captions", manifest["captions_file"]]
    cmd += ["--out", str(Path(index_dir).resolve()), "--embedder", str(emb), "--rebuild"]
    return " ".join(shlex.quote(c) if c not in ("IMAGES_DIR",) else c for c in cmd)



class ImageIndex:
    """A loaded, read-only index. Thread-safe for concurrent searches.

    `records`, `row_of` and `ids` behave like a list, a dict and a list; on a SQLite index they look rows
    up on demand (`metadata.py`), so nothing per image is held in RAM.
    """

    def __init__(self, path: Path, manifest: dict, records, faiss_index, store=None):
        from interactive_ir.index.kinds import IndexParams
        from interactive_ir.index.metadata import Ids, MemoryMetadata, Records, RowOf

        self.path = Path(path)
        self.manifest = manifest
        self.meta = MemoryMetadata(list(records)) if isinstance(records, (list, tuple)) else records
        self.records = Records(self.meta)
        self.ids = Ids(self.meta)
        self.row_of = RowOf(self.meta)
        self.faiss_index = faiss_index
        self.store = store  # a vector_store.VectorStore (Milvus) searched and read instead of the folder, or None
        self.params = IndexParams.from_dict(manifest.get("index_params") or {"kind": manifest.get("kind", "exact")})

    # --- facts -----------------------------------------------------------------------------------
    @property
    def embedder_spec(self) -> str:
        return self.manifest["embedder"]

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def kind(self) -> str:
        """exact, ivf-pq or hnsw."""
        return self.params.kind

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

    @cached_property
    def _root_str(self) -> str:
        return str(self.image_root)

    @cached_property
    def _real_root(self) -> str:
        return os.path.realpath(self._root_str)

    @cached_property
    def _allowed_roots(self) -> tuple[str, ...]:
        """The image root, and the folders the build saw indexed links point into (`link_roots`)."""
        return (self._real_root, *self.manifest.get("link_roots", []))

    def __len__(self) -> int:
        return self.meta.count

    def image_path(self, row: int) -> Path:
        """The file of an indexed image; IndexLoadError if the id or a symlink leads out of the image root."""
        return Path(self.image_file(row))

    def image_file(self, row: int, image_id: str | None = None, full_check: bool = True) -> str:
        """`image_path` as a string (cheaper: no Path object).

        `full_check=False` (a search hit: a path to show, not to open) checks the id's text only, no system
        call; links were checked at load (indices up to LOAD_TIME_LINK_CHECK_MAX images) and are checked
        again by `image_path` whenever a file is opened or served.
        """
        image_id = self.meta.id_of(int(row)) if image_id is None else image_id
        why = unsafe_id_reason(image_id)
        if why:
            raise IndexLoadError(f"index {self.path}: id {image_id!r} {why}; rebuild: {rebuild_hint(self.path, self.manifest)}")
        p = self._root_str + "/" + image_id
        if full_check:
            _check_inside(p, self._allowed_roots, self.path, self.manifest)  # a few lstat calls
        return p

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
        if self.store is not None:
            v = self.store.fetch(np.asarray(rows, dtype=np.int64))
            return v[:, self.dim:] if kind == "caption" and self.has_captions else v[:, : self.dim]
        src = self.caption_vectors if kind == "caption" and self.caption_vectors is not None else self.image_vectors
        return np.asarray(src[np.asarray(rows, dtype=np.int64)], dtype=np.float32)

    def row_vectors(self, rows) -> Vectors:
        """float32 [image | caption] rows (the width the faiss index searches) for some rows."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.store is not None:
            return self.store.fetch(rows)
        order = np.argsort(rows, kind="stable")  # ascending reads are kinder to a memory-mapped file
        out = np.empty((len(rows), self.dim * (2 if self.has_captions else 1)), np.float32)
        out[order, : self.dim] = self.image_vectors[rows[order]]
        if self.has_captions:
            out[order, self.dim:] = self.caption_vectors[rows[order]]
        return out

    # --- the exact re-rank of approximate candidates (`rerank.py`) -------------------------------
    @cached_property
    def rerank_codes(self):
        """The SQ8 re-rank codes (`rerank.Sq8Codes`: opened at load, read into RAM by the first search), or
        None: not ivf-pq, a Milvus store, an index built before the codes, or IIR_RERANK_CODES=0."""
        from interactive_ir.index import rerank

        if self.store is not None or rerank.CODES not in self.manifest.get("files", {}) or not rerank.codes_wanted():
            return None
        return rerank.Sq8Codes(self.path / rerank.CODES, len(self), self.dim * (2 if self.has_captions else 1))

    def rerank(self, q: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(exact scores, rows) of the best k of an approximate search's candidates, best first."""
        if self.store is not None:
            exact = self.row_vectors(rows) @ q
            order = np.argsort(-exact, kind="stable")[:k]
            return exact[order], np.asarray(rows, np.int64)[order]
        from interactive_ir.index import rerank

        parts = [self.image_vectors] + ([self.caption_vectors] if self.has_captions else [])
        return rerank.rerank(q, rows, k, parts, self.rerank_codes)


def _check_inside(p: str, roots: tuple[str, ...], index_dir: Path, manifest: dict) -> None:
    """Refuse a file whose real path is outside the image root and the build's recorded link targets."""
    real = os.path.realpath(p)
    if not any(real.startswith(r.rstrip("/") + "/") for r in roots):
        raise IndexLoadError(f"index {index_dir}: {p} is a link to {real}, outside the image root {roots[0]}; "
                             f"replace the link with the file itself or remove it, then rebuild: "
                             f"{rebuild_hint(index_dir, manifest)}")


def _fail(path: Path, what: str, manifest=None) -> IndexLoadError:
    return IndexLoadError(f"index {path}: {what}; rebuild: {rebuild_hint(path, manifest)}")


def write_manifest_field(path: Path, key: str, value) -> None:
    """Set one key of an index folder's manifest (written to a temporary file, then renamed): facts fitted
    after the build, such as the score profile (`retrieval/score_profile.py`)."""
    mpath = Path(path) / "manifest.json"
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    manifest[key] = value
    tmp = Path(path) / "manifest.json.field-tmp"
    tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    tmp.replace(mpath)


def read_manifest(path: Path) -> dict:
    """The manifest, every key the loader relies on checked for presence and type."""
    mpath = path / "manifest.json"
    if not path.is_dir():
        raise IndexLoadError(f"no index at {path}: build one with "
                             f"python -m interactive_ir index --images IMAGES_DIR --out {path}")
    if not mpath.is_file():
        raise IndexLoadError(f"{path} has no manifest.json: it is not an index or its build was interrupted; "
                             f"rebuild: {rebuild_hint(path)}")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IndexLoadError(f"{mpath} is corrupt ({getattr(e, 'msg', None) or e.reason}); "
                             f"rebuild: {rebuild_hint(path)}") from e
    if not isinstance(manifest, dict):
        raise IndexLoadError(f"{mpath} is corrupt (a JSON {type(manifest).__name__}, not an object); "
                             f"rebuild: {rebuild_hint(path)}")
    if manifest.get("format_version") not in READABLE_VERSIONS:
        raise IndexLoadError(f"{path} has index format {manifest.get('format_version')}, this version reads "
                             f"{', '.join(map(str, READABLE_VERSIONS))}; rebuild: {rebuild_hint(path, manifest)}")
    wants = {"embedder": str, "dim": int, "count": int, "files": dict}
    for key, typ in wants.items():
        v = manifest.get(key)
        if key not in manifest:
            raise IndexLoadError(f"{mpath} has no \"{key}\"; rebuild: {rebuild_hint(path, manifest)}")
        if not isinstance(v, typ) or isinstance(v, bool):
            raise IndexLoadError(f"{mpath}: \"{key}\" must be a{'n' if typ is int else ''} "
                                 f"{ {str: 'string', int: 'integer', dict: 'object'}[typ]}, not {v!r}"[:300]
                                 + f"; rebuild: {rebuild_hint(path, manifest)}")
    if manifest["dim"] < 1 or manifest["count"] < 0:
        raise IndexLoadError(f"{mpath}: dim {manifest['dim']} / count {manifest['count']} are impossible; "
                             f"rebuild: {rebuild_hint(path, manifest)}")
    links = manifest.get("link_roots", [])
    if not isinstance(links, list) or not all(isinstance(r, str) and os.path.isabs(r) and r != "/" for r in links):
        raise IndexLoadError(f"{mpath}: \"link_roots\" must be a list of absolute folders other than /; "
                             f"rebuild: {rebuild_hint(path, manifest)}")
    for key in ("has_vision", "caption_vectors"):
        if key in manifest and not isinstance(manifest[key], bool):
            raise IndexLoadError(f"{mpath}: \"{key}\" must be true or false; rebuild: {rebuild_hint(path, manifest)}")
    if not isinstance(manifest.get("image_root", "."), str):
        raise IndexLoadError(f"{mpath}: \"image_root\" must be a string; rebuild: {rebuild_hint(path, manifest)}")
    for name, info in manifest["files"].items():
        if not (isinstance(info, dict) and isinstance(info.get("bytes"), int) and isinstance(info.get("sha256"), str)):
            raise IndexLoadError(f"{mpath}: files.{name} must hold bytes and sha256; rebuild: {rebuild_hint(path, manifest)}")
    from interactive_ir.index.kinds import KINDS, IndexParams

    kind = manifest.get("kind", "exact")
    params = manifest.get("index_params", {"kind": kind})
    if kind not in KINDS or not isinstance(params, dict) or params.get("kind") != kind:
        raise IndexLoadError(f"{mpath}: unknown index kind {kind!r} (this version reads {', '.join(KINDS)}); "
                             f"rebuild: {rebuild_hint(path, manifest)}")
    try:
        IndexParams.from_dict(params)
    except TypeError as e:
        raise IndexLoadError(f"{mpath}: index_params are malformed ({e}); rebuild: {rebuild_hint(path, manifest)}") from e
    return manifest


def _check_root(path: Path, manifest: dict) -> None:
    root = Path(manifest.get("image_root", "."))
    root = root if root.is_absolute() else (path / root).resolve()
    if root == Path(root.anchor):
        raise IndexLoadError(f"index {path}: its image root is {root}, the whole file system; images must live in "
                             f"a folder of their own: rebuild with --images pointing at that folder: "
                             f"{rebuild_hint(path, {**manifest, 'image_root': None})}")


def _check_links(index: ImageIndex) -> None:
    """Refuse indexed files or folders that are links leading out of the image root (one folder walk)."""
    root = index._root_str
    if not os.path.isdir(root):
        return
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.is_symlink():
                rel = os.path.relpath(e.path, root).replace(os.sep, "/")
                indexed = rel in index.row_of or (os.path.isdir(e.path) and _any_under(index, rel + "/"))
                if indexed:
                    _check_inside(e.path, index._allowed_roots, index.path, index.manifest)
            elif e.is_dir(follow_symlinks=False):
                stack.append(e.path)


def _any_under(index: ImageIndex, prefix: str) -> bool:
    return any(i.startswith(prefix) for i in index.ids)


def _check_vectors(path: Path, manifest: dict, name: str, required: bool, scan: bool = False) -> None:
    f = path / name
    if not f.is_file():
        if required:
            raise _fail(path, f"it is missing {name}", manifest)
        return
    try:
        a = np.load(f, mmap_mode="r")
    except (ValueError, OSError, EOFError) as e:
        raise _fail(path, f"{name} is not a readable .npy file ({str(e)[:120]})", manifest) from e
    want = (manifest["count"], manifest["dim"])
    if a.ndim != 2 or tuple(a.shape) != want:
        raise _fail(path, f"{name} holds {'x'.join(map(str, a.shape))} vectors but the manifest promises "
                          f"{want[0]}x{want[1]}", manifest)
    if a.dtype != np.float16:
        raise _fail(path, f"{name} holds {a.dtype} values, not float16", manifest)
    if scan:
        _check_finite(path, manifest, name, a)


def _check_finite(path: Path, manifest: dict, name: str, a: np.ndarray, chunk: int = 65_536) -> None:
    """Refuse a row holding NaN or infinity (it would score NaN against every query), one pass in chunks."""
    for start in range(0, a.shape[0], chunk):
        ok = np.isfinite(a[start : start + chunk]).all(axis=1)
        if not ok.all():
            row = start + int(np.argmin(ok))
            raise _fail(path, f"{name} row {row} holds NaN or infinite values", manifest)


def load_index(path: Path, *, expect_embedder: str | None = None, expect_dim: int | None = None,
               verify: bool = False, store: str | None = None) -> ImageIndex:
    """Open an index folder: manifest, file sizes, vector shapes and metadata checked; nothing read whole.

    `verify=True` also hashes every file against the manifest (as `index verify` does). `store` (default:
    the IIR_STORE environment variable) is a Milvus store spec (`vector_store.py`) searched instead of
    the folder's faiss index. Errors name the problem and the command that fixes it.
    """
    import faiss

    import interactive_ir.index.kinds as K
    from interactive_ir.index.metadata import SQLITE_NAME, SqliteMetadata, read_jsonl

    path = Path(path)
    manifest = read_manifest(path)
    if expect_embedder and manifest["embedder"] != expect_embedder:
        raise IndexLoadError(
            f"index {path} was built with {manifest['embedder']} ({manifest['dim']}-d) but the embedder "
            f"is {expect_embedder}: search with --embedder {manifest['embedder']}, or rebuild: "
            f"{rebuild_hint(path, {**manifest, 'embedder': expect_embedder})}")
    if expect_dim and manifest["dim"] != expect_dim:
        raise IndexLoadError(f"index {path} holds {manifest['dim']}-d vectors but the embedder gives "
                             f"{expect_dim}-d; rebuild: {rebuild_hint(path, manifest)}")
    _check_root(path, manifest)
    for name, info in manifest["files"].items():
        f = path / name
        if not f.is_file():
            raise IndexLoadError(f"index {path} is missing {name}; rebuild: {rebuild_hint(path, manifest)}")
        if f.stat().st_size != info["bytes"] or (verify and sha256_file(f) != info["sha256"]):
            raise IndexLoadError(f"index file {f} is corrupt (checksum mismatch); rebuild: "
                                 f"{rebuild_hint(path, manifest)}")
    hint = rebuild_hint(path, manifest)
    scan = manifest["count"] <= LOAD_TIME_LINK_CHECK_MAX or verify  # larger: `index verify` scans them
    _check_vectors(path, manifest, "image_emb.npy", True, scan)
    _check_vectors(path, manifest, "caption_emb.npy", bool(manifest.get("caption_vectors")), scan)
    if manifest["format_version"] == 1:
        meta = read_jsonl(path / "metadata.jsonl", manifest["count"], hint)
    else:
        mfile = path / SQLITE_NAME
        if not mfile.is_file():
            raise IndexLoadError(f"index {path} is missing {SQLITE_NAME}; rebuild: {hint}")
        meta = SqliteMetadata(mfile, manifest["count"])
        meta.check(hint, scan_ids=manifest["count"] <= LOAD_TIME_LINK_CHECK_MAX or verify)
    params = K.IndexParams.from_dict(manifest.get("index_params") or {"kind": manifest.get("kind", "exact")})
    try:
        fi = K.read(str(path / "faiss.index"), params) if manifest["format_version"] >= 2 \
            else faiss.read_index(str(path / "faiss.index"))
    except RuntimeError as e:
        raise IndexLoadError(f"{path / 'faiss.index'} cannot be read ({str(e).strip().splitlines()[0][:160]}); "
                             f"rebuild: {hint}") from e
    width = manifest["dim"] * (2 if manifest.get("caption_vectors") else 1)
    if fi.ntotal != manifest["count"] or fi.d != width:
        raise IndexLoadError(f"index {path}: faiss index has {fi.ntotal} rows of {fi.d}, the manifest "
                             f"{manifest['count']} of {width}; rebuild: {hint}")
    store = store if store is not None else os.environ.get("IIR_STORE", "")
    vs = None
    if store:
        from interactive_ir.index.vector_store import open_store

        vs = open_store(store, width, manifest["count"])
    index = ImageIndex(path, manifest, meta, fi, vs)
    if len(index) <= LOAD_TIME_LINK_CHECK_MAX:
        _check_links(index)
    _ = index.image_vectors, index.caption_vectors  # map the files now: a later rebuild replaces, never edits, them
    _ = index.rerank_codes  # opened now, read by the first search
    return index


def verify_index(path: Path) -> ImageIndex:
    """Everything `load_index` checks, plus every file's checksum and every indexed link (any size)."""
    index = load_index(path, verify=True)  # verify: every id scanned whatever the size
    if len(index) > LOAD_TIME_LINK_CHECK_MAX:
        _check_links(index)
    return index
