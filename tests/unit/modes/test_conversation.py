"""The conversation mode end to end with the fake embedder and a scripted fake LLM."""

from __future__ import annotations

import numpy as np
import pytest

from interactive_ir.backends.fence import DATA_RULE, unfence
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.session import Session
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BackendError, BadInputError, SessionError
from interactive_ir.modes.conversation.plugir import prompts as P
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
from interactive_ir.modes.conversation.plugir.parsers import normalise

# The questioner's five sampled replies, in turn: junk mixed with questions.
QUESTION_REPLIES = [
    "What colour is the dog?",
    "a red dog on a beach",  # a caption, not a question
    "Is it sunny? Is the dog running?\nExplanation: candidates 0 and 3 ...",
    "",
    "Is the dog running?",  # a duplicate
]
ANSWERS = {"What colour is the dog?": "red", "Is it sunny?": "Uncertain.", "Is the dog running?": "I cannot tell."}


class Responder:
    """Replies by prompt type (the system message says which table it is)."""

    def __init__(self, new_caption="a brown dog running on the beach", fail=None):
        self.n_question = 0
        self.new_caption = new_caption
        self.fail = fail or {}  # stage -> exception to raise (once)

    def _maybe_fail(self, stage):
        if stage in self.fail:
            raise self.fail.pop(stage)

    def __call__(self, text: str) -> str:
        if text.startswith((P.QUESTIONER_RCE_SYSTEM, P.QUESTIONER_BASELINE_SYSTEM)):
            self._maybe_fail("question")
            reply = QUESTION_REPLIES[self.n_question % len(QUESTION_REPLIES)]
            self.n_question += 1
            return reply
        if text.startswith(P.ANSWERER_SYSTEM):
            self._maybe_fail("filter")
            question = unfence(text).split("[Question] ")[1].split("\n")[0]
            return ANSWERS.get(question, "Uncertain")
        if text.startswith(P.REFORMULATE_SYSTEM):
            self._maybe_fail("reformulate")
            return f"[New Caption]: {self.new_caption}"
        raise AssertionError(f"unexpected prompt {text[:60]!r}")


def engine_for(retriever, llm=None, k=4, **cfg):
    return build_engine(retriever, llm=llm, config=EngineConfig(k=k), plugir=PlugIRConfig(**cfg))


def stages(turn):
    return [c["stage"] for c in turn.llm_calls]


def kl_by_hand(r, rows, query, question):
    """KL(p_c || p_{c,q}) recomputed through the retriever's whole-collection scores."""
    def dist(text):
        s = r.all_scores(r.text_query_row(r.encode_text(text)))[rows].astype(np.float64)
        e = np.exp(s - s.max())
        return e / e.sum()
    p, q = dist(query), dist(f"{query} {question}")
    return float(np.sum(p * np.log(p / q)))


def test_three_turn_session(tiny_index):
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=Responder())
    eng = engine_for(r, llm)
    s = eng.new_session()

    # --- round 0: the description --------------------------------------------------------------
    t0 = eng.start(s, "a red dog on the beach")
    assert t0.kind == "describe" and t0.round == 0 and t0.query == "a red dog on the beach"
    assert len(t0.shown) == 4 and s.description == "a red dog on the beach"
    # RCE: n = max(20, 1% of 24) = 20 candidates, m = 10 clusters, one caption per representative
    rce = t0.extra["plugir"]["rce"]
    assert rce["n_candidates"] == 20 and rce["n_clusters"] == 10
    assert rce["captions"] == [caps[i][0] for i in rce["representatives"]]
    # the candidates are the top-20 of the query
    qrow = r.text_query_row(r.encode_text(t0.query))
    top20 = list(np.argsort(-r.all_scores(qrow), kind="stable")[:20])
    assert {r.index.row_of[i] for i in rce["representatives"]} <= set(top20)
    assert t0.shown == [r.index.ids[i] for i in top20[:4]]
    # one batched questioner call (5 copies of the Table 18 prompt), one batched filter call
    assert stages(t0) == ["question"] * 5 + ["filter"] * 3 and t0.extra["llm_round_trips"] == 2
    assert [len(c["prompts"]) for c in llm.calls] == [5, 3]
    sent = llm.calls[0]["prompts"][0]
    assert sent[3]["content"] == P.questioner_user("a red dog on the beach", [], rce["captions"])
    assert llm.calls[0]["temperature"] == 0.7 and llm.calls[1]["temperature"] == 0.0
    # parsed: 3 distinct questions; the filter drops the answerable one ("red" is in the description)
    ex = t0.extra["plugir"]
    assert ex["questions"] == ["What colour is the dog?", "Is it sunny?", "Is the dog running?"]
    assert ex["verdicts"] == ["answered", "uncertain", "uncertain"]
    # KL choice among the kept two, checked against an independent computation
    want = [kl_by_hand(r, top20, t0.query, q) for q in ex["questions"]]
    np.testing.assert_allclose(ex["kl"], want, rtol=1e-3, atol=1e-7)
    best = 1 if want[1] <= want[2] else 2
    assert ex["chosen"] == best and t0.question == ex["questions"][best]
    assert s.pending_question == t0.question and not t0.question_fallback and not t0.error
    for stage in ("retrieve", "rce", "question", "filter", "kl", "llm", "total"):
        assert stage in t0.timings

    # --- round 1: an answer ----------------------------------------------------------------------
    q1 = t0.question
    t1 = eng.answer(s, "yes, it is")
    assert t1.kind == "answer" and t1.answered_question == q1 and t1.user_text == "yes, it is"
    assert t1.query == "a brown dog running on the beach" and t1.extra["plugir"]["reformulated"]
    assert stages(t1)[0] == "reformulate" and t1.extra["llm_round_trips"] == 3
    reform_prompt = t1.llm_calls[0]["prompt"]
    assert reform_prompt[3]["content"] == P.reformulate_user("a red dog on the beach", [(q1, "yes, it is")])
    assert normalise(t1.question) != normalise(q1)  # never the same question twice
    assert t1.seen == [i for i in t1.shown if i in t0.shown]  # shown again: marked seen, not hidden

    # --- round 2: another answer -------------------------------------------------------------------
    q2 = t1.question
    t2 = eng.answer(s, "no")
    assert t2.answered_question == q2 and s.dialogue() == [(q1, "yes, it is"), (q2, "no")]
    questioner_user = [c for c in t2.llm_calls if c["stage"] == "question"][0]["prompt"][3]["content"]
    assert f"Question: {q1} Answer: yes, it is\nQuestion: {q2} Answer: no<<</dialogue>>> Question:" in questioner_user
    assert [h.id for h in eng.hits_of(t2) if h.seen] == t2.seen and all(i in s.shown_ids() for i in t2.seen)

    # the session survives JSON and carries on
    s2 = Session.from_json(s.to_json())
    assert s2.to_json() == s.to_json() and s2.pending_question == t2.question
    t3 = eng.answer(s2, "maybe")
    assert t3.round == 3 and len(s2.dialogue()) == 3


@pytest.mark.parametrize("method,table,filters,reformulates", [
    ("zs", P.QUESTIONER_BASELINE_SYSTEM, False, False),
    ("cr", P.QUESTIONER_BASELINE_SYSTEM, False, True),
    ("cr+rce", P.QUESTIONER_RCE_SYSTEM, False, True),
    ("plugir", P.QUESTIONER_RCE_SYSTEM, True, True),
])
def test_ablation_methods(tiny_index, method, table, filters, reformulates):
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=Responder())
    eng = engine_for(r, llm, method=method)
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    assert t0.method == method
    assert all(p[0]["content"].startswith(table) and DATA_RULE in p[0]["content"] for p in llm.calls[0]["prompts"])
    assert ("filter" in stages(t0)) == filters
    assert ("rce" in t0.extra["plugir"]) == (method in ("cr+rce", "plugir"))
    if not filters:
        assert t0.question == "What colour is the dog?"  # the first valid question
    t1 = eng.answer(s, "brown")
    assert ("reformulate" in stages(t1)) == reformulates
    assert not t1.extra["plugir"]["reformulate_fallback"]
    if reformulates:
        assert t1.query == "a brown dog running on the beach"
    else:
        assert t1.query == f"a red dog on the beach, {t0.question} brown"


def test_session_can_choose_its_method(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM(responder=Responder()))
    s = eng.new_session(plugir_method="zs")
    assert eng.start(s, "a dog").method == "zs"


def test_list_style_is_one_prompt(tiny_index):
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=lambda text: "1. Is it sunny?\n2. Is the dog running?" if "numbered 1 to 5" in text
                  else "Uncertain")
    eng = engine_for(r, llm, question_style="list")
    t0 = eng.start(eng.new_session(), "a red dog")
    assert [len(c["prompts"]) for c in llm.calls] == [1, 2]
    assert llm.calls[0]["max_tokens"] == 5 * 32
    assert t0.extra["plugir"]["questions"] == ["Is it sunny?", "Is the dog running?"]


def test_junk_questions_give_a_fallback_question_from_the_candidates(tiny_index):
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=lambda text: "a red dog on a beach" if "question generator" in text else "Uncertain")
    eng = engine_for(r, llm)
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    assert t0.question_fallback and s.pending_question == t0.question and not t0.error
    assert stages(t0) == ["question"] * 5  # no filter call for a fallback
    word = t0.question.split()[-4]  # "Is there a WORD in the image?" and the like
    captions = " ".join(t0.extra["plugir"]["rce"]["captions"])
    assert word in captions and word not in s.description
    t1 = eng.answer(s, "no")  # the conversation goes on
    assert t1.answered_question == t0.question


def _all_answered_turn(tiny_index, **cfg):
    """A first turn whose two questions the filter calls already answered."""
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=lambda text: "Is it sunny? Is the dog running?" if "question generator" in text
                  else "Yes, it is.")
    t0 = engine_for(r, llm, **cfg).start(engine_for(r, llm).new_session(), "a red dog")
    ex = t0.extra["plugir"]
    assert ex["filter_kept_none"] and ex["verdicts"] == ["answered", "answered"]
    return t0, ex


def test_filter_answering_everything_lets_kl_choose_among_all(tiny_index):
    """The default (all_answered="kl"): a weak answerer over-claims, so KL still chooses among the questions."""
    t0, ex = _all_answered_turn(tiny_index)
    assert t0.question == ex["questions"][int(np.argmin(ex["kl"]))] and not t0.question_fallback


def test_filter_answering_everything_can_ask_a_fallback_from_the_candidates(tiny_index):
    """all_answered="fallback": the filter is trusted and the turn asks a question built from the candidates."""
    t0, ex = _all_answered_turn(tiny_index, all_answered="fallback")
    assert t0.question_fallback and t0.question not in ex["questions"] and "kl" not in ex
    assert t0.question.endswith("?")
    with pytest.raises(BadInputError, match="all_answered"):
        PlugIRConfig(all_answered="maybe")


def test_a_single_question_is_filtered_too(tiny_index):
    """With one question (e.g. temperature 0) the filter still drops what the dialogue answers."""
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=lambda text: "Is the dog red?" if "question generator" in text else "Yes, it is red.")
    eng = engine_for(r, llm, question_temperature=0.0, all_answered="fallback")
    t0 = eng.start(eng.new_session(), "a red dog")
    ex = t0.extra["plugir"]
    assert ex["questions"] == ["Is the dog red?"] and ex["verdicts"] == ["answered"]
    assert t0.question_fallback and t0.question != "Is the dog red?"
    kept = FakeLLM(responder=lambda text: "Is the dog red?" if "question generator" in text else "Uncertain")
    t1 = engine_for(r, kept, question_temperature=0.0).start(eng.new_session(), "a dog")
    assert t1.question == "Is the dog red?" and not t1.question_fallback


def test_near_copies_of_asked_questions_are_dropped():
    from interactive_ir.modes.conversation.plugir.questioner import collect_questions, near_copy

    assert near_copy("Is the dog's coat black?", ["Is the dog coat black?"])
    assert not near_copy("Is the dog running?", ["Is the dog black?"])
    got = collect_questions(["Is the dog coat black? Where is the dog running?"], ["Is the dog's coat black?"], 5)
    assert got == ["Where is the dog running?"]


def test_backend_errors_become_turn_errors_and_the_session_goes_on(tiny_index):
    r, ids, caps = tiny_index
    resp = Responder(fail={"question": BackendError("connection refused")})
    eng = engine_for(r, FakeLLM(responder=resp))
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    assert "question model failed" in t0.error and "connection refused" in t0.error
    assert t0.question_fallback and s.pending_question == t0.question  # still something to answer
    failed = [c for c in t0.llm_calls if c["error"]]
    assert failed and failed[0]["reply"] is None

    resp.fail["reformulate"] = TimeoutError("timed out after 60 s")
    t1 = eng.answer(s, "yes")
    assert "reformulation model failed" in t1.error and "timed out" in t1.error
    assert t1.query == f"a red dog on the beach, {t0.question} yes"  # searched with the dialogue as typed
    assert t1.extra["plugir"]["reformulate_fallback"] and not t1.extra["plugir"]["reformulated"]
    assert t1.question and not t1.question_fallback  # the question step worked again

    resp.fail["filter"] = BackendError("HTTP 500")
    t2 = eng.answer(s, "no")
    assert "filter model failed" in t2.error and t2.question and not t2.question_fallback
    assert [t.round for t in s.turns] == [0, 1, 2]


def test_invalid_input_leaves_the_session_unchanged(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM(responder=Responder()))
    s = eng.new_session()
    with pytest.raises(SessionError, match="describe"):
        eng.answer(s, "yes")
    with pytest.raises(BadInputError, match="description"):
        eng.start(s, "   ")
    assert s.turns == [] and s.description == ""
    eng.start(s, "a red dog")
    before = s.to_json()
    with pytest.raises(BadInputError, match="answer"):
        eng.answer(s, "")
    with pytest.raises(BadInputError, match="answer"):
        eng.answer(s, "x" * 2001)
    with pytest.raises(SessionError, match="already has a description"):
        eng.start(s, "another dog")
    assert s.to_json() == before
    eng.found(s, s.last.shown[0])
    with pytest.raises(SessionError, match="ended"):
        eng.answer(s, "yes")


def test_without_an_llm_there_are_no_llm_questions(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, None, questioner="llm")  # (the default, "auto", asks grounded questions: test_grounded.py)
    s = eng.new_session()
    assert not eng.questions_enabled
    t0 = eng.start(s, "a red dog")
    assert t0.question == "" and s.pending_question == "" and t0.llm_calls == []
    with pytest.raises(SessionError, match="no question to answer"):
        eng.answer(s, "yes")
    t1 = eng.skip(s)  # next page, same query
    assert t1.kind == "skip" and t1.query == "a red dog" and not set(t1.shown) & set(t0.shown)


def test_skip_asks_another_question(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM(responder=Responder()))
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    t1 = eng.skip(s)
    assert t1.extra["plugir"]["skipped_question"] == t0.question
    assert t1.question and normalise(t1.question) != normalise(t0.question)
    assert s.dialogue() == []  # a skipped question is not part of the dialogue
    assert t1.query == t0.query and not set(t1.shown) & set(t0.shown)


def test_questions_can_be_turned_off(tiny_index):
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=Responder())
    eng = engine_for(r, llm)
    t0 = eng.start(eng.new_session(ask_questions=False), "a dog")
    assert t0.question == "" and llm.calls == []
    eng2 = engine_for(r, llm, ask_questions=False)
    assert not eng2.questions_enabled and eng2.start(eng2.new_session(), "a dog").question == ""


def test_other_modes_turns_get_a_question_too(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM(responder=Responder()))
    s = eng.new_session()
    t0 = eng.search_text(s, "a red dog on the beach")  # a plain search turn: candidates searched in the ASK step
    assert t0.question and s.pending_question == t0.question and "candidates" in t0.timings
    assert t0.extra["plugir"]["rce"]["n_candidates"] == 20
    t1 = eng.answer(s, "it is")
    assert t1.answered_question == t0.question


def test_candidates_exclude_earlier_pages_and_n_is_configurable(tiny_index):
    r, ids, caps = tiny_index
    eng = engine_for(r, FakeLLM(responder=Responder()), n_candidates=8, n_clusters=3)
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    rce = t0.extra["plugir"]["rce"]
    assert rce["n_candidates"] == 8 and rce["n_clusters"] == 3 and len(rce["representatives"]) == 3
    t1 = eng.skip(s)
    reps = t1.extra["plugir"]["rce"]["representatives"]
    assert not set(reps) & set(t0.shown)


def test_deferred_question_equals_the_immediate_one(tiny_index):
    """The web app shows results first (ask_questions off for the call), then runs the ASK step itself."""
    r, ids, caps = tiny_index
    now = engine_for(r, FakeLLM(responder=Responder()))
    later = engine_for(r, FakeLLM(responder=Responder()))
    s1, s2 = now.new_session(), later.new_session()
    for step in (lambda e, s: e.start(s, "a red dog on the beach"), lambda e, s: e.answer(s, "yes"),
                 lambda e, s: e.skip(s)):
        t1 = step(now, s1)
        s2.options.ask_questions = False
        t2 = step(later, s2)
        assert t2.question == "" and s2.pending_question == ""
        s2.options.ask_questions = None
        later.ask(s2)
        assert t2.shown == t1.shown and t2.query == t1.query
        assert t2.extra["plugir"]["rce"] == t1.extra["plugir"]["rce"]
        assert t2.question == t1.question and s2.pending_question == s1.pending_question


def test_a_turn_reads_metadata_only_for_shown_results_and_representatives(tiny_index, monkeypatch):
    """S_R stays rows and scores: a turn reads the records of its k shown results and the m cluster
    representatives, not of all n candidates."""
    r, ids, caps = tiny_index
    read = []
    meta = r.index.meta
    real = meta.records_many

    def spy(rows):
        read.append(len(list(rows)))
        return real(rows)

    monkeypatch.setattr(meta, "records_many", spy)
    eng = engine_for(r, FakeLLM(responder=Responder()), k=4, n_candidates=20, n_clusters=3)
    s = eng.new_session()
    t0 = eng.start(s, "a red dog on the beach")
    rce = t0.extra["plugir"]["rce"]
    assert rce["n_candidates"] == 20 and len(rce["representatives"]) == 3
    assert rce["captions"] == [caps[i][0] for i in rce["representatives"]]
    assert max(read) <= 4 and sum(read) <= 4 + 3  # not the 20 candidates
    read.clear()
    t1 = eng.answer(s, "red")
    assert t1.extra["plugir"]["rce"]["n_candidates"] == 20 and sum(read) <= 4 + 3


def test_candidates_are_rows_and_scores_best_first(tiny_index):
    from interactive_ir.types import Candidates

    r, ids, caps = tiny_index
    qrow = r.text_query_row(r.encode_text("a red dog"))
    hits = r.search_row(qrow, 6)
    c = Candidates.of(hits)
    assert len(c) == 6 and c.rows.tolist() == [h.row for h in hits] and Candidates.of(c) is c
    np.testing.assert_allclose(c.scores, [h.score for h in hits], rtol=1e-6)
    top = c[:2]
    assert top.rows.tolist() == [hits[0].row, hits[1].row]
    assert [h.id for h in r.hits(top.scores, top.rows)] == [hits[0].id, hits[1].id]
    with pytest.raises(TypeError):
        c[0]
    assert not Candidates()  # an empty set is falsy, as an empty list was
