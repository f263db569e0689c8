"""Building an index from precomputed embeddings (`index --vectors FILE.npy|DIR --ids FILE ...`).

Large collections publish their CLIP embeddings as .npy files or folders of Parquet files. This reads
them in chunks (bounded memory whatever N), checks every chunk (finite values, non-zero rows, safe and
unique ids), and streams rows into an `IndexWriter`. Work is checkpointed in `.NAME.partial` beside the
output after every chunk: running the same command again after an interruption resumes there. Bad input
stops the build with a one-line error and removes the partial folder: nothing half-written remains.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from interactive_ir.errors import BadInputError
from interactive_ir.index.metadata import DuplicateIdError, IndexRecord, unsafe_id_reason
from interactive_ir.index.writer import IndexWriter

log = logging.getLogger(__name__)

VECTOR_COLUMNS = ("embedding", "embeddings", "emb", "vector", "image_embedding", "clip_embedding")


@dataclass
class VectorsConfig:
    vectors: Path  # an (N, d) .npy file, or a folder of .parquet files with a list<float> embedding column
    ids: Path  # text file, one image id (path relative to the image root) per line, in the vectors' order
    out: Path  # index folder to create
    images: Path | None = None  # image root the ids are relative to (default: the ids file's folder)
    captions: Path | None = None  # optional captions file (JSONL, COCO JSON, CSV/TSV) keyed by id, stored as metadata
    kind: str = "auto"  # exact, ivf-pq, hnsw, or auto
    chunk_rows: int = 65_536  # rows read, checked and written at a time


@dataclass
class VectorsReport:
    out: Path  # the index folder written
    count: int  # rows in the index
    resumed_from: int  # rows found done by an interrupted earlier run (0 for a fresh build)
    kind: str  # the kind built


# --- sources ---------------------------------------------------------------------------------------
class _Npy:
    def __init__(self, path: Path):
        try:
            self.a = np.load(path, mmap_mode="r")
        except (ValueError, OSError, EOFError) as e:
            raise BadInputError(f"--vectors {path} is not a readable .npy file ({str(e)[:120]}): "
                                "give an (N, d) float array saved with numpy.save") from e
        if self.a.ndim != 2 or self.a.dtype.kind != "f":
            raise BadInputError(f"--vectors {path} holds a {self.a.dtype} array of shape {self.a.shape}, not (N, d) "
                                "floats: save the embeddings as one 2-D float array")
        self.rows, self.dim = self.a.shape

    def chunks(self, start: int, size: int) -> Iterator[np.ndarray]:
        for a in range(start, self.rows, size):
            yield np.asarray(self.a[a : a + size], dtype=np.float32)


class _Parquet:
    def __init__(self, folder: Path):
        import pyarrow.parquet as pq

        self.files = sorted(p for p in folder.iterdir() if p.suffix == ".parquet")
        if not self.files:
            raise BadInputError(f"--vectors {folder} holds no .parquet files: give a .npy file or a folder of "
                                "Parquet files with an embedding column")
        self.rows = 0
        self.column = None
        for f in self.files:
            try:
                meta = pq.ParquetFile(f)
            except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
                raise BadInputError(f"{f} is not a readable Parquet file ({str(e)[:120]})") from e
            names = meta.schema_arrow.names
            col = next((c for c in VECTOR_COLUMNS if c in names), None)
            if col is None:
                raise BadInputError(f"{f} has no embedding column (looked for {', '.join(VECTOR_COLUMNS)}; it has "
                                    f"{', '.join(names[:8])}): rename the column")
            self.column = self.column or col
            self.rows += meta.metadata.num_rows
        first = next(self._batches(0, 1), None)
        self.dim = 0 if first is None else first.shape[1]

    def _batches(self, start: int, size: int) -> Iterator[np.ndarray]:
        import pyarrow.parquet as pq

        seen = 0
        for f in self.files:
            pf = pq.ParquetFile(f)
            n = pf.metadata.num_rows
            if seen + n <= start:
                seen += n
                continue
            col = next(c for c in VECTOR_COLUMNS if c in pf.schema_arrow.names)
            for batch in pf.iter_batches(batch_size=size, columns=[col]):
                arr = batch.column(0)
                if seen + len(arr) <= start:
                    seen += len(arr)
                    continue
                vals = np.asarray(arr.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
                rows = len(arr)
                if rows and vals.size % rows:
                    raise BadInputError(f"{f}: embedding rows of different lengths: every row needs the same dimension")
                m = vals.reshape(rows, -1) if rows else vals.reshape(0, 0)
                skip = max(0, start - seen)
                seen += rows
                yield m[skip:]

    def chunks(self, start: int, size: int) -> Iterator[np.ndarray]:
        buf: list[np.ndarray] = []
        have = 0
        for m in self._batches(start, size):
            buf.append(m)
            have += len(m)
            while have >= size:
                cat = np.concatenate(buf)
                yield cat[:size]
                buf, have = [cat[size:]], have - size
        if have:
            yield np.concatenate(buf)


def open_vectors(path: Path):
    path = Path(path)
    if path.is_dir():
        return _Parquet(path)
    if not path.is_file():
        raise BadInputError(f"--vectors {path} does not exist: give an .npy file or a folder of .parquet files")
    return _Npy(path)


def _count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                n += 1
    return n


def _iter_ids(path: Path, start: int) -> Iterator[tuple[int, str]]:
    n = 0
    with open(path, encoding="utf-8", errors="strict") as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s:
                continue
            if n >= start:
                yield lineno, s
            n += 1


# --- the build -------------------------------------------------------------------------------------
def build_from_vectors(cfg: VectorsConfig, embedder, progress=None) -> VectorsReport:
    """Index precomputed embeddings in chunks; see the module doc. Raises BadInputError on bad input."""
    from interactive_ir.index.builder import check_out
    from interactive_ir.index.captions_io import read_captions

    check_out(Path(cfg.out))
    src = _checked_source(cfg, embedder)
    root = Path(cfg.images).resolve() if cfg.images else Path(cfg.ids).resolve().parent
    if root == Path(root.anchor):
        raise BadInputError(f"the image root {root} is the whole file system: pass --images FOLDER")
    captions = read_captions(Path(cfg.captions)) if cfg.captions else {}
    captions = {k.replace("\\", "/").lstrip("./"): v for k, v in captions.items()}

    out = Path(cfg.out).resolve()
    partial = out.parent / f".{out.name}.partial"
    fingerprint = {
        "vectors": str(Path(cfg.vectors).resolve()), "ids": str(Path(cfg.ids).resolve()),
        "stamp": [_stamp(Path(cfg.vectors)), _stamp(Path(cfg.ids))], "embedder": embedder.spec,
        "captions": str(Path(cfg.captions).resolve()) if cfg.captions else None,
    }
    writer = IndexWriter(out, src.dim, caption_vectors=False, partial=partial, source=fingerprint)
    start = writer.rows
    if start:
        log.info("resuming %s after %d of %d rows", out, start, src.rows)
    try:
        ids = _iter_ids(Path(cfg.ids), start)
        row = start
        for chunk in src.chunks(start, cfg.chunk_rows):
            recs = []
            for _ in range(len(chunk)):
                lineno, image_id = next(ids)
                why = unsafe_id_reason(image_id)
                if why:
                    raise BadInputError(f"--ids {cfg.ids} line {lineno}: id {image_id!r} {why}: ids must be paths "
                                        "relative to the image root")
                recs.append(IndexRecord(image_id, list(captions.get(image_id, []))))
            try:
                writer.add(recs, _normalised(cfg, chunk, row))
            except DuplicateIdError as e:
                raise BadInputError(f"--ids {cfg.ids} names {e.args[0]!r} twice: ids must be unique") from e
            writer.checkpoint()
            row += len(chunk)
            if progress:
                progress(row, src.rows, f"indexed {row:,}/{src.rows:,} vectors")
        if row != src.rows:
            raise BadInputError(f"--vectors {cfg.vectors} gave {row:,} rows, not the {src.rows:,} its header promises")
        manifest = writer.finish(cfg.kind, {
            "embedder": embedder.spec,
            "has_vision": bool(embedder.has_vision),
            "skipped": 0,
            "image_root": _relroot(root, out),
            "captions_file": str(Path(cfg.captions).resolve()) if cfg.captions else None,
            "source_vectors": str(Path(cfg.vectors).resolve()),
        })
    except (BadInputError, UnicodeDecodeError) as e:
        writer.abort(keep_partial=False)
        if isinstance(e, UnicodeDecodeError):
            raise BadInputError(f"--ids {cfg.ids} is not UTF-8 text") from e
        raise
    except BaseException:
        writer.abort(keep_partial=True)  # interrupted or crashed: the same command resumes
        raise
    return VectorsReport(out, manifest["count"], start, manifest["kind"])


def _checked_source(cfg: VectorsConfig, embedder):
    """The vectors file, opened, once it matches the embedder and the ids file (BadInputError if not)."""
    from interactive_ir.index import kinds

    if cfg.chunk_rows < 1:
        raise BadInputError("--chunk-rows must be at least 1")
    src = open_vectors(cfg.vectors)
    if src.dim != embedder.dim:
        raise BadInputError(f"--vectors {cfg.vectors} holds {src.dim}-d vectors but {embedder.spec} gives "
                            f"{embedder.dim}-d: pass the --embedder that made them")
    if not Path(cfg.ids).is_file():
        raise BadInputError(f"--ids {cfg.ids} does not exist: give a text file with one image id per line")
    try:
        n_ids = _count_lines(Path(cfg.ids))
    except OSError as e:
        raise BadInputError(f"cannot read --ids {cfg.ids} ({e.strerror})") from e
    if n_ids != src.rows:
        fewer = "fewer" if n_ids < src.rows else "more"
        raise BadInputError(f"--ids {cfg.ids} has {n_ids:,} ids, {fewer} than the {src.rows:,} vectors in "
                            f"{cfg.vectors}: give one id per vector, in the same order")
    kinds.choose_params(cfg.kind, src.rows, src.dim)  # unknown kind, or an approximate kind for too few rows
    return src


def _normalised(cfg: VectorsConfig, chunk: np.ndarray, row: int) -> np.ndarray:
    """A chunk of vectors (the first is row `row`) L2-normalised as float16; NaN, infinite or zero rows refused."""
    bad = ~np.isfinite(chunk).all(axis=1)
    if bad.any():
        raise BadInputError(f"--vectors {cfg.vectors} row {row + int(np.argmax(bad))} holds NaN or infinite "
                            "values: recompute or drop that embedding (and its id)")
    norms = np.linalg.norm(chunk, axis=1, keepdims=True)
    if (norms == 0).any():
        raise BadInputError(f"--vectors {cfg.vectors} row {row + int(np.argmax(norms[:, 0] == 0))} is all "
                            "zeros: recompute or drop that embedding (and its id)")
    return (chunk / norms).astype(np.float16)


def _stamp(p: Path) -> list:
    if p.is_dir():
        return sorted([f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in p.iterdir() if f.suffix == ".parquet")
    st = p.stat()
    return [st.st_size, st.st_mtime_ns]


def _relroot(root: Path, out: Path) -> str:
    try:
        return os.path.relpath(root, out)
    except ValueError:
        return str(root)
