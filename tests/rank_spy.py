"""A test-only retriever spy: the row a round was really searched with, to check `Turn.query_row`."""

from __future__ import annotations

import numpy as np


class SpyRetriever:
    """Test-only: a retriever that notes the query row of its latest search (everything else delegates)."""

    def __init__(self, inner):
        self._inner = inner
        self.last_row = None

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def search_row(self, qrow, k=None, exclude=()):
        self.last_row = np.array(qrow, dtype=np.float32, copy=True)
        return self._inner.search_row(qrow, k, exclude)

    def search_rows(self, qrow, k=None, exclude=(), exclude_rows=None):
        self.last_row = np.array(qrow, dtype=np.float32, copy=True)
        return self._inner.search_rows(qrow, k, exclude, exclude_rows)
