"""Standard questionnaires by name, with their published scoring.

A study file names them under `questionnaires:` (``after_condition: [sus, nasa_tlx]``, ``end: [ueq_s,
demographics]``); each expands to its items (`Question`s with ids such as ``sus_1``), and `score_form`
turns a form's answers into scores stored with the answers and used by the report.

- ``sus``: System Usability Scale (Brooke 1996). 10 items, 1 = strongly disagree .. 5 = strongly agree.
  Odd (positively worded) items contribute answer - 1, even (negatively worded) items 5 - answer; the
  sum (0..40) times 2.5 is the score, 0..100 (higher is more usable).
- ``nasa_tlx``: raw NASA-TLX (Hart 2006, "RTLX": no pairwise weighting). Six subscales rated 0..100 in
  steps of 5; the workload score is the mean of the six (higher is more workload). Performance runs as
  in the original form, from 0 = perfect to 100 = failure, so that on every subscale higher is worse.
- ``ueq_s``: the short User Experience Questionnaire (Schrepp, Hinderks & Thomaschewski 2017). Eight
  7-point semantic differentials with the negative term on the left; answers 1..7 map to -3..+3.
  Pragmatic quality = mean of items 1-4, hedonic quality = mean of items 5-8, overall = mean of all 8.
- ``demographics``: age, gender, and how often the participant searches for images (not scored).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interactive_ir.study.config_types import Question

SUS_ITEMS = (
    "I think that I would like to use this system frequently.",
    "I found the system unnecessarily complex.",
    "I thought the system was easy to use.",
    "I think that I would need the support of a technical person to be able to use this system.",
    "I found the various functions in this system were well integrated.",
    "I thought there was too much inconsistency in this system.",
    "I would imagine that most people would learn to use this system very quickly.",
    "I found the system very cumbersome to use.",
    "I felt very confident using the system.",
    "I needed to learn a lot of things before I could get going with this system.",
)
TLX_SCALES = (  # (id, title, question, low end, high end)
    ("mental", "Mental demand", "How mentally demanding was the task?", "very low", "very high"),
    ("physical", "Physical demand", "How physically demanding was the task?", "very low", "very high"),
    ("temporal", "Temporal demand", "How hurried or rushed was the pace of the task?", "very low", "very high"),
    ("performance", "Performance", "How successful were you in accomplishing what you were asked to do?",
     "perfect", "failure"),
    ("effort", "Effort", "How hard did you have to work to accomplish your level of performance?", "very low",
     "very high"),
    ("frustration", "Frustration", "How insecure, discouraged, irritated, stressed, and annoyed were you?",
     "very low", "very high"),
)
UEQ_S_ITEMS = (  # (negative term, positive term); items 1-4 pragmatic, 5-8 hedonic
    ("obstructive", "supportive"), ("complicated", "easy"), ("inefficient", "efficient"), ("confusing", "clear"),
    ("boring", "exciting"), ("not interesting", "interesting"), ("conventional", "inventive"),
    ("usual", "leading edge"),
)
SEARCH_FREQUENCY = ("never", "less than once a month", "monthly", "weekly", "daily")
GENDERS = ("woman", "man", "non-binary", "prefer to self-describe", "prefer not to say")


def _sus() -> tuple[Question, ...]:
    return tuple(Question(id=f"sus_{i}", text=t, type="likert", points=5, instrument="sus")
                 for i, t in enumerate(SUS_ITEMS, 1))


def _tlx() -> tuple[Question, ...]:
    return tuple(Question(id=f"tlx_{sid}", text=f"{title}: {q}", type="slider", minimum=0, maximum=100, step=5,
                          low_label=lo, high_label=hi, instrument="nasa_tlx")
                 for sid, title, q, lo, hi in TLX_SCALES)


def _ueq_s() -> tuple[Question, ...]:
    return tuple(Question(id=f"ueqs_{i}", text=f"{neg} ... {pos}", type="likert", points=7, low_label=neg,
                          high_label=pos, instrument="ueq_s")
                 for i, (neg, pos) in enumerate(UEQ_S_ITEMS, 1))


def _demographics() -> tuple[Question, ...]:
    return (Question(id="demo_age", text="Your age in years", type="number", minimum=16, maximum=120,
                     instrument="demographics"),
            Question(id="demo_gender", text="Your gender", type="choice", options=GENDERS, instrument="demographics"),
            Question(id="demo_search_frequency", text="How often do you search for images on the web?",
                     type="choice", options=SEARCH_FREQUENCY, instrument="demographics"))


INSTRUMENTS = {"sus": _sus, "nasa_tlx": _tlx, "ueq_s": _ueq_s, "demographics": _demographics}
SCORES = {  # instrument -> (score column, what it means) for the data dictionary and the report
    "sus": (("sus", "System Usability Scale score, 0-100, higher is more usable"),),
    "nasa_tlx": (("tlx_raw", "raw NASA-TLX workload, mean of the 6 subscales, 0-100, higher is more workload"),),
    "ueq_s": (("ueqs_pragmatic", "UEQ-S pragmatic quality, mean of items 1-4 on -3..+3"),
              ("ueqs_hedonic", "UEQ-S hedonic quality, mean of items 5-8 on -3..+3"),
              ("ueqs_overall", "UEQ-S overall, mean of the 8 items on -3..+3")),
    "demographics": (),
}


def instrument_items(name: str) -> tuple[Question, ...]:
    """The items of a named instrument (KeyError for an unknown name; the config names the choices)."""
    return INSTRUMENTS[name]()


def sus_score(answers: Mapping[str, Any]) -> float:
    """SUS 0..100 from answers sus_1..sus_10 on 1..5."""
    total = 0
    for i in range(1, 11):
        a = int(answers[f"sus_{i}"])
        total += (a - 1) if i % 2 else (5 - a)
    return total * 2.5


def tlx_raw(answers: Mapping[str, Any]) -> float:
    """Raw TLX: the mean of the six 0..100 subscales (performance: 0 = perfect, 100 = failure)."""
    return sum(float(answers[f"tlx_{sid}"]) for sid, *_ in TLX_SCALES) / len(TLX_SCALES)


def ueq_s_scores(answers: Mapping[str, Any]) -> dict[str, float]:
    """UEQ-S pragmatic, hedonic and overall means on -3..+3 from answers ueqs_1..ueqs_8 on 1..7."""
    v = [int(answers[f"ueqs_{i}"]) - 4 for i in range(1, 9)]
    return {"ueqs_pragmatic": sum(v[:4]) / 4, "ueqs_hedonic": sum(v[4:]) / 4, "ueqs_overall": sum(v) / 8}


def score_form(questions, answers: Mapping[str, Any]) -> dict[str, float]:
    """Scores of every complete instrument in a form's validated answers."""
    names = list(dict.fromkeys(q.instrument for q in questions if q.instrument))
    out: dict[str, float] = {}
    for name in names:
        items = [q.id for q in questions if q.instrument == name]
        if any(answers.get(i) is None for i in items):
            continue
        if name == "sus":
            out["sus"] = sus_score(answers)
        elif name == "nasa_tlx":
            out["tlx_raw"] = tlx_raw(answers)
        elif name == "ueq_s":
            out.update(ueq_s_scores(answers))
    return out
