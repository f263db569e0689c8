"""The types and constants the study file's readers share: questionnaire items, recruitment, the error.

`interactive_ir.study.config` (the study file), `config_forms` (its questionnaire and recruitment
sections), `instruments` and `questionnaire` all build on this module, which imports none of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from interactive_ir.errors import BadInputError

QUESTION_TYPES = ("likert", "text", "choice", "number", "slider")
PLATFORMS = ("none", "prolific", "mturk", "huggingface")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
CODE_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

DEFAULT_QUESTIONS = (
    {"id": "effective", "text": "The system was effective", "type": "likert"},
    {"id": "efficient", "text": "The system was efficient", "type": "likert"},
    {"id": "comments", "text": "Comments (optional)", "type": "text", "required": False},
)


class StudyConfigError(BadInputError):
    """The study file is missing, unreadable, or invalid; the message names the field."""


@dataclass(frozen=True)
class Question:
    """A questionnaire item (a custom one, or one of a named instrument's)."""

    id: str  # column name in exports and reports
    text: str  # what the participant reads
    type: str = "likert"  # "likert" (1..points), "text", "choice" (one of options), "number" or "slider"
    #                       (minimum..maximum in steps of step)
    required: bool = True  # must be answered (free text defaults to optional)
    points: int = 5  # Likert scale size (1 = strongly disagree ... points = strongly agree)
    low_label: str = "strongly disagree"  # label of 1 (of the slider's minimum)
    high_label: str = "strongly agree"  # label of `points` (of the slider's maximum)
    options: tuple[str, ...] = ()  # the choices of a "choice" item
    minimum: float = 0  # range of a "number" or "slider" item
    maximum: float = 100
    step: float = 1
    instrument: str = ""  # the named instrument this item belongs to ("" for a custom item)
    answer: Any = None  # attention check: the expected answer (None: not a check)
    screen_out: tuple = ()  # answers that end the study for this participant (screened out)


@dataclass(frozen=True)
class Recruitment:
    """Where participants come from, and the codes they take back there (`recruitment:` in the file)."""

    platform: str = "none"  # "prolific", "mturk" or "none" (lab study: no URL parameters needed)
    completion_code: str = ""  # shown at the end of the study (Prolific: the study's completion code)
    completion_url: str = ""  # https link shown at the end ("{code}" is replaced by the code); Prolific's
    #                           default is https://app.prolific.com/submissions/complete?cc={code}
    no_consent_code: str = ""  # shown to a participant who does not consent ("" = none)
    screened_out_code: str = ""  # shown to a participant screened out by an answer ("" = none)

    def url_for(self, code: str) -> str:
        url = self.completion_url
        if not url and self.platform == "prolific" and code:
            url = PROLIFIC_COMPLETE
        return url.replace("{code}", code) if url else ""


PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"
