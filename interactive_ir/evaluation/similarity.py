"""Text similarity for the model-free simulated user: how alike a question or an option is to the
target's held-out captions.

- `WordSimilarity` (no model): cosine of the two texts' sets of stemmed content words.
- `EmbedderSimilarity`: cosine of a text embedder's vectors (e.g. `text:all-MiniLM-L6-v2`), cached per
  text. Using the retriever's own model as the user's judge makes the user share the retriever's
  notion of "alike": use a different model where one runs, and say so when it is the same.

`make_similarity("words" | EMBEDDER_SPEC)` builds one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from interactive_ir.evaluation.words import content_words


class WordSimilarity:
    """Cosine of content-word sets (0 when either text has no content word)."""

    name = "words"

    def matrix(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        wa = [set(content_words(t)) for t in a]
        wb = [set(content_words(t)) for t in b]
        out = np.zeros((len(a), len(b)), np.float32)
        for i, x in enumerate(wa):
            for j, y in enumerate(wb):
                if x and y:
                    out[i, j] = len(x & y) / math.sqrt(len(x) * len(y))
        return out


class EmbedderSimilarity:
    """Cosine of an embedder's text vectors (the embedder's `embed_texts` gives unit rows)."""

    def __init__(self, embedder, cache_size: int = 50_000):
        self.embedder = embedder
        self.name = getattr(embedder, "spec", "embedder")
        self._cache: dict[str, np.ndarray] = {}
        self._cache_size = cache_size

    def _vecs(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            if len(self._cache) + len(todo) > self._cache_size:
                self._cache.clear()
            for t, v in zip(todo, self.embedder.embed_texts(todo)):
                n = float(np.linalg.norm(v))
                self._cache[t] = (np.asarray(v, np.float32) / n) if n else np.asarray(v, np.float32)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def matrix(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        if not a or not b:
            return np.zeros((len(a), len(b)), np.float32)
        return self._vecs(list(a)) @ self._vecs(list(b)).T


def make_similarity(spec: str | None = "words", embedder=None):
    """`words` (default, no model), `index` (the given `embedder`, usually the retriever's) or an embedder spec."""
    s = (spec or "words").strip()
    if s == "words":
        return WordSimilarity()
    if s == "index":
        if embedder is None:
            from interactive_ir.errors import BadInputError

            raise BadInputError("--user-similarity index needs the index's embedder")
        return EmbedderSimilarity(embedder)
    from interactive_ir.backends import make_embedder

    return EmbedderSimilarity(make_embedder(s))
