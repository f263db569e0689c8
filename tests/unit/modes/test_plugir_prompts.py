"""The PlugIR prompts (paper Appendix A, Tables 17-20) are built as the paper shows them, once the fences around
their data (`backends.fence`) and the data rule ending each system message are taken away; and those are there."""

from __future__ import annotations

import re

from interactive_ir.backends.fence import DATA_RULE, inside_fences
from interactive_ir.modes.conversation.plugir import prompts as P
from interactive_ir.modes.conversation.plugir.questioner import question_prompts

DIALOGUE = [("what colour is the dog?", "brown"), ("where is it?", "on a beach")]


def unfenced(prompt):
    """The prompt without its fence markers and data rule: what the paper shows."""
    out = []
    for m in prompt:
        text = re.sub(r"<<</?[a-z][a-z0-9 _-]*>>>", "", m["content"])
        out.append({**m, "content": re.sub(r" " + re.escape(DATA_RULE) + r"( This prompt's data blocks: [a-z, ]+\.)?$",
                                           "", text)})
    return out


def roles(prompt):
    return [m["role"] for m in prompt]


def test_every_field_is_fenced_and_the_system_message_says_the_blocks_are_data():
    for p in (P.questioner_prompt("DESC", [("QQ", "AA")]), P.questioner_prompt("DESC", [("QQ", "AA")], ["CAP"]),
              P.answerer_prompt(P.render_context("DESC", [("QQ", "AA")]), "ASKED"),
              P.reformulate_prompt("DESC", [("QQ", "AA")])):
        assert DATA_RULE in p[0]["content"]
        for needle in ("DESC", "QQ", "AA", "CAP", "ASKED"):
            assert inside_fences(p[-1]["content"], needle), (needle, p[-1]["content"])


def test_table17_baseline_questioner():
    p = unfenced(P.questioner_prompt("a dog running", DIALOGUE))
    assert roles(p) == ["system", "user", "assistant", "user"]
    assert p[0]["content"].startswith("You are a proficient question generator tasked with aiding in the retrieval "
                                      "of a target image.")
    assert "via leveraging two key information sources:" in p[0]["content"]
    assert p[0]["content"].endswith("while differing from prior questions in the [Dialogue].")
    # the 1-shot example, typed from Table 17
    assert p[1]["content"] == (
        "[Description] a man is doing a trick on a skateboard\n"
        "[Dialogue] Question: What type of trick is the man performing on the skateboard? Answer: a jump\n"
        "Question: What is the location of the jump trick being performed? Answer: a skate park Question:")
    assert p[2]["content"] == "what is the outfit of the man performing the jump trick at a skate park?"
    assert p[3]["content"] == ("[Description] a dog running\n"
                               "[Dialogue] Question: what colour is the dog? Answer: brown\n"
                               "Question: where is it? Answer: on a beach Question:")
    assert "[Retrieval Candidates]" not in p[3]["content"]


def test_table18_questioner_with_candidates():
    p = unfenced(P.questioner_prompt("a dog running", [], ["a dog on sand", "two dogs"]))
    assert roles(p) == ["system", "user", "assistant", "user"]
    assert "via leveraging three key information sources:" in p[0]["content"]
    assert p[0]["content"].endswith("Please explain how did you utilize the information sources for generating a "
                                    "question.")
    assert p[1]["content"].startswith(
        "[Retrieval Candidates] 0. man in yellow shirt 1. a boy in a skateboard park 2. the biker is performing a "
        "trick 3. a man in a green hat doing half-pipe with a skateboard 4. a skateboarding man catches the air in "
        "the midst of a trick\n[Description] a man is doing a trick on a skateboard\n")
    assert p[2]["content"].startswith("what is the outfit of the man performing the jump trick at a skate park?\n"
                                      "Explanation: To generate a question about the description, I will utilize")
    assert p[2]["content"].endswith("for example, a shirt and a half-pipe.")
    # no dialogue yet: the query still ends where the question begins
    assert p[3]["content"] == ("[Retrieval Candidates] 0. a dog on sand 1. two dogs\n"
                               "[Description] a dog running\n[Dialogue] Question:")


def test_table19_answerer():
    ctx = P.render_context("a dog running", DIALOGUE)
    assert ctx == "a dog running\nQuestion: what colour is the dog? Answer: brown\nQuestion: where is it? Answer: on a beach"
    p = unfenced(P.answerer_prompt(ctx, "is it sunny?"))
    assert roles(p) == ["system", "user"]
    assert p[0]["content"] == ('Answer the question only according to the given context. If you cannot determine the '
                               'answer or there are no objects that are asked by the question in the context , answer '
                               '"Uncertain".')
    assert p[1]["content"] == f"[Context] {ctx}\n[Question] is it sunny?\n[Answer]"


def test_table20_reformulation():
    p = unfenced(P.reformulate_prompt("a dog running", DIALOGUE))
    assert roles(p) == ["system", "user", "assistant", "user"]
    assert p[0]["content"].startswith("Your role is to reconstruct the [Caption] with the additional information")
    assert p[1]["content"] == (
        "[Caption]: a woman sits on a bench holding a guitar in her lap [Dialogue]: is this in a park? yes, i "
        "believe it is, are there others around? no, she is alone, does she have a collection bucket? no, is her "
        "hair long? yes, pretty long, is she wearing a dress? i don't think so, hard to tell, does she have shoes "
        "on? yes, flip flops, is there grass nearby? yes, everywhere, is it a sunny day? yes, are there trees? in "
        "the background there are trees, is the guitar new? i don't think so [New Caption]:")
    assert p[2]["content"].startswith("a woman with pretty long hair sits alone on a grassy bench in a park")
    assert p[3]["content"] == ("[Caption]: a dog running [Dialogue]: what colour is the dog? brown, where is it? "
                               "on a beach [New Caption]:")


def test_zs_concatenation():
    assert P.concat_dialogue("a dog running", DIALOGUE) == \
        "a dog running, what colour is the dog? brown, where is it? on a beach"
    assert P.concat_dialogue("a dog", []) == "a dog"


def test_list_style_asks_for_n_numbered_questions_in_one_prompt():
    ps = question_prompts("a dog", [], ["a cat"], n=5, style="list")
    assert len(ps) == 1
    assert ps[0][3]["content"].endswith("\nWrite 5 different questions, one per line, numbered 1 to 5.")


def test_sample_style_sends_n_copies_of_the_paper_prompt_or_one_when_greedy():
    ps = question_prompts("a dog", [], ["a cat"], n=5, style="sample", temperature=0.7)
    assert len(ps) == 5 and all(p == P.questioner_prompt("a dog", [], ["a cat"]) for p in ps)
    assert len(question_prompts("a dog", [], None, n=5, style="sample", temperature=0.0)) == 1
