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


# --- D7: "no close match" ---------------------------------------------------------------------------
def _profiled(tmp_path, **kw):
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.score_profile import store_profile

    r, ids, caps = build_tiny(tmp_path, n=80, **kw)
    profile = store_profile(r)
    return Retriever(load_index(r.index.path), r.embedder), profile, ids, caps  # the manifest as read back


def test_the_calibration_is_fitted_on_present_and_removed_images_and_stored(tmp_path):
    from interactive_ir.retrieval.score_profile import PROFILE_KEY, STANDOUT_K, cutoffs, sample_queries, standout

    r, profile, ids, caps = _profiled(tmp_path, embedder=TextOnly(64))
    assert r.index.manifest[PROFILE_KEY] == profile and profile["tau"] == r.default_tau and profile["version"] == 2
    q = [profile["quantiles"][k] for k in ("0.01", "0.05", "0.25", "0.5")]
    assert q == sorted(q)
    rows, texts = sample_queries(r)
    assert len(rows) == 80 and all(2 <= len(t.split()) <= 6 for t in texts)
    assert all(set(t.lower().split()) <= set(caps[ids[row]][0].lower().replace(",", " ").replace(".", " ").split())
               for row, t in zip(rows, texts))  # each query is words of its own image's caption
    # by brute force: the held-out half's removed-image searches, against the stored cut-off
    n = profile["samples"]["fit_first"]
    q = 0.05 - 1.645 * np.sqrt(0.05 * 0.95 / n)  # the 95% lower bound of the 5% quantile from n searches
    pts = sorted((float(k), v) for k, v in profile["quantiles"].items())
    cut = float(np.interp(max(q, 0.025), [x for x, _ in pts], [v for _, v in pts]))
    assert cutoffs(profile, 0.05)[1] == pytest.approx(cut)
    m = r.index.row_vectors(np.arange(len(r.index)))
    absent = []
    for row, vec in list(zip(rows, r.encode_texts(texts)))[1::2]:
        s = np.sort(np.delete(m @ r.text_query_row(vec), row))[::-1][:STANDOUT_K]
        absent.append(standout(s) < cut)
    assert profile["absent_hit"] == pytest.approx(float(np.mean(absent)), abs=1e-3)
    assert 0 <= profile["false_alarm"] <= 1


def test_standout_measures_the_best_against_the_next_ones():
    from interactive_ir.retrieval.score_profile import standout

    assert standout([0.9, 0.5, 0.4, 0.3]) == pytest.approx((0.9 - 0.4) / np.std([0.5, 0.4, 0.3]))
    assert standout([0.9, 0.5]) is None and standout([0.5, 0.5, 0.5]) is None
    assert standout([0.9, 0.5, 0.4, 0.3]) > standout([0.6, 0.5, 0.4, 0.3])


def test_a_description_whose_best_result_does_not_stand_out_gets_the_note(tmp_path):
    from interactive_ir.retrieval.score_profile import STANDOUT_K, cutoffs, standout

    r, profile, ids, caps = _profiled(tmp_path, embedder=TextOnly(64))  # scores from the captions' words
    eng = build_engine(r, config=EngineConfig(k=4))
    m = r.index.row_vectors(np.arange(len(r.index)))
    cut, seen = cutoffs(profile, 0.05)[1], set()
    for text in [caps[ids[3]][0], "red car", "quantum violin dog", "green dog", "on the", caps[ids[7]][1]]:
        s = eng.new_session()
        eng.search_text(s, text)
        cm = eng.close_match(s)
        top = np.sort(m @ r.text_query_row(r.encode_text(text)))[::-1][:STANDOUT_K]  # by brute force
        assert cm.standout == pytest.approx(standout(top), abs=1e-3) and cm.cutoff == pytest.approx(cut, abs=1e-3)
        assert cm.weak == (standout(top) < cut) and cm.best == pytest.approx(s.last.scores[0], abs=1e-4)
        seen.add(cm.weak)
    assert seen == {True, False}  # both verdicts occur
    s = eng.new_session()
    eng.search_text(s, caps[ids[3]][0])  # one of the collection's own descriptions
    assert eng.close_match(s).weak is False
    s2 = eng.new_session()
    eng.search_text(s2, "red car")
    off = build_engine(r, config=EngineConfig(k=4, no_match_quantile=0))  # the setting turns it off
    assert off.close_match(s2) is None
    eng.more_like(s2, s2.last.shown[0])  # image->image rounds are on another scale: no judgement
    assert eng.close_match(s2) is None
    s3 = eng.new_session()
    eng.search_text(s3, "red car -dog")  # NOT terms move scores: no judgement
    assert eng.close_match(s3) is None


def test_an_index_without_a_profile_or_another_tau_gets_no_note(tmp_path):
    from interactive_ir.retrieval.score_profile import close_match
    from interactive_ir.ui.render import no_match_html

    r, _, _ = build_tiny(tmp_path / "old")  # built before profiles, or by build_index alone
    eng = build_engine(r, config=EngineConfig(k=4))
    s = eng.new_session()
    eng.search_text(s, "a blue boat")  # words its captions use (none used: `test_a_description_..._no_caption_uses`)
    assert eng.close_match(s) is None and no_match_html(eng, s) == ""
    z = [0.9, 0.5, 0.4, 0.3]  # standout 6.1 (above 6.0) and [0.9, 0.8, 0.5, 0.3]: 2.1 (below)
    profile = {"version": 2, "tau": 0.5, "quantiles": {"0.05": 6.0, "0.5": 9.0}}
    assert close_match(profile, z, 0.15, 0.05) is None  # fitted with another caption weight
    assert close_match({**profile, "tau": 0.15, "quantiles": "junk"}, z, 0.15, 0.05) is None
    assert close_match({**profile, "version": 1, "tau": 0.15}, z, 0.15, 0.05) is None  # the old raw-score profile
    assert not close_match({**profile, "tau": 0.15}, z, 0.15, 0.05).weak
    assert close_match({**profile, "tau": 0.15}, [0.9, 0.8, 0.5, 0.3], 0.15, 0.05).weak


def test_the_page_says_no_close_match_and_shows_the_scores_on_demand(tmp_path):
    from interactive_ir.ui.render import no_match_html

    r, profile, ids, caps = _profiled(tmp_path, embedder=TextOnly(64))
    eng = build_engine(r, config=EngineConfig(k=4))
    s = eng.new_session()
    eng.search_text(s, "red car")  # its best result does not stand out (the test above)
    html = no_match_html(eng, s)
    assert "No close match" in html and "try other words" in html and "<summary>Why</summary>" in html
    assert f"{s.last.scores[0]:.3f}" in html and f"{profile['absent_hit'] * 100:.0f}%" in html
    assert html.count("<div") == 1 and "<br" not in html  # one compact line; the why opens on demand
    s3 = eng.new_session()
    eng.search_text(s3, caps[ids[3]][0])
    assert no_match_html(eng, s3) == ""


def test_a_description_none_of_whose_words_a_caption_uses_gets_the_note_with_or_without_a_profile(tmp_path):
    """"asdf qwerty" on a caption index: no stored caption uses either word, so nothing is close, whatever stands
    out (the standout measure cannot flag it); one known word and the embedder has something to go on."""
    from interactive_ir.retrieval.vocabulary import caption_vocabulary, unknown_words
    from interactive_ir.ui.render import no_match_html

    r, _, caps = build_tiny(tmp_path / "old")
    eng = build_engine(r, config=EngineConfig(k=4))
    vocab = caption_vocabulary(r.index)
    assert vocab and all(w in vocab for c in caps.values() for w in c[0].split() if len(w) > 3 and w.isalpha())
    assert unknown_words("asdf qwerty", vocab) == ("asdf", "qwerty") and unknown_words("asdf boat", vocab) == ()
    s = eng.new_session()
    eng.search_text(s, "asdf qwerty")
    cm = eng.close_match(s)
    assert cm is not None and cm.weak and cm.unknown == ("asdf", "qwerty")
    html = no_match_html(eng, s)
    assert "No close match" in html and "“asdf”, “qwerty”" in html and "spelling" in html
    s2 = eng.new_session()
    eng.search_text(s2, "asdf boat")
    assert eng.close_match(s2) is None  # no profile, and a word it knows
    off = build_engine(r, config=EngineConfig(k=4, no_match_quantile=0))  # the setting turns every note off
    assert off.close_match(s) is None


# --- D6: near-duplicates folded ---------------------------------------------------------------------
def test_fold_groups_nearly_identical_vectors_under_the_best_ranked():
    from interactive_ir.retrieval.duplicates import fold

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(16), rng.standard_normal(16)
    near_a = a + 0.01 * rng.standard_normal(16)
    v = np.stack([a, b, near_a, np.zeros(16), a * 3])
    assert fold(v, 0.95) == [[0, 2, 4], [1], [3]]  # cosine, not the raw product; a zero vector is like nothing
    assert fold(v, 0) == [[0], [1], [2], [3], [4]]  # off
    assert fold(v, 1.5) == [[0], [1], [2], [3], [4]]
    assert fold(np.zeros((0, 16)), 0.95) == []


def test_a_page_folds_copies_of_an_image_into_one_card(tmp_path):
    import shutil

    from iir_testutils import make_images, write_captions

    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.ui import render
    from interactive_ir.ui.state import UIState

    caps = make_images(tmp_path / "images", 12)
    shutil.copy(tmp_path / "images" / "img001.png", tmp_path / "images" / "img001-copy.png")
    caps["img001-copy.png"] = caps["img001.png"]
    emb = FakeEmbedder(32)
    build_index(BuildConfig(images=tmp_path / "images", out=tmp_path / "index",
                            captions=write_captions(tmp_path / "c.jsonl", caps)), emb)
    r = Retriever(load_index(tmp_path / "index"), emb)
    eng = build_engine(r, config=EngineConfig(k=13))
    s = eng.new_session()
    t = eng.search_text(s, caps["img001.png"][0])
    groups = eng.duplicate_groups(t)
    pair = [g for g in groups if len(g) > 1]
    assert len(pair) == 1 and sorted(pair[0]) == ["img001-copy.png", "img001.png"]
    assert [i for g in groups for i in g] != [] and sorted(i for g in groups for i in g) == sorted(t.shown)
    head, other = pair[0]
    st = UIState()
    st.session = s
    html = render.results_html(eng, st)
    assert f'data-action="unfold" data-id="{head}"' in html and "+1 similar" in html
    assert f'data-id="{other}" data-rank="{t.shown.index(other) + 1}" role="listitem" data-fold="{head}" hidden' in html
    off = build_engine(r, config=EngineConfig(k=13, fold_similarity=0))  # the setting turns folding off
    assert all(len(g) == 1 for g in off.duplicate_groups(t)) and "+1 similar" not in render.results_html(off, st)


def test_an_index_without_a_current_calibration_is_recalibrated_on_load(tmp_path):
    from interactive_ir.assembly.app_index import _calibrate
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.score_profile import PROFILE_KEY, needs_profile

    r, _, _ = build_tiny(tmp_path, n=80, embedder=TextOnly(64))
    assert needs_profile(r.index)
    r.index.manifest[PROFILE_KEY] = {"tau": 1.0, "quantiles": {"0.05": 0.5}}  # issue 26's version 1
    assert needs_profile(r.index)
    _calibrate(r.index, r.embedder)  # what the demo gallery does on load
    again = load_index(r.index.path)
    assert again.manifest[PROFILE_KEY]["version"] == 2 and not needs_profile(again)
    uncaptioned, _, _ = build_tiny(tmp_path / "bare", captions=False)
    assert not needs_profile(uncaptioned.index)  # nothing to calibrate on
