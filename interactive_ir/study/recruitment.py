"""Recruitment platforms: the URL parameters a participant arrives with, and the codes they leave with.

- Prolific opens the study URL with ``?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...``; at the end the
  participant is sent to ``https://app.prolific.com/submissions/complete?cc=<completion code>``.
- MTurk (an external link or ExternalQuestion HIT) adds ``workerId``, ``assignmentId`` and ``hitId``
  (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` while the worker previews the HIT); the worker pastes
  the completion code into the HIT.
- ``none``: a lab study; no parameter is needed.
- ``huggingface``: the participant signs in with Hugging Face on the study page (a Space with
  ``hf_oauth: true``); their Hugging Face user name is the recruitment id. Only the name is kept: the
  sign-in's token is never read by the study.

The recruitment id (PROLIFIC_PID, workerId) is recorded with the participant and lets one id take part
once; it is data, never a credential: the participant's browser holds a secret token for that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from interactive_ir.errors import BadInputError
from interactive_ir.study.config_types import PROLIFIC_COMPLETE, Recruitment
from interactive_ir.ui.render import esc

PARAMS = {  # platform -> (the id parameter, other parameters recorded)
    "prolific": ("PROLIFIC_PID", ("STUDY_ID", "SESSION_ID")),
    "mturk": ("workerId", ("assignmentId", "hitId", "turkSubmitTo")),
}
PLATFORM_NAMES = {"prolific": "Prolific", "mturk": "Mechanical Turk", "huggingface": "Hugging Face", "none": ""}
HF_USER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")  # a Hugging Face user name
VALUE_RE = re.compile(r"^[A-Za-z0-9_.:/-]{1,128}$")  # turkSubmitTo is a URL
ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


class LinkError(BadInputError):
    """The URL the participant came with lacks or garbles the platform's parameters."""


@dataclass(frozen=True)
class Arrival:
    """Who the URL says the participant is (empty for a lab study)."""

    platform: str = "none"
    id: str = ""  # the recruitment id ("" for platform none)
    params: dict[str, str] = field(default_factory=dict)  # every recorded URL parameter

    def to_dict(self) -> dict:
        return {"platform": self.platform, "id": self.id, "params": dict(self.params)}


def _shown(value: str) -> str:
    """A short, markup-free excerpt of a bad value for a message."""
    s = re.sub(r"[^A-Za-z0-9_-]", "?", value[:24])
    return s + ("..." if len(value) > 24 else "")


def read_arrival(rec: Recruitment, query: Mapping[str, str], hf_user: str = "") -> Arrival:
    """The participant's platform parameters from the page URL's query (`hf_user`: the Hugging Face user name
    of a signed-in visitor, for platform huggingface); LinkError says what to do."""
    if rec.platform == "none":
        return Arrival()
    if rec.platform == "huggingface":
        return _hf_arrival(hf_user)
    key, others = PARAMS[rec.platform]
    name = PLATFORM_NAMES[rec.platform]
    back = f"Please open the study again from {name}; if this keeps happening, message the researcher there."
    raw = query.get(key)
    if not raw:
        raise LinkError(f"This page was opened without your {name} id ({key} is missing from the link). {back}")
    if not ID_RE.match(raw):
        raise LinkError(f"The {key} in the link ({_shown(raw)}, {len(raw)} characters) is not a valid {name} id: "
                        f"it has 1-64 letters and digits. {back}")
    params = {key: raw}
    for k in others:
        v = query.get(k)
        if v is None:
            continue
        if not VALUE_RE.match(v):
            raise LinkError(f"The {k} in the link ({_shown(v)}) is not valid. {back}")
        params[k] = v
    if rec.platform == "mturk" and params.get("assignmentId") == MTURK_PREVIEW:
        raise LinkError("You are previewing this HIT: accept it on Mechanical Turk first, then the study starts.")
    return Arrival(platform=rec.platform, id=raw, params=params)


def _hf_arrival(user: str) -> Arrival:
    if not user:
        raise LinkError("Please sign in with Hugging Face (the button at the top of this page) to take part. "
                        "Only your Hugging Face user name is recorded, to let each person take part once.")
    if not HF_USER_RE.match(user):
        raise LinkError(f"Your Hugging Face user name ({_shown(user)}) cannot be used as a study id: please "
                        "message the researcher.")
    return Arrival(platform="huggingface", id=user, params={"hf_user": user})


def end_message(rec: Recruitment, kind: str) -> str:
    """The code (and link) a participant takes back: kind is "completed", "no_consent" or "screened_out"."""
    code = {"completed": rec.completion_code, "no_consent": rec.no_consent_code,
            "screened_out": rec.screened_out_code}[kind]
    if not code:
        return ""
    name = PLATFORM_NAMES.get(rec.platform, "")
    where = f" on {name}" if name else ""
    lines = [f'Your completion code: <code class="iir-code" id="iir-completion-code">{esc(code)}</code>']
    template = rec.completion_url or (PROLIFIC_COMPLETE if rec.platform == "prolific" else "")
    url = rec.url_for(code) if kind == "completed" or "{code}" in template else ""
    if url:
        lines.append(f'<a class="iir-complete-link" id="iir-completion-link" href="{esc(url)}" rel="noopener">'
                     f"Return to {name or 'the study site'} to confirm that you took part</a> "
                     "(or enter the code there).")
    elif rec.platform == "mturk":
        lines.append("Copy this code into the HIT on Mechanical Turk and submit the HIT.")
    else:
        lines.append(f"Enter this code{where} to confirm that you took part.")
    return "\n\n".join(lines)
