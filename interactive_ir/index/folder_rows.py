"""The float32 [image | caption] rows of an index folder, read from its memory-mapped fp16 vector files.

Used while an index is written (training and filling faiss, tuning nprobe) and by `index tune`, where
only the folder exists; a loaded index reads the same rows through `ImageIndex.row_vectors`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class FolderRows:
    """Reads [image | caption] float32 rows of an index folder from its memory-mapped fp16 vectors."""

    def __init__(self, folder: Path):
        self.img = np.load(folder / "image_emb.npy", mmap_mode="r")
        capf = folder / "caption_emb.npy"
        self.cap = np.load(capf, mmap_mode="r") if capf.exists() else None
        self.n = len(self.img)
        self.width = self.img.shape[1] * (2 if self.cap is not None else 1)

    def rows(self, take) -> np.ndarray:
        take = np.asarray(take, dtype=np.int64)
        order = np.argsort(take, kind="stable")  # ascending reads from the mapped file
        out = np.empty((len(take), self.width), np.float32)
        d = self.img.shape[1]
        out[order, :d] = self.img[take[order]]
        if self.cap is not None:
            out[order, d:] = self.cap[take[order]]
        return out

    def chunk(self, a: int, b: int) -> np.ndarray:
        x = np.asarray(self.img[a:b], np.float32)
        if self.cap is not None:
            x = np.concatenate([x, np.asarray(self.cap[a:b], np.float32)], axis=1)
        return x
