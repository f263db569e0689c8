"""Simulated users: reply parsers on junk, the answerers, the relevance actor and the relative
captioners, each with scripted backends and hand-worked expectations."""

from __future__ import annotations

import pytest

from interactive_ir.backends.fence import DATA_RULE, inside_fences, unfence
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.backends.vlms import FakeVLM
from interactive_ir.errors import BackendError, BadInputError
from interactive_ir.evaluation.knowledge import knowledge_of
from interactive_ir.evaluation.queries import Query
from interactive_ir.evaluation.simulators import (
    UNCERTAIN,
    CaptionAnswerer,
    LLMAnswerer,
    LLMRelativeCaptioner,
    RelevanceActor,
    SimConfig,
    VLMAnswerer,
    VLMRelativeCaptioner,
    build_answer_prompt,
    build_relative_prompt,
    content_words,
    cut_repetition,
    make_user,
    overlap,
    parse_answer,
    parse_relative,
    rule_answer,
    rule_choice,
    rule_relative,
)

Q = Query(qid="q1", target="t.jpg", description="a black dog jumps into a lake",
          captions=("the dog catches a red stick", "a dog swimming near trees"))
K = knowledge_of(Q)  # all a simulated user is given


# --- parsers -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, expected", [
    ("red", ("red", False)),
    ("Answer: red", ("red", False)),
    ("[Answer] a red stick.", ("a red stick", False)),
    ("The answer is: brown", ("brown", False)),
    ('"Yes." It is a lake.', ("Yes", False)),
    ("What is the dog holding? a stick", ("a stick", False)),  # echoed question dropped
    ("Uncertain", (UNCERTAIN, True)),
    ("I cannot determine that from the context.", (UNCERTAIN, True)),
    ("It is not mentioned.", (UNCERTAIN, True)),
    ("This description is not possible based on the given context", (UNCERTAIN, True)),  # seen from SmolLM2
    ('The answer is "black"', ("black", False)),  # seen from SmolLM2
    ('The answer is "1."', ("1", False)),
    ("\n\n   \n  two dogs\nmore rambling", ("two dogs", False)),
    ("", (None, False)),
    ("   ...  ", (None, False)),
    ("[Context] a dog [Question] what? [Answer]", (None, False)),  # the prompt echoed back
    ("What is the dog holding?", (None, False)),  # only the question repeated
    (None, (None, False)),
])
def test_parse_answer_survives_junk(reply, expected):
    assert parse_answer(reply, "What is the dog holding?") == expected


@pytest.mark.parametrize("question, reply, expected", [
    ("What colour is the dog?", "The dog in the picture is black and white.", "black and white"),
    ("How many dogs are there?", "There are two dogs playing in the park.", "two"),
    ("Where is the dog?", "The dog is running on a sandy beach near the sea.", "on a sandy beach"),
    ("What is the man wearing?", "The man is wearing a red shirt and blue jeans.", "a red shirt"),
    ("Is there a dog?", "Yes, there is a dog in the picture.", "Yes"),
    ("Is there a cat?", "No, there is only a dog in the picture.", "No"),
    ("What colour is the dog?", "black", "black"),  # short replies stay as they are
    ("What is the name of the dog?", "The context does not mention the name of the dog at all.", UNCERTAIN),
    ("What time is it?", "It seems to be late in the afternoon, judging by the light.",
     "It seems to be late in the afternoon, judging by the light"),  # nothing to cut to: kept
])
def test_parse_answer_cuts_a_long_reply_to_the_answering_phrase(question, reply, expected):
    assert parse_answer(reply, question) == (expected, expected == UNCERTAIN)


def test_parse_answer_cuts_long_replies_to_max_words():
    text, unc = parse_answer(" ".join(f"w{i}" for i in range(50)), "q?", max_words=5)
    assert (text, unc) == ("w0 w1 w2 w3 w4", False)


def test_cut_repetition_stops_a_looping_reply():
    loop = ("make the dog a brown dog run through the tall grass ; make the dog a brown dog run through the grass ; "
            "make the dog a brown dog")
    assert cut_repetition(loop) == "make the dog a brown dog run through the tall grass"
    assert cut_repetition("a b c d e f") == "a b c d e f"
    assert parse_relative("make the dog a snow leopard and have it jump into a snow leopard and have it jump") == \
        "make the dog a snow leopard and have it jump into"  # "a snow leopard and" comes back at word 12


@pytest.mark.parametrize("reply, expected", [
    ("make the dog black and put it in a lake", "make the dog black and put it in a lake"),
    ("Instruction: make it a cat on a sofa.", "make it a cat on a sofa"),
    ("a brown dog runs on the grass", None),  # the candidate's own caption echoed
    ("a photo of instruction", None),  # only prompt words (what FakeLLM writes for this prompt)
    ("[Candidate image] x\n[Target image] y", None),
    ("", None),
    (None, None),
])
def test_parse_relative_survives_junk(reply, expected):
    assert parse_relative(reply, ["a brown dog runs on the grass"]) == expected


# --- words ---------------------------------------------------------------------------------------------

def test_content_words_drop_stopwords_and_plural_s():
    assert content_words("Two dogs are running through the glasses and the grass") == \
        ["two", "dog", "running", "glass", "grass"]


def test_overlap_is_the_share_of_candidate_words_found_in_the_target_captions():
    # candidate words {black, dog, park}; target words {black, dog, lake, red, stick}: 2 of 3
    assert overlap(["a black dog in the park"], ["a black dog in a lake", "a red stick"]) == pytest.approx(2 / 3)
    assert overlap([""], ["a dog"]) == 0.0


# --- answerers -----------------------------------------------------------------------------------------

def test_rule_answer_answers_what_was_asked_not_a_whole_caption():
    # the held-out captions say "the dog catches a red stick": asked what it catches, the user names the stick
    assert rule_answer(Q.knowledge, "What is the dog catching with its stick?") == ("a red stick", False)
    assert rule_answer(Q.knowledge, "What time is it?") == (UNCERTAIN, True)
    guess, unsure = rule_answer(Q.knowledge, "What time is it?", allow_uncertain=False)
    assert not unsure and guess == "a black dog"  # a best guess, still a few words of what the user knows
    assert UNCERTAIN == "not sure"


DOG = ("a black dog jumps into a lake", "the dog catches a red stick", "a dog swimming near trees")
KIDS = ("A little girl in a pink dress is climbing the stairs of a wooden playhouse",
        "Two young men in red shirts play soccer on a grassy field", "a man and a boy sit on a bench in the park",
        "Three dogs run through the snow")
HAT = ("A man in an orange hat starring at something .", "A man wears an orange hat and glasses .")
LAWN = ("a brown and white dog running through the grass", "A dog with a ball in its mouth runs on the lawn",
        "a group of children playing on the beach")


@pytest.mark.parametrize("knowledge, question, expected", [
    # a colour
    (DOG, "What colour is the dog?", "black"),
    (DOG, "What color is the stick?", "red"),
    (LAWN, "What colour is the dog?", "brown and white"),
    (KIDS, "What colour is the girl's dress?", "pink"),
    (HAT, "What colour hat is the man wearing?", "orange"),
    (DOG, "What colour is the car?", UNCERTAIN),  # no car in what the user knows
    (KIDS, "What colour is the dog?", UNCERTAIN),  # dogs, but no colour said of them
    # a count
    (DOG, "How many dogs are there?", "one"),
    (KIDS, "How many dogs are there?", "three"),
    (KIDS, "How many people are there?", "two"),
    (LAWN, "How many people are there?", "several"),
    (HAT, "How many dogs are there?", UNCERTAIN),
    (DOG, "How many?", UNCERTAIN),
    # a place
    (KIDS, "Where is the dog?", "through the snow"),
    (LAWN, "Where is the dog?", "through the grass"),
    (KIDS, "Where are the men playing?", "on a grassy field"),
    (KIDS, "Where was this taken?", "on a grassy field"),
    (HAT, "Where was this taken?", UNCERTAIN),  # no place named
    (HAT, "Where is the dog?", UNCERTAIN),
    # an action
    (DOG, "What is the dog doing?", "jumps into a lake"),
    (LAWN, "What is the dog doing?", "running through the grass"),
    (KIDS, "What is the man doing?", "sit on a bench"),
    (HAT, "What is happening?", "starring at something"),
    (DOG, "What is the man doing?", UNCERTAIN),
    # a person, a kind, a category
    (KIDS, "Who is in the picture?", "a little girl"),
    (DOG, "Who is in the picture?", "a black dog"),
    (DOG, "Who is with the dog?", UNCERTAIN),
    (LAWN, "What kind of dog is it?", "brown and white dog"),
    (LAWN, "What animal is in the picture?", "a brown and white dog"),
    (KIDS, "What sport is being played?", "soccer"),
    (HAT, "What animal is in the picture?", UNCERTAIN),
    # a thing: what the question's verb or preposition points at
    (DOG, "What is the dog holding?", "a red stick"),
    (LAWN, "What is the dog holding?", "a ball"),
    (HAT, "What is the man wearing?", "an orange hat"),
    (KIDS, "What is the girl climbing?", "the stairs"),
    (LAWN, "What is in the dog's mouth?", "a ball"),
    (DOG, "What is in the dog's mouth?", UNCERTAIN),
    (DOG, "Where is the dog swimming?", "near trees"),
    # alternatives
    (DOG, "Is it indoors or outdoors?", "outdoors"),
    (HAT, "Is it indoors or outdoors?", UNCERTAIN),
    (LAWN, "Is the dog black or brown?", "brown"),
    (KIDS, "Is the dog black or brown?", UNCERTAIN),
    # what captions do not say, and junk
    (DOG, "What is the name of the dog?", UNCERTAIN),
    (DOG, "What breed is the dog?", UNCERTAIN),
    (DOG, "What is the weather like?", UNCERTAIN),
    (KIDS, "How old is the man?", UNCERTAIN),
    (KIDS, "How old is the girl?", "little"),
    (DOG, "What is in the background?", UNCERTAIN),
    (DOG, "What is on the table?", UNCERTAIN),
    (DOG, "asdf qwerty?", UNCERTAIN),
    (DOG, "???", UNCERTAIN),
    (DOG, "", UNCERTAIN),
    (DOG, "What?", UNCERTAIN),
    (DOG, None, UNCERTAIN),
    ((), "What colour is the dog?", UNCERTAIN),
])
def test_rule_answer_gives_the_part_of_the_knowledge_that_answers(knowledge, question, expected):
    text, unsure = rule_answer(knowledge, question)
    assert (text, unsure) == (expected, expected == UNCERTAIN)


@pytest.mark.parametrize("question", [
    "What is the dog doing?", "What is in the picture?", "Who is in the picture?", "What is the man doing?",
    "Where is this?", "What is the girl wearing?", "What is the name of the dog?", "Describe the image.",
    "What is the boy holding?", "What can you tell me about it?", "What is there?", "What animal is it?",
])
def test_open_answers_are_never_a_whole_caption_and_stay_short(question):
    short = ("a dog runs", "two boys", "a girl in a red coat", "the man holds a cup")
    # single short captions: an extractor's phrase can be the whole caption, which must still be cut
    for knowledge in (DOG, KIDS, HAT, LAWN, short, ("a black dog",), ("on the beach",)):
        for allow in (True, False):
            text, _ = rule_answer(knowledge, question, allow_uncertain=allow)
            assert len(text.split()) <= 5, (question, text)
            assert text.lower() not in {c.lower().strip(" .") for c in knowledge}, (question, text)


@pytest.mark.parametrize("question, expected", [
    ("Is there a dog?", "yes"),
    ("Are there trees?", "yes"),  # plural stems to the captions' singular
    ("Is the stick red?", "yes"),
    ("Is it raining?", "no"),
    ("Is there a piano?", "no"),
    ("Does the dog wear a collar?", "no"),
    ("Is it?", UNCERTAIN),  # names nothing
    ("Is the dog swimming?", "yes"),
    ("Is the dog running?", "no"),  # it jumps, catches and swims
    ("Can you see a dog?", "yes"),  # "you", "see": words that ask, not words that describe
    ("Does the image show a lake?", "yes"),
    ("Does the dog have a stick?", "yes"),
    ("Is the dog holding a ball?", "no"),
    ("Is the photo taken outdoors?", "yes"),  # a lake is outdoors
    ("Is there an animal?", "yes"),  # a dog is one
    ("Are there two dogs?", "no"),
    ("Is there a piano?", "no"),
])
def test_rule_answer_says_yes_or_no_by_word_presence(question, expected):
    assert rule_answer(Q.knowledge, question)[0] == expected


def test_rule_choice_picks_the_option_most_like_the_held_out_captions_or_none():
    c = rule_choice(Q.knowledge, ["a red car on a road", "a dog swimming in water near trees", "two cats"])
    assert c.index == 1 and c.scores[1] > c.scores[0] >= c.scores[2] == 0.0
    none = rule_choice(Q.knowledge, ["a red car on a road", "two cats"], threshold=0.3)
    assert none.index is None  # "none of these": the best option shares only "red"
    assert CaptionAnswerer(SimConfig(choice_threshold=0.0)).choose(K, ["a red car", "two cats"]).index == 0


def test_embedder_similarity_drives_choices_and_open_answers():
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.evaluation.similarity import EmbedderSimilarity

    sim = EmbedderSimilarity(FakeEmbedder(64))
    user = CaptionAnswerer(SimConfig(choice_threshold=0.2), sim)
    assert user.choose(K, ["a red car on a road", "the dog catches a red stick in a lake"]).index == 1
    assert user.answer(K, "What is the dog catching?").text == "a red stick"


def test_answer_prompt_holds_the_users_knowledge_and_offers_uncertain():
    msgs = build_answer_prompt(Q.knowledge, "What colour is the stick?")
    text = " ".join(m["content"] for m in msgs)
    assert msgs[0]["role"] == "system" and "Uncertain" in msgs[0]["content"]
    for allow in (True, False):  # both ask for a few words, not a sentence
        assert "in a few words" in build_answer_prompt(Q.knowledge, "q?", allow)[0]["content"]
    for cap in Q.knowledge:
        assert cap in text
    assert unfence(msgs[-1]["content"]).endswith("[Question] What colour is the stick? [Answer]")
    assert inside_fences(msgs[-1]["content"], "What colour is the stick?") and DATA_RULE in msgs[0]["content"]
    assert all(inside_fences(msgs[-1]["content"], cap.rstrip(".")) for cap in Q.knowledge)


def test_llm_answerer_parses_the_reply():
    llm = FakeLLM(script=["Answer: red."])
    r = LLMAnswerer(llm).answer(K, "What colour is the stick?")
    assert (r.text, r.source, r.raw, r.uncertain) == ("red", "llm", "Answer: red.", False)
    assert llm.calls[0]["temperature"] == 0.0
    assert "the dog catches a red stick" in llm.prompts[0]


def test_llm_answerer_passes_uncertain_through():
    r = LLMAnswerer(FakeLLM(script=["I'm not sure."])).answer(K, "Is it sunny?")
    assert (r.text, r.uncertain, r.source) == (UNCERTAIN, True, "llm")


def test_llm_answerer_falls_back_to_the_captions_on_junk_and_errors():
    junk = LLMAnswerer(FakeLLM(script=["[Context] blah [Question]"])).answer(K, "Where is the dog swimming?")
    assert (junk.text, junk.source) == ("near trees", "fallback")
    err = LLMAnswerer(FakeLLM(script=[BackendError("server down")])).answer(K, "Where is the dog swimming?")
    assert (err.text, err.source, err.error) == ("near trees", "fallback", "server down")


def test_llm_answerer_without_uncertain_replaces_it_by_the_rule():
    cfg = SimConfig(allow_uncertain=False)
    r = LLMAnswerer(FakeLLM(script=["Uncertain"]), cfg).answer(K, "Where is the dog swimming?")
    assert (r.text, r.uncertain, r.source) == ("near trees", False, "fallback")


def test_caption_answerer_is_model_free():
    r = CaptionAnswerer().answer(K, "Is there a lake?")
    assert (r.text, r.source, r.round_trips) == ("yes", "rule", 0)


# --- relevance actor -----------------------------------------------------------------------------------

CAPS = {"t.jpg": ["index caption of the target"], "a": ["a black dog near a lake"], "b": ["a black dog in a park"],
        "c": ["a red car on a road"], "d": ["a dog swimming in a lake with a stick"], "e": ["two cats"]}


def _actor(**kw):
    return RelevanceActor(lambda i: CAPS.get(i, []), SimConfig(**kw), seed=7)


def test_actor_marks_by_ground_truth_only_by_default_and_overlap_on_request():
    strict = _actor()
    assert [i for i in "abcde" if strict.is_relevant(K, i)] == [] and strict.is_relevant(K, "t.jpg")
    listed = knowledge_of(Query(**{**Q.__dict__, "relevant": ("e",)}))
    assert strict.is_relevant(listed, "e")
    actor = _actor(relevance_overlap=0.6)
    # a: {black, dog, lake} all in the target's words -> 1.0; b: {black, dog, park} -> 2/3; c: {red, car, road}
    # -> 1/3; d: {dog, swimming, lake, stick} -> 1.0; e: {two, cat} -> 0
    assert [i for i in "abcde" if actor.is_relevant(K, i)] == ["a", "b", "d"]


def test_actor_marks_a_seeded_random_subset_of_at_most_n():
    actor = _actor(relevance_overlap=0.6, relevant_n=2)
    j = actor.judge(K, ["a", "b", "c", "d", "e"], 1)
    assert j.truth == ["a", "b", "d"]
    assert len(j.relevant) == 2 and set(j.relevant) <= {"a", "b", "d"}
    assert j.irrelevant == ["c", "e"]
    assert actor.judge(K, ["a", "b", "c", "d", "e"], 1) == j  # same seed, query and round: same marks
    picks = {tuple(actor.judge(K, ["a", "b", "c", "d", "e"], t).relevant) for t in range(1, 30)}
    assert picks == {("a", "b"), ("a", "d"), ("b", "d")}  # the subset changes between rounds, in shown order


def test_actor_always_marks_a_shown_target_and_can_leave_irrelevant_unmarked():
    actor = _actor(relevance_overlap=0.6, relevant_n=1)
    for t in range(1, 10):
        assert actor.judge(K, ["a", "t.jpg", "b", "d"], t).relevant == ["t.jpg"]
    quiet = _actor(relevance_overlap=0.6, mark_irrelevant=False)
    assert quiet.judge(K, ["c", "e"], 1).irrelevant == []
    with pytest.raises(BadInputError):
        _actor(relevant_n=0)


# --- relative captioners -------------------------------------------------------------------------------

def test_rule_relative_names_what_the_target_has_and_the_reference_lacks():
    # reference words {black, dog, lake}; the target's other words in order of first mention
    assert rule_relative(["a black dog near a lake"], Q.knowledge) == "jumps catches red stick swimming trees"
    assert rule_relative(["a brown dog runs on the grass"], Q.knowledge, 3) == "black jumps lake instead of brown"
    assert rule_relative(["a black dog jumps into a lake, catches a red stick, swimming near trees"],
                         Q.knowledge) == "like this one"


@pytest.mark.parametrize("reference", [[], [""], ["a black dog near a lake"], ["a red car"], ["dog"],
                                       ["the dog catches a red stick"]])
@pytest.mark.parametrize("target", [Q.knowledge, ["two dogs"], ["dog"], ["a man", "a man on a bike riding fast"]])
def test_rule_relative_never_returns_a_target_caption_verbatim(reference, target):
    from interactive_ir.evaluation.words import norm

    text = rule_relative(reference, target)
    assert text and norm(text) not in {norm(c) for c in target}
    assert all(norm(c) not in norm(text) for c in target if len(c.split()) > 2)


def test_relative_prompt_has_both_descriptions_and_a_worked_example():
    msgs = build_relative_prompt(["a brown cat"], Q.knowledge)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert "[Candidate image] a brown cat" in unfence(msgs[-1]["content"])
    assert inside_fences(msgs[-1]["content"], "a brown cat") and DATA_RULE in msgs[0]["content"]
    assert Q.description in msgs[-1]["content"] and msgs[-1]["content"].endswith("[Instruction]")


def test_llm_relative_captioner_parses_and_falls_back():
    caps = {"c1": ["a black dog near a lake"]}.get
    good = LLMRelativeCaptioner(FakeLLM(script=["Make the dog catch a red stick."]), caps).describe(K, "c1")
    assert (good.text, good.source) == ("Make the dog catch a red stick", "llm")
    junk = LLMRelativeCaptioner(FakeLLM(script=["a black dog near a lake"]), caps).describe(K, "c1")
    assert (junk.text, junk.source) == ("jumps catches red stick swimming trees", "fallback")
    copied = LLMRelativeCaptioner(FakeLLM(script=["the dog catches a red stick"]), caps).describe(K, "c1")
    assert copied.source == "fallback"  # a target caption copied verbatim is not a relative caption
    example = LLMRelativeCaptioner(FakeLLM(script=["make the dog black and have it jump into a lake after a stick"]),
                                   caps).describe(K, "c1")
    assert example.source == "fallback"  # the one-shot example's answer copied back is junk
    err = LLMRelativeCaptioner(FakeLLM(script=[BackendError("boom")]), caps).describe(K, "c1")
    assert (err.source, err.error) == ("fallback", "boom")


# --- VLM variants, on real image files -----------------------------------------------------------------

def test_vlm_answerer_and_relative_captioner_see_the_right_images(tiny_index):
    retriever, ids, _ = tiny_index
    index = retriever.index
    q = Query(qid="q", target=ids[3], description="something", captions=("a thing on a beach",))
    k = knowledge_of(q, index, pixels=True)
    vlm = FakeVLM(script=["Answer: blue", "put it on a beach"])
    a = VLMAnswerer(vlm).answer(k, "What colour is it?")
    assert (a.text, a.source) == ("blue", "vlm")
    assert len(vlm.calls[0]["images"][0]) == 1 and "What colour is it?" in vlm.calls[0]["questions"][0]
    r = VLMRelativeCaptioner(vlm, index, lambda i: index.records[index.row_of[i]].captions).describe(k, ids[5])
    assert (r.text, r.source) == ("put it on a beach", "vlm")
    cand_img, target_img = vlm.calls[1]["images"][0]
    from PIL import Image

    assert cand_img.size == Image.open(index.image_path(index.row_of[ids[5]])).size
    assert target_img.size == Image.open(index.image_path(index.row_of[ids[3]])).size


def test_vlm_answerer_falls_back_when_the_image_is_missing(tiny_index):
    retriever, ids, _ = tiny_index
    q = Query(qid="q", target="not-in-index.png", description="a red boat", captions=())
    r = VLMAnswerer(FakeVLM(script=["yes"])).answer(knowledge_of(q, retriever.index, pixels=True), "Is the boat red?")
    assert (r.text, r.source) == ("yes", "fallback") and "could not be opened" in r.error


def test_make_user_kinds(tiny_index):
    retriever, _, _ = tiny_index
    assert isinstance(make_user(retriever.index).answerer, CaptionAnswerer)
    assert isinstance(make_user(retriever.index, llm=FakeLLM()).answerer, CaptionAnswerer)  # model-free by default
    fake = make_user(retriever.index, llm=FakeLLM(), answerer="llm")
    assert isinstance(fake.answerer, LLMAnswerer) and fake.is_fake and "FAKE" in fake.describe_self()
    assert not make_user(retriever.index).is_fake and make_user(retriever.index, answerer="vlm", vlm=FakeVLM()).needs_pixels
    assert isinstance(make_user(retriever.index, answerer="vlm", vlm=FakeVLM()).relative, VLMRelativeCaptioner)
    with pytest.raises(BadInputError, match="needs an LLM"):
        make_user(retriever.index, answerer="llm")
    with pytest.raises(BadInputError, match="unknown answerer"):
        make_user(retriever.index, answerer="oracle")


@pytest.mark.parametrize("question, knowledge, expected", [
    ("Are there people in the picture?", ["Two small children in red shirts playing on a skateboard ."], "yes"),
    ("Are there people in the picture?", ["A white dog watching a black dog in the air ."], "no"),
    ("What colours stand out?", ["Two small children in red shirts playing on a skateboard ."], "red"),
    ("What colours stand out?", ["A boy jumps off a rock in the forest"], "not sure"),
    ("What else is in the picture?", ["A woman is guiding a brown dog around an obstacle course"], "a brown dog"),
    ("What else is in the picture?", ["A boy jumps off a rock in the forest"], "not sure"),
    # "else": what the description (the first caption, what the user said) leaves out
    ("What else is in the picture?", ["A woman climbs up a mountain .", "She holds on to a rope on a mountain ."],
     "a rope"),
    ("What else is in the picture?", ["A man poses outside of some buildings .",
                                      "A man with sunglasses on his head is standing by signs ."], "sunglasses"),
    ("What else is in the picture?", ["A woman with a rope climbs up a mountain .",
                                      "She holds on to a rope on a mountain ."], "not sure"),
])
def test_the_belief_s_own_questions_get_the_answers_a_person_would_give(question, knowledge, expected):
    """The page's questions "Are there people ...?", "What colours stand out?" and "What else is in the
    picture?" are answered from the knowledge (they were all "not sure": "people" was generic, "stand out"
    and "else" were taken for what the question is about)."""
    from interactive_ir.evaluation.simulators import rule_answer

    assert rule_answer(knowledge, question)[0] == expected


def test_what_else_besides_names_something_else():
    """"What else is in the picture, besides a rope?" is answered with something the question did not name (a
    person asked again names another thing), and "not sure" when the knowledge names nothing more."""
    from interactive_ir.evaluation.simulators import rule_answer

    knowledge = ["A woman climbs up a mountain .", "She holds on to a rope on a mountain .",
                 "A climber with a red helmet climbs a cliff ."]
    first = rule_answer(knowledge, "What else is in the picture?")[0]
    assert first == "a rope"
    again, unsure = rule_answer(knowledge, "What else is in the picture, besides a rope?")
    assert not unsure and "rope" not in again
    assert rule_answer(["A dog runs .", "A dog runs fast ."], "What else is in the picture, besides a ball?")[1]
