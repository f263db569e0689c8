"""The belief over the collection (retrieval/belief.py) and the "closest image" round (modes/belief/mode.py):
the posterior against a per-image loop written from the formulas, its display, bad input, and the engine."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.retrieval.belief import Belief, BeliefConfig, belief_config


def _unit(rng, n, d):
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _loop_posterior(V, q, clicks, cfg, ruled_out=(), seen=()):
    """log P(i | ...) by a plain loop over images: text softmax term plus each click's softmax (with none),
    mixed with a uniform pick at rate click_error, and log(overlook) per showing of a `seen` image."""
    out = []
    for i in range(len(V)):
        lp = float(V[i] @ q) / cfg.text_temperature
        for shown, chosen in clicks:
            sims = [float(V[i] @ V[s]) / cfg.click_temperature for s in shown] + [cfg.none_similarity / cfg.click_temperature]
            col = len(shown) if chosen is None else chosen
            soft = math.exp(sims[col]) / sum(math.exp(x) for x in sims)
            lp += math.log((1 - cfg.click_error) * soft + cfg.click_error / len(sims))
        lp += sum(1 for s in seen if s == i) * math.log(cfg.overlook)
        out.append(-math.inf if i in ruled_out else lp)
    finite = [x for x in out if x != -math.inf]
    z = math.log(sum(math.exp(x - max(finite)) for x in finite)) + max(finite)
    return np.array([x - z if x != -math.inf else -math.inf for x in out])


def test_ruling_out_rows_outside_a_pool_leaves_their_neighbours_alone():
    """A pool keeps some rows of the index; a shown row outside it (7: between 5 and 9; 0: before the first;
    21: after the last) is already left out, and must not rule out the pool row beside it."""
    rng = np.random.default_rng(3)
    b = Belief(np.array([2, 5, 9, 14, 20]), _unit(rng, 5, 4), BeliefConfig())
    b.rule_out([5, 7, 0, 21])
    assert np.isneginf(b.actions).tolist() == [False, True, False, False, False]  # only row 5 (position 1)
    assert np.isfinite(b.log_posterior()).sum() == 4


def test_the_posterior_is_bayes_rule_over_every_image():
    rng = np.random.default_rng(0)
    V, q = _unit(rng, 40, 8), _unit(rng, 1, 8)[0]
    cfg = BeliefConfig(text_temperature=0.2, click_temperature=0.3)
    b = Belief(np.arange(40), V, cfg)
    b.set_query(q)
    clicks = [([3, 7, 11], 1), ([5, 9], None), ([0, 1, 2, 4], 3)]
    for shown, chosen in clicks:
        b.click(shown, chosen)
    b.rule_out([3, 7, 11, 5, 9])
    want = _loop_posterior(V, q, clicks, cfg, ruled_out={3, 7, 11, 5, 9})
    got = b.log_posterior()
    assert np.array_equal(np.isinf(got), np.isinf(want))
    assert np.allclose(got[np.isfinite(got)], want[np.isfinite(want)], atol=1e-9)
    assert math.isclose(np.exp(got[np.isfinite(got)]).sum(), 1.0, rel_tol=1e-9)


def test_a_click_raises_the_images_like_the_chosen_one_and_none_raises_the_unlike_ones():
    rng = np.random.default_rng(1)
    V = _unit(rng, 30, 6)
    b = Belief(np.arange(30), V, BeliefConfig())
    b.set_query(np.zeros(6, np.float32) + V[0])
    before = b.log_posterior()
    twin = int(np.argsort(-(V @ V[20]))[1])  # the image most like image 20 (besides itself)
    b.click([20, 21, 22], 0)
    after = b.log_posterior()
    assert after[twin] - before[twin] > after[21] - before[21]
    c = Belief(np.arange(30), V, BeliefConfig())
    c.set_query(V[0])
    far = int(np.argmin(V @ V[20] + V @ V[21]))
    c.click([20, 21], None)
    assert c.log_posterior()[far] > before[far]


def test_the_page_is_the_most_probable_unseen_then_images_to_learn_from():
    rng = np.random.default_rng(2)
    V = _unit(rng, 200, 16)
    b = Belief(np.arange(200), V, BeliefConfig(explore=3, explore_depth=40))
    b.set_query(V[5])
    b.rule_out([5, 6])
    top = int(np.argmax(b.log_posterior()))  # the most probable image left: excluded, it must not be shown
    rows, logp, n_best = b.page(10, exclude_rows=[top])
    assert n_best == 7 and len(rows) == 10 and len(set(rows.tolist())) == 10
    assert not {5, 6, top} & set(rows.tolist())
    lp = b.log_posterior()
    lp[[5, 6, top]] = -np.inf
    best = np.argsort(-lp, kind="stable")[:7]
    assert rows[:7].tolist() == best.tolist()  # exactly the 7 most probable, best first
    top40 = set(np.argsort(-lp, kind="stable")[:40].tolist())
    assert set(rows[7:].tolist()) <= top40 - set(best.tolist())  # learners from the next most probable
    assert np.allclose(logp, lp[rows])
    no_explore = Belief(np.arange(200), V, BeliefConfig(explore=0))
    no_explore.set_query(V[5])
    r2, _, n2 = no_explore.page(10)
    assert n2 == 10 and r2.tolist() == np.argsort(-no_explore.log_posterior(), kind="stable")[:10].tolist()


def test_a_thousand_contradictory_clicks_keep_the_belief_finite_and_normalised():
    rng = np.random.default_rng(3)
    V = _unit(rng, 50, 8)
    b = Belief(np.arange(50), V, BeliefConfig(click_temperature=0.01))
    b.set_query(V[0])
    for t in range(1000):
        b.click([1, 2], t % 2)  # 1 is closest, then 2 is, and so on
        b.click([3, 4, 5], None)
    lp = b.log_posterior()
    assert not np.isnan(lp).any() and np.isfinite(lp).all()
    assert math.isclose(np.exp(lp).sum(), 1.0, rel_tol=1e-9)
    b.rule_out(np.arange(50))
    with pytest.raises(SessionError, match="start a new search"):
        b.page(10)


@pytest.mark.parametrize("field,value", [("text_temperature", 0), ("click_temperature", -1.0),
                                         ("click_temperature", float("nan")), ("none_similarity", 3.0),
                                         ("explore", -1), ("pool", 0)])
def test_a_parameter_out_of_range_is_refused_with_its_variable(field, value):
    with pytest.raises(BadInputError, match=field):
        BeliefConfig(**{field: value})


def test_the_belief_reads_its_env_variables(monkeypatch):
    monkeypatch.setenv("IIR_BELIEF_CLICK_TEMPERATURE", "0.4")
    assert belief_config().click_temperature == 0.4
    monkeypatch.setenv("IIR_BELIEF_TEXT_TEMPERATURE", "-2")
    with pytest.raises(BadInputError, match="text_temperature"):
        belief_config()


def test_a_copy_shares_the_vectors_and_owns_its_evidence():
    rng = np.random.default_rng(4)
    V = _unit(rng, 20, 4)
    b = Belief(np.arange(20), V, BeliefConfig())
    b.set_query(V[0])
    c = copy.deepcopy(b)
    assert c.vectors is b.vectors
    c.click([1, 2], 0)
    assert not np.array_equal(c.actions, b.actions)


# --- the engine's "closest" round ------------------------------------------------------------------------
@pytest.fixture
def engine(tiny_index):
    return build_engine(tiny_index[0], config=EngineConfig(k=4))


def test_closest_pages_by_the_belief_and_says_which_images_are_there_to_learn_from(engine, tiny_index):
    s = engine.new_session()
    first = engine.search_text(s, "a red square")
    turn = engine.closest(s, first.shown[1])
    assert turn.kind == "closest" and turn.method == "belief" and len(turn.shown) == 4
    assert not set(turn.shown) & set(first.shown)  # the page just looked at is not shown again
    assert set(turn.extra["learn"]) <= set(turn.shown) and turn.extra["clicked"] == first.shown[1]
    assert len(turn.extra["learn"]) == max(0, 4 - max(1, 4 - engine.belief_config.explore))
    n = len(engine.index)
    seen_rows = [engine.index.row_of[i] for i in first.shown]
    seen = s.belief.seen[s.belief.positions(seen_rows)]
    assert (seen >= 1).all()  # the belief the page was drawn from counts each showing against it
    ranking = engine.belief_mode.ranking(s)
    assert ranking.shape == (n,) and np.isfinite(ranking[seen_rows]).all()  # seen: unlikely, not ruled out
    assert not hasattr(turn, "ranking")  # nothing per row is kept per round
    best = [i for i in turn.shown if i not in turn.extra["learn"]]
    ranked = [int(r) for r in np.argsort(-ranking, kind="stable") if int(r) not in seen_rows]
    assert [engine.index.records[r].id for r in ranked[:len(best)]] == best
    none = engine.closest(s, None)
    assert not set(none.shown) & set(turn.shown)


def test_closest_refuses_images_not_on_the_page_and_sessions_without_results(engine, tiny_index):
    s = engine.new_session()
    with pytest.raises(SessionError, match="describe the image first"):
        engine.closest(s, None)
    first = engine.search_text(s, "a red square")
    other = next(i for i in tiny_index[1] if i not in first.shown)
    for bad in (other, "nope.png"):
        with pytest.raises(SessionError, match="not among the results on the page"):
            engine.closest(s, bad)


def test_a_session_loaded_from_json_rebuilds_the_same_belief(engine):
    s = engine.new_session()
    first = engine.search_text(s, "a blue circle")
    engine.closest(s, first.shown[0])
    engine.closest(s, None)
    loaded = Session.from_json(s.to_json())
    assert loaded.belief is None and "belief" not in s.to_dict()
    a = engine.closest(sa := copy.deepcopy(s), s.last.shown[2])
    b = engine.closest(loaded, s.last.shown[2])
    assert a.shown == b.shown and np.allclose(engine.belief_mode.ranking(sa), engine.belief_mode.ranking(loaded))


def test_a_belief_over_a_pool_when_the_collection_is_too_large_to_hold(tiny_index, monkeypatch):
    import interactive_ir.retrieval.retriever as R
    from interactive_ir.retrieval.retriever import Retriever

    monkeypatch.setattr(R, "MATRIX_ROWS_MAX", 5)
    retriever = Retriever(tiny_index[0].index, tiny_index[0].embedder)
    assert retriever._matrix is None
    engine = build_engine(retriever, config=EngineConfig(k=3), belief=BeliefConfig(pool=12))
    s = engine.new_session()
    first = engine.search_text(s, "a green triangle")
    turn = engine.closest(s, first.shown[0])
    rows = len(s.belief.rows)  # the pool grew with the click (nearest rows, rows along the evidence), capped
    assert 12 <= rows <= 24 and len(turn.shown) == 3 and not set(turn.shown) & set(first.shown)
    assert np.isfinite(engine.belief_mode.ranking(s)).sum() == rows  # the pool; the 3 shown: unlikely, not ruled out


def test_the_closest_protocol_ranks_by_the_belief_the_clicks_make(tiny_index):
    """`eval --protocol closest`: the simulated user clicks the shown image whose caption is most like what it
    knows; each round's rank is the target's rank under a belief rebuilt here from the recorded clicks."""
    from interactive_ir.evaluation.protocols import get_protocol
    from interactive_ir.evaluation.queries import Query
    from interactive_ir.evaluation.runner import RunConfig, run_query
    from interactive_ir.evaluation.simulators import make_user

    retriever, ids, caps = tiny_index
    engine = build_engine(retriever, config=EngineConfig(k=3, hide_seen=True))
    user = make_user(retriever.index, seed=0)
    seen = []
    for target in ids[:6]:
        q = Query(qid=target, target=target, description=caps[target][0], captions=tuple(caps[target][1:]))
        res = run_query(engine, get_protocol("closest"), q, user, RunConfig(rounds=4, k=3, progress=False),
                        on_session=seen.append)
        session = seen[-1]
        assert [t.kind for t in session.turns][1:] == ["closest"] * (len(session.turns) - 1)
        b = Belief.over(retriever, session.turns[0].query_row, engine.belief_config)
        row = retriever.index.row_of
        for t, turn in enumerate(session.turns):
            if t:
                options = turn.extra["options"]
                clicked = turn.extra["clicked"]
                b.click([row[i] for i in options], options.index(clicked) if clicked else None)
                b.set_seen([row[i] for u in session.turns[:t] for i in u.shown])
                lp = b.ranking(len(retriever.index))
                assert res.ranks[t] == int(np.sum(lp > lp[row[target]])) + 1
        assert res.stop in ("found", "rounds")


def test_ties_count_in_the_targets_favour_in_the_retriever_and_the_belief(tiny_index):
    """`Retriever.rank_of` and a belief round's rank count images scoring exactly the target's score as
    below it (the docstring's promise): a duplicate of the target's vector does not push it down."""
    from interactive_ir.evaluation.queries import Query
    from interactive_ir.evaluation.runner import RunConfig, _row_rank

    retriever, ids, _ = tiny_index
    target = ids[3]
    row = retriever.index.row_of[target]
    qrow = retriever.index.row_vectors([row])[0]
    scores = retriever.all_scores(qrow)
    tied = int(np.sum(scores == scores[row]))
    assert retriever.rank_of(qrow, target) == int(np.sum(scores > scores[row])) + 1
    b = Belief.over(retriever, qrow, BeliefConfig())
    assert b.rank_of(row, np.zeros(len(b.rows))) == 1 and tied >= 1  # every image tied with the target

    class _Turn:
        query_row = None
        shown: list = []

    q = Query(qid="q", target=target, description="x")
    rank = _row_rank(_Turn(), q, retriever, None, RunConfig(progress=False), b.rank_of(row, np.zeros(len(b.rows))))[1]
    assert rank == 1
