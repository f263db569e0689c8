"""PlugIR pipeline choices of the authors' code, off by default and set by `eval --preset plugir`:
caption->image entropy representatives, KL over candidate ranks 11..n, filtered questions rewritten."""

from __future__ import annotations

import numpy as np
import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.model_calls import MeteredLLM
from interactive_ir.errors import BadInputError
from interactive_ir.modes.conversation.plugir import prompts as P
from interactive_ir.modes.conversation.plugir import rce
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
from interactive_ir.modes.conversation.plugir.pipeline import QuestionState, next_question


def test_cross_entropies_use_captions_against_images():
    rng = np.random.default_rng(0)
    img = rng.standard_normal((6, 8)).astype(np.float32)
    img /= np.linalg.norm(img, axis=1, keepdims=True)
    assert np.allclose(rce.cross_entropies(img, img), rce.similarity_entropies(img))  # captions = images: same
    caps = np.zeros_like(img)
    caps[:, 0] = 1.0  # every caption alike: each sees the same scores, so entropies differ only by the left-out one
    ent = rce.cross_entropies(caps, img, scale=10.0)
    assert ent.shape == (6,) and np.all(ent >= 0) and not np.allclose(ent, rce.similarity_entropies(img, 10.0))
    ctx = rce.extract([str(i) for i in range(6)], img, 2, scale=10.0, caption_vectors=caps)
    assert ctx.entropies == pytest.approx(list(ent))


def test_config_checks_the_new_fields():
    with pytest.raises(BadInputError, match="representative"):
        PlugIRConfig(representative="text")
    with pytest.raises(BadInputError, match="kl_skip_top"):
        PlugIRConfig(kl_skip_top=-1)


class Replies:
    """Questions numbered per batch; the filter answers ("answered") the first `answered_batches` batches."""

    def __init__(self, answered_batches: int):
        self.batch = 0
        self.filtered = 0
        self.answered_batches = answered_batches

    def __call__(self, text: str) -> str:
        if text.startswith((P.QUESTIONER_RCE_SYSTEM, P.QUESTIONER_BASELINE_SYSTEM)):
            self.batch += 1
            return ["Is the sky blue?", "Is there a hat on the table?", "How many birds fly?"][self.batch - 1]
        if text.startswith(P.ANSWERER_SYSTEM):
            self.filtered += 1
            return "yes, it is" if self.filtered <= self.answered_batches else "Uncertain"
        return "x"


@pytest.mark.parametrize("retries, expect_new", [(0, False), (3, True)])
def test_filter_retries_write_new_questions_when_every_one_is_answered(tmp_path, retries, expect_new):
    retriever, _, _ = build_tiny(tmp_path)
    cands = retriever.search_text("a red dog", 12)
    cfg = PlugIRConfig(n_questions=1, filter_retries=retries, all_answered="kl")
    llm = MeteredLLM(FakeLLM(responder=Replies(answered_batches=1)))
    res = next_question(llm, retriever, lambda ids: ["a caption"] * len(ids), cfg,
                        QuestionState("a red dog", [], "a red dog", candidates=cands))
    stages = [c.stage for c in llm.log]
    if expect_new:
        assert stages == ["question", "filter", "question", "filter"] and res.extra["filter_retries"] == 1
        assert res.question == "Is there a hat on the table?"
    else:
        assert stages == ["question", "filter"] and res.extra.get("filter_kept_none")


def test_kl_skips_the_top_candidates(tmp_path, monkeypatch):
    from interactive_ir.modes.conversation.plugir import pipeline

    retriever, _, _ = build_tiny(tmp_path)
    cands = retriever.search_text("a red dog", 20)
    seen = {}

    def spy(retriever_, rows, *a, **kw):
        seen["rows"] = list(rows)
        return [0.0] * len(a[1])

    monkeypatch.setattr(pipeline, "question_kls", spy)

    class Two:
        def __call__(self, text):
            if text.startswith((P.QUESTIONER_RCE_SYSTEM, P.QUESTIONER_BASELINE_SYSTEM)):
                Two.n = getattr(Two, "n", 0) + 1
                return ["Is the sky blue?", "How many birds fly over the lake?"][(Two.n - 1) % 2]
            return "Uncertain"

    cfg = PlugIRConfig(n_questions=2, kl_skip_top=10)
    next_question(MeteredLLM(FakeLLM(responder=Two())), retriever, lambda ids: ["c"] * len(ids), cfg,
                  QuestionState("a red dog", [], "a red dog", candidates=cands))
    assert seen["rows"] == [h.row for h in cands[10:]]
