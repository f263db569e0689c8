"""The web app's handlers, rendering and start-up, with fake backends (no browser, no Gradio server)."""

from __future__ import annotations

import copy
import pickle
import re
import sys
import types
from pathlib import Path

import pytest
from iir_testutils import query_modes
from PIL import Image

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.session import Session, Turn
from interactive_ir.core.text_search import TextSearch
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.types import Hit
from interactive_ir.ui import card_actions, render
from interactive_ir.ui import handlers as h
from interactive_ir.ui.state import UIState

K = 4


@pytest.fixture(autouse=True)
def _own_upload_store(tmp_path, monkeypatch):
    """Kept uploads go to this test's folder (the store is one per process)."""
    from interactive_ir.ui.serving import uploads

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    uploads.default_store.cache_clear()
    yield
    uploads.default_store.cache_clear()


def _kept(path) -> bool:
    """`path` is a file the upload store keeps."""
    from interactive_ir.ui.serving import uploads

    return bool(path) and uploads.upload_token(path) != "" and Path(path).is_file()


@pytest.fixture
def engine(tiny_index):
    r, _, _ = tiny_index
    return build_engine(r, llm=FakeLLM(), config=EngineConfig(k=K), belief=query_modes())


@pytest.fixture
def engine_no_llm(tiny_index):
    """No LLM and LLM questions chosen: no questions (without the choice, grounded questions are asked)."""
    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig

    r, _, _ = tiny_index
    return build_engine(r, llm=None, config=EngineConfig(k=K), plugir=PlugIRConfig(questioner="llm"), belief=query_modes())


@pytest.fixture
def started(engine):
    st = h.start(engine, UIState(), "a red dog on the beach")
    return engine, st


# --- modes -----------------------------------------------------------------------------------------
def test_modes_follow_the_engine(tiny_index, engine, engine_no_llm):
    assert h.modes(engine) == h.Modes(conversation=True, questions=True, feedback=True, composed=True, upload=True)
    assert h.modes(engine_no_llm) == h.Modes(conversation=True, questions=False, feedback=True, composed=True,
                                             upload=True)
    base = TextSearch(tiny_index[0])  # an engine without any mode module
    assert h.modes(base) == h.Modes(False, False, False, False, False)


def test_uploads_on_a_caption_index_need_a_captioner(tmp_path):
    """The offline demo (a caption index, no captioner) hides the upload and says so; with a captioner it works."""
    from iir_testutils import build_tiny, query_modes
    from PIL import Image

    from interactive_ir.backends.captioners import FakeCaptioner
    from interactive_ir.backends.embedders import FakeEmbedder
    from interactive_ir.engine import build_engine
    from interactive_ir.ui import render

    class TextOnly(FakeEmbedder):
        has_vision = False

    r, ids, caps = build_tiny(tmp_path, embedder=TextOnly(32))
    eng = build_engine(r, config=EngineConfig(k=K), belief=query_modes())
    assert not h.modes(eng).upload and h.modes(eng).composed
    ref = render.reference_html(eng, UIState())  # no upload offered, and the page says why in plain words
    assert "Upload a reference" not in ref and render.esc(render.NO_UPLOAD) in ref
    img = tmp_path / "ref.png"
    Image.new("RGB", (30, 30), (10, 200, 10)).save(img)
    st = h.start(eng, UIState(), "a dog")
    with pytest.raises(BadInputError, match="use a shown result as the reference"):
        h.set_upload(eng, st, str(img))
    assert st.upload == ""
    with_captioner = build_engine(r, captioner=FakeCaptioner(), config=EngineConfig(k=K), belief=query_modes())
    assert h.modes(with_captioner).upload
    assert _kept(h.set_upload(with_captioner, UIState(), str(img)).upload)


def test_start_without_conversation_mode_is_a_text_search(tiny_index):
    base = TextSearch(tiny_index[0], config=EngineConfig(k=K))
    st = h.start(base, UIState(), "a blue car")
    assert st.session.last.kind == "describe" and len(st.current_ids) == K
    with pytest.raises(BadInputError, match="not available"):
        h.feedback(base, st)
    with pytest.raises(BadInputError, match="not available"):
        h.answer(base, st, "yes")


# --- starting ---------------------------------------------------------------------------------------
def test_start_shows_k_results_and_a_question(started):
    engine, st = started
    assert st.started and len(st.current_ids) == K
    assert st.session.pending_question  # the fake LLM asked one
    assert st.session.meta["source"] == "web"


def test_empty_or_overlong_description_changes_nothing(started):
    engine, st = started
    sid, turns = st.session.session_id, len(st.session.turns)
    with pytest.raises(BadInputError, match="description is empty"):
        h.start(engine, st, "   ")
    with pytest.raises(BadInputError, match="10,000 characters"):
        h.start(engine, st, "x" * 10_000)
    assert st.session.session_id == sid and len(st.session.turns) == turns


def test_a_second_description_starts_a_new_search(started):
    engine, st = started
    h.toggle_mark(engine, st, st.current_ids[0], True)
    old = st.session.session_id
    h.start(engine, st, "a green tree in the park")
    assert st.session.session_id != old and len(st.session.turns) == 1 and st.marks == {}


def test_new_search_forgets_everything(started):
    engine, st = started
    new = h.new_search(engine, st)
    assert new.session is None and not new.started and new.marks == {} and new.reference == ""


# --- conversation -----------------------------------------------------------------------------------
def test_answer_and_skip(started):
    engine, st = started
    q = st.session.pending_question
    h.answer(engine, st, "it is small and brown")
    last = st.session.last
    assert last.kind == "answer" and last.answered_question == q and last.user_text == "it is small and brown"
    h.skip(engine, st)
    assert st.session.last.kind == "skip" and st.notice == "Question skipped."
    earlier = {i for t in st.session.turns[:-1] for i in t.shown}
    assert not set(st.session.last.shown) & earlier  # a skip pages through unseen images


def test_overlong_answer_is_refused_and_the_session_still_works(started):
    engine, st = started
    before = Session.from_json(st.session.to_json())
    with pytest.raises(BadInputError, match="answer is 10,000 characters"):
        h.answer(engine, st, "y" * 10_000)
    assert st.session.to_json() == before.to_json()
    h.answer(engine, st, "yes")
    assert len(st.session.turns) == 2


def test_questions_off_without_llm(engine_no_llm):
    st = h.start(engine_no_llm, UIState(), "a red dog")
    assert not st.session.pending_question
    with pytest.raises(BadInputError, match="does not ask questions"):
        h.answer(engine_no_llm, st, "yes")
    with pytest.raises(BadInputError, match="does not ask questions"):
        h.skip(engine_no_llm, st)
    h.toggle_mark(engine_no_llm, st, st.current_ids[0], True)  # feedback still works
    h.feedback(engine_no_llm, st)
    assert st.session.last.kind == "feedback" and st.session.last.method == "expand"


def test_answer_before_any_search_is_refused(engine):
    with pytest.raises(SessionError, match="describe the image"):
        h.answer(engine, UIState(), "yes")


# --- relevance feedback -------------------------------------------------------------------------------
def test_marks_toggle_and_switch(started):
    engine, st = started
    a, b, c = st.current_ids[:3]
    h.toggle_mark(engine, st, c, True)
    h.toggle_mark(engine, st, a, True)
    h.toggle_mark(engine, st, b, False)
    assert st.marked() == ([a, c], [b])  # in the page's order, not the clicking order
    h.toggle_mark(engine, st, a, True)  # same click again: unmarked
    h.toggle_mark(engine, st, b, True)  # the other button: switched
    assert st.marked() == ([b, c], [])


def test_marking_an_image_not_on_the_page_is_refused(started, tiny_index):
    engine, st = started
    other = next(i for i in tiny_index[1] if i not in st.current_ids)
    with pytest.raises(SessionError, match="not among the results"):
        h.toggle_mark(engine, st, other, True)
    assert st.marks == {}


def test_feedback_uses_the_marks_and_shows_unseen_images(started):
    engine, st = started
    page1 = st.current_ids
    with pytest.raises(BadInputError, match="mark at least one"):
        h.feedback(engine, st)
    h.toggle_mark(engine, st, page1[0], True)
    h.toggle_mark(engine, st, page1[3], False)
    h.feedback(engine, st, "rocchio")
    last = st.session.last
    assert (last.kind, last.relevant, last.irrelevant, last.method) == ("feedback", [page1[0]], [page1[3]], "rocchio")
    assert st.marks == {} and not set(st.current_ids) & set(page1)
    with pytest.raises(BadInputError, match="unknown feedback method"):
        h.toggle_mark(engine, st, st.current_ids[0], True)
        h.feedback(engine, st, "magic")
    assert st.session.last is last  # the refused round left the session as it was


# --- composed search ------------------------------------------------------------------------------------
def test_reference_from_the_page_then_relative_caption(started):
    engine, st = started
    ref = st.current_ids[1]
    h.use_reference(engine, st, ref)
    assert st.reference == ref
    h.use_reference(engine, st, ref)  # again: unchosen
    assert st.reference == ""
    h.use_reference(engine, st, ref)
    h.relative(engine, st, "the same but blue", "compose")
    last = st.session.last
    assert (last.kind, last.reference, last.reference_upload, last.method) == ("relative", ref, False, "compose")
    assert ref not in last.shown and st.reference == ""


def test_relative_caption_without_reference_uses_the_last_top_result(started):
    engine, st = started
    top = st.current_ids[0]
    h.relative(engine, st, "but at night", "compose")
    assert st.session.last.reference == top


def test_upload_then_relative_starts_a_search(engine, tmp_path):
    img = tmp_path / "mine.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(img)
    st = h.set_upload(engine, UIState(), str(img))
    kept = st.upload
    assert _kept(kept) and not img.exists() and "reference" in st.notice  # moved into the upload store
    h.relative(engine, st, "the same shape in green", "compose")
    last = st.session.last
    assert last.kind == "relative" and last.reference_upload and len(last.shown) == K
    assert st.upload == "" and not Path(kept).exists()  # the search used it: deleted


def test_relative_without_any_reference_is_refused(engine):
    with pytest.raises(SessionError, match="choose a reference"):
        h.relative(engine, UIState(), "but bigger")


@pytest.mark.parametrize("make, match", [
    (lambda p: p.write_text("hello, not an image"), "notes.png is not a readable image"),
    (lambda p: Image.new("1", (10_000, 10_000)).save(p, "PNG"), "notes.png has 100 megapixels, over the 40 MP limit"),
    (lambda p: Image.new("1", (8_000, 6_000)).save(p, "PNG"), "notes.png is 8000x6000 = 48 megapixels"),
])
def test_bad_uploads_are_refused_by_file_name(started, tmp_path, make, match):
    engine, st = started
    ref = st.current_ids[0]
    h.use_reference(engine, st, ref)
    p = tmp_path / "deep" / "gradio-temp-folder" / "notes.png"
    p.parent.mkdir(parents=True)
    make(p)
    with pytest.raises(BadInputError, match=match) as e:
        h.set_upload(engine, st, str(p))
    assert str(p.parent) not in str(e.value)  # the temp folder is not shown to the user
    assert st.upload == "" and st.reference == ref


def test_clearing_the_upload(engine, tmp_path):
    img = tmp_path / "a.png"
    Image.new("RGB", (20, 20)).save(img)
    Image.new("RGB", (20, 20)).save(tmp_path / "b.png")
    st = h.set_upload(engine, UIState(), str(img))
    first = st.upload
    h.set_upload(engine, st, None)
    assert st.upload == "" and not Path(first).exists()
    h.set_upload(engine, st, str(tmp_path / "b.png"))
    second = st.upload
    h.clear_reference(engine, st)
    assert st.upload == "" and st.reference == "" and not Path(second).exists()


# --- the end --------------------------------------------------------------------------------------------
def test_found_records_round_and_rank_once(started):
    engine, st = started
    h.answer(engine, st, "it is brown")
    target = st.current_ids[2]
    h.found(engine, st, target)
    assert {k: st.session.found[k] for k in ("id", "round", "rank")} == {"id": target, "round": 1, "rank": 3}
    with pytest.raises(SessionError, match="already ended"):
        h.found(engine, st, st.current_ids[0])
    assert st.session.found["id"] == target
    for act in (lambda: h.toggle_mark(engine, st, target, True), lambda: h.use_reference(engine, st, target),
                lambda: h.answer(engine, st, "yes"), lambda: h.relative(engine, st, "bluer")):
        with pytest.raises(SessionError, match="ended"):
            act()


def test_found_an_image_from_an_earlier_round(started):
    engine, st = started
    first = st.current_ids[1]
    h.skip(engine, st)
    h.found(engine, st, first)
    assert (st.session.found["round"], st.session.found["rank"]) == (0, 2)


def test_card_actions_dispatch(started):
    engine, st = started
    i = st.current_ids[0]
    card_actions.run(engine, st, "relevant", i)
    assert st.marks == {i: True}
    card_actions.run(engine, st, "irrelevant", i)
    assert st.marks == {i: False}
    card_actions.run(engine, st, "reference", i)
    assert st.reference == i
    with pytest.raises(BadInputError, match="unknown action"):
        card_actions.run(engine, st, "delete", i)
    card_actions.run(engine, st, "found", i)
    assert st.session.found["id"] == i


# --- state ---------------------------------------------------------------------------------------------
def test_state_copies_are_independent_and_picklable(started):
    engine, st = started
    h.toggle_mark(engine, st, st.current_ids[0], True)
    dup = copy.deepcopy(st)
    assert dup.lock is not st.lock  # its own lock
    dup.marks.clear()
    dup.session.turns.clear()
    assert st.marks and st.session.turns
    back = pickle.loads(pickle.dumps(st))
    assert back.marks == st.marks and back.session.to_json() == st.session.to_json() and back.lock is not st.lock
    lock = st.lock
    st.take(back)  # a copy back from a spaces.GPU worker: same object, same lock, its values
    assert st.lock is lock and st.session is back.session and st.epoch == back.epoch


# --- rendering -------------------------------------------------------------------------------------------
class StubIndex:
    def __init__(self, hits):
        self.row_of = {x.id: n for n, x in enumerate(hits)}
        self.records = [types.SimpleNamespace(caption=x.caption) for x in hits]
        self._paths = [x.path for x in hits]

    def image_path(self, row):
        return self._paths[row]


class StubEngine:
    """Just what rendering reads: hits of a turn and the index."""

    def __init__(self, hits):
        self.by_id = {x.id: x for x in hits}
        self.index = StubIndex(hits)

    def hits_of(self, turn):
        return [self.by_id[i] for i in turn.shown]

    def duplicate_groups(self, turn):  # no near-duplicates folded
        return [[i] for i in turn.shown]

    def close_match(self, session, turn=None):  # no score profile: no "no close match" note
        return None


def _page(tmp_path, captions):
    hits = []
    for n, cap in enumerate(captions):
        p = tmp_path / f"i{n}.png"
        Image.new("RGB", (10, 10)).save(p)
        hits.append(Hit(f"i{n}.png", n, str(p), 1.0 - n / 10, cap))
    s = Session(turns=[Turn(0, "describe", user_text="a <b>bold</b> query", shown=[x.id for x in hits[:2]]),
                       Turn(1, "feedback", relevant=["i0.png"], irrelevant=["i1.png"], shown=[x.id for x in hits[2:]],
                            why={"i2.png": ["the dog is red", "it is on a beach"]}, question="Is it big?")])
    s.pending_question = "Is it big?"
    return StubEngine(hits), UIState(session=s)


def test_cards_escape_text_and_carry_alt_text_and_reasons(tmp_path):
    eng, st = _page(tmp_path, ["a cat", "a dog", "<script>alert(1)</script> ${x} {{y}}", ""])
    html = render.results_html(eng, st)
    assert "<script>" not in html and "${x}" not in html and "{{y}}" not in html
    assert "&lt;script&gt;" in html
    # the round's 2 results, and first the image liked in the round before (a feedback round shows new images)
    assert html.count("<img ") == 3 and 'alt="image i3.png"' in html  # no caption: the id as alt text
    assert html.index('data-id="i0.png"') < html.index('data-id="i2.png"') and "You liked" in html
    assert "the dog is red" in html and "Why it ranks here (2)" in html
    assert html.count('data-action="found"') == 3 and 'aria-pressed="false"' in html
    st.marks["i2.png"] = True
    st.reference = "i3.png"
    html = render.results_html(eng, st)
    assert 'class="iir-card is-rel"' in html and "is-ref" in html


def test_found_page_has_no_actions(tmp_path):
    eng, st = _page(tmp_path, ["a", "b", "c", "d"])
    st.session.found = {"id": "i3.png", "round": 1, "rank": 2}
    html = render.results_html(eng, st)
    actions = set(re.findall(r'data-action="(\w+)"', html))
    assert actions == {"open"} and "is-found" in html  # the large view stays, the card actions go
    found = render.status_md(st)
    assert "round 2, at place 2" in found and "i3.png" not in found  # plain words, no file name


def test_strip_dialogue_reference_and_status(tmp_path):
    eng, st = _page(tmp_path, ["a cat", "a dog", "c", "d"])
    strip = render.strip_html(eng, st)
    assert "Round 1: described “a &lt;b&gt;bold&lt;/b&gt; query”" in strip
    assert strip.count("iir-thumb is-rel") == 1 and strip.count("iir-thumb is-irr") == 1
    dlg = render.dialogue_html(st, questions_on=True)
    assert "System asks:</b> Is it big?" in dlg and "(you marked 1 relevant, 1 not relevant)" in dlg
    off = render.dialogue_html(UIState(), questions_on=False, questions_off_reason="Questions are off: no LLM.")
    assert "Questions are off: no LLM." in off
    assert "top result of the last round" in render.reference_html(eng, st)
    st.reference = "i1.png"
    assert "A dog" in render.reference_html(eng, st)  # the caption in plain words
    st.marks = {"i2.png": True, "i3.png": False}
    assert ("Round 2 · 2 new results; the one you liked stays first · marked 1 relevant, 1 not relevant"
            in render.status_md(st))
    earlier = [i for i in st.session.turns[0].shown if i not in render.liked_ids(st)]
    st.session.last.shown = [earlier[0], *st.session.last.shown[1:]]  # a page with an image seen before: not "new"
    st.session.last.seen = [earlier[0]]  # as the engine records it
    assert "Round 2 · 2 results; the one you liked stays first" in render.status_md(st)


# --- media ------------------------------------------------------------------------------------------------
def test_large_images_are_served_as_cached_thumbnails(tmp_path, monkeypatch):
    from interactive_ir.ui.serving import media

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    small, big = tmp_path / "small.png", tmp_path / "big.png"
    Image.new("RGB", (50, 40)).save(small)
    Image.new("RGB", (2000, 1000)).save(big)
    assert media.thumbnail(small) == small
    t = media.thumbnail(big)
    assert t.parent == tmp_path / "cache" / "thumbs" and Image.open(t).size == (512, 256)
    assert media.thumbnail(big) == t  # cached


# --- start-up --------------------------------------------------------------------------------------------
def test_app_config_precedence():
    from interactive_ir.ui.startup import app_config

    assert app_config(environ={}).port == 7860 and app_config(environ={}).host == "0.0.0.0"
    assert app_config(environ={"GRADIO_SERVER_PORT": "8000"}).port == 8000
    assert app_config(environ={"PORT": "9000", "GRADIO_SERVER_PORT": "8000"}).port == 9000
    assert app_config(environ={"PORT": "9000", "IIR_PORT": "9100"}).port == 9100
    assert app_config(environ={"PORT": "9000"}, port=9200).port == 9200
    cfg = app_config(environ={"IIR_K": "6", "IIR_LLM": "fake", "IIR_EMBEDDER": "fake:8"}, k=None, llm=None)
    assert (cfg.k, cfg.llm, cfg.embedder) == (6, "fake", "")  # IIR_EMBEDDER is left to the demo set-up
    with pytest.raises(ValueError, match="PORT"):
        app_config(environ={"PORT": "http"})
    with pytest.raises(ValueError, match="k must be at least 1"):
        app_config(environ={}, k=0)
    with pytest.raises(ValueError, match="--search-concurrency must be at least 1"):
        app_config(environ={"IIR_SEARCH_CONCURRENCY": "0"})
    assert app_config(environ={}, search_concurrency=3).search_concurrency == 3
    # marks and clicks in groups of their own; the queue takes about two waiting events per busy tab (issue 15)
    assert (app_config(environ={}).click_concurrency, app_config(environ={}).queue_size) == (8, 1024)
    assert app_config(environ={"IIR_CLICK_CONCURRENCY": "2"}, queue_size=300).click_concurrency == 2
    with pytest.raises(ValueError, match="--click-concurrency must be at least 1"):
        app_config(environ={}, click_concurrency=0)
    with pytest.raises(ValueError, match="--queue-size must be at least 1"):
        app_config(environ={"IIR_QUEUE_SIZE": "0"})


def test_optional_models_fail_into_notes():
    from interactive_ir.assembly.models import load_optional
    from interactive_ir.errors import BackendUnavailable

    def broken(spec):
        raise BackendUnavailable("weights missing: pip install them\nsecond line")

    assert load_optional("VLM", "none", broken) == (None, "")
    assert load_optional("VLM", "", broken) == (None, "")
    backend, note = load_optional("VLM", "hf:x", broken)
    assert backend is None and note == "VLM hf:x could not be loaded (weights missing: pip install them)"


def test_load_app_with_and_without_llm(tiny_index, monkeypatch):
    from interactive_ir.ui.startup import app_config, load_app

    index = tiny_index[0].index.path
    parts = load_app(app_config(environ={}, index=index, llm="fake", k=3))
    assert parts.engine.questions_enabled and parts.engine.config.k == 3 and parts.questions_off_reason == ""
    assert any("LLM fake" in n for n in parts.notes)
    monkeypatch.setattr("interactive_ir.backends.llms.default_llm_spec", lambda environ=None: None)
    parts = load_app(app_config(environ={}, index=index))  # no LLM: grounded picture questions, said plainly
    assert parts.engine.llm is None and parts.engine.questions_enabled and parts.questions_off_reason == ""
    assert any(n.startswith("Questions: picture questions") and "no LLM is configured" in n for n in parts.notes)
    parts = load_app(app_config(environ={}, index=index, llm="none"))  # turned off on purpose: no set-up advice
    assert any("this app runs without an LLM" in n for n in parts.notes)
    parts = load_app(app_config(environ={}, index=index, llm="nosuch:model", vlm="fake"))
    assert parts.engine.llm is None and any("LLM nosuch:model could not be loaded (unknown llm spec" in n
                                            for n in parts.notes)
    assert parts.engine.vlm is not None


def test_gpu_wrapper_wraps_only_on_zero_gpu(monkeypatch):
    """`spaces` being importable (a CPU Space has it) wraps nothing; SPACES_ZERO_GPU does (issue 30)."""
    import importlib.machinery

    from interactive_ir.ui.serving import gpu

    def f(x):
        return x + 1

    calls = []
    fake = types.ModuleType("spaces")
    fake.__spec__ = importlib.machinery.ModuleSpec("spaces", None)
    fake.GPU = lambda duration: (lambda fn: calls.append(duration) or (lambda *a: fn(*a) * 10))
    monkeypatch.setitem(sys.modules, "spaces", fake)
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert gpu.gpu(f) is f and not gpu.import_spaces_first()
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    wrapped = gpu.gpu(f, duration=30)
    assert calls == [30] and wrapped(1) == 20 and gpu.import_spaces_first()


# --- the page ---------------------------------------------------------------------------------------------
def test_build_demo_wires_the_page(engine_no_llm):
    pytest.importorskip("gradio")
    from interactive_ir.ui import build_demo, launch_options
    from interactive_ir.ui.events import message
    from interactive_ir.ui.layout import notes_markdown

    demo = build_demo(engine_no_llm, ["index x", "Questions are off: no LLM."],
                      questions_off_reason="Questions are off: no LLM.")
    comps = {c["props"].get("elem_id"): c for c in demo.config["components"] if c.get("props", {}).get("elem_id")}
    for eid in ("iir-desc", "iir-results", "iir-dialogue", "iir-answer", "iir-skip", "iir-feedback", "iir-upload",
                "iir-caption", "iir-strip", "iir-new", "iir-status", "iir-notes"):
        assert eid in comps, eid
    assert comps["iir-answer"]["props"]["interactive"] is False  # no LLM: the answer box is off
    assert "Questions are off: no LLM." in comps["iir-dialogue"]["props"]["value"]
    assert "index x" in comps["iir-notes"]["props"]["value"]
    opts = launch_options(engine_no_llm)
    assert "allowed_paths" not in opts and opts["css_paths"][0].exists()  # images go out by token only
    # the image route, and the served index's folder name (the photo switch's reload check: no path, no file)
    assert [r.path for r in opts["app_kwargs"]["routes"]] == ["/iir/img/{tok}", "/iir/served"]
    assert message(SessionError("this search has ended")) == "This search has ended"
    assert notes_markdown([]) == "" and notes_markdown(["a"]) == "**Running on:**\n- a"


# --- app.py -------------------------------------------------------------------------------------------------
def _app_module():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("iir_app", Path(__file__).resolve().parents[3] / "app.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # importing app.py builds nothing and serves nothing
    return mod


def test_app_options():
    app = _app_module()
    a = app.parse_args(["--index", "ix", "--llm", "none", "-k", "5", "--port", "8001", "--host", "127.0.0.1"])
    assert (str(a.index), a.llm, a.k, a.port, a.host, a.embedder, a.study) == ("ix", "none", 5, 8001, "127.0.0.1",
                                                                               None, None)


def test_study_mode_missing_is_an_error(monkeypatch, capsys):
    import importlib.util

    app = _app_module()
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "interactive_ir.study.ui" else real(name, *a))
    assert app.main(["--study", "plan.json"]) == 2
    assert "study mode is not available" in capsys.readouterr().err


def test_bad_port_is_an_error(monkeypatch, capsys):
    app = _app_module()
    monkeypatch.setenv("PORT", "eighty")
    assert app.main([]) == 2
    assert "PORT / GRADIO_SERVER_PORT must be a number" in capsys.readouterr().err


def test_model_steps_run_in_the_background_with_the_callers_context():
    import contextvars
    from concurrent import futures

    from interactive_ir.ui.events import in_background

    var = contextvars.ContextVar("request", default="none")
    var.set("user-1")
    ok = in_background(lambda x: (x * 2, var.get()), 21)
    failed = in_background(lambda: (_ for _ in ()).throw(TimeoutError("the LLM timed out")))
    futures.wait([ok, failed], timeout=5)
    assert ok.result() == (42, "user-1")
    assert isinstance(failed.exception(), TimeoutError)  # an error of the step, not of the wait


# --- results first, question after ------------------------------------------------------------------------
def test_deferred_question_is_the_same_question_asked_later(engine, tiny_index):
    r, _, _ = tiny_index
    direct = h.start(build_engine(r, llm=FakeLLM(), config=EngineConfig(k=K), belief=query_modes()), UIState(), "a red dog on the beach")
    st = h.start(engine, UIState(), "a red dog on the beach", defer_question=True)
    assert st.question_due and not st.session.pending_question and "ask_questions" not in st.session.meta
    assert st.current_ids == direct.current_ids
    total = st.session.last.timings["total"]
    h.ask_question(engine, st)
    assert not st.question_due and st.session.pending_question == direct.session.pending_question != ""
    assert st.session.last.question == direct.session.last.question
    assert st.session.last.timings["total"] > total
    for step in (lambda: h.answer(engine, st, "it is big", defer_question=True),
                 lambda: h.skip(engine, st, defer_question=True)):
        step()
        assert st.question_due and not st.session.pending_question
        h.ask_question(engine, st)
        assert st.session.pending_question and not st.question_due


def test_deferring_respects_sessions_without_questions(engine, engine_no_llm):
    st = h.start(engine_no_llm, UIState(), "a red dog", defer_question=True)
    assert not st.question_due  # no LLM: nothing to ask
    st = h.start(engine, UIState(), "a red dog", defer_question=True)
    h.ask_question(engine, st)
    st.session.options.ask_questions = False  # e.g. a study condition without questions
    h.toggle_mark(engine, st, st.current_ids[0], True)
    h.feedback(engine, st, "expand", defer_question=True)
    assert not st.question_due and st.session.options.ask_questions is False


def test_a_refused_deferred_step_changes_nothing(started):
    engine, st = started
    with pytest.raises(BadInputError):
        h.answer(engine, st, "z" * 10_000, defer_question=True)
    assert not st.question_due and "ask_questions" not in st.session.meta and st.session.pending_question


def test_no_question_for_an_ended_search(started):
    engine, st = started
    h.skip(engine, st, defer_question=True)
    h.found(engine, st, st.current_ids[0])  # found while the question is being written
    h.ask_question(engine, st)
    assert not st.question_due and not st.session.pending_question


def test_an_upload_is_kept_for_the_model_step_then_released(engine, tmp_path):
    """Issue 25 item 1: a later (LLM) relative search keeps the upload until its refinement is done."""
    from interactive_ir.ui import work

    img = tmp_path / "ref.png"
    Image.new("RGB", (40, 30), (200, 20, 20)).save(img)
    st = h.set_upload(engine, UIState(), str(img))
    kept = st.upload
    h.relative(engine, st, "the same in blue", "imagescope", later=True)
    assert st.upload == "" and h.held_upload(st) == kept and _kept(kept)  # quick results; the file stays
    job = work.claim(st)
    result = work.run(engine, job)  # the model step reads the upload again
    assert _kept(kept) and work.adopt(engine, st, job, result)
    assert not Path(kept).exists()  # done: released


def test_a_newer_action_releases_the_held_upload(engine, tmp_path):
    img = tmp_path / "ref.png"
    Image.new("RGB", (40, 30), (20, 200, 20)).save(img)
    st = h.set_upload(engine, UIState(), str(img))
    kept = st.upload
    h.relative(engine, st, "the same in blue", "imagescope", later=True)
    h.start(engine, st, "a new search")  # supersedes the refinement
    assert not Path(kept).exists() and h.held_upload(st) == ""


def test_messages_never_show_server_paths():
    said = render.no_paths("Image /srv/cache/uploads/u2c9f.jpg does not exist; see /home/x/app/log.txt")
    assert "/" not in said and said.startswith("the uploaded image does not exist")
