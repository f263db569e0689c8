"""Engines per condition: the shared engine's backends with a condition's k and mode settings.

Every engine is made by `engine.build_engine`; each turn notes the row it searched with (`Turn.query_row`),
so the target's rank (`ranks.target_rank`) is computed with exactly that row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from interactive_ir.engine import build_engine
from interactive_ir.modes import registry
from interactive_ir.study.config import Condition, StudyConfig, StudyConfigError


def condition_engine(base, study: StudyConfig, condition: Condition):
    """`base`'s backends with the condition's k (else the study's) and settings overrides."""
    configs = dict(base.mode_configs)
    for section, overrides in condition.settings.items():
        where = f"conditions.{condition.name}.settings.{section}"
        current = configs.get(section)
        if current is None:
            raise StudyConfigError(f"{where}: the engine has no {section} settings")
        names = {f.name for f in dataclasses.fields(current)}
        unknown = [n for n in overrides if n not in names]
        if unknown:
            raise StudyConfigError(f"{where}.{unknown[0]}: unknown setting; known: {', '.join(sorted(names))}")
        try:
            configs[section] = dataclasses.replace(current, **overrides)
        except (TypeError, ValueError) as e:
            raise StudyConfigError(f"{where}: {e}") from e
    k = condition.k or study.k
    return build_engine(base.retriever, llm=base.llm, captioner=base.captioner, vlm=base.vlm,
                        config=dataclasses.replace(base.config, k=k), **configs)


class ConditionEngines:
    """The engine serving each condition, made once: `engine_for(condition)` when given, else the shared
    engine's backends with the condition's k and settings (`condition_engine`)."""

    def __init__(self, base, study: StudyConfig, engine_for: Callable[[Condition], Any] | None = None):
        self.base = base
        self.study = study
        self._engine_for = engine_for
        self._engines: dict[str, Any] = {}

    def of(self, condition: Condition):
        if condition.name not in self._engines:
            make = self._engine_for or (lambda c: condition_engine(self.base, self.study, c))
            self._engines[condition.name] = make(condition)
        return self._engines[condition.name]

    def check(self, condition: Condition) -> None:
        """Raise StudyConfigError when this engine cannot run `condition` (missing mode or LLM)."""
        check_condition(self.of(condition), condition)


def check_condition(engine, c: Condition) -> None:
    """Raise StudyConfigError when `engine` cannot run condition `c` (a missing mode or LLM)."""
    where = f"conditions.{c.name}"
    offered = registry.offered(engine)
    for mode in c.modes:
        if mode not in offered:
            raise StudyConfigError(f"{where}: the {mode} mode is not available in this build")
    if "conversation" in c.modes and not getattr(engine, "questions_enabled", False):
        raise StudyConfigError(f"{where}: the conversation mode asks questions with an LLM, and none is "
                               "configured: start the app with an LLM (--llm SPEC), or use mode: text/feedback")
    for mode, name in (("feedback", c.feedback_method), ("composed", c.composed_method)):
        if name and registry.method(mode, name).needs_llm and engine.llm is None:
            raise StudyConfigError(f"{where}.{mode}_method: {name} needs an LLM; use "
                                   f"{' or '.join(registry.mode(mode).without_llm())}")


# ---------------------------------------------------------------- the engine's actions
# Every engine call of the study runner goes through `run_round` and `ask_step`: one table of the engine's
# actions (ROUND_CALLS), and the engine's own split of a round into "retrieve" and "ask".


def _describe(engine, session, text):
    """The first description: the session's `describe` (on the belief a text search; otherwise the
    conversation's `start`) when it asks its questions in the round, else a text search (under `run_round`
    the question comes afterwards from `ask_step`, so the round searches the text)."""
    return engine.describe(session, text) if session.options.ask_questions else engine.search_text(session, text)


# the engine action behind each kind of search round: action -> call(engine, session, *args) -> Turn. The
# engine sends each to the session's mode (`Session.options.mode`): on the belief (`mode: belief`) answers,
# clicks, marks, skips and references are all evidence for it
ROUND_CALLS: dict[str, Callable[..., Any]] = {
    "describe": _describe,
    "answer": lambda engine, session, text: engine.reply(session, text),
    # a click on option `index` (0-based) of `question` (the typed Question, or its text, the page showed);
    # the engine refuses a question that is no longer the pending one
    "choose": lambda engine, session, index, question: engine.choose(session, index, question or None),
    "skip": lambda engine, session: engine.skip(session),
    "feedback": lambda engine, session, relevant, irrelevant, method: engine.mark(session, relevant, irrelevant,
                                                                                   method=method),
    # a relative caption about `reference` (None: the top result); on the belief "like this, but ..."
    "relative": lambda engine, session, caption, reference, method: engine.reference(
        session, caption, reference=reference, method=method),
    "search": lambda engine, session, text: engine.search_text(session, text, kind="search"),
}


def run_round(engine, session, action: str, *args):
    """One search round of kind `action` (a key of ROUND_CALLS) on `session`, without its question."""
    return retrieve_step(engine, session, lambda e, s: ROUND_CALLS[action](e, s, *args))


def retrieve_step(engine, session, call):
    """Run `call(engine, session)` (a round: start, answer, skip, feedback, ...) without asking the next
    question: the results are ready at once; `ask_step` asks about them afterwards."""
    asks = session.options.ask_questions
    session.options.ask_questions = False
    try:
        turn = call(engine, session)
    finally:
        session.options.ask_questions = asks
    session.options.question_due = bool(asks) and bool(getattr(engine, "questions_enabled", False))
    return turn


def ask_step(engine, session):
    """Ask the question about the last round's results (the conversation mode's LLM step); the turn."""
    session.options.question_due = False
    turn = session.last
    if turn is None:
        return None
    engine.ask(session)
    return turn
