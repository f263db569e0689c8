"""The mode table (`interactive_ir.modes.registry`): what it lists is exactly what the modes accept, and the
page, the study file, `eval`, the CLI and the README read their names from it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.core.text_search import TextSearch
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.modes import registry
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig, resolve_questioner
from interactive_ir.modes.entries import UnknownMethodError, UnknownModeError

ROOT = Path(__file__).resolve().parents[3]
WITH_METHODS = ("conversation", "feedback", "composed")


# --- the table itself --------------------------------------------------------------------------------------
def test_every_entry_is_registered_once_under_its_own_mode():
    assert registry.mode_names() == ("conversation", "feedback", "composed", "text", "belief")
    assert registry.page_mode_names() == ("conversation", "feedback", "composed", "text")  # the belief takes theirs
    for mode in registry.modes():
        entries = (*mode.methods, *mode.questioners)
        assert all(m.mode == mode.name for m in entries), mode.name
        assert len({m.name for m in mode.methods}) == len(mode.methods)
        assert len({q.name for q in mode.questioners}) == len(mode.questioners)
        assert all(m.label and m.description and ":" not in m.label for m in entries)
    protocols = [m.protocol for mode in registry.modes() for m in (*mode.methods, *mode.questioners) if m.protocol]
    assert len(protocols) == len(set(protocols))
    assert registry.sections() == ("plugir", "feedback", "composed")


@pytest.mark.parametrize("name", WITH_METHODS)
def test_each_mode_names_its_config_dataclass_and_auto_picks_its_own_methods(name):
    mode = registry.mode(name)
    assert dataclasses.is_dataclass(mode.config) and "method" in {f.name for f in dataclasses.fields(mode.config)}
    default = mode.config().method
    assert default == "auto" or default in mode.method_names
    if mode.best or mode.plain:
        assert mode.method(mode.best).needs_llm and not mode.method(mode.plain).needs_llm
        assert mode.auto(True) == mode.best and mode.auto(False) == mode.plain
    assert registry.mode("text").config is None


def test_unknown_names_give_an_error_that_lists_the_valid_ones():
    with pytest.raises(UnknownModeError, match=r"unknown mode 'telepathy'; choose one of conversation, feedback, "
                                               r"composed, text"):
        registry.mode("telepathy")
    with pytest.raises(UnknownMethodError, match=r"unknown feedback method 'magic'; choose one of summary, "
                                                 r"keywords, cot, expand, rocchio"):
        registry.method("feedback", "magic")
    with pytest.raises(UnknownMethodError, match="unknown questioner 'oracle'; choose one of grounded, llm"):
        registry.questioner("oracle")
    assert issubclass(UnknownMethodError, BadInputError) and issubclass(UnknownModeError, BadInputError)


# --- the modes accept exactly the table's names ----------------------------------------------------------------
def _rewrite(prompt: str) -> str:
    """A different usable reply for each of feedback's LLM prompts (they end with their answer's label)."""
    replies = {"Topic:": "Topic: a red dog running along a beach",
               "Taggings:": "Taggings: dog, ball, grass",
               "Keywords:": "Keywords: dog, sand\nDescription: A brown dog digging in the sand."}
    return next((r for label, r in replies.items() if prompt.rstrip().endswith(label)), "a dog")


def _shown(eng):
    s = eng.new_session(ask_questions=False)
    t0 = eng.search_text(s, "a dog")
    return s, t0


@pytest.mark.parametrize("name", registry.method_names("feedback"))
def test_the_feedback_mode_runs_every_method_of_the_table_and_uses_an_llm_only_where_it_says(tiny_index, name):
    r, ids, caps = tiny_index
    llm = FakeLLM(responder=_rewrite)
    eng = build_engine(r, llm=llm, config=EngineConfig(k=3), belief=query_modes())
    s, t0 = _shown(eng)
    turn = eng.feedback(s, [t0.shown[0]], [t0.shown[1]], method=name)
    assert turn.method == name and bool(llm.calls) == registry.method("feedback", name).needs_llm
    no_llm = build_engine(r, config=EngineConfig(k=3), belief=query_modes())
    if registry.method("feedback", name).needs_llm:
        with pytest.raises(BadInputError, match="needs an LLM"):
            no_llm.resolve_feedback_method(name)
    else:
        assert no_llm.resolve_feedback_method(name) == name


@pytest.mark.parametrize("name", registry.method_names("composed"))
def test_the_composed_mode_runs_every_method_of_the_table_and_uses_an_llm_only_where_it_says(tiny_index, name):
    r, ids, caps = tiny_index
    llm = FakeLLM()
    eng = build_engine(r, llm=llm, config=EngineConfig(k=3), belief=query_modes())
    s, t0 = _shown(eng)
    turn = eng.relative(s, "make it red", reference=t0.shown[0], method=name)
    assert turn.method == name and bool(llm.calls) == registry.method("composed", name).needs_llm
    no_llm = build_engine(r, config=EngineConfig(k=3), belief=query_modes())
    if registry.method("composed", name).needs_llm:
        with pytest.raises(BadInputError, match="needs an LLM"):
            no_llm.resolve_method(name)
    else:
        assert no_llm.resolve_method(name) == name


@pytest.mark.parametrize("mode", ["feedback", "composed"])
def test_every_method_of_the_table_is_a_way_of_its_own(tiny_index, mode):
    """A name added to the table but not implemented by the mode would search like another method."""
    r, ids, caps = tiny_index
    eng = build_engine(r, llm=FakeLLM(responder=_rewrite), config=EngineConfig(k=3), belief=query_modes())
    rows = {}
    for name in registry.method_names(mode):
        s, t0 = _shown(eng)
        if mode == "feedback":
            turn = eng.feedback(s, [t0.shown[0]], [t0.shown[1]], method=name)
        else:
            turn = eng.relative(s, "make it red", reference=t0.shown[0], method=name)
        rows[name] = tuple(round(float(x), 5) for x in turn.query_row)
    assert len(set(rows.values())) == len(rows), rows.keys()


def test_the_llm_prompts_of_feedback_are_those_of_the_table():
    from interactive_ir.modes.feedback.prompts import PAPER_SUBTASKS, build_prompt

    llm_methods = {m.name for m in registry.methods("feedback") if m.needs_llm}
    assert set(PAPER_SUBTASKS) == llm_methods
    for m in registry.methods("feedback"):
        if not m.needs_llm:
            with pytest.raises(ValueError, match="unknown query-editing method"):
                build_prompt(m.name, ["a dog"])


def test_the_conversation_accepts_the_table_s_methods_and_questioners_and_nothing_else():
    for name in registry.method_names("conversation"):
        assert PlugIRConfig(method=name).method == name
    with pytest.raises(UnknownMethodError, match="unknown conversation method 'magic'; choose one of plugir"):
        PlugIRConfig(method="magic")
    assert registry.questioner_values() == ("auto", *registry.questioner_names())
    for q in registry.questioner_values():
        assert PlugIRConfig(questioner=q).questioner == q
    for q in registry.questioners():  # with an LLM every questioner is itself; without one, those needing it ask nothing
        assert resolve_questioner(q.name, FakeLLM()) == q.name
        assert resolve_questioner(q.name, None) == ("" if q.needs_llm else q.name)
    for bad in ("oracle", "random"):
        with pytest.raises(BadInputError, match="questioner"):
            PlugIRConfig(questioner=bad)
        with pytest.raises(BadInputError, match="questioner"):
            resolve_questioner(bad, None)


def test_engines_declare_their_modes_instead_of_being_probed(tiny_index):
    eng = build_engine(tiny_index[0], config=EngineConfig(k=3), belief=query_modes())
    assert registry.offered(eng) == registry.mode_names()
    assert registry.offered(TextSearch(tiny_index[0])) == ()  # a bare search core declares no mode
    with pytest.raises(TypeError, match="use plugir=, feedback=, composed="):
        build_engine(tiny_index[0], conversation=PlugIRConfig(), belief=query_modes())
    assert tuple(eng.mode_configs) == registry.sections()
    for mode in registry.modes():
        if mode.section:
            assert isinstance(eng.mode_configs[mode.section], mode.config)


def test_no_hasattr_probes_for_modes_are_left():
    probe = re.compile(r"hasattr\((self\.)?engine\b")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "interactive_ir").rglob("*.py")
             for n, line in enumerate(p.read_text().splitlines(), 1) if probe.search(line)]
    assert found == []


# --- the page ---------------------------------------------------------------------------------------------
def test_the_options_panel_is_the_table(tiny_index):
    from interactive_ir.ui import handlers as h

    for table, entries in ((h.FEEDBACK_CHOICES, registry.methods("feedback")),
                           (h.COMPOSED_CHOICES, registry.methods("composed")),
                           (h.QUESTIONER_CHOICES, registry.questioners())):
        assert table[0][1] == "" and table[0][0].startswith("Automatic: ")
        assert table[1:] == tuple((m.choice_label, m.name, m.needs_llm) for m in entries)
    assert h.FEEDBACK_METHODS == registry.method_names("feedback")
    assert h.COMPOSED_METHODS == registry.method_names("composed")


def test_the_page_offers_automatic_or_a_questioner_and_the_config_takes_every_choice(tiny_index):
    """The settled questioner lists: a person picks "Automatic" ("") or a questioner of the table; the config
    also takes "auto" (what "Automatic" means by default), so the page does not offer it twice."""
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui.state import UIState

    values = [v for _, v, _ in h.QUESTIONER_CHOICES]
    assert values == ["", *registry.questioner_names()] and "auto" not in values
    assert h.QUESTIONERS == registry.questioner_names()
    assert set(h.QUESTIONERS) < set(registry.questioner_values())
    eng = build_engine(tiny_index[0], llm=FakeLLM(), config=EngineConfig(k=3), belief=query_modes())
    for q in h.QUESTIONERS:  # what the page stores in the session's options is what the asker resolves
        st = h.set_questioner(eng, h.start(eng, UIState(), "a dog"), q)
        assert st.session.options.questioner == q and eng.questioner_for(st.session) == q
        assert st.session.to_dict()["meta"]["questioner"] == q  # written as records always had it
    with pytest.raises(BadInputError, match="unknown kind of question 'auto'; choose one of grounded, llm"):
        h.set_questioner(eng, UIState(), "auto")
    no_llm = build_engine(tiny_index[0], config=EngineConfig(k=3), belief=query_modes())
    needs = [q.name for q in registry.questioners() if q.needs_llm]
    assert [v for _, v in h.choices(h.QUESTIONER_CHOICES, False)] == [
        "", *(q for q in registry.questioner_names() if q not in needs)]
    for q in needs:
        with pytest.raises(BadInputError, match="need a language model"):
            h.set_questioner(no_llm, UIState(), q)


def test_the_page_refuses_a_method_outside_the_table(tiny_index):
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui.state import UIState

    eng = build_engine(tiny_index[0], config=EngineConfig(k=3), belief=query_modes())
    st = h.start(eng, UIState(), "a dog")
    st.marks[st.current_ids[0]] = True
    with pytest.raises(UnknownMethodError, match="choose one of summary, keywords, cot, expand, rocchio"):
        h.feedback(eng, st, "magic")
    with pytest.raises(UnknownMethodError, match="choose one of imagescope, compose"):
        h.relative(eng, st, "make it red", "magic")


# --- the study file, eval and the CLI ---------------------------------------------------------------------------
def test_study_conditions_take_the_table_s_names(tiny_index):
    from interactive_ir.study import config as sc
    from interactive_ir.study.engines import check_condition

    assert sc.MODES == registry.page_mode_names() and sc.SETTINGS_SECTIONS == registry.sections()
    for preset, (modes, conv) in sc.PRESETS.items():
        assert set(modes) <= set(registry.mode_names()) and (conv is None or conv in registry.method_names(
            "conversation")), preset
    for mode in WITH_METHODS:
        key = f"{mode}_method"
        for name in registry.method_names(mode):
            assert getattr(sc._condition("A", {"modes": [mode], key: name}), key) == name
        with pytest.raises(sc.StudyConfigError, match=re.escape(f"conditions.A.{key}: 'magic' is not one of "
                                                                f"{', '.join(registry.method_names(mode))}")):
            sc._condition("A", {"modes": [mode], key: "magic"})
    no_llm = build_engine(tiny_index[0], config=EngineConfig(k=3), belief=query_modes())
    for mode in ("feedback", "composed"):
        for m in registry.methods(mode):
            c = sc._condition("A", {"modes": [mode], f"{mode}_method": m.name})
            if m.needs_llm:
                with pytest.raises(sc.StudyConfigError, match=f"{m.name} needs an LLM; use "
                                                              f"{' or '.join(registry.mode(mode).without_llm())}"):
                    check_condition(no_llm, c)
            else:
                check_condition(no_llm, c)


def test_eval_protocols_are_the_table_s_methods():
    from interactive_ir.evaluation import protocols

    for mode in WITH_METHODS:
        for m in registry.methods(mode):
            p = protocols.get_protocol(m.protocol)
            assert (p.name, p.family, p.variant, p.needs_llm) == (m.protocol, mode, m.name, m.needs_llm)
    assert set(protocols.FEEDBACK) == {m.protocol for m in registry.methods("feedback")}
    assert set(protocols.COMPOSED) == {m.protocol for m in registry.methods("composed")}
    assert protocols.CONVERSATION == tuple(m.protocol for m in registry.methods("conversation"))
    assert protocols.GROUNDED == tuple(q.protocol for q in registry.questioners() if q.protocol)
    # the plain method (the baseline the others are compared with) comes first
    assert protocols.FEEDBACK[0] == registry.method("feedback", registry.mode("feedback").plain).protocol
    assert protocols.COMPOSED[0] == registry.method("composed", registry.mode("composed").plain).protocol


def _choices(command: str, flag: str) -> tuple:
    from interactive_ir.cli import build_parser

    sub = next(a for a in build_parser(command)._actions if a.dest == "command").choices[command]
    return tuple(next(a for a in sub._actions if flag in a.option_strings).choices)


def test_cli_flag_choices_are_the_table_s():
    assert _choices("chat", "--method") == registry.method_names("conversation")
    assert _choices("chat", "--questioner") == registry.questioner_values()
    assert _choices("search", "--method") == registry.method_names("composed")


def test_the_modes_command_prints_every_mode_and_method(capsys):
    from interactive_ir.cli import main

    assert main(["modes"]) == 0
    out = capsys.readouterr().out
    for mode in registry.modes():
        assert re.search(rf"^{re.escape(mode.name)}\s+{re.escape(mode.label)}\s", out, re.M)
        for m in (*mode.methods, *mode.questioners):
            assert re.search(rf"\s{re.escape(m.name)}\s+{re.escape(m.label)}\s+{re.escape(m.description)}", out)


def test_the_readme_lists_the_methods_of_the_table():
    """The README's block is `python -m interactive_ir modes --markdown`: regenerate it when this fails."""
    from interactive_ir.commands.modes_cmd import markdown

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- modes:begin -->\n(.*?)<!-- modes:end -->", readme, re.S)
    assert block is not None, "README.md has no <!-- modes:begin --> ... <!-- modes:end --> block"
    assert block.group(1) == markdown()
    for mode in WITH_METHODS:
        for name in registry.method_names(mode):
            assert f"| `{name}` |" in block.group(1)
