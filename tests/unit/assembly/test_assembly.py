"""The one assembly of index and models (issue 37 D2): one "no model" vocabulary, one default-LLM rule, and every
entry point (the page's start-up, `chat`, `search`, composed search, `eval`, the study's dry run) opening its
index and models through `interactive_ir.assembly`. Fake backends only."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest
from iir_testutils import build_tiny

from interactive_ir.assembly import llm_choice, models
from interactive_ir.assembly.llm_choice import LLMChoice, choose_llm
from interactive_ir.assembly.specs import NO_MODEL, given_spec, is_no_model
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.errors import BackendUnavailable, IIRError

ROOT = Path(__file__).resolve().parents[3]
PKG = ROOT / "interactive_ir"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("asm"))


# --- the "no model" vocabulary ----------------------------------------------------------------------------
@pytest.mark.parametrize("word", ["", "none", "off", "no", "false", "0", " None ", "OFF"])
def test_every_no_model_word_means_no_model(word):
    assert is_no_model(word)
    assert given_spec(word, "IIR_VLM", {"IIR_VLM": "fake"}) == ""  # a flag's "none" wins over the variable
    assert models.open_model("vlm", word) is None


def test_a_spec_is_not_a_no_model_word():
    assert NO_MODEL == {"", "none", "off", "no", "false", "0"}
    assert not is_no_model("fake") and not is_no_model("openai:gpt-4o-mini") and is_no_model(None)


def test_a_spec_comes_from_its_flag_else_its_variable():
    env = {"IIR_CAPTIONER": " fake "}
    assert given_spec(None, "IIR_CAPTIONER", env) == "fake"
    assert given_spec("hf:x", "IIR_CAPTIONER", env) == "hf:x"
    assert given_spec(None, "IIR_CAPTIONER", {"IIR_CAPTIONER": "off"}) == ""
    assert given_spec(None, "IIR_CAPTIONER", {}) == ""


def test_one_default_embedder_rule():
    from interactive_ir.assembly.specs import embedder_spec
    from interactive_ir.config import DEFAULT_EMBEDDER

    assert embedder_spec(None, {}) == embedder_spec("", {}) == DEFAULT_EMBEDDER
    assert embedder_spec(None, {"IIR_EMBEDDER": "fake:8"}) == "fake:8"
    assert embedder_spec("fake:16", {"IIR_EMBEDDER": "fake:8"}) == "fake:16"


# --- the one default-LLM rule -------------------------------------------------------------------------------
def _default(monkeypatch, spec):
    monkeypatch.setattr("interactive_ir.backends.llms.default_llm_spec", lambda environ=None: spec)


def test_a_given_llm_is_loaded_and_a_no_model_word_turns_it_off(monkeypatch):
    _default(monkeypatch, "hf-router:org/m")
    assert choose_llm("fake", {}) == LLMChoice("fake")
    assert choose_llm(" openai:gpt-4o-mini ", {}) == LLMChoice("openai:gpt-4o-mini")
    for word in ("none", "off", "OFF", "no"):
        assert choose_llm(word, {}) == LLMChoice("", llm_choice.TURNED_OFF)


def test_the_default_is_a_capable_model_never_the_tiny_smollm2_unless_named(monkeypatch):
    _default(monkeypatch, "hf-router:org/m")
    assert choose_llm(None, {}) == choose_llm("", {}) == LLMChoice("hf-router:org/m")
    _default(monkeypatch, "transformers:smollm2")
    assert choose_llm(None, {}) == LLMChoice("", llm_choice.NO_CAPABLE_LLM)
    assert choose_llm(None, {"IIR_LLM": "transformers:smollm2"}) == LLMChoice("transformers:smollm2")
    assert choose_llm("transformers:smollm2", {}) == LLMChoice("transformers:smollm2")
    _default(monkeypatch, None)
    assert choose_llm(None, {}) == LLMChoice("", llm_choice.NOT_CONFIGURED)


def test_iir_llm_off_is_no_llm_not_an_unknown_spec():
    """The real `default_llm_spec` returns IIR_LLM as it is: "off" there means no LLM, for every entry point."""
    assert choose_llm(None, {"IIR_LLM": "off"}) == LLMChoice("", llm_choice.TURNED_OFF)
    assert models.open_llm(None, environ={"IIR_LLM": "off"}) is None


def test_the_commands_loaders_fail_loudly_and_eval_takes_no_default(monkeypatch):
    _default(monkeypatch, "fake")
    assert isinstance(models.open_llm(None), FakeLLM)  # chat: the one rule
    assert models.open_llm(None, default=False) is None  # eval: only --llm
    assert isinstance(models.open_llm("fake", default=False), FakeLLM)
    with pytest.raises(IIRError):
        models.open_model("vlm", "nosuchbackend:x")
    _default(monkeypatch, "transformers:smollm2")
    with pytest.raises(BackendUnavailable, match="the imagescope method needs an LLM.*--llm SPEC"):
        models.require_llm(None, "the imagescope method")
    with pytest.raises(BackendUnavailable, match="--llm none asks for none"):
        models.require_llm("none", "the imagescope method")


def test_the_app_leaves_a_failing_model_out_with_a_note():
    loaded = models.load_llm("nosuchbackend:x")
    assert loaded.llm is None and loaded.why.startswith("LLM nosuchbackend:x could not be loaded")
    assert loaded.warned == [loaded.why]
    assert models.load_llm("off").why == llm_choice.TURNED_OFF and models.load_llm("off").warned == []
    vision = models.load_vision("none", "fake")
    assert vision.captioner is None and vision.vlm is not None and vision.warned == []
    assert vision.notes == ["VLM fake: re-ranks reference + caption results and says why."]


# --- every entry point goes through the assembly ---------------------------------------------------------
@pytest.fixture
def opened(tiny, monkeypatch):
    """Records each call of the assembly's `open_retriever`, answering with the tiny index's retriever."""
    calls = []

    def open_retriever(index, embedder_spec=None, k=10, tau=None):
        calls.append((str(index), embedder_spec, k, tau))
        return tiny[0]

    monkeypatch.setattr("interactive_ir.assembly.indexes.open_retriever", open_retriever)
    return calls


def test_chat_opens_its_index_and_models_through_the_assembly(opened, monkeypatch):
    from interactive_ir.commands import chat_cmd

    seen = {}
    monkeypatch.setattr(chat_cmd.Chat, "run", lambda self, d=None: seen.update(engine=self.engine) or 0)
    monkeypatch.setenv("IIR_VLM", "fake")
    args = argparse.Namespace(index=Path("IDX"), llm="off", k=4, method=None, description=None, embedder="fake:32",
                              n_candidates=None, clusters=None, questions=None, questioner=None, hide_seen=None,
                              question_style=None, captioner="none", vlm=None, save=None)
    assert chat_cmd.run(args) == 0
    assert opened == [("IDX", "fake:32", 4, None)]
    engine = seen["engine"]
    assert engine.llm is None and engine.core.captioner is None and engine.vlm is not None  # IIR_VLM read


def test_search_and_composed_search_open_through_the_assembly(opened, tiny, monkeypatch, capsys):
    from interactive_ir.commands import search_cmd

    _, ids, _ = tiny
    base = dict(index=Path("IDX"), where="", image=None, k=3, tau=None, method=None, llm=None, vlm=None,
                captioner=None, embedder=None, json=False)
    assert search_cmd.run(argparse.Namespace(**base, text="a red square")) == 0
    assert opened == [("IDX", None, 3, None)]
    # composed search: `--llm off` is no LLM, so the method is compose (not an unknown spec)
    assert search_cmd.run(argparse.Namespace(**{**base, "image": ids[0], "llm": "off"}, text="make it blue")) == 0
    assert len(opened) == 2 and len(capsys.readouterr().out.strip().splitlines()) > 3
    with pytest.raises(BackendUnavailable, match="imagescope method needs an LLM"):
        search_cmd.run(argparse.Namespace(**{**base, "image": ids[0], "llm": "none", "method": "imagescope"},
                                          text="make it blue"))


def test_eval_opens_its_index_and_models_through_the_assembly(opened, monkeypatch):
    from interactive_ir.commands import eval_cmd

    made = []
    monkeypatch.setattr(models, "make", lambda kind, spec: made.append((kind, spec)) or FakeLLM(spec=spec))
    args = argparse.Namespace(index=Path("IDX"), embedder=None, search_threads=0, torch_threads=0)
    plan = argparse.Namespace(cfg=argparse.Namespace(k=7), settings={"tau": 0.5})
    eval_cmd.open_retriever(args, plan)
    assert opened == [("IDX", None, 7, 0.5)]
    assert models.open_llm("fake", default=False) is not None and made == [("llm", "fake")]


def test_the_page_start_up_and_the_dry_run_assemble_through_one_function(tiny, tmp_path, monkeypatch):
    from interactive_ir.assembly.app import Assembled
    from interactive_ir.assembly.app_index import Setup
    from interactive_ir.assembly.options import app_config
    from interactive_ir.assembly.photo_config import PhotoDemoConfig
    from interactive_ir.engine import build_engine
    from interactive_ir.study.dry_run import dry_run
    from interactive_ir.ui import startup

    r, ids, _ = tiny
    cfgs = []

    def assemble(cfg, **hooks):
        cfgs.append((cfg, sorted(hooks)))
        return Assembled(build_engine(r, llm=FakeLLM()), Setup(r, ["index"]), ["index"], "")

    monkeypatch.setattr("interactive_ir.assembly.app.assemble", assemble)
    parts = startup.load_app(app_config(environ={}, index=r.index.path, llm="fake"), photos=PhotoDemoConfig(demo="off"))
    assert parts.notes == ["index"] and parts.photos is None
    assert cfgs[0][0].llm == "fake" and cfgs[0][1] == ["after_index", "gallery", "progress", "wrap"]
    study = tmp_path / "s.yaml"
    study.write_text(f"study_id: asm\nrounds: 1\nk: 3\nconditions:\n  A: {{mode: plugir}}\ntasks: [{ids[0]}]\n")
    dry_run(study, 1, db=tmp_path / "sim.sqlite", out=tmp_path / "rep", index=r.index.path, llm="off", plots=False)
    cfg, hooks = cfgs[1]
    assert (cfg.index, cfg.llm, cfg.study, hooks) == (r.index.path, "off", study, [])


def test_the_app_and_chat_read_llm_off_the_same_way(tiny):
    from interactive_ir.assembly.app import assemble
    from interactive_ir.assembly.options import app_config

    parts = assemble(app_config(environ={}, index=tiny[0].index.path, llm="off", vlm="none"))
    assert parts.engine.llm is None and parts.engine.vlm is None
    assert llm_choice.TURNED_OFF in " ".join(parts.notes)
    assert parts.engine.config.k == 20  # the page's k: AppConfig's, IIR_K


def test_the_page_k_comes_from_iir_k_alone(tiny, monkeypatch):
    from interactive_ir.assembly.app import assemble
    from interactive_ir.assembly.options import app_config

    monkeypatch.setenv("IIR_K", "6")
    parts = assemble(app_config(index=tiny[0].index.path, llm="off"))
    assert parts.engine.config.k == 6


# --- the layer --------------------------------------------------------------------------------------------
def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at module level or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_assembly_sits_above_the_engine_and_below_the_entry_points():
    above = ("interactive_ir.ui", "interactive_ir.commands", "interactive_ir.study", "interactive_ir.cli")
    for path in (PKG / "assembly").glob("*.py"):
        bad = [m for m in _imports(path) if m.startswith(above)]
        assert not bad, f"{path.name} imports {bad}: the assembly sits below ui/, commands/ and study/"
    users = ("ui", "commands", "study", "assembly")
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        if rel.parts[0] in users or rel.name in ("cli.py", "__main__.py"):
            continue
        bad = [m for m in _imports(path) if m.startswith("interactive_ir.assembly")]
        assert not bad, f"{rel} imports the assembly, which sits above it"


COMPOSITION = ("interactive_ir.index.builder", "interactive_ir.index.hub_index", "interactive_ir.index.load_index",
               "interactive_ir.backends.make_", "interactive_ir.backends.llms", "interactive_ir.backends.hub")


def test_the_page_start_up_composes_nothing_itself():
    """ui/startup.py and the entry points' loaders build no index and no model themselves."""
    files = [PKG / "ui" / "startup.py", ROOT / "app.py", PKG / "study" / "dry_run.py"]
    files += [PKG / "commands" / f for f in ("chat_cmd.py", "search_cmd.py", "composed_search.py", "eval_cmd.py")]
    for path in files:
        bad = [m for m in _imports(path) if m.startswith(COMPOSITION)
               or m in ("interactive_ir.backends.make_llm", "interactive_ir.backends.make_vlm")]
        assert not bad, f"{path.name} composes {bad} itself: use interactive_ir.assembly"
    assert not (PKG / "ui" / "demo.py").exists()


def test_a_page_step_gets_its_llm_from_the_assembly():
    """ui.work picks each step's LLM through `assembly.step_llm`: the owner's with sign-in off, cancellable."""
    from interactive_ir.assembly.step_llm import cancellable, visitor_llm
    from interactive_ir.backends.cancel import CancelToken
    from interactive_ir.errors import Cancelled

    owner = FakeLLM()
    assert visitor_llm(owner, None, None) is owner and visitor_llm(None, None, None) is None
    assert cancellable(None, CancelToken()) is None
    token = CancelToken()
    llm = cancellable(owner, token)
    assert llm.generate(["a red square?"]) and llm.spec == owner.spec
    token.cancel()
    with pytest.raises(Cancelled):
        llm.generate(["a red square?"])
    assert "interactive_ir.assembly.step_llm" in _imports(PKG / "ui" / "work.py")


def _help(capsys, *argv) -> str:
    from interactive_ir.cli import main

    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_each_command_says_which_llm_it_loads_by_default(capsys):
    """One default rule, named in the same words by the app, chat and the study's dry run; eval says it differs."""
    import app
    from interactive_ir.assembly.specs import DEFAULT_LLM_HELP, NO_MODEL_HELP

    with pytest.raises(SystemExit):
        app.parse_args(["--help"])
    page = " ".join(capsys.readouterr().out.split())
    for text in (page, _help(capsys, "chat"), _help(capsys, "study", "simulate")):
        assert DEFAULT_LLM_HELP in text and f"{NO_MODEL_HELP}" in text
    eval_help = _help(capsys, "eval")
    assert DEFAULT_LLM_HELP not in eval_help and "(default: none, unlike the app and chat" in eval_help


def test_the_engines_k_is_never_read_from_iir_k():
    """IIR_K is one setting, the page's (AppConfig.k): `engine_config` leaves k to each entry point's flag."""
    from interactive_ir.config import DEFAULT_K
    from interactive_ir.core.text_search import engine_config

    assert engine_config(environ={"IIR_K": "6"}).k == DEFAULT_K
    assert engine_config(environ={"IIR_K": "6"}, k=3).k == 3
    assert engine_config(environ={"IIR_K": "6", "IIR_HIDE_SEEN": "1"}).hide_seen  # the other IIR_ fields still read


def test_the_photo_demos_page_parts_compose_nothing():
    """ui/photos/ holds the page's parts only: the photo index is chosen, opened and built in the assembly
    (`photo_config`, `photo_index`, `photo_build`, `photo_child`). The credit line reads the served index's
    record (`index.credit`), which opens nothing."""
    for path in (PKG / "ui" / "photos").glob("*.py"):
        bad = [m for m in _imports(path) if m.startswith(COMPOSITION + ("interactive_ir.backends",))
               or (m.startswith("interactive_ir.index") and not m.startswith("interactive_ir.index.credit"))]
        assert not bad, f"ui/photos/{path.name} composes {bad} itself: use interactive_ir.assembly"
    for gone in ("config.py", "gallery.py", "build.py", "start.py"):
        assert not (PKG / "ui" / "photos" / gone).exists(), gone


def test_the_demo_and_the_photo_index_record_their_credit_one_way(tiny, tmp_path):
    """`app_index.open_credited` writes the credit into an index that records another and opens it again; the
    photo demo's index opens through it (an owner's corrected IIR_PHOTO_TITLE reaches the page)."""
    import shutil

    from interactive_ir.assembly.app_index import DEMO_CREDIT, open_credited
    from interactive_ir.assembly.photo_config import PhotoDemoConfig
    from interactive_ir.assembly.photo_index import open_photo_index
    from interactive_ir.index.credit import credit_of

    r, _, _ = tiny
    folder = tmp_path / "idx"
    shutil.copytree(r.index.path, folder)
    index = open_credited(folder, DEMO_CREDIT, r.embedder.spec)
    assert credit_of(index.manifest) == DEMO_CREDIT
    cfg = PhotoDemoConfig(title="Bob's photos")
    photos = open_photo_index(cfg, folder, r.embedder)
    assert credit_of(photos.manifest) == cfg.credit() != DEMO_CREDIT
    assert credit_of(open_credited(folder, cfg.credit(), r.embedder.spec).manifest) == cfg.credit()
    assert open_photo_index(cfg, tmp_path / "missing", r.embedder) is None
