"""Text similarity for the model-free simulated user: how alike a question or an option is to the
target's held-out captions.

- `WordSimilarity` (no model): cosine of the two texts' sets of stemmed content words.
- `BM25Similarity` (no model): cosine of the two texts' BM25-weighted content-word vectors, the inverse
  document frequencies taken over the texts being compared (the shown images' captions and what the user
  knows): a word every shown caption has tells little, a rare one much. It shares nothing with the index's
  embedder, and weighs words unlike `WordSimilarity`: two judges that can disagree.
- `EmbedderSimilarity`: cosine of a text embedder's vectors (e.g. `text:all-MiniLM-L6-v2`), cached per
  text. Using the retriever's own model as the user's judge makes the user share the retriever's
  notion of "alike": use a different model where one runs, and say so when it is the same.

`make_similarity("words" | "bm25" | EMBEDDER_SPEC)` builds one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from interactive_ir.evaluation.words import content_words


class WordSimilarity:
    """Cosine of content-word sets (0 when either text has no content word)."""

    name = "words"
    model_free = True  # the answer rules treat it as words, not as an embedder's cosine

    def matrix(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        wa = [set(content_words(t)) for t in a]
        wb = [set(content_words(t)) for t in b]
        out = np.zeros((len(a), len(b)), np.float32)
        for i, x in enumerate(wa):
            for j, y in enumerate(wb):
                if x and y:
                    out[i, j] = len(x & y) / math.sqrt(len(x) * len(y))
        return out


class BM25Similarity:
    """Cosine of BM25-weighted content-word vectors; document frequencies over the texts compared (0 when
    either text has no content word). `k1`, `b`: BM25's term saturation and length normalisation."""

    name = "bm25"
    model_free = True

    def __init__(self, k1: float = 1.2, b: float = 0.75):
        self.k1 = k1
        self.b = b

    def _vectors(self, texts: Sequence[str]) -> list[dict[str, float]]:
        bags = [Counter(content_words(t)) for t in texts]
        n = len(bags)
        df = Counter(w for bag in bags for w in bag)
        avg = sum(sum(bag.values()) for bag in bags) / max(1, n) or 1.0
        out = []
        for bag in bags:
            length = sum(bag.values())
            vec = {}
            for w, tf in bag.items():
                idf = math.log(1.0 + (n - df[w] + 0.5) / (df[w] + 0.5))
                vec[w] = idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length / avg))
            out.append(vec)
        return out

    def matrix(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        vecs = self._vectors([*a, *b])
        va, vb = vecs[:len(a)], vecs[len(a):]
        norms = [math.sqrt(sum(x * x for x in v.values())) for v in vecs]
        na, nb = norms[:len(a)], norms[len(a):]
        out = np.zeros((len(a), len(b)), np.float32)
        for i, x in enumerate(va):
            for j, y in enumerate(vb):
                if na[i] and nb[j]:
                    out[i, j] = sum(x[w] * y[w] for w in x.keys() & y.keys()) / (na[i] * nb[j])
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
    """`words` (default, no model), `bm25` (no model), `index` (the given `embedder`, usually the retriever's) or an embedder spec."""
    s = (spec or "words").strip()
    if s == "words":
        return WordSimilarity()
    if s == "bm25":
        return BM25Similarity()
    if s == "index":
        if embedder is None:
            from interactive_ir.errors import BadInputError

            raise BadInputError("--user-similarity index needs the index's embedder")
        return EmbedderSimilarity(embedder)
    from interactive_ir.backends import make_embedder

    return EmbedderSimilarity(make_embedder(s))
