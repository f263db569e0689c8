"""ImageScope's model stages, each build prompt -> call -> parse (calls logged on the turn).

Backend failures propagate as BackendError; the caller decides the fallback.
"""

from __future__ import annotations

from collections.abc import Sequence

from interactive_ir.core.model_calls import ask, generate
from interactive_ir.core.session import Turn
from interactive_ir.modes.composed.imagescope import parsers, prompts, rerank
from interactive_ir.modes.composed.imagescope.parsers import Proposition, Stage1Result
from interactive_ir.types import Hit


def reason(llm, turn: Turn, instruction: str, reference_description: str, *, max_tokens: int = 512,
           temperature: float = 0.0) -> Stage1Result:
    """Stage 1 reasoner (Figure 10): atomic instructions and three target descriptions."""
    prompt = prompts.build_stage1(instruction, reference_description)
    reply = generate(llm, [prompt], turn=turn, stage="reason", temperature=temperature, max_tokens=max_tokens)[0]
    return parsers.parse_stage1(reply, instruction, reference_description)


def propositions(llm, turn: Turn, instruction: str, atomic: list[tuple[str, str]], *, limit: int = 6,
                 max_tokens: int = 512, temperature: float = 0.0) -> list[Proposition]:
    """Stage 2 reasoner (Figure 11): yes/no propositions with their truth values."""
    prompt = prompts.build_stage2(instruction, atomic)
    reply = generate(llm, [prompt], turn=turn, stage="propose", temperature=temperature, max_tokens=max_tokens)[0]
    return parsers.parse_stage2(reply, limit)


def verify(vlm, turn: Turn, hits: Sequence[Hit], images: Sequence, props: Sequence[Proposition], *,
           max_tokens: int = 8) -> tuple[list[Hit], list[int]]:
    """Stage 2 verifier: every (candidate, proposition) in one batch, then the stable count re-rank.

    `images[j]` is the PIL image of `hits[j]`; only those hits are re-ranked.
    """
    n, m = len(images), len(props)
    questions = [prompts.build_verifier_question(p.question) for _ in range(n) for p in props]
    groups = [[images[j]] for j in range(n) for _ in range(m)]
    labels = [hits[j].id for j in range(n) for _ in range(m)]
    replies = ask(vlm, groups, questions, turn=turn, stage="verify", max_tokens=max_tokens, labels=labels)
    answers = [[parsers.parse_yes_no(replies[j * m + i]) for i in range(m)] for j in range(n)]
    return rerank.rerank_by_counts(hits, props, answers)


def evaluate(vlm, turn: Turn, instruction: str, reference_image, hits: Sequence[Hit], images: Sequence, *,
             max_tokens: int = 128) -> tuple[list[Hit], int | None, list[bool | None]]:
    """Stage 3 evaluator (Figure 12) on the first len(images) hits, each shown right of the reference.

    The candidates are asked in one batch (one round trip); the first "Yes" in rank order moves to the top,
    as in the paper's sequential evaluation.
    """
    prompt = prompts.build_stage3(instruction)
    replies = ask(vlm, [[reference_image, im] for im in images], [prompt] * len(images), turn=turn,
                  stage="evaluate", max_tokens=max_tokens, labels=[h.id for h in hits[:len(images)]])
    parsed = [parsers.parse_evaluation(r) for r in replies]
    decisions = [d for d, _ in parsed]
    new, first = rerank.move_first_yes(hits, decisions, [e for _, e in parsed])
    return new, first, decisions
