"""Composed search without re-ranking: composition math, caption indices, uploads, the multi-round history
mean (A Sanity Check on Composed Image Retrieval), the default reference, bad input, and the CLI entry point."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from interactive_ir.backends.captioners import FakeCaptioner
from interactive_ir.backends.embedders import FakeEmbedder
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.commands.composed_search import reference_id, run_composed
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.modes.composed.mode import ComposedConfig, compose_vector, history_mean, load_upload

TAU = 0.15  # the retriever's default on an index with captions


def _norm(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


def _fused_scores(r, c, tau=TAU):
    """(1 - tau) c.I + tau c.C for every row, from the stored vectors."""
    n = len(r.index)
    img = r.index.vectors(range(n), "image").astype(np.float64)
    if r.index.caption_only:
        return img @ c
    cap = r.index.vectors(range(n), "caption").astype(np.float64)
    return (1 - tau) * img @ c + tau * cap @ c


def _ranking(r, scores, exclude):
    return [r.index.ids[i] for i in np.argsort(-scores, kind="stable") if r.index.ids[i] not in exclude]


# --- the math ----------------------------------------------------------------------------------------

def test_compose_vector_by_hand():
    np.testing.assert_allclose(compose_vector([1, 0], [0, 1]), [2 ** -0.5, 2 ** -0.5], atol=1e-6)
    np.testing.assert_allclose(compose_vector([1, 0], [0, 1], 0.5), [1 / 1.25 ** 0.5, 0.5 / 1.25 ** 0.5], atol=1e-6)
    np.testing.assert_allclose(compose_vector([0.6, 0.8], [1, 0], 0.0), [0.6, 0.8], atol=1e-6)
    with pytest.raises(BadInputError, match="cancels"):
        compose_vector([1, 0], [-1, 0])


def test_history_mean_by_hand():
    np.testing.assert_allclose(history_mean([[1, 2, 3], [3, 2, 1], [2, 5, 2]]), [2, 3, 2], atol=1e-6)
    np.testing.assert_allclose(history_mean([[1, -1]]), [1, -1])


# --- compose on an image index -------------------------------------------------------------------------

def test_compose_adds_the_weighted_text_vector_to_the_reference_image(tiny_index):
    r, ids, caps = tiny_index
    ref = ids[4]
    eng = build_engine(r, config=EngineConfig(k=6))
    s = eng.new_session()
    t = eng.relative(s, "make it red", reference=ref)
    c = _norm(r.row_vector(r.index.row_of[ref]) + r.encode_text("make it red"))
    expected = _fused_scores(r, c)
    assert t.method == "compose" and t.kind == "relative" and t.reference == ref and not t.reference_upload
    assert t.shown == _ranking(r, expected, {ref})[:6]
    np.testing.assert_allclose(t.scores, [expected[r.index.row_of[i]] for i in t.shown], atol=2e-3)
    np.testing.assert_allclose(s.composed_history[0], np.concatenate([(1 - TAU) * c, TAU * c]), atol=1e-5)


def test_text_weight_and_tau_come_from_the_config(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=5), composed=ComposedConfig(text_weight=0.5, tau=0.4))
    t = eng.relative(eng.new_session(), "a green boat", reference=ids[7])
    c = _norm(r.row_vector(r.index.row_of[ids[7]]) + 0.5 * r.encode_text("a green boat"))
    expected = _fused_scores(r, c, tau=0.4)
    assert t.shown == _ranking(r, expected, {ids[7]})[:5]


def test_on_a_caption_index_the_reference_caption_vector_stands_for_the_image(tmp_path):
    from iir_testutils import build_tiny

    class TextOnly(FakeEmbedder):
        has_vision = False

    r, ids, caps = build_tiny(tmp_path, embedder=TextOnly(32))
    assert r.index.caption_only
    eng = build_engine(r, config=EngineConfig(k=5))
    t = eng.relative(eng.new_session(), "on the snow", reference=ids[2])
    c = _norm(r.index.vectors([r.index.row_of[ids[2]]], "image")[0] + r.encode_text("on the snow"))
    assert t.shown == _ranking(r, _fused_scores(r, c), {ids[2]})[:5]
    # an upload needs a captioner on a caption index; with one, its caption is the reference
    up = Image.new("RGB", (40, 40), (200, 40, 40))
    s = eng.new_session()
    with pytest.raises(BadInputError, match="needs a captioner"):
        eng.relative(s, "on the snow", image=up)
    eng2 = build_engine(r, captioner=FakeCaptioner(), config=EngineConfig(k=5))
    t2 = eng2.relative(eng2.new_session(), "on the snow", image=up)
    c2 = _norm(r.encode_text("a mostly red square image") + r.encode_text("on the snow"))
    assert t2.shown == _ranking(r, _fused_scores(r, c2), set())[:5]


def test_an_uploaded_reference_as_pil_bytes_path_or_file(tiny_index, tmp_path):
    r, ids, caps = tiny_index
    up = Image.new("RGB", (50, 30), (30, 160, 60))
    path = tmp_path / "up.png"
    up.save(path)
    eng = build_engine(r, config=EngineConfig(k=5))
    c = _norm(r.embedder.embed_images([up])[0] + r.encode_text("with snow"))
    expected = _ranking(r, _fused_scores(r, c), set())[:5]
    for source in (up, path.read_bytes(), str(path), path, io.BytesIO(path.read_bytes())):
        t = eng.relative(eng.new_session(), "with snow", image=source)
        assert t.reference == "" and t.reference_upload and t.extra["reference_source"] == "upload"
        assert t.shown == expected


# --- multi-round ----------------------------------------------------------------------------------

def test_rounds_rank_by_the_mean_of_all_composed_rows_and_default_to_the_previous_top1(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=4))
    s = eng.new_session()
    t1 = eng.relative(s, "make it red", reference=ids[0])
    c1 = _norm(r.row_vector(r.index.row_of[ids[0]]) + r.encode_text("make it red"))
    top1 = t1.shown[0]
    t2 = eng.relative(s, "now at night")  # no reference: the previous round's top-1
    assert t2.reference == top1 and t2.extra["reference_source"] == "previous top-1"
    c2 = _norm(r.row_vector(r.index.row_of[top1]) + r.encode_text("now at night"))
    expected = (_fused_scores(r, c1) + _fused_scores(r, c2)) / 2  # the mean row scores the mean
    assert t2.shown == _ranking(r, expected, {top1})[:4]  # the reference only: seen images stay
    np.testing.assert_allclose(t2.scores, [expected[r.index.row_of[i]] for i in t2.shown], atol=2e-3)
    assert len(s.composed_history) == 2 and t2.extra["history_rounds"] == 2
    np.testing.assert_allclose(s.composed_history[1], np.concatenate([(1 - TAU) * c2, TAU * c2]), atol=1e-5)


def test_a_typed_search_starts_the_composed_history_afresh(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=4))
    s = eng.new_session()
    eng.search_text(s, caps[ids[3]][0])
    eng.relative(s, "make it red", reference=ids[0])
    eng.search_text(s, "something else entirely")
    assert s.composed_history == [] and s.carry_row == []
    t = eng.relative(s, "now at night", reference=ids[9])
    assert t.extra["history_rounds"] == 1 and len(s.composed_history) == 1


def test_history_mean_can_be_turned_off(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=4), composed=ComposedConfig(use_history_mean=False))
    s = eng.new_session()
    eng.relative(s, "make it red", reference=ids[0])
    t2 = eng.relative(s, "now at night", reference=ids[9])
    c2 = _norm(r.row_vector(r.index.row_of[ids[9]]) + r.encode_text("now at night"))
    assert t2.shown == _ranking(r, _fused_scores(r, c2), {ids[9]})[:4]
    assert t2.extra["history_rounds"] == 1 and len(s.composed_history) == 2


def test_imagescope_and_compose_rounds_share_the_history(tiny_index):
    r, ids, caps = tiny_index
    descs = ["A red dog.", "A red dog on the beach.", "A red dog on the sandy beach."]
    llm = FakeLLM(responder=lambda p: json.dumps({"step1": [["Modification", "Make it red."]], "step2": descs}))
    eng = build_engine(r, llm=llm, config=EngineConfig(k=4))
    s = eng.new_session(ask_questions=False)
    t1 = eng.relative(s, "make it red", reference=ids[1])
    t2 = eng.relative(s, "smaller", reference=ids[2], method="compose")
    v = r.embedder.embed_texts(descs).astype(np.float64)
    s1 = np.mean([_fused_scores(r, x) for x in v], axis=0)
    c2 = _norm(r.row_vector(r.index.row_of[ids[2]]) + r.encode_text("smaller"))
    expected = (s1 + _fused_scores(r, c2)) / 2
    assert (t1.method, t2.method) == ("imagescope", "compose")
    assert t2.shown == _ranking(r, expected, {ids[2]})[:4]


# --- reference descriptions --------------------------------------------------------------------------

def _capture_llm(replies=None):
    return FakeLLM(responder=lambda p: "no json")


def test_reference_description_from_the_captioner_when_the_index_has_none(tmp_path):
    from iir_testutils import build_tiny

    r, ids, _ = build_tiny(tmp_path, captions=False)
    llm = _capture_llm()
    eng = build_engine(r, llm=llm, captioner=FakeCaptioner(), config=EngineConfig(k=3))
    t = eng.relative(eng.new_session(ask_questions=False), "make it red", reference=ids[0])
    assert t.extra["reference_caption"].startswith("a mostly ") and t.extra["reference_caption_source"] == "captioner"
    assert "- Reference Image: <<<reference>>>a mostly " in llm.prompts[0]


def test_uploaded_reference_without_captioner_borrows_the_nearest_indexed_caption(tiny_index, tmp_path):
    r, ids, caps = tiny_index
    near = ids[6]
    path = r.index.image_path(r.index.row_of[near])
    eng = build_engine(r, llm=_capture_llm(), config=EngineConfig(k=3))
    t = eng.relative(eng.new_session(ask_questions=False), "make it red", image=path.read_bytes())
    assert t.extra["reference_caption"] == caps[near][0]
    assert t.extra["reference_caption_source"] == f"nearest indexed image {near}"


# --- bad input: clear message, session unchanged ---------------------------------------------------------

@pytest.fixture
def started(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=3))
    s = eng.new_session()
    eng.search_text(s, "a red dog")
    return eng, s, ids


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(caption="", reference="IDS0"), BadInputError, "relative caption is empty"),
    (dict(caption="   \n", reference="IDS0"), BadInputError, "relative caption is empty"),
    (dict(caption="x" * 2001, reference="IDS0"), BadInputError, "relative caption is 2,001 characters"),
    (dict(caption="make it red", reference="nope.png"), SessionError, "no image 'nope.png' in this index"),
    (dict(caption="make it red", image=b"GIF89a this is not really an image"), BadInputError, "not a readable image"),
    (dict(caption="make it red", image=b""), BadInputError, "empty"),
    (dict(caption="make it red", image="/no/such/file.png"), BadInputError, "does not exist"),
    (dict(caption="make it red", image=12345), BadInputError, "cannot read an image from a int"),
    (dict(caption="make it red", reference="IDS0", image=b"x"), BadInputError, "not both"),
    (dict(caption="make it red", reference="IDS0", method="magic"), BadInputError, "unknown composed-search method"),
    (dict(caption="make it red", reference="IDS0", method="imagescope"), BadInputError, "needs an LLM"),
])
def test_bad_relative_input_is_refused_and_the_session_is_unchanged(started, kwargs, error, match):
    eng, s, ids = started
    kwargs = {k: (ids[0] if v == "IDS0" else v) for k, v in kwargs.items()}
    before = s.to_json()
    with pytest.raises(error, match=match):
        eng.relative(s, **kwargs)
    assert s.to_json() == before


def test_enormous_uploads_are_refused(started, monkeypatch, tmp_path):
    eng, s, ids = started
    before = s.to_json()
    monkeypatch.setenv("IIR_MAX_PIXELS", "1000")
    big = Image.new("RGB", (100, 100), (1, 2, 3))
    buf = io.BytesIO()
    big.save(buf, format="PNG")
    for source in (big, buf.getvalue()):
        with pytest.raises(BadInputError, match="megapixels|MP limit"):
            eng.relative(s, "make it red", image=source)
    monkeypatch.delenv("IIR_MAX_PIXELS")
    monkeypatch.setattr("interactive_ir.index.imageio.MAX_UPLOAD_BYTES", 100)
    (tmp_path / "big.png").write_bytes(buf.getvalue())
    for source in (buf.getvalue(), tmp_path / "big.png", io.BytesIO(buf.getvalue())):
        with pytest.raises(BadInputError, match="MB"):
            eng.relative(s, "make it red", image=source)
    assert s.to_json() == before


def test_no_reference_and_no_previous_round_is_refused(tiny_index):
    r, ids, caps = tiny_index
    eng = build_engine(r)
    s = eng.new_session()
    with pytest.raises(BadInputError, match="no reference image"):
        eng.relative(s, "make it red")
    assert not s.turns and not s.composed_history


def test_relative_after_the_search_ended_is_refused(started):
    eng, s, ids = started
    eng.found(s, s.last.shown[0])
    with pytest.raises(SessionError, match="ended"):
        eng.relative(s, "make it red")


def test_load_upload_limits():
    with pytest.raises(BadInputError, match="over 0 MB"):
        load_upload(b"x" * 20, max_bytes=10)
    assert load_upload(Image.new("L", (4, 4))).mode == "RGB"


def test_default_method_is_imagescope_with_an_llm_else_compose(tiny_index):
    r, ids, caps = tiny_index
    assert build_engine(r).relative(build_engine(r).new_session(), "red", reference=ids[0]).method == "compose"
    eng = build_engine(r, llm=_capture_llm())
    assert eng.relative(eng.new_session(ask_questions=False), "red", reference=ids[0]).method == "imagescope"
    assert eng.relative(eng.new_session(ask_questions=False), "red", reference=ids[0], method="compose").method == "compose"


# --- the CLI entry ---------------------------------------------------------------------------------------

def test_reference_id_accepts_ids_and_paths_inside_the_index(tiny_index, tmp_path):
    r, ids, caps = tiny_index
    assert reference_id(r.index, ids[3]) == ids[3]
    assert reference_id(r.index, str(r.index.image_path(r.index.row_of[ids[3]]))) == ids[3]
    assert reference_id(r.index, str(tmp_path / "elsewhere.png")) is None


def test_run_composed_matches_the_engine(tiny_index, tmp_path):
    r, ids, caps = tiny_index
    eng = build_engine(r, config=EngineConfig(k=4))
    want = eng.relative(eng.new_session(), "make it red", reference=ids[2]).shown
    path = str(r.index.image_path(r.index.row_of[ids[2]]))
    assert [h.id for h in run_composed(r, ids[2], "make it red", None, None, 4)] == want
    assert [h.id for h in run_composed(r, path, "make it red", "compose", None, 4)] == want  # an indexed path
    copy = tmp_path / "copy.png"
    copy.write_bytes(open(path, "rb").read())
    hits = run_composed(r, str(copy), "make it red", None, None, 4)  # an upload: the original may come back
    assert len(hits) == 4 and all(h.why == [] for h in hits)
    hits = run_composed(r, ids[2], "make it red", None, "fake", 4)  # --llm given: imagescope
    assert len(hits) == 4


def test_reference_id_finds_indexed_files_that_are_symlinks(tmp_path):
    """An index of symlinked files (as the Flickr8k benchmark makes): the link's path names the indexed image."""
    from iir_testutils import make_images

    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index

    make_images(tmp_path / "src", 3)
    (tmp_path / "links").mkdir()
    for p in sorted((tmp_path / "src").rglob("*.png")):
        (tmp_path / "links" / p.name).symlink_to(p)
    build_index(BuildConfig(images=tmp_path / "links", out=tmp_path / "idx"), make_embedder("fake:8"))
    index = load_index(tmp_path / "idx")
    name = index.ids[1]
    assert reference_id(index, str(tmp_path / "links" / name)) == name


def test_search_command_takes_a_vlm_and_prints_its_reasons(tiny_index, capsys):
    from interactive_ir.cli import main

    r, ids, caps = tiny_index
    path = str(r.index.image_path(r.index.row_of[ids[2]]))
    assert main(["search", "--index", str(r.index.path), "--image", path, "--text", "make it red",
                 "--method", "compose", "--vlm", "fake", "--captioner", "fake", "-k", "4", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 4 and any(h.get("why") for h in hits)
