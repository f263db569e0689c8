"""Every action as evidence for the belief (issue 23, D1): what the user says ("like this, but ...", answers),
relevance marks, the belief's own yes/no questions, Skip; their likelihoods against loops written from the
formulas, the session round trip, the protocols that use them, and the web app's routing."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.retrieval.belief import Belief, BeliefConfig
from interactive_ir.retrieval.words import new_words, split_statement


def _unit(rng, n, d):
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("text,pos,neg", [
    ("black lake stick instead of brown grass", "black lake stick", "brown grass"),
    ("at night, not during the day", "at night,", "during the day"),
    ("no people and a red car", "and a red car", "people"),
    ("dogs -leash on a beach", "dogs on a beach", "leash"),
    ("a well-known dog without a collar but with a hat", "a well-known dog but with a hat", "a collar"),
    ("", "", ""),
])
def test_a_statement_splits_into_what_the_image_shows_and_what_it_does_not(text, pos, neg):
    assert split_statement(text) == (pos, neg)


def test_only_new_words_that_name_something_count():
    assert new_words("like this one but a red kite and a dog", {"dog"}) == ["red", "kite"]
    assert new_words("the same", set()) == []


def test_marks_are_the_closest_among_the_liked_images_by_a_loop():
    rng = np.random.default_rng(3)
    V, q = _unit(rng, 30, 6), _unit(rng, 1, 6)[0]
    cfg = BeliefConfig(text_temperature=0.2, click_temperature=0.3, none_similarity=0.2)
    b = Belief(np.arange(30), V, cfg)
    b.set_query(q)
    shown, liked = [2, 5, 8, 13], [1, 3]
    b.marks(shown, liked)
    want = []
    for i in range(30):
        sims = [float(V[i] @ V[s]) / 0.3 for s in shown] + [0.2 / 0.3]
        lse = math.log(sum(math.exp(x) for x in sims))
        soft = sum(math.exp(sims[j] - lse) for j in liked)  # the softmax mass of the liked, mixed with a random pick
        e = cfg.click_error
        want.append(float(V[i] @ q) / 0.2 + math.log((1 - e) * soft + e * len(liked) / len(sims)))
    want = np.array(want) - max(want)
    want -= math.log(np.exp(want).sum())
    assert np.allclose(b.log_posterior(), want, atol=1e-9)
    one = Belief(np.arange(30), V, cfg)
    one.set_query(q)
    one.marks(shown, [2])
    other = Belief(np.arange(30), V, cfg)
    other.set_query(q)
    other.click(shown, 2)
    assert np.allclose(one.log_posterior(), other.log_posterior())  # a click is one liked image
    with pytest.raises(SessionError, match="not one of the 4 shown"):
        b.marks(shown, [4])


def test_what_is_said_adds_its_scores_and_subtracts_a_share_of_what_is_not():
    rng = np.random.default_rng(4)
    V, q, pos, neg = _unit(rng, 25, 5), *_unit(rng, 3, 5)
    cfg = BeliefConfig(text_temperature=0.1, say_temperature=0.2, unsay_weight=0.4)
    b = Belief(np.arange(25), V, cfg)
    b.set_query(q)
    b.say(pos, neg)
    raw = V @ q / 0.1 + (V @ pos - 0.4 * (V @ neg)) / 0.2
    want = raw - raw.max()
    want -= np.log(np.exp(want).sum())
    assert np.allclose(b.log_posterior(), want, atol=1e-6)
    with pytest.raises(BadInputError, match="width 5"):
        b.say(np.zeros(3, np.float32))
    with pytest.raises(BadInputError, match="IIR_BELIEF_UNSAY_WEIGHT"):
        BeliefConfig(unsay_weight=1.5)


@pytest.fixture
def engine(tiny_index):
    return build_engine(tiny_index[0], config=EngineConfig(k=4))


def test_like_this_but_moves_the_page_toward_what_is_said(engine, tiny_index):
    _, ids, caps = tiny_index
    s = engine.new_session()
    first = engine.search_text(s, "a shape")
    engine.closest(ps := copy.deepcopy(s), first.shown[0])
    said = engine.closest(s, first.shown[0], "blue circle instead of square")
    assert said.extra["said"] == "blue circle instead of square" and said.kind == "closest"
    b = s.belief
    assert {"blue", "circle"} <= b.said  # remembered as said: saying it again adds nothing
    # the statement's evidence is the encoded new words, by the formula
    row_pos = engine.retriever.text_query_row(engine.retriever.encode_text("blue circle"))
    row_neg = engine.retriever.text_query_row(engine.retriever.encode_text("square"))
    cfg = engine.belief_config
    diff = engine.belief_mode.ranking(s) - engine.belief_mode.ranking(ps)
    live = np.isfinite(diff)
    term = (b.vectors @ row_pos - cfg.unsay_weight * (b.vectors @ row_neg)) / cfg.say_temperature
    assert np.allclose(diff[live] - diff[live].mean(), (term[live] - term[live].mean()), atol=1e-4)
    engine.closest(again := copy.deepcopy(s), said.shown[0], "blue circle")
    engine.closest(clickonly := copy.deepcopy(s), said.shown[0])
    assert np.allclose(engine.belief_mode.ranking(again), engine.belief_mode.ranking(clickonly))  # nothing new said


def test_belief_questions_are_open_ones_that_inform_then_yes_or_no_on_a_splitting_word(tiny_index):
    """The tiny index's captions name colours, things and places but no action or person: the open questions
    asked are where, which colours and what else (in that order), never what is happening or who."""
    from interactive_ir.modes.belief.questions import OPEN_QUESTIONS

    engine = build_engine(tiny_index[0], config=EngineConfig(k=1))
    assert len(engine.index) >= len(OPEN_QUESTIONS) + 6
    s = engine.new_session(belief=True)
    engine.search_text(s, "a shape")
    expected = ["Where was the picture taken?", "What colours stand out?", "What else is in the picture?"]
    assert [t for t, _ in OPEN_QUESTIONS if t in expected] == expected
    for text in expected:  # each informative open question once, in order; the answer is what is said
        q = s.question
        assert q is not None and q.kind == "open" and q.text == text and not q.options
        turn = engine.tell(s, "not sure")
        assert turn.answered_question == text and turn.extra["said"] == "not sure"
    q = s.question
    assert q is not None and q.kind == "yesno" and [o.label for o in q.options] == ["yes", "no"]
    word = s.last.extra["asked"]
    assert word in q.text.lower() and word not in s.belief.said
    yes = engine.tell(copy.deepcopy(s), "yes")
    no = engine.tell(copy.deepcopy(s), "No.")
    assert yes.extra["said"] == word and no.extra["said"] == f"no {word}"
    other = engine.tell(copy.deepcopy(s), "it is green")
    assert other.extra["said"] == "it is green" and "answer" not in other.extra
    mixed = engine.tell(copy.deepcopy(s), "No, it is green")  # the answer first, then more said
    assert mixed.extra["answer"] == {"word": word, "yes": False, "rest": "it is green"}
    assert mixed.extra["said"] == f"it is green, no {word}"
    assert "answer" not in engine.tell(copy.deepcopy(s), "not sure").extra
    assert "answer" not in engine.tell(copy.deepcopy(s), "no dogs here").extra  # a statement, not an answer
    asked = [word]  # a yes/no question is never asked twice about the same word
    for _ in range(3):
        engine.tell(s, "yes")
        if s.question is None:
            break
        asked.append(s.last.extra["asked"])
    assert len(asked) == len(set(asked))


def test_not_sure_is_no_evidence(engine):
    s = engine.new_session()
    first = engine.search_text(s, "a shape")
    a = engine.tell(sa := copy.deepcopy(s), "not sure")
    b = engine.skip_belief(sb := copy.deepcopy(s))
    assert a.shown == b.shown and np.allclose(engine.belief_mode.ranking(sa), engine.belief_mode.ranking(sb))
    assert not set(b.shown) & set(first.shown)


def test_marks_skip_and_a_json_round_trip_rebuild_the_same_belief(engine):
    s = engine.new_session()
    first = engine.search_text(s, "a blue circle")
    engine.marks(s, first.shown[:2], first.shown[2:])
    engine.closest(s, s.last.shown[1], "red instead of blue")
    engine.skip_belief(s)
    engine.tell(s, "it has a triangle")
    loaded = Session.from_json(s.to_json())
    a = engine.closest(sa := copy.deepcopy(s), s.last.shown[0], "green")
    b = engine.closest(loaded, s.last.shown[0], "green")
    assert a.shown == b.shown and np.allclose(engine.belief_mode.ranking(sa), engine.belief_mode.ranking(loaded))
    with pytest.raises(SessionError, match="not among the results on the page"):
        engine.marks(s, ["nope.png"])


@pytest.mark.parametrize("name", ["belief", "belief:references", "belief:questions", "belief:marks"])
def test_the_belief_protocols_run_and_rank_by_the_posterior(tiny_index, name):
    from interactive_ir.evaluation.protocols import get_protocol
    from interactive_ir.evaluation.queries import Query
    from interactive_ir.evaluation.runner import RunConfig, run_query
    from interactive_ir.evaluation.simulators import make_user

    retriever, ids, caps = tiny_index
    engine = build_engine(retriever, config=EngineConfig(k=3, hide_seen=True))
    user = make_user(retriever.index, seed=0)
    kinds = {"belief": "closest", "belief:references": "closest", "belief:questions": "tell", "belief:marks": "marks"}
    seen = []
    for target in ids[:4]:
        q = Query(qid=target, target=target, description=caps[target][0], captions=tuple(caps[target][1:]))
        res = run_query(engine, get_protocol(name), q, user, RunConfig(rounds=3, k=3, progress=False),
                        on_session=seen.append)
        session = seen[-1]
        later = [t.kind for t in session.turns][1:]
        assert set(later) <= {kinds[name], "closest"} and (not later or kinds[name] in later or name == "belief:questions")
        for t in range(1, len(session.turns)):  # the rank is the target's by the posterior, rebuilt here from the
            upto = copy.deepcopy(session)     # rounds up to t (the replay of a session loaded without its belief)
            upto.turns, upto.belief = upto.turns[:t + 1], None
            ranking = engine.belief_mode.ranking(upto)
            row = retriever.index.row_of[target]
            assert res.ranks[t] == int(np.sum(ranking > ranking[row])) + 1 or res.stop == "found"


def test_a_searchs_filters_bound_the_belief(tmp_path):
    from iir_testutils import build_dated

    retriever, ids = build_dated(tmp_path, 24)
    engine = build_engine(retriever, config=EngineConfig(k=2))
    s = engine.new_session()
    first = engine.search_text(s, "a shape folder:sub")
    assert first.shown and all(i.startswith("sub/") for i in first.shown)
    turn = engine.closest(s, first.shown[0], "a red one")
    later = engine.marks(s, turn.shown[:1])
    assert all(i.startswith("sub/") for i in [*turn.shown, *later.shown])
    allowed = {retriever.index.row_of[i] for i in ids if i.startswith("sub/")}
    live = set(np.flatnonzero(np.isfinite(engine.belief_mode.ranking(s))).tolist())
    assert live and live <= allowed


@pytest.mark.parametrize("scale", ["same", "varied"])
def test_cosines_are_cosines_whatever_the_rows_lengths(scale):
    rng = np.random.default_rng(5)
    V = _unit(rng, 40, 6) * (np.float32(1.7) if scale == "same" else rng.uniform(0.2, 3.0, (40, 1)).astype(np.float32))
    b = Belief(np.arange(40), V, BeliefConfig())
    U = V / np.linalg.norm(V, axis=1, keepdims=True)
    assert np.allclose(b.cosines(np.array([3, 9])), U @ U[[3, 9]].T, atol=1e-5)
    assert np.allclose(b.cosines(np.array([1]), np.array([0, 5, 7])), U[[0, 5, 7]] @ U[[1]].T, atol=1e-5)


def test_a_belief_round_says_which_images_the_person_picked_so_the_page_can_keep_them(engine):
    s = engine.new_session()
    first = engine.search_text(s, "a blue circle")
    marked = engine.marks(s, first.shown[:2], first.shown[2:])
    assert marked.extra["kept"] == list(first.shown[:2])
    clicked = engine.closest(s, marked.shown[0])
    assert clicked.extra["kept"] == [marked.shown[0], *first.shown[:2]]
    again = engine.skip_belief(s)  # a round that picks nothing keeps what was picked before
    assert again.extra["kept"] == clicked.extra["kept"]


def test_a_yes_or_no_reads_the_captions_of_the_most_probable_images_only(tiny_index):
    from collections import Counter

    from interactive_ir.retrieval.belief import BeliefConfig

    retriever, ids, caps = tiny_index
    full = build_engine(retriever, config=EngineConfig(k=4))
    narrow = build_engine(retriever, config=EngineConfig(k=4), belief=BeliefConfig(word_depth=3))
    s = full.new_session()
    full.search_text(s, "a blue circle")
    b = full.belief_mode.belief_of(s)
    counts = Counter(w for i in ids for w in set(caps[i][0].split()) if w not in {"a", "on", "the"})
    word = counts.most_common(1)[0][0]  # the word most images' captions name
    everywhere = full.belief_mode.has_word(b, word)
    assert everywhere.sum() == counts[word] > 3
    top3 = narrow.belief_mode.has_word(b, word)
    assert top3.sum() <= 3 and not (top3 & ~everywhere).any()
    best = set(np.argsort(-b.log_posterior(), kind="stable")[:3].tolist())
    assert set(np.flatnonzero(top3).tolist()) <= best


def test_picture_questions_chosen_in_options_are_asked_and_a_picture_is_a_closest_click(engine):
    """With Picture questions chosen (questioner "grounded"), the belief asks "which of these is most like it?"
    over images not on the page just shown, then "none of these"; clicking a picture is a Closest click among
    the pictures offered (the posterior moves toward it and the page keeps it), "none of these" is none."""
    from interactive_ir.modes.belief.questions import NONE_OPTION, PICTURE_QUESTION

    s = engine.new_session(belief=True)
    s.options.questioner = "grounded"
    engine.search_text(s, "a shape")
    q = s.question
    assert q is not None and q.kind == "choice" and q.text == PICTURE_QUESTION
    pictures = [o.image_id for o in q.options if o.image_id]
    assert len(pictures) >= 2 and q.options[-1].label == NONE_OPTION and not q.options[-1].image_id
    assert not set(pictures) & set(s.last.shown) and len(set(pictures)) == len(pictures)
    before = copy.deepcopy(s)
    turn = engine.choose(s, 1, q)
    assert turn.extra["clicked"] == pictures[1] and turn.extra["options"] == pictures
    assert turn.answered_question == PICTURE_QUESTION and pictures[1] in turn.extra["kept"]
    b0 = engine.belief_mode.belief_of(before)
    b1 = engine.belief_mode.belief_of(s)
    moved = b1.actions - b0.actions  # the click's evidence (the next page's showing is apart: `seen`)
    row = b1.positions([engine.index.row_of[pictures[1]]])[0]
    others = b1.positions([engine.index.row_of[p] for p in pictures if p != pictures[1]])
    assert moved[row] > moved[others].max()  # the clicked picture gains on the others offered
    none = engine.choose(before, len(q.options) - 1, q)
    assert none.extra["clicked"] is None and none.user_text == "none of these"
    with pytest.raises(BadInputError):
        engine.choose(copy.deepcopy(before), len(q.options), q)


def test_picture_options_are_the_most_informative_display_among_the_probable_images(engine):
    from interactive_ir.modes.belief.mode import PICTURE_DEPTH

    s = engine.new_session(belief=True)
    engine.search_text(s, "a shape")
    mode = engine.belief_mode
    ids = [i for i, _ in mode.picture_options(s, 3)]
    b = mode.belief_of(s)
    logp = b.log_posterior()
    chosen = b.positions([engine.index.row_of[i] for i in ids])
    shown = set(b.positions([engine.index.row_of[i] for i in s.last.shown]).tolist())
    cand = [p for p in np.argsort(-logp, kind="stable") if p not in shown][:PICTURE_DEPTH]
    info = b.click_information(chosen, logp)
    rng = np.random.default_rng(0)
    for _ in range(20):  # no random display of as many probable images tells more
        other = rng.choice(cand, size=len(chosen), replace=False)
        assert b.click_information(other, logp) <= info + 1e-9


def test_an_open_question_is_not_asked_about_what_the_user_already_named():
    """"Where was the picture taken?" after a description that names a place (or "What is happening?" after
    one that says what someone does) would draw back the description's own words: it is skipped, and asked
    when the user has not named one."""
    from interactive_ir.modes.belief.questions import PLACES, QuestionContext, next_question

    captions = ["a dog runs on the beach", "a dog runs in the park", "a dog sits in the snow", "a cat in a field"]
    p = np.array([0.4, 0.3, 0.2, 0.1])
    from interactive_ir.core.session import Turn

    session = Session(turns=[Turn(round=0, kind="describe", shown=["x"])])

    def asked(said):
        ctx = QuestionContext(captions, p, frozenset(said))
        return next_question(session, lambda _: ctx).question.text

    assert asked({"dog"}) == "What is happening in the picture?"
    assert asked({"dog", "run"}) == "Where was the picture taken?"
    assert asked({"dog", "running"}) == "Where was the picture taken?"
    assert "beach" in PLACES and asked({"dog", "run", "beach"}) != "Where was the picture taken?"


def test_a_yes_or_no_the_captions_can_read_is_evidence_by_them_only(tiny_index):
    """A yes to "Is there a ...?" on a word some stored captions name moves the belief by the caption term
    alone (P(yes | the caption names it) = word_yes, else word_yes_absent), not also as a statement of the word
    (the two would count one answer twice); the word still counts as said."""
    engine = build_engine(tiny_index[0], config=EngineConfig(k=1))
    s = engine.new_session(belief=True)
    engine.search_text(s, "a shape")
    for _ in range(8):  # past the open questions
        q = s.question
        if q is not None and q.kind == "yesno":
            break
        engine.tell(s, "not sure")
    assert s.question is not None and s.question.kind == "yesno"
    word = s.last.extra["asked"]
    mode = engine.belief_mode
    before = copy.deepcopy(mode.belief_of(s))
    has = mode.has_word(before, word)
    assert has.any()
    engine.tell(s, "yes")
    expected = copy.deepcopy(before)
    expected.answer_word(has, True)
    after = mode.belief_of(s)
    assert np.allclose(after.actions, expected.actions) and np.allclose(after.text, expected.text)
    assert word in after.said and not np.allclose(after.actions, before.actions)


def test_what_else_is_asked_again_naming_what_its_answers_named_while_they_name_something(tiny_index):
    """After the open questions, "What else is in the picture?" comes back as "What else is in the picture,
    besides X?" (X: what the earlier answers named) while each answer named something, at most ELSE_AGAIN
    times more; "not sure" ends it (then yes/no)."""
    from interactive_ir.modes.belief.questions import ELSE_AGAIN, ELSE_QUESTION

    engine = build_engine(tiny_index[0], config=EngineConfig(k=1))
    s = engine.new_session(belief=True)
    engine.search_text(s, "a shape")
    while s.question is not None and not s.question.text.startswith(ELSE_QUESTION):
        engine.tell(s, "not sure")
    assert s.question is not None and s.question.text == f"{ELSE_QUESTION}?"
    stop = copy.deepcopy(s)
    engine.tell(s, "a red kite")
    assert s.question.text == f"{ELSE_QUESTION}, besides a red kite?" and s.question.kind == "open"
    engine.tell(s, "a green ball")
    assert s.question.text == f"{ELSE_QUESTION}, besides a red kite and a green ball?"
    for _ in range(ELSE_AGAIN - 1):
        engine.tell(s, "a blue box")
    assert s.question is None or not s.question.text.startswith(ELSE_QUESTION)  # at most ELSE_AGAIN more
    engine.tell(stop, "not sure")
    assert stop.question is None or not stop.question.text.startswith(ELSE_QUESTION)


def test_questions_are_about_the_images_beyond_the_page_just_shown(engine):
    """A question only matters if the target is not on the page the person is looking at (else they press Found
    it): its context is the most probable images *not* on that page, renormalised among them. A description
    that matches one shown image almost surely (p ~ 1 there) still gets a question about the others."""
    s = engine.new_session(belief=True)
    engine.search_text(s, "a shape")
    mode = engine.belief_mode
    ctx = mode.question_context(s)
    b = mode.belief_of(s)
    logp = b.log_posterior().copy()
    shown = b.positions([engine.index.row_of[i] for i in s.last.shown])
    logp[shown] = -np.inf
    top, p = b.top(logp, mode.belief_config.question_depth)
    order = np.argsort(-p, kind="stable")
    want = engine.captions_of([engine.index.ids[int(r)] for r in b.rows[top[order]]])
    assert list(ctx.captions) == list(want) and np.allclose(ctx.p, p[order])
    assert not set(ctx.captions) & set(engine.captions_of(s.last.shown))
    assert math.isclose(float(np.sum(ctx.p)), 1.0)
