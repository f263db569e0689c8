"""Settings in one place: `k` and the text limit declared once (and the limit raised everywhere by its one
variable), the registry of config dataclasses behind `python -m interactive_ir config`, the README's
table generated from it, and no environment read at import."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from iir_testutils import query_modes

from interactive_ir import config
from interactive_ir.cli import main
from interactive_ir.commands import config_cmd
from interactive_ir.errors import BadInputError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "interactive_ir"


@pytest.fixture
def clean_env(monkeypatch):
    """No IIR_* variable, and none of the other variables the settings table lists (HF_HUB_OFFLINE, PORT, ...),
    from the machine running the tests or from an earlier test (the hub check sets HF_HUB_OFFLINE itself)."""
    listed = {v.name for v in config.ENV_VARS}
    for name in list(os.environ):
        if name.startswith("IIR_") or name in listed:
            monkeypatch.delenv(name)
    return monkeypatch


def _text(n: int) -> str:
    """A description of exactly `n` characters."""
    return ("a red dog on the beach " * (n // 20 + 1))[: n - 1] + "x"


# --- k and the text limit, declared once ------------------------------------------------------------------
def test_the_text_limit_raised_by_its_variable_reaches_the_engine_and_the_retriever(tiny_index, clean_env):
    from interactive_ir.core.text_search import engine_config
    from interactive_ir.engine import build_engine
    from interactive_ir.retrieval.retriever import Retriever

    r0, _, _ = tiny_index
    long, longer = _text(3000), _text(3600)
    assert len(long) == 3000 and len(longer) == 3600

    # the default limit refuses 3,000 characters, saying how to raise it
    eng = build_engine(Retriever(r0.index, r0.embedder), config=engine_config(), belief=query_modes())
    with pytest.raises(BadInputError, match=r"the description is 3,000 characters; the limit is 2,000.*IIR_MAX_TEXT_CHARS"):
        eng.start(eng.new_session(), long)
    with pytest.raises(BadInputError, match="IIR_MAX_TEXT_CHARS"):
        Retriever(r0.index, r0.embedder).encode_text(long)

    clean_env.setenv("IIR_MAX_TEXT_CHARS", "3500")
    retriever = Retriever(r0.index, r0.embedder)
    eng = build_engine(retriever, config=engine_config(), belief=query_modes())
    assert eng.core.config.max_text_chars == retriever.max_text_chars == 3500
    turn = eng.start(eng.new_session(), long)  # the engine's check and the retriever's both let it through
    assert turn.query == long and turn.shown
    assert retriever.encode_text(long).shape == (r0.embedder.dim,)
    with pytest.raises(BadInputError) as e:
        eng.start(eng.new_session(), longer)
    assert "description is 3,600 characters; the limit is 3,500" in str(e.value)
    assert "raise the limit with IIR_MAX_TEXT_CHARS" in str(e.value)
    with pytest.raises(BadInputError, match=r"the limit is 3,500: shorten it, or raise the limit with IIR_MAX_TEXT_CHARS"):
        retriever.encode_text(longer)


def test_a_retriever_given_its_own_limit_keeps_it(tiny_index, clean_env):
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig

    r0, _, _ = tiny_index
    clean_env.setenv("IIR_MAX_TEXT_CHARS", "3500")
    r = Retriever(r0.index, r0.embedder, SearchConfig(max_text_chars=100))
    with pytest.raises(BadInputError, match="the limit is 100"):
        r.encode_text(_text(101))
    clean_env.setenv("IIR_MAX_TEXT_CHARS", "lots")
    with pytest.raises(ValueError, match="IIR_MAX_TEXT_CHARS='lots'"):
        Retriever(r0.index, r0.embedder)


OTHER_KS = {"reproduce_cmd.py": "a paper's own k stays with the paper",
            "report.py": "the cut-off K of Hits@K", "tables.py": "the cut-off K of Hits@K"}


def test_k_and_the_text_limit_have_one_default():
    from interactive_ir.core.text_search import EngineConfig
    from interactive_ir.evaluation.runner import RunConfig
    from interactive_ir.retrieval.retriever import SearchConfig
    from interactive_ir.study.config import StudyConfig
    from interactive_ir.ui.startup import AppConfig

    for cls in (EngineConfig, SearchConfig, RunConfig, StudyConfig):
        assert {f.name: f.default for f in dataclasses.fields(cls)}["k"] == config.DEFAULT_K, cls
    assert {f.name: f.default for f in dataclasses.fields(AppConfig)}["k"] == config.PAGE_K  # the page's grid
    assert EngineConfig().max_text_chars == config.MAX_TEXT_CHARS
    # and no second declaration creeps back: a literal k of 10 or a literal text limit in a signature or field
    again = []
    for path in PACKAGE.rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if re.search(r"\bk: int = 10\b|\bk=10\b|\"k\": 10\b|\b(limit|_chars): int = 2_?000\b", code) and \
                    path.name not in OTHER_KS:
                again.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not again, "declare it once, in interactive_ir/config.py:\n" + "\n".join(again)


# --- the registry and the command --------------------------------------------------------------------------
def test_every_field_of_every_registered_dataclass_is_a_row_with_a_meaning(clean_env):
    rows = config.settings({})
    for section in config.SECTIONS:
        cls = config.resolve(section.target)
        assert dataclasses.is_dataclass(cls), section.target
        mine = {r.field: r for r in rows if r.section == cls.__name__}
        assert set(mine) == {f.name for f in dataclasses.fields(cls)}, cls
        for f in dataclasses.fields(cls):
            row = mine[f.name]
            assert row.help, f"{cls.__name__}.{f.name} needs a comment beside it (its meaning in the table)"
            assert row.env == ("" if f.name in section.flag_only else section.prefix + f.name.upper())
    assert all(r.help and r.env for r in rows if r.section == "environment")


def test_field_comments_are_read_from_the_source_with_their_continuation_lines():
    from interactive_ir.evaluation.simulators import SimConfig
    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig

    plugir = config.field_help(PlugIRConfig)
    assert plugir["n_clusters"] == "m, KMeans clusters = candidate captions shown to the questioner (paper: 10)"
    assert plugir["max_candidates"].startswith("... and at most this many (0: no cap).")
    assert plugir["max_candidates"].endswith("Up to 100,000 images the cap changes nothing")
    assert "# " not in plugir["max_candidates"]
    assert config.field_help(SimConfig)["relevance_overlap"].endswith("(0: ground truth only, the default)")

    @dataclasses.dataclass
    class Tricky:
        a: str = "#not a comment"  # the real one
        b: int = 2
        # --- a heading, not b's meaning
        c: int = dataclasses.field(
            default=3)  # after a call spread over lines

    assert config.field_help(Tricky) == {"a": "the real one", "b": "", "c": "after a call spread over lines"}


def test_each_section_prefix_is_the_one_its_factory_reads(clean_env):
    for section in config.SECTIONS:
        if not section.factory:
            continue
        cls = config.resolve(section.target)
        f = next(f for f in dataclasses.fields(cls) if f.type in ("int", int) and f.name not in section.flag_only)
        clean_env.setenv(section.prefix + f.name.upper(), str(f.default + 1))
        assert getattr(config.resolve(section.factory)(), f.name) == f.default + 1, section
        clean_env.delenv(section.prefix + f.name.upper())


def test_config_prints_every_setting_with_its_value(clean_env, capsys):
    clean_env.setenv("IIR_K", "6")
    clean_env.setenv("IIR_MEDIA_SECRET", "do not print me")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    for row in config.settings({}):
        assert row.env in out or row.env == ""
        assert row.help[:40] in out
    k_row = next(line for line in out.splitlines() if line.split()[:2] == ["IIR_K", "k"])
    assert "20" in k_row and "* 6" in k_row and "results per round on the page" in k_row
    assert "do not print me" not in out and "(set)" in out
    assert "EngineConfig (core/text_search.py)" in out and "PlugIRConfig" in out


def test_changed_shows_only_what_the_environment_changes(clean_env, capsys):
    clean_env.setenv("IIR_PLUGIR_N_QUESTIONS", "3")
    clean_env.setenv("IIR_MAX_PIXELS", "1000")
    clean_env.setenv("IIR_TAB_TTL_S", "3600")  # the default: not a change
    assert main(["config", "--changed"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert sorted(line[0] for line in lines if line[0] != "variable") == ["IIR_MAX_PIXELS", "IIR_PLUGIR_N_QUESTIONS"]
    rows = [r for r in config.settings() if r.changed]
    assert {(r.env, r.default, r.current) for r in rows} == {("IIR_PLUGIR_N_QUESTIONS", "5", "3"),
                                                             ("IIR_MAX_PIXELS", "40000000", "1000")}


def test_plain_table_has_a_header_row_above_each_section(clean_env, capsys):
    assert main(["config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    sections = [i for i, line in enumerate(lines) if line and not line.startswith(" ")]
    assert len(sections) > 3
    assert all(lines[i + 1].split()[:4] == ["variable", "field", "default", "value"] for i in sections)


def test_changed_says_so_when_nothing_is_changed(clean_env, capsys):
    assert main(["config", "--changed"]) == 0
    assert capsys.readouterr().out.strip() == config_cmd.NOTHING_CHANGED


def test_markdown_is_the_defaults_whatever_the_environment(clean_env, capsys):
    clean_env.setenv("IIR_K", "6")
    assert main(["config", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out == config_cmd.markdown(config.settings({}))
    assert "| `IIR_K` | `k` | `20` | results per round on the page" in out
    assert "summary \\| keywords \\| cot" in out  # a | in a comment does not break the table
    assert "6" not in out.split("| `IIR_K` |")[1].split("\n")[0]


def test_iir_k_is_one_setting_with_the_pages_default(capsys):
    """IIR_K is one row (AppConfig's, 20: what the page shows), and `app.py --help` names the same default."""
    import app

    rows = [r for r in config.settings({}) if r.env == "IIR_K"]
    assert [(r.section, r.default) for r in rows] == [("AppConfig", str(config.PAGE_K))]
    engine_k = next(r for r in config.settings({}) if r.section == "EngineConfig" and r.field == "k")
    assert engine_k.env == ""  # the engine's k is given by each entry point, never read from IIR_K
    with pytest.raises(SystemExit):
        app.parse_args(["--help"])
    assert f"(default {config.PAGE_K}, IIR_K)" in " ".join(capsys.readouterr().out.split())


# --- docs/settings.md --------------------------------------------------------------------------------
def test_the_settings_page_table_is_the_generated_one():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    table = config_cmd.between_markers(page)
    assert table, "docs/settings.md has no settings table markers"
    assert table == config_cmd.markdown(config.settings({})), \
        "the settings table of docs/settings.md drifted: run `python -m interactive_ir config --readme`"


def test_every_iir_name_in_the_code_and_the_docs_is_in_the_table():
    def names(text: str) -> set[str]:
        return {n for n in re.findall(r"\bIIR_[A-Z0-9_]+", text) if not n.endswith("_")}  # not prefixes

    in_code = set().union(*(names(p.read_text(encoding="utf-8")) for p in [*PACKAGE.rglob("*.py"), ROOT / "app.py"]))
    table = {r.env for r in config.settings({})}
    assert len(in_code) > 30
    assert in_code <= table, f"read in the code, missing from config.ENV_VARS or SECTIONS: {sorted(in_code - table)}"
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        # the benchmark scripts' own variables (bench/soak.py's IIR_SOAK_*, IIR_BENCH_CODE) are no app setting
        named = {n for n in names(doc.read_text(encoding="utf-8")) if not n.startswith(("IIR_SOAK_", "IIR_BENCH_"))}
        assert named <= table, f"named in {doc.relative_to(ROOT)}, but no setting: {sorted(named - table)}"
    assert in_code <= names(config_cmd.between_markers((ROOT / "docs" / "settings.md").read_text(encoding="utf-8")))


def test_readme_option_without_a_file_rewrites_docs_settings(tmp_path, monkeypatch, capsys):
    page = tmp_path / "settings.md"
    page.write_text(f"# Settings\n\n{config_cmd.BEGIN}\nold table\n{config_cmd.END}\n")
    monkeypatch.setattr(config_cmd, "SETTINGS_DOC", page)
    assert main(["config", "--readme"]) == 0
    assert f"{page}: settings table rewritten" in capsys.readouterr().out
    text = page.read_text()
    assert text.startswith("# Settings\n\n") and "old table" not in text
    assert config_cmd.between_markers(text) == config_cmd.markdown(config.settings({}))


def test_the_default_settings_page_is_the_repositorys():
    assert config_cmd.SETTINGS_DOC == ROOT / "docs" / "settings.md"
def test_readme_option_rewrites_between_the_markers_only(tmp_path, capsys):
    doc = tmp_path / "DOC.md"
    doc.write_text(f"# title\n\n{config_cmd.BEGIN}\nold table\n{config_cmd.END}\n\nafter\n")
    assert main(["config", "--readme", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("# title\n\n") and text.endswith(f"{config_cmd.END}\n\nafter\n")
    assert "old table" not in text and config_cmd.between_markers(text) == config_cmd.markdown(config.settings({}))
    assert main(["config", "--readme", str(doc)]) == 0
    assert "already up to date" in capsys.readouterr().out
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers\n")
    assert main(["config", "--readme", str(bare)]) == 1
    assert "no settings table markers" in capsys.readouterr().err and bare.read_text() == "no markers\n"


# --- nothing reads the environment at import ------------------------------------------------------------
def test_tab_limits_are_read_when_asked_for_not_at_import(clean_env):
    from interactive_ir.ui.serving import tabs

    clean_env.setenv("IIR_MAX_TABS", "7")
    clean_env.setenv("IIR_TAB_TTL_S", "60")
    assert tabs.tab_limits() == tabs.TabLimits(tab_ttl_s=60.0, max_tabs=7)
    clean_env.delenv("IIR_MAX_TABS")
    assert tabs.tab_limits().max_tabs == tabs.TabLimits().max_tabs == 2000
    assert not hasattr(tabs, "MAX_TABS")  # no module-level copy read at import


SPY = r"""
import importlib, os, pkgutil, sys, traceback
read = []
def note(key):  # a read of IIR_* by interactive_ir's own code (not a library copying the environment)
    if str(key).startswith("IIR_"):
        callers = [f for f in traceback.extract_stack()
                   if f.filename not in ("<string>", "<frozen os>", "<frozen _collections_abc>")
                   and not f.filename.endswith(("/os.py", "/_collections_abc.py"))]
        if callers and "/interactive_ir/" in callers[-1].filename:
            read.append((key, f"{callers[-1].filename}:{callers[-1].lineno}"))
class Spy(type(os.environ)):
    def __getitem__(self, key):
        note(key)
        return super().__getitem__(key)
    def __contains__(self, key):
        note(key)
        return super().__contains__(key)
os.environ.__class__ = Spy
import interactive_ir
for m in pkgutil.walk_packages(interactive_ir.__path__, "interactive_ir."):
    if m.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(m.name)
    except ImportError:  # an optional dependency that is not installed
        pass
print("READ", read)
"""


def test_no_module_reads_the_environment_at_import():
    env = {k: v for k, v in os.environ.items() if not k.startswith("IIR_")}
    env.update(IIR_MAX_TABS="5", IIR_K="3", IIR_MAX_TEXT_CHARS="9")  # set, so a read would find them
    p = subprocess.run([sys.executable, "-c", SPY], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "READ []" in p.stdout, p.stdout[-2000:]
