"""Re-ranking rules of ImageScope stages 2 and 3, as pure functions over ranked hits.

Stage 2 (predicate verification): each of the top-k candidates scores the number of propositions whose
verifier answer equals the proposition's truth value; candidates are re-ordered by that count with a
stable sort, so ties keep the retrieval order. Stage 3 (pairwise evaluation): the evaluator's decisions
on the top alpha candidates, in rank order; the first "Yes" moves to the top, the rest keep their order.
Each rule records why on `Hit.why`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from interactive_ir.modes.composed.imagescope.parsers import Proposition
from interactive_ir.types import Hit


def confirmed(propositions: Sequence[Proposition], answers: Sequence[bool | None]) -> list[bool]:
    """Per proposition: did the verifier's answer match its truth value (no answer never matches)."""
    return [a is not None and a == p.truth for p, a in zip(propositions, answers)]


def proposition_reason(p: Proposition, answer: bool | None) -> str:
    said = "unclear" if answer is None else ("yes" if answer else "no")
    want = "yes" if p.truth else "no"
    mark = "holds" if answer is not None and answer == p.truth else "fails"
    return f"{mark}: {p.question} (verifier: {said}, wanted {want})"


def rerank_by_counts(hits: Sequence[Hit], propositions: Sequence[Proposition],
                     answers: Sequence[Sequence[bool | None]]) -> tuple[list[Hit], list[int]]:
    """Re-order `hits[:len(answers)]` by how many propositions each satisfies (stable); the rest follow.

    `answers[j][i]` is the verifier's answer for candidate j and proposition i.
    Returns the new list and the counts of the re-ranked candidates in their original order.
    """
    head, tail = list(hits[:len(answers)]), list(hits[len(answers):])
    counts = [sum(confirmed(propositions, a)) for a in answers]
    annotated = []
    for h, a, c in zip(head, answers, counts):
        why = [f"stage 2: {c}/{len(propositions)} propositions confirmed"]
        why += [proposition_reason(p, x) for p, x in zip(propositions, a)]
        annotated.append(dataclasses.replace(h, why=list(h.why) + why))
    order = sorted(range(len(annotated)), key=lambda j: -counts[j])  # sorted() is stable
    return [annotated[j] for j in order] + tail, counts


def move_first_yes(hits: Sequence[Hit], decisions: Sequence[bool | None],
                   explanations: Sequence[str] = ()) -> tuple[list[Hit], int | None]:
    """Move the first candidate the evaluator accepted to the top; returns (hits, its old index or None)."""
    hits = list(hits)
    explanations = list(explanations) + [""] * (len(decisions) - len(explanations))
    first = None
    for j, (d, e) in enumerate(zip(decisions, explanations)):
        if j >= len(hits):
            break
        verdict = "unclear" if d is None else ("yes" if d else "no")
        note = f"stage 3: evaluator says {verdict}" + (f" ({e})" if e else "")
        hits[j] = dataclasses.replace(hits[j], why=list(hits[j].why) + [note])
        if d and first is None:
            first = j
    if first is not None and first > 0:
        hits.insert(0, hits.pop(first))
    return hits, first
