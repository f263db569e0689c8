"""The belief's pool on a collection above the exact limit (retrieval/belief_pool.py): rows that join later are
scored as if they had been there, the evidence brings its nearest rows in, the rest keeps its share, the pool
stays bounded, and bad parameters or a failing search are said once."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from iir_testutils import build_tiny

from interactive_ir.errors import BadInputError, IIRError
from interactive_ir.retrieval import retriever as R
from interactive_ir.retrieval.belief import Belief, BeliefConfig
from interactive_ir.retrieval.retriever import Retriever


@pytest.fixture
def both(tmp_path, monkeypatch):
    """(whole, pooled): two retrievers over one 40-image index; the second above its exact limit (no matrix)."""
    whole, _, _ = build_tiny(tmp_path, n=40)
    monkeypatch.setenv(R.MATRIX_ROWS_ENV, "0")
    pooled = Retriever(whole.index, whole.embedder)
    assert pooled._matrix is None
    monkeypatch.delenv(R.MATRIX_ROWS_ENV)
    assert whole._matrix is not None
    return whole, pooled


def _q(r, text):
    return r.text_query_row(r.encode_text(text))


def _words_of(rows):
    return np.asarray(rows) % 3 == 0  # any fixed rule of which rows' captions name the word


def _evidence(b: Belief, r, shown_rows) -> None:
    b.click(shown_rows, 2)
    b.marks(shown_rows, [0, 3])
    b.click(shown_rows, None)
    b.say(_q(r, "blue circle"), _q(r, "square"))
    b.answer_word(_words_of(b.rows), True, _words_of)


def test_a_row_that_joins_later_is_scored_as_if_it_had_been_there(both):
    whole, pooled = both
    cfg = BeliefConfig(pool=8, pool_grow=0.0, pool_probe=0)
    q = _q(whole, "a red square")
    full, part = Belief.over(whole, q, cfg), Belief.over(pooled, q, cfg)
    assert part.pool is not None and full.pool is None and len(part.rows) == 8
    shown = [int(x) for x in part.rows[:5]]
    for b in (full, part):
        _evidence(b, whole, shown)
    part.rule_out([int(np.setdiff1d(full.rows, part.rows)[0])])
    full.rule_out(sorted(part.pool.ruled))
    assert part.include(pooled, full.rows) == len(full.rows) - 8
    at = part.positions(full.rows)  # a pool's rows are in the order they joined
    assert np.array_equal(np.sort(part.rows), full.rows) and np.array_equal(part.rows[at], full.rows)
    assert np.allclose(part.text[at], full.text)
    assert np.array_equal(np.isfinite(part.actions[at]), np.isfinite(full.actions))
    live = np.isfinite(full.actions)  # equal up to the float32 cosines (one length for near-unit rows: `cosines`)
    assert np.allclose(part.actions[at][live], full.actions[live], atol=1e-3)
    assert np.allclose(part.log_posterior()[at][live], full.log_posterior()[live], atol=1e-3)
    assert np.array_equal(part.vectors[at], full.vectors)


def test_the_rest_holds_the_share_of_the_rows_outside_the_pool(both):
    """With every row outside the pool in the sample the estimate is exact; a whole-collection belief has none."""
    whole, pooled = both
    cfg = BeliefConfig(pool=8, pool_grow=0.0, pool_probe=1000)
    q = _q(whole, "a green triangle")
    full, part = Belief.over(whole, q, cfg), Belief.over(pooled, q, cfg)
    shown = [int(x) for x in part.rows[:4]]
    for b in (full, part):
        _evidence(b, whole, shown)
    p = np.exp(full.log_posterior())
    truth = p[~np.isin(full.rows, part.rows)].sum()
    assert full.rest_share() == 0.0 and 0.0 < truth < 1.0
    assert part.rest_share() == pytest.approx(truth, rel=1e-3)
    small = Belief.over(pooled, q, BeliefConfig(pool=8, pool_grow=0.0, pool_probe=8))
    assert 0.0 < small.rest_share() < 1.0 and len(small.pool.probe_rows) == 8  # an estimate from a sample


def test_a_click_brings_its_nearest_rows_into_the_pool(both):
    whole, pooled = both
    cfg = BeliefConfig(pool=6, pool_grow=0.5, pool_cap=4.0, pool_fetch=1.0)
    b = Belief.over(pooled, _q(whole, "a red square"), cfg)
    clicked = int(b.rows[0])
    near = whole.search_rows(whole.index.row_vectors([clicked])[0], 3)[1]
    b.click([int(x) for x in b.rows[:4]], 0)
    added = b.grow_near(pooled, [b.vectors[0]])
    assert set(near.tolist()) <= set(b.rows.tolist()) and 0 <= added <= 3 and len(b.rows) == 6 + added


def test_when_the_rest_holds_much_of_the_probability_the_pool_reaches_for_it(both):
    whole, pooled = both
    cfg = BeliefConfig(pool=5, pool_grow=0.8, pool_cap=8.0, pool_fetch=0.02, pool_probe=40)
    b = Belief.over(pooled, _q(whole, "a red square"), cfg)
    b.say(_q(whole, "blue circle"))  # evidence pointing away from the first query's pool
    before = b.rest_share()
    assert before > 0.02
    assert b.reach(pooled) > 0 and b.rest_share() < before
    fixed = Belief.over(pooled, _q(whole, "a red square"), BeliefConfig(pool=5, pool_grow=0.0))
    fixed.say(_q(whole, "blue circle"))
    assert fixed.reach(pooled) == 0 and len(fixed.rows) == 5  # a fixed pool stays as it is


def test_the_pool_stays_bounded_and_keeps_what_was_shown(both):
    whole, pooled = both
    b = Belief.over(pooled, _q(whole, "a shape"), BeliefConfig(pool=6, pool_grow=1.0, pool_cap=2.0))
    b.include(pooled, np.arange(30))
    shown, page = [int(b.rows[-1]), int(b.rows[-2])], [int(b.rows[-3])]
    b.set_seen(shown)
    scores = dict(zip(b.rows.tolist(), b.log_scores()))
    n = len(b.rows)
    assert n > 12 and b.evict(12, protect=page) == n - 12 and len(b.rows) == 12
    assert set(shown + page) <= set(b.rows.tolist())
    kept = [s for r, s in scores.items() if r in set(b.rows.tolist()) and r not in shown + page]
    gone = [s for r, s in scores.items() if r not in set(b.rows.tolist())]
    assert min(kept) >= max(gone)  # the least probable left


@pytest.mark.parametrize("field, value", [("pool", 0), ("pool", 2.5), ("pool_grow", -0.1), ("pool_cap", 0.5),
                                          ("pool_probe", -1), ("pool_fetch", 0.0), ("pool_fetch", 1.5),
                                          ("pool_grow", 5.0)])
def test_pool_parameters_out_of_range_name_their_env_var(field, value):
    with pytest.raises(BadInputError, match=f"IIR_BELIEF_{field.upper()}"):
        BeliefConfig(**{field: value})


def test_a_search_that_fails_leaves_the_pool_and_says_so_once(both, caplog):
    whole, pooled = both
    b = Belief.over(pooled, _q(whole, "a shape"), BeliefConfig(pool=6, pool_grow=1.0))

    class Failing:
        index = pooled.index

        def candidate_rows(self, *a, **k):
            raise IIRError("the store is gone")

    with caplog.at_level(logging.WARNING, logger="interactive_ir.retrieval.belief"):
        assert b.grow_near(Failing(), [b.vectors[0]]) == 0
        assert b.grow_near(Failing(), [b.vectors[1]]) == 0
    assert len(b.rows) == 6 and sum("cannot grow" in r.message for r in caplog.records) == 1


def test_the_exact_limit_can_be_set_and_a_bad_one_is_refused():
    assert R.matrix_rows_max({}) == R.MATRIX_ROWS_MAX
    assert R.matrix_rows_max({R.MATRIX_ROWS_ENV: "1_000"}) == 1000
    for bad in ("-1", "many", "1.5"):
        with pytest.raises(BadInputError, match=R.MATRIX_ROWS_ENV):
            R.matrix_rows_max({R.MATRIX_ROWS_ENV: bad})


def test_each_round_the_pool_reaches_the_rows_the_whole_evidence_favours(both):
    """The index is searched along the evidence (text, statement and clicks summed into one row): the rows the
    whole-collection belief ranks first join the pool, though the first query's pool held none of them."""
    whole, pooled = both
    cfg = BeliefConfig(pool=6, pool_grow=0.5, pool_cap=8.0, pool_fetch=1.0)
    q = _q(whole, "a red square")
    full, part = Belief.over(whole, q, cfg), Belief.over(pooled, q, cfg)
    shown = [int(x) for x in part.rows[:4]]
    for b in (full, part):
        b.say(_q(whole, "a blue circle on grass"))
        b.click(shown, 1)
    best = full.rows[np.argsort(-full.log_posterior())[:3]]
    assert not set(best.tolist()) <= set(part.rows.tolist())  # out of the first pool
    part.reach(pooled)
    assert set(best.tolist()) <= set(part.rows.tolist())


def test_rows_join_and_leave_in_place_and_every_lookup_follows_them(both):
    """A pool's rows are in the order they joined (their vectors in one buffer; leaving rows' places are filled
    by the last ones): each row keeps its own vector and terms, and lookups by index row (positions, seen,
    ruled out, a page's exclusions, ranks) find it wherever it sits."""
    whole, pooled = both
    cfg = BeliefConfig(pool=6, pool_grow=0.0, pool_probe=0)
    q = _q(whole, "a red square")
    b = Belief.over(pooled, q, cfg)
    b.include(pooled, [39, 2, 30, 17, 25, 8, 33])
    b.evict(9, protect=[39])
    assert not np.all(np.diff(b.rows) > 0)  # not ascending: joined at the end, holes filled from the end
    assert np.array_equal(b.vectors, pooled.index.row_vectors(b.rows))
    assert np.allclose(b.text, (b.vectors @ q) / cfg.text_temperature)
    row = int(b.rows[-1])
    b.set_seen([row])
    b.rule_out([int(b.rows[0])])
    assert b.positions([row])[0] == len(b.rows) - 1 and b.seen[-1] == 1 and b.actions[0] == -np.inf
    logp = b.log_posterior()
    best = int(b.rows[np.argmax(logp)])
    assert b.rank_of(best, logp) == 1 and best not in b.page(3, [best])[0].tolist()
    assert b.rank_of(10_000, logp) == np.isfinite(logp).sum() + 1


def test_a_copy_keeps_its_rows_when_the_other_grows_or_shrinks(both):
    """A copy (a tab's work on a copy of its session) shares the pool's buffer until either changes it."""
    import copy

    whole, pooled = both
    b = Belief.over(pooled, _q(whole, "a red square"), BeliefConfig(pool=6, pool_grow=0.0, pool_probe=0))
    b.include(pooled, [1, 2, 3])
    c = copy.deepcopy(b)
    rows, vectors = c.rows.copy(), c.vectors.copy()
    b.evict(4)
    b.include(pooled, np.arange(20, 40))
    assert np.array_equal(c.rows, rows) and np.array_equal(c.vectors, vectors)
    c.include(pooled, [30, 31])
    assert np.array_equal(c.vectors, pooled.index.row_vectors(c.rows))
    assert np.array_equal(b.vectors, pooled.index.row_vectors(b.rows))


def test_a_rounds_searches_are_one_batched_search(both, monkeypatch):
    """`reach` asks the index once for every query row of the round (picked, said, the evidence's direction);
    the batched search finds what single searches find; with filters each row is searched within them."""
    whole, pooled = both
    calls = []
    inner = pooled.candidate_rows
    monkeypatch.setattr(pooled, "candidate_rows", lambda q, k, allow=None: calls.append(len(q)) or inner(q, k, allow))
    b = Belief.over(pooled, _q(whole, "a red square"), BeliefConfig(pool=6, pool_grow=0.5, pool_cap=4.0))
    calls.clear()
    b.reach(pooled, near=[b.vectors[0], _q(whole, "blue circle")])
    assert calls == [3]
    qs = np.stack([_q(whole, "a red square"), _q(whole, "a blue circle")])
    batch = pooled.candidate_rows(qs, 5)
    assert [r.tolist() for r in batch] == [pooled.search_rows(q, 5)[1].tolist() for q in qs]  # exact kind: same
    allow = np.arange(0, 40, 2)
    assert all(set(r.tolist()) <= set(allow.tolist()) for r in pooled.candidate_rows(qs, 5, allow=allow))


@pytest.mark.parametrize("kind", ["ivf-pq", "hnsw"])
def test_the_batched_search_of_an_approximate_index_finds_each_rows_candidates(tmp_path, kind):
    """On ivf-pq and hnsw the batched search is the index's own search with several query rows: each row's
    candidates as one search of that row finds them before its exact re-rank (at least half of its exact top
    10 among its 30); the calling thread's faiss thread count is left as it was."""
    import faiss
    from test_index_kinds import exact_top, write_index

    from interactive_ir.index import kinds

    r, img, cap = write_index(tmp_path / "idx", kind)
    rng = np.random.default_rng(3)
    qs = np.stack([r.text_query_row(img[i].astype(np.float32), 0.15) for i in rng.integers(len(img), size=3)])
    faiss.omp_set_num_threads(1)
    batch = r.candidate_rows(qs, 30)
    assert faiss.omp_get_max_threads() == 1 and len(batch) == 3
    params = kinds.search_parameters(r.index.params, 30)
    for q, got in zip(qs, batch):
        alone = r.index.faiss_index.search(q[None, :], 30, params=params)[1][0]
        assert got.tolist() == alone[alone >= 0].tolist()
        want = set(exact_top(img, cap, q, 1, [])[1].argsort()[::-1][:10].tolist())
        assert len(want & set(got.tolist())) >= 5
