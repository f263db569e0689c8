"""Writing an index folder in bounded memory.

Rows arrive in chunks (`IndexWriter.add`): their fp16 vectors are appended to `image_emb.npy` /
`caption_emb.npy` and their metadata to `metadata.sqlite`, so a build never holds the collection in
RAM. `finish` then trains the faiss index of the chosen kind on a sample of rows, adds every row
chunk by chunk from the memory-mapped vectors, chooses an ivf-pq index's nprobe from calibration
queries (`tune`), hashes the files, writes the manifest and renames the
folder into place. Until that rename the index at `out` (if any) is untouched and nothing loadable
exists at `out`.

A writer started with `partial=` keeps its work in that folder and records the rows done in
`progress.json` after every chunk, so an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from interactive_ir import __version__
from interactive_ir.index import kinds as K
from interactive_ir.index import rerank
from interactive_ir.index.folder_rows import FolderRows
from interactive_ir.index.metadata import SQLITE_NAME, IndexRecord, SqliteMetadataWriter
from interactive_ir.index.store import FORMAT_VERSION, sha256_file
from interactive_ir.index.tune import tune as tune_ivf

log = logging.getLogger(__name__)

CHUNK_ROWS = 65_536  # rows per faiss add / training read (64k x 1024 float32 = 256 MB at most)


def _npy_header(rows: int, dim: int) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f2", "fortran_order": False, "shape": (rows, dim)})
    return buf.getvalue()


class VectorFile:
    """An fp16 .npy file appended to row by row; its header is rewritten with the final count on close.

    numpy pads .npy headers so the row count can grow in place (same header length at 0 or 10^12 rows).
    """

    def __init__(self, path: Path, dim: int, resume_rows: int | None = None):
        self.path, self.dim = Path(path), int(dim)
        self.header_len = len(_npy_header(0, dim))
        if resume_rows is None:
            self.fh = open(self.path, "wb")
            self.fh.write(_npy_header(0, dim))
            self.rows = 0
        else:
            self.fh = open(self.path, "r+b")
            self.fh.truncate(self.header_len + resume_rows * dim * 2)
            self.fh.seek(0, os.SEEK_END)
            self.rows = resume_rows

    def append(self, vecs: np.ndarray) -> None:
        v = np.ascontiguousarray(vecs, dtype="<f2")
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise ValueError(f"expected rows of {self.dim} values, got shape {v.shape}")
        self.fh.write(v.tobytes())
        self.rows += len(v)

    def flush(self) -> None:
        self.fh.flush()

    def close(self) -> None:
        header = _npy_header(self.rows, self.dim)
        assert len(header) == self.header_len
        self.fh.seek(0)
        self.fh.write(header)
        self.fh.close()


class IndexWriter:
    """Streams rows into a new index folder; `finish` makes it an index at `out`, `abort` removes it."""

    def __init__(self, out: Path, dim: int, *, caption_vectors: bool, partial: Path | None = None,
                 source: dict | None = None):
        self.out = Path(out).resolve()
        self.dim = int(dim)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.source = source or {}
        resume = None
        if partial is not None:
            self.tmp = Path(partial)
            resume = self._resumable_rows()
            if resume is None:
                shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp.mkdir(mode=0o755, exist_ok=True)
        else:
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.tmp-", dir=self.out.parent))
            # mkdtemp makes it 0700: give the index the usual folder permissions (os.umask would change
            # process-wide state under the app's threads)
            self.tmp.chmod(0o755)
        self.partial = partial is not None
        self.images = VectorFile(self.tmp / "image_emb.npy", dim, resume)
        self.captions = VectorFile(self.tmp / "caption_emb.npy", dim, resume) if caption_vectors else None
        self.meta = SqliteMetadataWriter(self.tmp / SQLITE_NAME, resume=resume is not None)
        if resume is not None:
            self.meta.truncate(resume)
        self.any_caption = bool(resume) and caption_vectors

    @property
    def rows(self) -> int:
        return self.images.rows

    def _resumable_rows(self) -> int | None:
        try:
            prog = json.loads((self.tmp / "progress.json").read_text())
        except (OSError, ValueError):
            return None
        if prog.get("source") != self.source or prog.get("dim") != self.dim:
            return None
        return int(prog.get("rows", 0))

    def add(self, records: Sequence[IndexRecord], image_vecs: np.ndarray,
            caption_vecs: np.ndarray | None = None) -> None:
        """Append rows (metadata and vectors, same length, in row order)."""
        if len(records) != len(image_vecs):
            raise ValueError("records and vectors differ in length")
        self.meta.add(records)  # first: a duplicated id stops the chunk before any vector is written
        self.images.append(image_vecs)
        if self.captions is not None:
            if caption_vecs is None:
                caption_vecs = np.zeros((len(records), self.dim), np.float16)
            else:
                self.any_caption = True
            self.captions.append(caption_vecs)

    def checkpoint(self) -> None:
        """Make the rows so far durable and record them (a resumed build restarts after them)."""
        self.images.flush()
        if self.captions is not None:
            self.captions.flush()
        self.meta.commit()
        if self.partial:
            p = self.tmp / "progress.json.new"
            p.write_text(json.dumps({"source": self.source, "dim": self.dim, "rows": self.rows}))
            p.replace(self.tmp / "progress.json")

    def finish(self, kind: str, manifest: dict) -> dict:
        """Close the files, build the faiss index, write the manifest and move the folder to `out`."""
        from interactive_ir.errors import IndexBuildError

        try:
            self.images.close()
            if self.captions is not None:
                self.captions.close()
                if not self.any_caption:
                    (self.tmp / "caption_emb.npy").unlink()
                    self.captions = None
            self.meta.close()
            n = self.rows
            if n == 0:
                raise IndexBuildError(f"nothing to index into {self.out}")
            width = self.dim * (2 if self.captions is not None else 1)
            params = K.choose_params(kind, n, width)
            t0 = time.perf_counter()
            rows = FolderRows(self.tmp)
            index = build_faiss(self.tmp, rows, params, n)
            log.info("built the %s index of %d rows in %.1f s", params.kind, n, time.perf_counter() - t0)
            tuning = None
            if params.kind == "ivf-pq":  # nprobe (and re-rank depth) chosen from this collection's own data
                params, report = tune_ivf(index, params, rows)
                tuning = report.to_dict()
            del index
            codes = (rerank.write_codes(self.tmp, rows, n),) if params.kind == "ivf-pq" else ()  # SQ8: re-rank
            (self.tmp / "progress.json").unlink(missing_ok=True)
            files = {}
            for name in ("image_emb.npy", "caption_emb.npy", "faiss.index", SQLITE_NAME, *codes):
                f = self.tmp / name
                if f.exists():
                    files[name] = {"bytes": f.stat().st_size, "sha256": sha256_file(f)}
            now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            full = {
                "format_version": FORMAT_VERSION,
                **manifest,
                "dim": self.dim,
                "caption_vectors": self.captions is not None,
                "count": n,
                "kind": params.kind,
                "index_params": params.to_dict(),
                **({"tuning": tuning} if tuning else {}),
                "metadata": SQLITE_NAME,
                "created": now,
                "package_version": __version__,
                "files": files,
            }
            (self.tmp / "manifest.json").write_text(json.dumps(full, indent=2))
            old = None
            if self.out.exists():
                old = self.out.parent / f".{self.out.name}.old-{os.getpid()}-{time.time_ns()}"
                self.out.rename(old)
            self.tmp.rename(self.out)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
            return full
        except BaseException:
            if not self.partial:
                shutil.rmtree(self.tmp, ignore_errors=True)
            raise

    def abort(self, keep_partial: bool = True) -> None:
        """Stop: a resumable writer keeps its rows so far (checkpointed), another one removes its folder."""
        for f in (self.images, self.captions):
            if f is not None and not f.fh.closed:
                f.fh.close()
        try:
            self.meta.close()
        except Exception:  # noqa: BLE001 - already closed
            pass
        if not (self.partial and keep_partial):
            shutil.rmtree(self.tmp, ignore_errors=True)


def build_faiss(folder: Path, rows: FolderRows, params: K.IndexParams, n: int):
    """Train (on a seeded sample) and fill the faiss index from the folder's memory-mapped vectors; returns it."""
    import faiss

    index = make_index(params, rows.width)
    if params.approximate:
        m = min(n, params.train_size or n)
        take = np.sort(np.random.default_rng(0).choice(n, m, replace=False)) if m < n else None
        index.train(rows.chunk(0, n) if take is None else rows.rows(take))
    else:
        index.train(np.zeros((1, rows.width), np.float32))  # fp16 needs no training
    for a in range(0, n, CHUNK_ROWS):
        index.add(rows.chunk(a, min(n, a + CHUNK_ROWS)))
    faiss.write_index(index, str(folder / "faiss.index"))
    return index


def make_index(params: K.IndexParams, width: int):
    """An empty faiss index of the kind (a seam for tests that interrupt a build)."""
    return K.create(params, width)
