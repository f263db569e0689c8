"""Every protocol end to end on a 50-image synthetic index with the fake LLM; ranks checked against an
independent recomputation of each round's query row; dialogue loaders and replays."""

from __future__ import annotations

import json

import numpy as np
import pytest
from eval_fixtures import build_bench

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.dialogues import (
    attach_dialogues,
    chatir_query,
    read_dialogues,
    resolve_targets,
    split_entry,
    write_chatir,
)
from interactive_ir.evaluation.protocols import ALL, BELIEF, USERS, expand_protocols, get_protocol
from interactive_ir.evaluation.queries import Query
from interactive_ir.evaluation.runner import RunConfig, run_query
from interactive_ir.evaluation.simulators import SimConfig, make_user

ROUNDS = 3
N_QUERIES = 6


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # as `eval` does: one query per search, no OpenMP hand-off cost
    yield build_bench(tmp_path_factory.mktemp("bench"))
    faiss.omp_set_num_threads(threads)


def with_dialogues(queries):
    """Queries with a made-up fixed dialogue of ROUNDS pairs (ChatIR layout kept in rounds_text)."""
    out = []
    for q in queries:
        words = q.captions[0].split() if q.captions else ["thing"]
        pairs = tuple((f"What is in the picture {i}?", " ".join(words[i:] or words)) for i in range(ROUNDS))
        texts = (q.description, *(f"{a} {b}" for a, b in pairs))
        out.append(Query(**{**q.__dict__, "dialog": pairs, "rounds_text": texts}))
    return out


def run(bench, name, queries=None, llm="fake", rounds=ROUNDS, sim=SimConfig(), answerer=None, **cfg):
    p = get_protocol(name)
    llm = FakeLLM() if llm == "fake" else llm
    engine = build_engine(bench.retriever, llm=llm, config=EngineConfig(k=10), **p.mode_configs())
    user = make_user(bench.retriever.index, llm=llm, seed=0, config=sim, answerer=answerer)
    queries = queries if queries is not None else bench.queries[:N_QUERIES]
    if p.needs_dialogues and not all(q.dialog for q in queries):
        queries = with_dialogues(queries)
    sessions = []
    results = [run_query(engine, p, q, user, RunConfig(rounds=rounds, **cfg), sessions.append) for q in queries]
    return results, sessions, queries


# --- an independent recomputation of the target's rank ---------------------------------------------------

def _matrix(index):
    img = np.asarray(index.image_vectors, np.float32)
    if index.has_captions:
        return np.concatenate([img, np.asarray(index.caption_vectors, np.float32)], axis=1)
    return img


def _fused(retriever, vec):
    tau = retriever.default_tau  # 0.15: this index has image and caption vectors
    if retriever.index.has_captions:
        return np.concatenate([(1 - tau) * vec, tau * vec]).astype(np.float32)
    return np.asarray(vec, np.float32)


def expected_rows(retriever, session):
    """Each turn's query row, rebuilt from what the turn records (not from the probe)."""
    index = retriever.index
    rows, rocchio_q, history = [], None, []
    for turn in session.turns:
        if turn.kind == "feedback" and turn.method == "rocchio":
            if rocchio_q is None:  # the first Rocchio round starts from the current query's text
                rocchio_q = retriever.encode_text(turn.query)
            q = rocchio_q.astype(np.float64)
            if turn.relevant:
                q = q + 0.75 * index.vectors([index.row_of[i] for i in turn.relevant], "image").astype(np.float64).mean(0)
            if turn.irrelevant:
                q = q - 0.15 * index.vectors([index.row_of[i] for i in turn.irrelevant], "image").astype(np.float64).mean(0)
            rocchio_q = q.astype(np.float32)
            rows.append(_fused(retriever, rocchio_q))
            continue
        rocchio_q = None
        if turn.kind == "relative":
            if turn.method == "compose":
                ref = np.asarray(index.vectors([index.row_of[turn.reference]], "image")[0], np.float32)
                v = ref + retriever.encode_text(turn.user_text)
                history.append(_fused(retriever, (v / np.linalg.norm(v)).astype(np.float32)))
            else:  # imagescope: the engine's stored row for this round (its LLM stage is tested elsewhere)
                history.append(np.asarray(session.composed_history[len(history)], np.float32))
            rows.append(np.mean(np.asarray(history), axis=0))
            continue
        rows.append(_fused(retriever, retriever.encode_text(turn.query)))
    return rows


def independent_rank(retriever, row, target):
    scores = _matrix(retriever.index) @ np.asarray(row, np.float32)
    return int(np.sum(scores > scores[retriever.index.row_of[target]])) + 1


EXPECTED_KINDS = {
    "conversation": ["describe", "answer", "answer", "answer"],
    "feedback": ["describe", "feedback", "feedback", "feedback"],
    "composed": ["describe", "relative", "relative", "relative"],
    "mixed": ["describe", "answer", "feedback", "relative"],
}


@pytest.mark.parametrize("name", [n for n in ALL if n not in ("grounded", "inverted-pull", *BELIEF, *USERS)])  # rows: test_eval_ranking, test_belief, test_users
def test_every_protocol_runs_end_to_end_and_records_true_ranks(bench, name):
    p = get_protocol(name)
    results, sessions, queries = run(bench, name, stop_on_found=False)
    kinds = EXPECTED_KINDS.get("feedback" if name == "wrong-marks" else p.family) or (
        ["describe", "answer", "answer", "answer"] if p.variant == "cr" else ["describe", "search", "search", "search"])
    for res, session, q in zip(results, sessions, queries):
        assert res.stop == "rounds", res.stop
        assert [t.kind for t in session.turns] == kinds
        assert len(res.ranks) == len(res.shown_ranks) == ROUNDS + 1
        rows = expected_rows(bench.retriever, session)
        found = next((t for t, turn in enumerate(session.turns) if q.target in turn.shown), None)
        assert res.found_round == found
        for t, (turn, row) in enumerate(zip(session.turns, rows)):
            live = independent_rank(bench.retriever, row, q.target)
            # once found, the rank stays the found round's (--no-stop-on-found plays on without rewarding it)
            assert res.ranks[t] == (live if found is None or t <= found else res.ranks[found]), (name, t, turn.kind)
            assert 1 <= res.ranks[t] <= 50
            if q.target in turn.shown:
                pos = turn.shown.index(q.target) + 1
                assert res.shown_ranks[t] == pos
                earlier = len({i for u in session.turns[:t] for i in u.shown})
                if t == found:
                    assert pos <= res.ranks[t] <= pos + earlier  # the whole index vs what was left to show
            else:
                assert res.shown_ranks[t] is None
        assert not session.turns[0].shown or res.ranks[0] > 10 or q.target in session.turns[0].shown
        asked = [t.question for t in session.turns if t.question]
        assert bool(asked) == p.asks_questions  # other protocols spend no LLM time on questions


def test_feedback_protocols_use_their_method_and_the_actors_marks(bench):
    for name in ("feedback:expand", "feedback:summary", "feedback:keywords", "feedback:cot", "rocchio"):
        variant = get_protocol(name).variant
        # opt-in caption overlap: with ground truth only, nothing but the target is ever relevant here
        results, sessions, _ = run(bench, name, sim=SimConfig(relevance_overlap=0.5), stop_on_found=False)
        methods = [t.method for s in sessions for t in s.turns[1:]]
        assert variant in methods and set(methods) <= {variant, "rocchio"}, (name, methods)
        for res, s in zip(results, sessions):
            for t, turn in enumerate(s.turns[1:], 1):
                prev = s.turns[t - 1].shown
                assert set(turn.relevant) | set(turn.irrelevant) <= set(prev)
                assert len(turn.relevant) <= 2
                user = res.turns[t]["user"]
                assert user["relevant"] == len(turn.relevant) and user["irrelevant"] == len(turn.irrelevant)


def test_composed_uses_the_previous_top1_and_the_simulated_caption(bench):
    results, sessions, _ = run(bench, "composed:compose", llm=None, stop_on_found=False)
    for res, s in zip(results, sessions):
        for t, turn in enumerate(s.turns[1:], 1):
            prev = s.turns[t - 1].shown
            expected = prev[1] if prev[0] == res.target else prev[0]  # never the target itself
            assert turn.reference == expected != res.target
            assert turn.user_text == res.turns[t]["user"]["text"]
            assert res.turns[t]["user"]["source"] == "rule"  # no LLM: the word-difference rule


def test_composed_never_takes_the_target_as_its_reference(bench):
    """When the target came first, the simulated user compares it with the next best result instead."""
    from interactive_ir.core.session import Session, Turn
    from interactive_ir.evaluation import protocols

    q = bench.queries[0]
    others = [i for i in bench.retriever.index.ids if i != q.target][:3]
    session = Session(description=q.description, turns=[Turn(round=0, kind="describe", shown=[q.target, *others])])
    seen = {}

    class Engine:
        def relative(self, session, text, reference, method):
            seen["reference"] = reference
            return Turn(round=1, kind="relative", reference=reference)

    from interactive_ir.evaluation.knowledge import knowledge_of

    user = make_user(bench.retriever.index, llm=None, seed=0)
    turn, act = protocols._relative(Engine(), session, knowledge_of(q), user, None)
    assert seen["reference"] == others[0] == turn.reference and act["reference_rank"] == 2


def test_protocols_without_llm_run_without_one(bench):
    for name in ("feedback:expand", "rocchio", "composed:compose", "fixed-dialogue:concat", "fixed-dialogue:split"):
        results, sessions, _ = run(bench, name, llm=None)
        assert all(r.stop in ("rounds", "found") for r in results)
        assert all(not t.llm_calls for s in sessions for t in s.turns)


def test_runs_are_deterministic(bench):
    a, _, _ = run(bench, "plugir")
    b, _, _ = run(bench, "plugir")
    strip = lambda rs: [{k: v for k, v in r.to_dict().items() if "seconds" not in k} for r in rs]  # noqa: E731
    for ra in strip(a):
        for t in ra["turns"]:
            t.pop("seconds"), t.pop("llm_seconds")
    for rb in strip(b):
        for t in rb["turns"]:
            t.pop("seconds"), t.pop("llm_seconds")
    assert [r.ranks for r in a] == [r.ranks for r in b]
    assert [[t["user"] for t in r.turns[1:]] for r in a] == [[t["user"] for t in r.turns[1:]] for r in b]


def test_stop_on_found_ends_the_search(bench):
    results, _, _ = run(bench, "feedback:expand", queries=bench.queries, llm=None)
    first_hit = next(i for i, r in enumerate(results) if r.shown_ranks[0] is not None)
    q = bench.queries[first_hit]
    res, sessions, _ = run(bench, "feedback:expand", queries=[q], llm=None, stop_on_found=True)
    assert res[0].stop == "found" and len(res[0].ranks) == 1
    assert sessions[0].found["id"] == q.target and sessions[0].found["round"] == 0


def test_a_target_marked_relevant_is_found_and_stops_feedback(bench):
    """Feedback: the round that showed the target is the found round, before any mark is made."""
    results, sessions, _ = run(bench, "rocchio", queries=bench.queries, llm=None, stop_on_found=True)
    found = [(r, s) for r, s in zip(results, sessions) if r.found_round is not None]
    assert found
    for r, s in found:
        f = r.found_round
        assert r.stop == "found" and len(r.ranks) == f + 1 and r.shown_ranks[f] is not None
        assert s.found["round"] == f and all(r.target not in t.relevant for t in s.turns)


@pytest.mark.parametrize("name", ["feedback:expand", "rocchio", "mixed"])
def test_without_stop_on_found_the_found_rounds_rank_is_kept(bench, name):
    """--no-stop-on-found plays on, and feedback marks the shown target relevant, so its own caption joins
    the query and it ranks 1 next round; the recorded rank stays the found round's instead."""
    results, sessions, _ = run(bench, name, queries=bench.queries, llm=None, stop_on_found=False)
    leaked = 0
    for r, s in zip(results, sessions):
        f = next((t for t, turn in enumerate(s.turns) if r.target in turn.shown), None)  # the found round
        if f is None:
            assert None not in r.ranks and r.stop == "rounds"
            continue
        assert r.stop == "rounds" and len(r.ranks) == ROUNDS + 1 and r.shown_ranks[f] is not None
        assert all(r.target not in t.shown for t in s.turns[:f])
        for t in range(f + 1, ROUNDS + 1):
            live = bench.retriever.rank_of(np.asarray(s.turns[t].query_row, np.float32), r.target)
            leaked += live == 1 and r.ranks[f] > 1 and r.target in s.turns[t].relevant
        assert r.ranks[f:] == [r.ranks[f]] * (ROUNDS + 1 - f)
        assert r.found_round == f
        for t in range(f + 1, ROUNDS + 1):
            assert r.turns[t]["rank"] == r.ranks[f] and "rank then is kept" in r.turns[t]["rank_note"]
    if name != "mixed":  # the case this guards: the marked target would have ranked 1 through its caption
        assert leaked > 0


def test_a_dialogue_that_runs_out_stops_the_query_early(bench):
    q = with_dialogues(bench.queries[:1])[0]
    short = Query(**{**q.__dict__, "dialog": q.dialog[:1], "rounds_text": q.rounds_text[:2]})
    for name in ("fixed-dialogue:concat", "fixed-dialogue:split", "fixed-dialogue:cr"):
        res, _, _ = run(bench, name, queries=[short])
        assert len(res[0].ranks) == 2 and res[0].stop == "stopped: the dialogue has no more rounds", name


def test_an_engine_error_ends_the_query_and_keeps_its_ranks(bench):
    q = with_dialogues(bench.queries[:1])[0]
    bad = Query(**{**q.__dict__, "rounds_text": (q.rounds_text[0], "x" * 3000, "y")})
    res, _, _ = run(bench, "fixed-dialogue:split", queries=[bad])
    assert len(res[0].ranks) == 1 and res[0].stop.startswith("error: the query is 3,000 characters")


def test_uncertain_answers_can_be_skipped(bench):
    # FakeLLM as the simulated user answers every question "Uncertain"
    results, sessions, _ = run(bench, "cr", on_uncertain="skip", answerer="llm", stop_on_found=False)
    assert all([t.kind for t in s.turns] == ["describe", "skip", "skip", "skip"] for s in sessions)
    assert all(r.turns[1]["user"]["uncertain"] for r in results)


# --- replaying dialogues -------------------------------------------------------------------------------

def _replay(bench, tmp_path, source, replay):
    results, _, queries = run(bench, source, stop_on_found=False)
    path = write_chatir(tmp_path / "d.json", [(q.target, q.description, r.dialog) for q, r in zip(queries, results)])
    replayed = attach_dialogues(queries, read_dialogues(path))
    again, _, _ = run(bench, replay, queries=replayed, stop_on_found=False)
    return results, again


def test_replaying_zs_dialogues_with_chatir_concat_gives_the_same_ranks(bench, tmp_path):
    zs, concat = _replay(bench, tmp_path, "zs", "fixed-dialogue:concat")
    assert [r.ranks for r in zs] == [r.ranks for r in concat]


def test_replaying_plugir_dialogues_through_reformulation_gives_the_same_ranks(bench, tmp_path):
    plugir, cr = _replay(bench, tmp_path, "plugir", "fixed-dialogue:cr")
    assert [r.ranks for r in plugir] == [r.ranks for r in cr]


# --- protocol names ------------------------------------------------------------------------------------

def test_expand_protocols_aliases_and_refusals():
    names = lambda spec, llm=True, d=False: [p.name for p in expand_protocols(spec, llm, d)]  # noqa: E731
    assert names("feedback") == ["feedback:expand", "feedback:summary", "feedback:keywords", "feedback:cot", "rocchio"]
    assert names("feedback", llm=False) == ["feedback:expand", "rocchio"]
    assert names("composed", llm=False) == ["composed:compose"]
    assert names("plugir, zs,plugir") == ["plugir", "zs"]
    assert names("fixed-dialogue") == ["fixed-dialogue:concat"]
    assert "fixed-dialogue:concat" not in names("all") and "fixed-dialogue:cr" in names("all", d=True)
    assert all(not get_protocol(n).needs_llm for n in names("all", llm=False))
    with pytest.raises(BadInputError, match="need an LLM"):
        expand_protocols("plugir", False)
    with pytest.raises(BadInputError, match="unknown protocol"):
        expand_protocols("telepathy", True)
    with pytest.raises(BadInputError, match="no protocol"):
        expand_protocols(" , ", True)


def test_the_belief_protocols_are_read_from_its_row_of_the_mode_table():
    """`eval` takes the belief's protocols from `modes/belief` (no family tuple of its own): each method with
    a protocol is one, in the table's order, and a simulated round exists for each."""
    from interactive_ir.evaluation import protocols
    from interactive_ir.modes import registry

    table = [m for m in registry.methods("belief") if m.protocol]
    assert BELIEF == tuple(m.protocol for m in table) == (
        "belief", "closest", "belief:references", "belief:questions", "belief:marks")
    for m in table:
        p = get_protocol(m.protocol)
        assert (p.family, p.variant, p.needs_llm, p.asks_questions) == ("belief", m.name, False, False)
        assert m.name in protocols._BELIEF_ROUNDS
    assert set(protocols._BELIEF_ROUNDS) == {m.name for m in table}
    assert get_protocol("belief").session_options().mode == ""  # eval calls the belief's actions by name
    assert not {m.name for m in registry.methods("belief")} - {"page", "closest", "references", "questions",
                                                                "marks", "tell", "skip"}


# --- dialogue files ------------------------------------------------------------------------------------

CHATIR = [
    {"img": "unlabeled2017/000000185565.jpg", "dialog": [
        "a bedroom is filled with lots of posters", "What kind of posters are on the walls? movie posters",
        "Is the computer on or off? on", "Is the water calm or choppy?\nAnswer: choppy a man surfing"]},
    {"img": "unlabeled2017/000000284024.jpg", "dialog": ["a woman sits on a bench", "Is she alone? yes"]},
]
VISDIAL = {"version": "1.0", "split": "val2018", "data": {
    "questions": ["is it sunny", "how many people are there?"], "answers": ["yes", "two"],
    "dialogs": [{"image_id": 185565, "caption": "two people on a beach",
                 "dialog": [{"question": 0, "answer": 0, "answer_options": []}, {"question": 1, "answer": 1}]}]}}


def test_split_entry():
    assert split_entry("What colour is the car? red") == ("What colour is the car?", "red")
    assert split_entry("Is the water calm or choppy?\nAnswer: choppy") == ("Is the water calm or choppy?", "choppy")
    assert split_entry("no question mark here") == ("no question mark here", "")


def test_read_chatir_dialogues(tmp_path):
    path = tmp_path / "ChatGPT_BLIP2.json"
    path.write_text(json.dumps(CHATIR))
    qs = read_dialogues(path)
    assert [q.target for q in qs] == ["unlabeled2017/000000185565.jpg", "unlabeled2017/000000284024.jpg"]
    assert qs[0].description == "a bedroom is filled with lots of posters"
    assert qs[0].dialog[1] == ("Is the computer on or off?", "on")
    assert qs[0].dialog[2] == ("Is the water calm or choppy?", "choppy a man surfing")
    assert chatir_query(qs[0].rounds_text, 2) == ("a bedroom is filled with lots of posters, What kind of posters are "
                                                  "on the walls? movie posters, Is the computer on or off? on")


def test_read_visdial_dialogues(tmp_path):
    path = tmp_path / "visdial_1.0_val.json"
    path.write_text(json.dumps(VISDIAL))
    (q,) = read_dialogues(path)
    assert q.target == "VisualDialog_val2018_000000185565.jpg"
    assert q.description == "two people on a beach"
    assert q.dialog == (("is it sunny?", "yes"), ("how many people are there?", "two"))


def test_bad_dialogue_files_are_refused(tmp_path):
    for content in ('{"foo": 1}', '[{"img": 3}]', "[1, 2]", "not json"):
        path = tmp_path / "d.json"
        path.write_text(content)
        with pytest.raises(BadInputError):
            read_dialogues(path)


def test_resolve_targets_by_file_name():
    qs = [Query("a", "unlabeled2017/000000185565.jpg", "d"), Query("b", "x/dup.jpg", "d"), Query("c", "nope.jpg", "d")]
    found, missing = resolve_targets(qs, ["000000185565.jpg", "p/dup.jpg", "q/dup.jpg"])
    assert [q.target for q in found] == ["000000185565.jpg"]
    assert [q.qid for q in missing] == ["b", "c"]  # "dup.jpg" is ambiguous


def test_rank_from_results_takes_the_place_in_the_final_list(bench):
    """ImageScope's bookkeeping: the target's place in the round's (re-ranked) list, else past the list."""
    by_index, _, _ = run(bench, "composed:compose", llm=None, stop_on_found=False)
    by_list, sessions, _ = run(bench, "composed:compose", llm=None, stop_on_found=False, rank_from="results")
    for a, b, s in zip(by_index, by_list, sessions):
        for t, turn in enumerate(s.turns):
            if b.found_round is not None and t > b.found_round:  # found: the found round's rank is kept
                assert b.ranks[t] == b.ranks[b.found_round]
            elif b.shown_ranks[t] is not None:
                assert b.ranks[t] == b.shown_ranks[t]
            else:
                assert b.ranks[t] == max(a.ranks[t], len(turn.shown) + 1)
