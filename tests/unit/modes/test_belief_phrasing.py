"""The belief's yes/no questions in good English (modes/belief/phrasing.py) and how they are chosen
(modes/belief/questions.py: by expected information, never twice, none that cannot move the belief)."""

from __future__ import annotations

import numpy as np
import pytest

from interactive_ir.modes.belief.phrasing import article, gerund, is_plural, yes_no_question
from interactive_ir.modes.belief.questions import OPEN_QUESTIONS, QuestionContext, _open_informs, best_word
from interactive_ir.retrieval.belief import BeliefConfig


@pytest.mark.parametrize("surface, stem_form, want", [
    ("dog", None, "Is there a dog in the picture?"),
    ("dogs", "dog", "Are there dogs in the picture?"),
    ("people", None, "Are there people in the picture?"),
    ("children", None, "Are there children in the picture?"),
    ("umbrella", None, "Is there an umbrella in the picture?"),
    ("uniform", None, "Is there a uniform in the picture?"),
    ("hour", None, "Is there an hour in the picture?"),
    ("water", None, "Is there water in the picture?"),
    ("grass", None, "Is there grass in the picture?"),
    ("glasses", "glass", "Are there glasses in the picture?"),
    ("runs", "run", "Is someone running in the picture?"),
    ("rides", "ride", "Is someone riding in the picture?"),
    ("jumping", "jumping", "Is someone jumping in the picture?"),
    ("building", "building", "Is there a building in the picture?"),
    ("red", None, "Is there something red in the picture?"),
])
def test_yes_no_questions_agree_in_number_and_take_the_right_article(surface, stem_form, want):
    assert yes_no_question(surface, stem_form) == want


def test_the_realiser_parts():
    assert [article(w) for w in ("apple", "ball", "hour", "unicycle", "egg")] == ["an", "a", "an", "a", "an"]
    assert [gerund(v) for v in ("run", "ride", "lie", "play", "swim", "see")] == [
        "running", "riding", "lying", "playing", "swimming", "seeing"]
    assert is_plural("people") and is_plural("cars") and not is_plural("grass") and not is_plural("bus")
    with pytest.raises(ValueError):
        yes_no_question("  ")


def _ctx(captions, p=None, said=(), **cfg):
    p = np.full(len(captions), 1.0 / len(captions)) if p is None else np.asarray(p, float)
    return QuestionContext(captions, p, frozenset(said), BeliefConfig(**cfg))


def test_the_word_asked_is_the_one_whose_answer_tells_most_and_never_one_said_or_asked():
    caps = ["a dog on the beach", "a dog in the snow", "a cat on the beach", "a cat in the snow"]
    stem_form, surface, info = best_word(_ctx(caps), set())
    assert stem_form in {"dog", "beach", "cat", "snow"} and info > 0  # each splits the mass in half
    # a word every probable image has, or none has, tells nothing: with the others said or asked, none is left
    assert best_word(_ctx(["a dog on the beach"] * 4), set()) is None
    left = best_word(_ctx(caps, said={"dog"}), {"beach", "cat"})
    assert left is not None and left[0] == "snow"
    # the probability decides: a word only the unlikely images have tells less than one that splits the likely
    skew = _ctx(["a dog on grass", "a cat on grass", "a horse in the snow", "a horse in the snow"], p=[0.45, 0.45, 0.05, 0.05])
    assert best_word(skew, set())[0] in {"dog", "cat"}


def test_no_question_below_the_minimum_information():
    caps = ["a dog on the beach"] * 19 + ["a cat on the beach"]
    assert best_word(_ctx(caps, word_yes=0.9), set()) is not None  # a sure answer on a lopsided word informs
    assert best_word(_ctx(caps, word_yes=0.9, min_information=0.5), set()) is None
    assert best_word(_ctx(caps), set()) is None  # at the fitted (unsure) answer model it tells too little


def test_open_questions_are_asked_only_where_the_captions_differ_in_what_they_ask_about():
    where = dict(OPEN_QUESTIONS)["Where was the picture taken?"]
    assert _open_informs(_ctx(["a dog on the beach", "a dog in the snow"]), where)
    assert not _open_informs(_ctx(["a red circle", "a blue square"]), where)  # clipart: no place in any caption
    assert not _open_informs(_ctx(["a dog on the beach", "a cat on the beach"]), where)  # one place only
    assert not _open_informs(_ctx(["a dog on the beach", "a dog in the snow"], said={"beach", "snow"}), where)


def test_no_yes_or_no_question_about_a_word_that_only_places_things():
    """"Is there an along in the picture?": a word that only says where things are is never asked about, even
    where it splits the probable images best."""
    from interactive_ir.modes.belief.questions import PLACING

    caps = ["a dog runs along the beach"] * 5 + ["a dog runs on the beach"] * 4 + ["a dog sits with a ball"]
    best = best_word(_ctx(caps, word_yes=0.9), set())
    assert "along" in PLACING and best is not None and best[0] != "along"
