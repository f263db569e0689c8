"""The mode table: every way of searching and every method, each registered once.

Each mode package declares its row beside its config dataclass (`MODE` in
`modes/conversation/plugir/config.py`, `modes/feedback/config.py`, `modes/composed/config.py`,
`modes/belief/config.py`); this
module gathers them, adds plain text search, and answers lookups. The modes validate names with it, and
the page's choices and labels, the CLI's flag choices, the study file's checks, `eval`'s protocols,
`python -m interactive_ir modes` and the README's list of methods are read from it.

    modes()                    every Mode, in the order the study file and the page list them
    mode("feedback")           one Mode (UnknownModeError naming the valid ones)
    methods("feedback")        its Methods, in the page's order
    method("feedback", "cot")  one Method (UnknownMethodError naming the valid ones)
    questioners()              who may write the conversation's questions
    page_mode_names()          the modes a page offers as controls (not the belief, which takes theirs over)
    offered(engine)            the mode names an engine declares (`Engine.mode_names`)
"""

from __future__ import annotations

from interactive_ir.modes.belief.config import MODE as BELIEF
from interactive_ir.modes.composed.config import MODE as COMPOSED
from interactive_ir.modes.conversation.plugir.config import MODE as CONVERSATION
from interactive_ir.modes.conversation.plugir.config import questioner_values
from interactive_ir.modes.entries import Method, Mode, UnknownMethodError, UnknownModeError
from interactive_ir.modes.feedback.config import MODE as FEEDBACK

__all__ = ["Method", "Mode", "UnknownMethodError", "UnknownModeError", "method", "method_names", "methods", "mode",
           "mode_names", "modes", "offered", "page_mode_names", "questioner", "questioner_names", "questioner_values",
           "questioners", "sections"]

TEXT = Mode("text", "Search", "type a description; every round is a new text search (no LLM)")

_MODES: tuple[Mode, ...] = (CONVERSATION, FEEDBACK, COMPOSED, TEXT, BELIEF)


def modes() -> tuple[Mode, ...]:
    return _MODES


def mode_names() -> tuple[str, ...]:
    return tuple(m.name for m in _MODES)


def page_mode_names() -> tuple[str, ...]:
    """The modes a page (a study condition's `modes:`) offers as controls of their own."""
    return tuple(m.name for m in _MODES if m.on_page)


def mode(name: str) -> Mode:
    for m in _MODES:
        if m.name == name:
            return m
    raise UnknownModeError(f"unknown mode {name!r}; choose one of {', '.join(mode_names())}")


def methods(mode_name: str) -> tuple[Method, ...]:
    return mode(mode_name).methods


def method_names(mode_name: str) -> tuple[str, ...]:
    return mode(mode_name).method_names


def method(mode_name: str, name: str) -> Method:
    """The method `name` of mode `mode_name`; UnknownMethodError naming the mode's methods."""
    return mode(mode_name).method(name)


def questioners() -> tuple[Method, ...]:
    return CONVERSATION.questioners


def questioner_names() -> tuple[str, ...]:
    return CONVERSATION.questioner_names


def questioner(name: str) -> Method:
    return CONVERSATION.questioner(name)


def sections() -> tuple[str, ...]:
    """The mode config keywords of `build_engine` and a study's `settings` ("plugir", "feedback", "composed")."""
    return tuple(m.section for m in _MODES if m.section)


def offered(engine) -> tuple[str, ...]:
    """The names of the modes `engine` offers, as it declares them (`Engine.mode_names`: every mode); an object
    that declares none (a bare `core.TextSearch`, a stand-in) offers none."""
    return tuple(getattr(engine, "mode_names", ()))
