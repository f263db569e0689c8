"""Issue 38's simulated users: click-only, question-only and typing (`evaluation.users`, the `user:*`
protocols), their error rate (`--user-noise`), the overlook rate (`--overlook`) and the bm25 judge."""

from __future__ import annotations

import pytest
from eval_fixtures import build_bench

from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.evaluation import users
from interactive_ir.evaluation.knowledge import Recogniser, TargetKnowledge
from interactive_ir.evaluation.protocols import USERS, expand_protocols, get_protocol
from interactive_ir.evaluation.runner import RunConfig, run_query
from interactive_ir.evaluation.similarity import BM25Similarity, WordSimilarity, make_similarity
from interactive_ir.evaluation.simulators import SimConfig, make_user
from interactive_ir.types import NONE_OF_THESE, Option, Question


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield build_bench(tmp_path_factory.mktemp("users"))
    faiss.omp_set_num_threads(threads)


def knowledge(captions=("a black dog on the grass", "a dog runs on grass"), key="k1") -> TargetKnowledge:
    return TargetKnowledge(tuple(captions), Recogniser.of("target.jpg"), key)


def run(bench, name, n=6, rounds=3, noise=0.0, judge="words", **cfg):
    p = get_protocol(name)
    engine = build_engine(bench.retriever, config=EngineConfig(k=10), **p.mode_configs())
    user = make_user(bench.retriever.index, seed=0, config=SimConfig(noise=noise), similarity=make_similarity(judge))
    sessions = []
    results = [run_query(engine, p, q, user, RunConfig(rounds=rounds, **cfg), sessions.append)
               for q in bench.queries[:n]]
    return results, sessions


# --- the bm25 judge ---------------------------------------------------------------------------------------

def test_bm25_weighs_a_word_every_caption_has_below_a_rare_one():
    options = ["a red dog", "a red ball", "a red car"]
    bm25 = BM25Similarity().matrix(options, ["a red dog"])
    words = WordSimilarity().matrix(options, ["a red dog"])
    assert bm25[0, 0] == pytest.approx(1.0, abs=1e-5)
    assert bm25[0, 0] > bm25[1, 0] and bm25[1, 0] == pytest.approx(bm25[2, 0])
    assert bm25[1, 0] < words[1, 0]  # "red" is on every option: it tells less than word overlap says
    assert BM25Similarity().matrix(["a cat"], ["the dog"])[0, 0] == 0.0
    assert BM25Similarity().matrix(["the"], ["a red dog"])[0, 0] == 0.0  # no content word
    assert isinstance(make_similarity("bm25"), BM25Similarity) and make_similarity("bm25").name == "bm25"


def make_user_with(judge, noise=0.0, seed=0):
    class _Index:  # make_user reads the captions of shown images through the index; none are needed here
        row_of: dict = {}
        records: list = []

    return make_user(_Index(), config=SimConfig(noise=noise), seed=seed, similarity=make_similarity(judge))


# --- errors ----------------------------------------------------------------------------------------------

def test_without_noise_the_click_is_the_most_alike_image_or_none():
    user = make_user_with("words")
    k = knowledge()
    c = users.click(user, k, ["a", "b", "c"], ["a red car", "a black dog on grass", "a blue boat"], 1)
    assert c.image_id == "b" == c.best and not c.random
    none = users.click(user, k, ["a", "c"], ["a red car", "a blue boat"], 1)
    assert none.image_id is None and none.to_dict()["none"]


def test_noise_clicks_a_random_shown_image_at_its_rate_and_is_seeded():
    shown = [f"i{j}" for j in range(10)]
    caps = ["a black dog on grass"] + ["a red car"] * 9
    user = make_user_with("words", noise=0.25)
    clicks = [users.click(user, knowledge(key=f"q{j}"), shown, caps, r) for j in range(40) for r in range(5)]
    share = sum(c.random for c in clicks) / len(clicks)
    assert 0.17 < share < 0.33, share
    assert len({c.image_id for c in clicks if c.random}) >= 5  # random over the page, not one image
    again = [users.click(user, knowledge(key=f"q{j}"), shown, caps, r) for j in range(40) for r in range(5)]
    assert again == clicks
    other_seed = make_user_with("words", noise=0.25, seed=1)
    assert [users.click(other_seed, knowledge(key=f"q{j}"), shown, caps, r) for j in range(40)
            for r in range(5)] != clicks
    honest = [users.click(make_user_with("words"), knowledge(key=f"q{j}"), shown, caps, r) for j in range(40)
              for r in range(5)]
    assert all(c.image_id == "i0" and not c.random for c in honest)


def test_noise_must_be_a_probability():
    with pytest.raises(BadInputError):
        SimConfig(noise=1.5)
    with pytest.raises(BadInputError):
        RunConfig(overlook=-0.1)


def test_answers_to_yes_no_picture_and_open_questions():
    user = make_user_with("words")
    k = knowledge()
    yesno = Question("Is there a dog?", "yesno", (Option("yes"), Option("no")))
    assert users.answer(user, k, yesno, ["", ""], [], 1).option == 0
    assert users.answer(user, k, Question("Is there a cat?", "yesno", (Option("yes"), Option("no"))),
                        ["", ""], [], 1).option == 1
    picture = Question("Which is closest?", "choice",
                       (Option("1", image_id="x"), Option("2", image_id="y"), Option(NONE_OF_THESE)))
    assert users.answer(user, k, picture, ["a red car", "a black dog on grass", ""], [], 1).option == 1
    assert users.answer(user, k, picture, ["a red car", "a blue boat", ""], [], 1).option == 2  # none of these
    open_q = Question("What colour is the dog?", "open")
    a = users.answer(user, k, open_q, [], ["a brown dog on sand"], 1)
    assert a.option is None and "black" in a.text and not a.random
    always = make_user_with("words", noise=1.0)
    wrong = users.answer(always, k, open_q, [], ["a brown dog on sand"], 1)
    assert wrong.random and "brown" in wrong.text  # the answer for a shown image, not the target
    opts = {users.answer(always, knowledge(key=f"q{j}"), yesno, ["", ""], [], 1).option for j in range(30)}
    assert opts == {0, 1}


# --- the protocols, end to end ---------------------------------------------------------------------------

def test_the_three_users_are_protocols_on_the_belief():
    assert [p.name for p in expand_protocols(",".join(USERS), has_llm=False)] == list(USERS)
    for name in USERS:
        p = get_protocol(name)
        assert p.family == "user" and not p.needs_llm
        assert p.session_options().on_belief and p.session_options().ask_questions is False


def test_the_click_only_user_only_clicks(bench):
    results, sessions = run(bench, "user:click", stop_on_found=False)
    for res, s in zip(results, sessions):
        assert [t.kind for t in s.turns][1:] and all(t.kind == "closest" for t in s.turns[1:])
        assert all(not t.user_text or t.user_text in ("closest", "none of these") for t in s.turns[1:])
        assert all(t["user"]["action"] == "closest" for t in res.turns[1:])


def test_the_question_only_user_answers_the_pages_question_and_never_clicks(bench):
    results, sessions = run(bench, "user:question", stop_on_found=False)
    for s in sessions:
        kinds = [t.kind for t in s.turns[1:]]
        assert kinds and "closest" not in kinds and set(kinds) <= {"tell", "skip"}
        answered = [t for t in s.turns[1:] if t.kind == "tell"]
        assert all(t.answered_question for t in answered)
    assert any(t.kind == "tell" for s in sessions for t in s.turns)  # answers, not only skips


def test_the_typing_user_without_noise_is_the_belief_protocol(bench):
    typing, s1 = run(bench, "user:typing", stop_on_found=False)
    belief, s2 = run(bench, "belief", stop_on_found=False)
    assert [[t.shown for t in s.turns] for s in s1] == [[t.shown for t in s.turns] for s in s2]
    assert [r.ranks for r in typing] == [r.ranks for r in belief]


def test_noise_changes_the_clicks_but_not_the_information_the_user_gets(bench):
    clean, _ = run(bench, "user:click", stop_on_found=False)
    noisy, _ = run(bench, "user:click", noise=1.0, stop_on_found=False)
    assert any(r.turns[1:] != c.turns[1:] for r, c in zip(noisy, clean))


# --- overlooking -----------------------------------------------------------------------------------------

def test_an_overlooked_target_is_not_found_and_the_search_goes_on(bench):
    seen, _ = run(bench, "none", n=20, rounds=2)
    found = [r for r in seen if r.found_round is not None]
    assert found, "some targets are shown within the rounds"
    missed, _ = run(bench, "none", n=20, rounds=2, overlook=1.0)
    for a, b in zip(seen, missed):
        if a.found_round is not None:
            assert b.found_round is None and b.stop == "rounds" and len(b.ranks) == 3
            assert any(t.get("overlooked") for t in b.turns)
            f = a.found_round
            assert b.shown_ranks[f] is None and a.shown_ranks[f] is not None


def test_the_overlook_rate_is_seeded_and_partial(bench):
    runs = [run(bench, "none", n=30, rounds=3, overlook=0.5, seed=s)[0] for s in (0, 0, 1)]
    marks = [[any(t.get("overlooked") for t in r.turns) for r in rs] for rs in runs]
    assert marks[0] == marks[1]  # the same seed misses the same targets
    assert any(marks[0]) and any(r.found_round is not None for r in runs[0])  # some missed, some found
    assert marks[0] != marks[2]  # another seed, other misses
