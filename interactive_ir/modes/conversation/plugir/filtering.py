"""Filtering (PlugIR Algorithm 2).

1. Drop the questions an LLM can answer from the description and dialogue alone (Table 19 prompt; a
   reply of "Uncertain" keeps the question). All answerer prompts go in ONE `generate()` call.
2. Among the kept questions choose the one with the smallest KL(p_c || p_{c,q}), where over the
   candidate set S_R p_c(x) = softmax_x(sim(c, x)) for the current query c and p_{c,q} the same for
   concat(c, q): the question that moves the retrieval distribution least (the paper observes that
   questions about attributes the target lacks move it abruptly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interactive_ir.modes.conversation.plugir.parsers import ANSWERED, classify_answer
from interactive_ir.modes.conversation.plugir.prompts import answerer_prompt
from interactive_ir.modes.conversation.plugir.rce import softmax


def filter_prompts(context: str, questions: Sequence[str]) -> list:
    """One Table 19 prompt per question."""
    return [answerer_prompt(context, q) for q in questions]


def verdicts(replies: Sequence[str], questions: Sequence[str]) -> list[str]:
    """UNCERTAIN / ANSWERED / EMPTY for each (reply, question)."""
    return [classify_answer(r, q) for r, q in zip(replies, questions)]


def kept_positions(verdict_list: Sequence[str]) -> list[int]:
    """Positions of the questions the filter keeps (everything not ANSWERED)."""
    return [i for i, v in enumerate(verdict_list) if v != ANSWERED]


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) in nats for two distributions over the same support (q > 0 wherever p > 0)."""
    p = np.asarray(p, np.float64)
    q = np.asarray(q, np.float64)
    mask = p > 0
    return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(q[mask]))))


def kl_scores(base_scores: np.ndarray, question_scores: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """KL(p_c || p_{c,q}) for each row of `question_scores` (shape q x n; `base_scores` has n)."""
    p = softmax(base_scores, scale)
    qs = np.atleast_2d(np.asarray(question_scores))
    return np.array([kl_divergence(p, softmax(row, scale)) for row in qs])


def choose_by_kl(kls: Sequence[float], positions: Sequence[int]) -> int:
    """The position (among `positions`) with the smallest KL; ties go to the earlier position."""
    if not positions:
        raise ValueError("no question to choose from")
    return min(positions, key=lambda i: (kls[i], i))


def concat_query(context: str, question: str, limit: int) -> str:
    """concat(c, q) within `limit` characters (the context is cut, never the question)."""
    room = max(0, limit - len(question) - 1)
    return f"{context[:room].rstrip()} {question}".strip()
