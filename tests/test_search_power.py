"""Issue 26 D5-D8: more like this, near-duplicates folded, "no close match", filter counts, sort by date."""

from __future__ import annotations

import numpy as np
import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.embedders import FakeEmbedder
from interactive_ir.core.text_search import EngineConfig
from interactive_ir.engine import build_engine
from interactive_ir.errors import SessionError


class TextOnly(FakeEmbedder):
    has_vision = False


def _brute(r, vec, leave_out, allowed=None):
    """Ids by inner product of `vec` with every row's image vector (the image half), best first."""
    v = r.index.vectors(np.arange(len(r.index)), "image")
    scores = v @ np.asarray(vec, np.float32)
    order = np.argsort(-scores, kind="stable")
    ids = [r.index.ids[int(i)] for i in order]
    return [i for i in ids if i not in leave_out and (allowed is None or i in allowed)]


@pytest.mark.parametrize("caption_index", [False, True])
def test_more_like_this_ranks_by_the_images_own_vector(tmp_path, caption_index):
    r, ids, _ = build_tiny(tmp_path, embedder=TextOnly(32) if caption_index else None)
    assert r.index.caption_only is caption_index and (caption_index or r.index.has_captions)
    eng = build_engine(r, config=EngineConfig(k=5))
    s = eng.new_session()
    first = eng.search_text(s, "a red dog")
    pick = first.shown[2]
    t = eng.more_like(s, pick)
    vec = r.index.vectors([r.index.row_of[pick]], "image")[0]  # image vector, or the caption's on a caption index
    assert t.kind == "like" and t.round == 1 and t.extra["like"] == pick and len(s.turns) == 2
    assert pick not in t.shown  # the image itself is not shown again
    assert t.shown == _brute(r, vec, {pick})[:5]
    assert np.allclose(s.carry_row, t.query_row)  # a later answer keeps its effect


def test_more_like_this_keeps_the_filters_and_refuses_unknown_images(tmp_path):
    r, ids, _ = build_tiny(tmp_path)
    sub = {i for i in ids if i.startswith("sub/")}
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    t = eng.search_text(s, "a red dog folder:sub")
    pick = t.shown[0]
    t2 = eng.more_like(s, pick)
    vec = r.index.vectors([r.index.row_of[pick]], "image")[0]
    assert set(t2.shown) <= sub and t2.shown == _brute(r, vec, {pick}, sub)[:3]
    with pytest.raises(SessionError, match="no image 'nope.png'"):
        eng.more_like(s, "nope.png")
    with pytest.raises(SessionError, match="no search yet"):
        eng.more_like(eng.new_session(), pick)
    assert len(s.turns) == 2  # the refused calls changed nothing
