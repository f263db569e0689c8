"""Questionnaire answers: checked against the form's items, scored, attention checks and screening read.

Types: likert (1..points), text, choice (one of the options), number and slider (minimum..maximum, a
slider in steps of `step`). A required item left empty is refused with the item's text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from interactive_ir.errors import BadInputError
from interactive_ir.study.config_types import Question

MAX_FREE_TEXT = 5000


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, float) and math.isnan(v))


def _number(q: Question, v: Any) -> float:
    try:
        x = float(v) if not isinstance(v, bool) else math.nan
    except (TypeError, ValueError):
        x = math.nan
    lo, hi = q.minimum, q.maximum
    if not math.isfinite(x) or not lo <= x <= hi:
        raise BadInputError(f"{q.text}: give a number from {lo:g} to {hi:g}")
    if q.type == "slider" and q.step:
        steps = (x - lo) / q.step
        if abs(steps - round(steps)) > 1e-6:
            raise BadInputError(f"{q.text}: give a value in steps of {q.step:g}")
    return int(x) if float(x).is_integer() else x


def check_one(q: Question, v: Any) -> Any:
    """One answer validated and normalised (int for likert, str for text and choice, number otherwise)."""
    if q.type == "likert":
        try:
            n = v if isinstance(v, int) and not isinstance(v, bool) else int(str(v).strip().split()[0])
        except (ValueError, IndexError):
            raise BadInputError(f"{q.text}: choose a number from 1 to {q.points}") from None
        if not 1 <= n <= q.points:
            raise BadInputError(f"{q.text}: choose a number from 1 to {q.points}")
        return n
    if q.type == "choice":
        s = str(v).strip()
        if s not in q.options:
            raise BadInputError(f"{q.text}: choose one of {', '.join(q.options)}")
        return s
    if q.type in ("number", "slider"):
        return _number(q, v)
    s = str(v).strip()
    if len(s) > MAX_FREE_TEXT:
        raise BadInputError(f"{q.text}: at most {MAX_FREE_TEXT} characters")
    return s


def check_answers(questions: Sequence[Question], answers: Mapping[str, Any]) -> dict[str, Any]:
    """Validated answers of one form; BadInputError names the first item at fault."""
    known = {q.id: q for q in questions}
    extra = [k for k in answers if k not in known]
    if extra:
        raise BadInputError(f"unknown question {extra[0]!r}")
    out: dict[str, Any] = {}
    for n, q in enumerate(questions, 1):
        v = answers.get(q.id)
        if _empty(v):
            if q.required:
                raise BadInputError(f"please answer question {n} of {len(questions)} ({q.text.rstrip(' .')}): {how_to_answer(q)}")
            out[q.id] = "" if q.type == "text" else None
            continue
        out[q.id] = check_one(q, v)
    return out


def how_to_answer(q: Question) -> str:
    """What to do to answer `q`, in a few words (for the message on a required item left empty)."""
    if q.type == "likert":
        return f"choose a number from 1 ({q.low_label}) to {q.points} ({q.high_label})"
    if q.type == "choice":
        return "choose one of its options"
    if q.type in ("slider", "number"):
        return f"choose a value from {q.minimum:g} ({q.low_label}) to {q.maximum:g} ({q.high_label})"
    return "write a short answer"


def attention_results(questions: Sequence[Question], answers: Mapping[str, Any]) -> dict[str, bool]:
    """Attention-check item id -> passed."""
    return {q.id: answers.get(q.id) == q.answer for q in questions if q.answer is not None}


def screened_out(questions: Sequence[Question], answers: Mapping[str, Any]) -> list[str]:
    """Ids of the items whose answer screens the participant out."""
    return [q.id for q in questions if q.screen_out and answers.get(q.id) in q.screen_out]
