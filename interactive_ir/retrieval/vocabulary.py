"""The words a caption index knows, for the "no close match" note on a description none of whose words any
caption uses ("asdf qwerty", a misspelt single word): the standout measure of `score_profile` cannot flag it,
since an embedder still ranks something first and a few results can stand out by chance.

`caption_vocabulary(index)` is the set of content-word stems (`retrieval.words`) over the stored captions, built
once per loaded index (a pass over the captions: about a second per 100,000) and only where it can answer: at
least `MIN_CAPTIONED` of the rows have a caption and there are at most `VOCAB_ROWS_MAX` rows (above that the
pass would stall a search; no note). `unknown_words(text, vocab)` is the description's words when none of them
is known, else () (one known word and the embedder has something to go on)."""

from __future__ import annotations

import threading
import weakref

from interactive_ir.retrieval.words import content_words

VOCAB_ROWS_MAX = 200_000  # indices up to this many rows get the check (one pass over their captions, once: under a second)
MIN_CAPTIONED = 0.9  # ... and only when at least this share of their rows have a stored caption

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def caption_vocabulary(index) -> frozenset | None:
    """The content-word stems of `index`'s stored captions (cached per index object); None when it has too few
    captions or too many rows to answer."""
    try:
        with _lock:
            if index in _cache:
                return _cache[index]
    except TypeError:  # an index object that cannot be weakly referenced: no cache, no check
        return None
    records = getattr(index, "records", None)
    n = len(index) if records is not None else 0
    vocab = None
    if 0 < n <= VOCAB_ROWS_MAX:
        captions = [getattr(records[i], "caption", "") or "" for i in range(n)]
        if sum(1 for c in captions if c.strip()) >= MIN_CAPTIONED * n:
            vocab = frozenset(w for c in captions for w in content_words(c))
    with _lock:
        _cache[index] = vocab
    return vocab


def unknown_words(text: str, vocab: frozenset | None) -> tuple[str, ...]:
    """The content words of `text` when no caption uses any of them (stems), else (); () without a vocabulary."""
    if not vocab:
        return ()
    words = content_words(text or "")
    if not words or any(w in vocab for w in words):
        return ()
    return tuple(dict.fromkeys(words))
