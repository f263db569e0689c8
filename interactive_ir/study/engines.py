"""Engines per condition: the shared engine's backends with a condition's k and mode settings.

Every engine is made by `engine.build_engine`; each turn notes the row it searched with (`Turn.query_row`),
so the target's rank (`ranks.target_rank`) is computed with exactly that row.
"""

from __future__ import annotations

import dataclasses

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


# ---------------------------------------------------------------- the two steps of a round
# Every engine call of the study runner goes through these two functions, so the engine's own split of
# a round into "retrieve" and "ask" (engine.ask(session)) replaces them in one place.


def retrieve_step(engine, session, call):
    """Run `call(engine, session)` (a round: start, answer, skip, feedback, ...) without asking the next
    question: the results are ready at once; `ask_step` asks about them afterwards."""
    asks = session.meta.get("ask_questions")
    session.meta["ask_questions"] = False
    try:
        turn = call(engine, session)
    finally:
        session.meta["ask_questions"] = asks
    session.meta["question_due"] = bool(asks) and bool(getattr(engine, "questions_enabled", False))
    return turn


def choice_call(index: int, question):
    """The round of a click on option `index` (0-based) of `question` (the typed Question, or its text, the
    page showed); the engine refuses a question that is no longer the pending one."""
    return lambda engine, session: engine.answer_choice(session, index, question or None)


def ask_step(engine, session):
    """Ask the question about the last round's results (the conversation mode's LLM step); the turn."""
    session.meta["question_due"] = False
    turn = session.last
    if turn is None:
        return None
    engine.ask(session)
    return turn
