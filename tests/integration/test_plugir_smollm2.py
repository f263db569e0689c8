"""Two conversation turns with the real offline SmolLM2-135M-Instruct on a small Flickr8k caption index (else
the generated photo sample's).

A 135M model mostly answers the prompts with junk; this checks that the parsers and fallbacks turn
whatever it says into a usable turn: a query, a question, no error, at most 3 LLM round trips.
"""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.integration

N_IMAGES = 200


@pytest.fixture(scope="module")
def flickr_caption_index(tmp_path_factory):
    """A caption index (text:all-MiniLM-L6-v2) of the first 200 images of captions.jsonl (`photo_data()`)."""
    from iir_testutils import photo_data, photo_rows

    pytest.importorskip("sentence_transformers")
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.retrieval.retriever import Retriever

    try:
        embedder = make_embedder("text:all-MiniLM-L6-v2")
    except Exception as e:  # noqa: BLE001 - any missing piece of the offline model is a skip
        pytest.skip(f"text:all-MiniLM-L6-v2 unavailable offline: {e}")
    root = tmp_path_factory.mktemp("flickr200")
    images = root / "images"
    images.mkdir()
    root_data = photo_data()
    rows = photo_rows(root_data)[:N_IMAGES]
    for row in rows:  # links, never copies, of the shared data
        os.symlink(root_data / "images" / row["image"], images / row["image"])
    caps = root / "captions.jsonl"
    caps.write_text("".join(json.dumps({"image": r["image"], "captions": r["captions"]}) + "\n" for r in rows))
    build_index(BuildConfig(images=images, out=root / "index", captions=caps), embedder)
    return Retriever(load_index(root / "index"), embedder), rows


def test_two_turns_with_smollm2(flickr_caption_index, smollm2):
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
    from interactive_ir.modes.conversation.plugir.prompts import ECHO_MARKERS

    retriever, rows = flickr_caption_index
    eng = build_engine(retriever, llm=smollm2, config=EngineConfig(k=5), plugir=PlugIRConfig(questioner="llm"))
    s = eng.new_session()
    target = rows[7]
    t0 = eng.start(s, target["captions"][0])
    assert not t0.error, t0.error
    assert t0.extra["plugir"]["rce"]["n_candidates"] == 20 and t0.extra["plugir"]["rce"]["captions"]
    assert t0.question.endswith("?") and s.pending_question == t0.question
    assert t0.extra["llm_round_trips"] <= 2

    t1 = eng.answer(s, "yes")
    assert not t1.error, t1.error
    assert t1.answered_question == t0.question and t1.query
    assert not any(m in t1.query.lower() for m in ECHO_MARKERS)  # never the prompt echoed as the query
    assert t1.question.endswith("?") and t1.question != t0.question
    assert t1.extra["llm_round_trips"] <= 3
    assert {c["stage"] for c in t1.llm_calls} >= {"reformulate", "question"}
    assert all(c["reply"] is not None for c in t1.llm_calls)
    assert t1.seen == [i for i in t1.shown if i in t0.shown] and len(t1.shown) == 5
    print(f"\nround 0: {t0.question!r} (fallback={t0.question_fallback}) {t0.timings}")
    print(f"round 1: query={t1.query!r} reformulated={t1.extra['plugir']['reformulated']} "
          f"question={t1.question!r} (fallback={t1.question_fallback}) {t1.timings}")
