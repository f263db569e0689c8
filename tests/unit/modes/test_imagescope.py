"""ImageScope: prompt builders (Figures 10-12), junk-proof parsers with JSON repair, the stage 1 score,
and the stage 2 (stable count re-rank) and stage 3 (first "Yes" to the top) re-rankers with scripted models."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from interactive_ir.backends.fence import DATA_RULE, inside_fences, unfence
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.backends.vlms import FakeVLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BackendError
from interactive_ir.index.imageio import open_image
from interactive_ir.modes.composed.imagescope.parsers import (
    Proposition,
    parse_evaluation,
    parse_stage1,
    parse_stage2,
    parse_yes_no,
    repair_json,
)
from interactive_ir.modes.composed.imagescope.prompts import (
    BLANK_REFERENCE,
    build_stage1,
    build_stage2,
    build_stage3,
    build_verifier_question,
)
from interactive_ir.modes.composed.imagescope.rerank import move_first_yes, rerank_by_counts
from interactive_ir.modes.composed.mode import ComposedConfig
from interactive_ir.types import Hit

# --- prompt builders ---------------------------------------------------------------------------------


def test_stage1_prompt_is_figure_10_with_the_query_filled_in():
    p = build_stage1("is red  and\nbigger", "A small blue car on a street.")
    assert "Classify the given instruction into the following types" in p
    for kind in ("(1) Addition:", "(2) Removal:", "(3) Modification:", "(4) Comparison:", "(5) Retention:",
                 "(1) Core Elements:", "(2) Enhanced Details:", "(3) Comprehensive Synthesis:"):
        assert kind in p
    assert "the final output should in JSON format" in p  # the paper's wording, kept verbatim
    assert unfence(p).rstrip().endswith("- Instruction: is red and bigger\n- Reference Image: A small blue car on a street.")
    assert "[[" not in p and inside_fences(p, "is red and bigger") and inside_fences(p, "A small blue car")
    assert DATA_RULE in p and p.index(DATA_RULE) < p.rindex("<<<instruction>>>is red")  # the rule, outside the blocks
    assert unfence(build_stage1("x", "  ")).rstrip().endswith(f"- Reference Image: {BLANK_REFERENCE}")


def test_stage2_prompt_is_figure_11_with_the_atomic_instructions_listed():
    p = build_stage2("is red", [("Modification", "Make the car red."), ("Removal", "Remove the man.")])
    assert "Atomic Proposition Generation" in p and "[[" not in p
    assert unfence(p).rstrip().endswith("- Instruction: is red\n- Atomic Instructions: - (1) Modification: Make the car "
                                        "red.\n- (2) Removal: Remove the man.")
    assert inside_fences(p, "Make the car red.") and inside_fences(p, "Remove the man.") and DATA_RULE in p


def test_stage3_prompt_is_figure_12_and_verifier_question():
    p = build_stage3("Make It Red.")
    assert p.startswith('Your task is to evaluate and determine if the right candidate image reflects the change '
                        'described in the <INSTRUCTION> <<<instruction>>>make it red<<</instruction>>>.')
    assert "ANSWER: [Yes/No]" in p and unfence(p).rstrip().endswith("followed by your explanation on a new line.")
    assert unfence(build_verifier_question(" Is the car\nred? ")) == "Answer the question with Yes or No. Is the car red?"
    assert inside_fences(build_verifier_question("Is the car red?"), "Is the car red?")


# --- JSON repair ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
    ("Sure! {'a': 'x', 'b': True, 'c': None}", {"a": "x", "b": True, "c": None}),
    ('{"a": [1, 2, ], }', {"a": [1, 2]}),
    ('{"a": ["x" "y"]}', {"a": ["x", "y"]}),
    ('{"a": {"b": [1, 2', {"a": {"b": [1, 2]}}),
    ('{"a": "unfinished', {"a": "unfinished"}),
    ('{"a": "line one\nline two"}', {"a": "line one\nline two"}),
    ('{"a": "a "quoted" word"}', {"a": 'a "quoted" word'}),
    ('{"k": }', {"k": None}),
    ('noise [1, 2] more noise', [1, 2]),
    ('{"a": 1} trailing {"b": 2}', {"a": 1}),
])
def test_repair_json(text, expected):
    assert repair_json(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "}}}", None])
def test_repair_json_gives_none_for_no_json(text):
    assert repair_json(text) is None


# --- stage 1 parser ----------------------------------------------------------------------------------

DESCS = ["A red car.", "A red sports car.", "A red sports car parked on a street."]


def test_parse_stage1_reads_valid_json():
    reply = "Step 1 ... Step 2 ...\n```json\n" + json.dumps(
        {"step1": [["Modification", "Make the car red."], ["Retention", "Keep the street."]], "step2": DESCS}) + "\n```"
    r = parse_stage1(reply, "make it red", "a blue car")
    assert (r.source, r.atomic, r.descriptions, r.types) == (
        "json", [("Modification", "Make the car red."), ("Retention", "Keep the street.")], DESCS,
        ["Modification", "Retention"])


def test_parse_stage1_repairs_malformed_json_and_drops_bad_entries():
    reply = ("{'step1': [['modification', 'Make the car red'], ['Teleport', 'x'], ['Addition']], "
             "'step2': ['A red car.' 'A red sports car.', 'A red sports car parked on a street.', 'Extra one here.'")
    r = parse_stage1(reply, "make it red", "a blue car")
    assert r.source == "repaired"
    assert r.atomic == [("Modification", "Make the car red")]
    assert r.descriptions == DESCS  # at most three


def test_parse_stage1_accepts_dict_shapes():
    reply = json.dumps({"step1": [{"type": "Addition", "instruction": "Add a dog."}, {"Removal": "Remove cat."}],
                        "step2": {"core": "A dog.", "enhanced": "A brown dog.", "comprehensive": "A brown dog inside."}})
    r = parse_stage1(reply, "add a dog", "")
    assert r.atomic == [("Addition", "Add a dog."), ("Removal", "Remove cat.")]
    assert r.descriptions == ["A dog.", "A brown dog.", "A brown dog inside."]


def test_parse_stage1_reads_the_prose_layout_of_the_example():
    reply = ("1. **Step 1.** Based on the instruction:\n- Addition: Make the man wear a hat.\n\n"
             "2. **Step 2.** Based on step 1, the target image should be like:\n- A man wears a hat.\n"
             "- A tall man wears a hat.\n- A tall man wears a black hat in a park.")
    r = parse_stage1(reply, "has a hat", "a tall man in a park")
    assert r.source == "prose" and r.atomic == [("Addition", "Make the man wear a hat.")]
    assert r.descriptions == ["A man wears a hat.", "A tall man wears a hat.", "A tall man wears a black hat in a park."]


@pytest.mark.parametrize("reply", ["", "I cannot help with that.", '{"step1": [], "step2": []}', "{{{{", '["x"]'])
def test_parse_stage1_junk_falls_back_to_the_instruction_and_reference(reply):
    r = parse_stage1(reply, "make it red", "A blue car on a street.")
    assert r.source == "fallback"
    assert r.atomic == [("Modification", "make it red")]
    assert r.descriptions == ["make it red", "A blue car on a street, make it red"]
    assert parse_stage1(reply, "make it red", BLANK_REFERENCE).descriptions == ["make it red"]
    assert parse_stage1(reply, "make it red", "A kid on a slide .").descriptions[1] == "A kid on a slide, make it red"


def test_parse_stage1_drops_a_copy_of_the_prompt_example():
    # SmolLM2-135M copied the example's atomic instruction for "make it night"
    r = parse_stage1("- Addition: Make the woman holding a baby.\n", "make it night", "A child in a snow cave.")
    assert r.atomic == [("Modification", "make it night")] and r.source == "fallback"


# --- stage 2, verifier and evaluator parsers -----------------------------------------------------------

def test_parse_stage2_from_json_dropping_invalid_and_duplicate_entries():
    reply = "```json\n" + json.dumps({"step1": ["The car is red."], "step2": [
        ["Is the car red?", "True"], ["Is there a man?", "False"], ["bad"], ["Is it?", "maybe"],
        ["Not a question", "True"], ["is the car red?", "True"], {"question": "Is it night?", "answer": "Yes"}]}) + "\n```"
    assert parse_stage2(reply) == [Proposition("Is the car red?", True), Proposition("Is there a man?", False),
                                   Proposition("Is it night?", True)]


def test_parse_stage2_from_the_prose_q_a_layout_and_the_limit():
    reply = "(1) Q: Is the car red? A: Yes. (True)\n(2) Q: Is there a man? A: No. (False)\n(3) Q: Is it wet? A: Yes."
    assert parse_stage2(reply) == [Proposition("Is the car red?", True), Proposition("Is there a man?", False),
                                   Proposition("Is it wet?", True)]
    assert len(parse_stage2(reply, limit=2)) == 2
    assert parse_stage2("no idea") == [] and parse_stage2("") == []


@pytest.mark.parametrize("reply,expected", [("Yes", True), ("yes, it is red", True), ("No.", False),
                                            ("The answer is no", False), ("True", True), ("maybe", None),
                                            ("Nope", None), ("", None)])
def test_parse_yes_no(reply, expected):
    assert parse_yes_no(reply) is expected


@pytest.mark.parametrize("reply,decision,explanation", [
    ("ANSWER: Yes\nThe car is now red.", True, "The car is now red"),
    ("ANSWER: [No]\nIt is still blue.", False, "It is still blue"),
    ("**Answer:** yes - matches", True, "matches"),
    ("I think no, it is blue", False, "I think no, it is blue"),
    ("cannot tell", None, "cannot tell"),
])
def test_parse_evaluation(reply, decision, explanation):
    assert parse_evaluation(reply) == (decision, explanation)


# --- re-rank rules -----------------------------------------------------------------------------------------

def _hits(names):
    return [Hit(n, i, f"/x/{n}", 1.0 - i / 10) for i, n in enumerate(names)]


def test_stage2_rerank_is_a_stable_sort_by_confirmed_count():
    props = [Proposition("Is it red?", True), Proposition("Is there a man?", False)]
    answers = [[True, True], [True, False], [False, True], [True, False], [None, False], [False, False]]
    # counts: a=1, b=2, c=0, d=2, e=1, f=1; g is beyond the verified head
    hits, counts = rerank_by_counts(_hits("abcdefg"), props, answers)
    assert counts == [1, 2, 0, 2, 1, 1]
    assert [h.id for h in hits] == ["b", "d", "a", "e", "f", "c", "g"]
    b = hits[0]
    assert b.why[0] == "stage 2: 2/2 propositions confirmed"
    assert b.why[1] == "holds: Is it red? (verifier: yes, wanted yes)"
    assert hits[3].why[1] == "fails: Is it red? (verifier: unclear, wanted yes)"
    assert hits[-1].why == []


def test_stage3_moves_the_first_yes_to_the_top():
    hits, first = move_first_yes(_hits("abcd"), [False, True, True], ["no", "good", "also"])
    assert first == 1 and [h.id for h in hits] == ["b", "a", "c", "d"]
    assert hits[0].why == ["stage 3: evaluator says yes (good)"] and hits[2].why == ["stage 3: evaluator says yes (also)"]
    hits, first = move_first_yes(_hits("abc"), [None, False, False])
    assert first is None and [h.id for h in hits] == ["a", "b", "c"]
    hits, first = move_first_yes(_hits("ab"), [True, True])
    assert first == 0 and [h.id for h in hits] == ["a", "b"]


# --- the engine with scripted models ----------------------------------------------------------------------

PROPS_JSON = json.dumps({"step1": ["It is red.", "There is no man."],
                         "step2": [["Is it red?", "True"], ["Is there a man?", "False"]]})


def scripted_llm(descs=DESCS, props=PROPS_JSON, stage1=None):
    def respond(prompt: str) -> str:
        if "Atomic Proposition Generation" in prompt:
            return props
        if "Instruction Classification" in prompt:
            return stage1 if stage1 is not None else "```json\n" + json.dumps(
                {"step1": [["Modification", "Make it red."]], "step2": descs}) + "\n```"
        raise AssertionError(f"unexpected prompt {prompt[:80]!r}")

    return FakeLLM(responder=respond)


def _image_key(im) -> str:
    return hashlib.sha1(im.convert("RGB").tobytes() + repr(im.size).encode()).hexdigest()


@pytest.fixture
def keyed(tiny_index):
    r, ids, caps = tiny_index
    key_to_id = {_image_key(open_image(r.index.image_path(r.index.row_of[i]))): i for i in ids}
    assert len(key_to_id) == len(ids)
    return r, ids, caps, key_to_id


def test_stage1_score_is_the_mean_fused_similarity_of_the_three_descriptions(tiny_index):
    r, ids, caps = tiny_index
    ref = ids[5]
    eng = build_engine(r, llm=scripted_llm(), config=EngineConfig(k=6), composed=ComposedConfig(tau=0.3))
    s = eng.new_session(ask_questions=False)
    t = eng.relative(s, "make it red", reference=ref)
    assert t.method == "imagescope" and t.extra["descriptions"] == DESCS and t.query == DESCS[-1]
    assert t.extra["instruction_types"] == ["Modification"] and t.reference == ref
    v = r.embedder.embed_texts(DESCS)
    img = r.index.vectors(range(len(ids)), "image")
    cap = r.index.vectors(range(len(ids)), "caption")
    expected = ((0.7 * img @ v.T) + (0.3 * cap @ v.T)).mean(axis=1)  # mean over g of (1-tau) t->i + tau t->c
    order = [r.index.ids[i] for i in np.argsort(-expected, kind="stable") if r.index.ids[i] != ref]
    assert t.shown == order[:6]
    np.testing.assert_allclose(t.scores, [expected[r.index.row_of[i]] for i in t.shown], atol=2e-3)
    assert caps[ref][0] in t.llm_calls[0]["prompt"]  # the reference description comes from the index
    assert t.extra["reference_caption_source"] == "index"


def test_stage2_reranks_the_top_k_by_confirmed_propositions_stably(keyed):
    r, ids, caps, key_to_id = keyed
    cfg = ComposedConfig(rerank_k=8, alpha=0)
    base = build_engine(r, llm=scripted_llm(), config=EngineConfig(k=10), composed=cfg)
    L = base.relative(base.new_session(ask_questions=False), "make it red", reference=ids[0]).shown
    # the scripted verifier: L[5] satisfies both propositions, L[2] and L[6] one, the others none
    good = {L[5]: ("Yes", "No"), L[2]: ("Yes", "Yes"), L[6]: ("No", "No")}

    def verifier(images, question):
        a = good.get(key_to_id[_image_key(images[0])], ("No", "Yes"))
        return a[0] if "red" in question else a[1]

    vlm = FakeVLM(responder=verifier)
    eng = build_engine(r, llm=scripted_llm(), vlm=vlm, config=EngineConfig(k=10), composed=cfg)
    t = eng.relative(eng.new_session(ask_questions=False), "make it red", reference=ids[0])
    assert t.shown == [L[5], L[2], L[6], L[0], L[1], L[3], L[4], L[7], L[8], L[9]]
    assert t.extra["propositions"] == [["Is it red?", True], ["Is there a man?", False]]
    assert t.extra["stage2_counts"] == {x: {L[5]: 2, L[2]: 1, L[6]: 1}.get(x, 0) for x in L[:8]}
    assert t.why[L[5]][:2] == ["stage 2: 2/2 propositions confirmed", "holds: Is it red? (verifier: yes, wanted yes)"]
    assert L[8] not in t.why  # beyond rerank_k: untouched
    assert len(vlm.calls) == 1 and len(vlm.calls[0]["questions"]) == 16
    assert unfence(vlm.calls[0]["questions"][0]) == "Answer the question with Yes or No. Is it red?"
    assert t.extra["llm_round_trips"] == 2 and t.extra["vlm_round_trips"] == 1
    assert [c["stage"] for c in t.llm_calls].count("verify") == 16


def test_stage3_puts_the_first_accepted_candidate_on_top(keyed):
    r, ids, caps, key_to_id = keyed
    cfg = ComposedConfig(rerank_k=0, alpha=3)
    base = build_engine(r, llm=scripted_llm(), config=EngineConfig(k=5), composed=cfg)
    L = base.relative(base.new_session(ask_questions=False), "make it red", reference=ids[3]).shown
    seen = []

    def evaluator(images, prompt):
        ref_id, cand = key_to_id[_image_key(images[0])], key_to_id[_image_key(images[1])]
        seen.append((ref_id, cand))
        return {L[1]: "ANSWER: Yes\nlooks right", L[2]: "ANSWER: Yes"}.get(cand, "ANSWER: No\nwrong")

    eng = build_engine(r, llm=scripted_llm(), vlm=FakeVLM(responder=evaluator), config=EngineConfig(k=5), composed=cfg)
    t = eng.relative(eng.new_session(ask_questions=False), "make it red", reference=ids[3])
    assert seen == [(ids[3], L[0]), (ids[3], L[1]), (ids[3], L[2])]  # reference on the left, top alpha in order
    assert t.shown == [L[1], L[0], L[2], L[3], L[4]]
    assert t.why[L[1]] == ["stage 3: evaluator says yes (looks right)"]
    assert t.extra["stage3"] == {"evaluated": L[:3], "decisions": [False, True, True], "moved_to_top": L[1]}
    assert "<<<instruction>>>make it red<<</instruction>>>" in t.llm_calls[-1]["prompt"]


def test_compose_with_a_vlm_runs_stage_3_only(keyed):
    r, ids, caps, key_to_id = keyed
    vlm = FakeVLM(responder=lambda images, q: "ANSWER: No")
    eng = build_engine(r, vlm=vlm, config=EngineConfig(k=4))
    t = eng.relative(eng.new_session(), "make it red", reference=ids[3])
    assert t.method == "compose" and "propositions" not in t.extra
    assert t.extra["stage3"]["decisions"] == [False, False, False] and t.extra["vlm_round_trips"] == 1


def test_stage1_llm_failure_falls_back_and_the_turn_says_so(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, llm=FakeLLM(script=[BackendError("timeout")]), config=EngineConfig(k=3))
    s = eng.new_session(ask_questions=False)
    t = eng.relative(s, "make it red", reference=ids[1])
    assert "timeout" in t.error and t.extra["stage1_source"] == "fallback"
    assert t.extra["descriptions"] == ["make it red", f"{caps[ids[1]][0]}, make it red"]
    assert len(t.shown) == 3 and len(s.composed_history) == 1


def test_junk_stage1_reply_uses_the_fallback_descriptions(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, llm=scripted_llm(stage1="I am a small model and I like trains."), config=EngineConfig(k=3))
    t = eng.relative(eng.new_session(ask_questions=False), "make it red", reference=ids[1])
    assert t.extra["stage1_source"] == "fallback" and not t.error and t.extra["stage1_notes"]


def test_vlm_failure_keeps_the_stage1_order(tiny_index):
    r, ids, caps = tiny_index
    cfg = ComposedConfig(rerank_k=6, alpha=2)
    base = build_engine(r, llm=scripted_llm(), config=EngineConfig(k=5), composed=cfg)
    L = base.relative(base.new_session(ask_questions=False), "make it red", reference=ids[2]).shown
    eng = build_engine(r, llm=scripted_llm(), vlm=FakeVLM(script=[BackendError("gpu gone")] * 2),
                       config=EngineConfig(k=5), composed=cfg)
    t = eng.relative(eng.new_session(ask_questions=False), "make it red", reference=ids[2])
    assert t.shown == L
    assert "stage 2 re-ranking skipped" in t.error and "stage 3 evaluation skipped" in t.error


def test_no_propositions_skips_stage_2(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, llm=scripted_llm(props="no idea"), vlm=FakeVLM(), config=EngineConfig(k=3),
                       composed=ComposedConfig(alpha=0))
    t = eng.relative(eng.new_session(ask_questions=False), "make it red", reference=ids[2])
    assert "no yes/no propositions" in t.error and t.extra["propositions"] == []


def test_parse_stage1_rejects_headings_and_copies_of_the_inputs_but_keeps_prose_atomics():
    # a real SmolLM2-135M reply: one usable atomic instruction, then copies and runaway headings
    reply = ("- Addition: Make the dog run on a beach instead of a snowy dog.\n"
             "- A black dog is running after a white dog in the snow.\n\n"
             "- Instruction: has the person holding a baby\n- Reference Image: A woman with dark hair holding a baby.\n"
             "- Step 1: Instruction Classification:\n- Step 2: Step 1:\n- Step 3: Step 2:\n- Step 4: Step 3:")
    ref = "A black dog is running after a white dog in the snow."
    r = parse_stage1(reply, "make the dog run on a beach instead", ref)
    assert r.atomic == [("Addition", "Make the dog run on a beach instead of a snowy dog.")]
    assert r.source == "fallback"
    assert r.descriptions == ["make the dog run on a beach instead",
                              "A black dog is running after a white dog in the snow, make the dog run on a beach instead"]
