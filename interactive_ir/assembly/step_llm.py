"""The LLM one piece of the page's model work uses (`ui.work`): the engine's own, a signed-in visitor's (their
own token), the owner's within the anonymous budget, or none (`visitor_llm`), each call carrying the work's
cancel token (`cancellable`). The page's start-up loads the engine's own LLM (`app.assemble`); this picks,
per step, which client serves it."""

from __future__ import annotations


def visitor_llm(owner, access, budget):
    """The LLM a visitor's step uses (`backends.visitor_llm.llm_for`): `owner` (the engine's) when `access` is
    None (sign-in is off), theirs, the owner's within `budget`, or None."""
    from interactive_ir.backends.visitor_llm import llm_for

    return llm_for(owner, access, budget)


def cancellable(llm, cancel):
    """`llm` with every call carrying `cancel` (`backends.cancel.CancellableLLM`); None stays None."""
    from interactive_ir.backends.cancel import CancellableLLM

    return None if llm is None else CancellableLLM(llm, cancel)
