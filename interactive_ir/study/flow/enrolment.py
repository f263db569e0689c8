"""Enrolment: new participants, their secret tokens, consent, and the plan each is given.

The token (256 random bits, URL-safe) is the participant's only credential: the browser keeps it and
sends it with every call; the database keeps only its SHA-256.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from typing import Any

from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.study.config_types import ID_RE
from interactive_ir.study.flow.plan import StudyPlan, plan_rows
from interactive_ir.study.flow.state import Participants, StudyClosed, require
from interactive_ir.study.log import AlreadyEnrolled
from interactive_ir.study.progress import Progress

TOKEN_BYTES = 32  # 256 random bits per participant token


def token_hash(token: str) -> str:
    """What the database keeps of a token: its SHA-256 (a leaked database does not give the tokens)."""
    return hashlib.sha256(str(token).encode("utf-8", "surrogatepass")).hexdigest()



VERIFIED_PLATFORMS = frozenset({"huggingface"})  # recruitment ids a sign-in vouches for: one participation each

class Enrolment:
    """Enrols participants (through consent, or by id for scripts) and finds them by token."""

    def __init__(self, participants: Participants, plan: StudyPlan):
        self.participants = participants
        self.plan = plan
        self.study = participants.study
        self.log = participants.log

    def new_participant_id(self) -> str:
        for _ in range(100):
            pid = "P" + secrets.token_hex(3).upper()
            if self.log.participant(self.study.study_id, pid) is None:
                return pid
        raise SessionError("could not generate a free participant id; type one instead")

    def join(self, agreed: bool, recruit: Mapping[str, Any] | None = None,
             client_ts: float | None = None, expert: bool | None = None) -> tuple[Progress, str]:
        """Enrol a new participant through the consent page: (their progress, their secret token).

        `recruit` = {"platform", "id", "params"} from the URL is recorded. A recruitment id that has started
        already gets the same page as a new one: a new participant whose recruitment is marked
        `"repeat": true` (for the researcher to see and drop), never a refusal, so knowing someone's id
        neither tells whether they took part nor locks them out; an id a sign-in verified
        (`VERIFIED_PLATFORMS`: the person's own Hugging Face account) that took part raises AlreadyEnrolled.
        `expert` (an expert or novice session, None: not said) is recorded with the participant.
        """
        if self.participants.is_closed():
            raise StudyClosed("this study has closed and takes no new participants; thank you for your interest")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        rec = dict(recruit) if recruit and recruit.get("id") else None
        meta = {"recruitment": rec} if rec else {}
        if expert is not None:
            meta["expert"] = bool(expert)
        try:
            p = self.enrol(None, client_ts, meta, token=token_hash(token), recruit=rec)
        except AlreadyEnrolled:
            if rec.get("platform") in VERIFIED_PLATFORMS:  # a signed-in account, not an id anyone can type
                raise
            rec = {**rec, "repeat": True}
            p = self.enrol(None, client_ts, {**meta, "recruitment": rec}, token=token_hash(token), recruit=None)
        return self.consent(p.participant, agreed, client_ts), token

    def participant_of(self, token: Any) -> str | None:
        """The participant holding `token`, or None (never says whether some participant id exists)."""
        if not isinstance(token, str) or not 20 <= len(token) <= 200:
            return None
        return self.log.participant_of_token(self.study.study_id, token_hash(token))

    def enrol(self, participant: str | None = None, client_ts: float | None = None,
              meta: Mapping[str, Any] | None = None, token: str | None = None,
              recruit: Mapping[str, Any] | None = None) -> Progress:
        """Create a participant (a generated id when None) or resume a known one (scripts and tests; the web
        page enrols only through `join`). `token` is the hash kept for the participant's token."""
        pid = (participant or "").strip() or self.new_participant_id()
        if not ID_RE.match(pid):
            raise BadInputError(f"participant id {pid!r} is not valid: use 1-64 letters, digits, '_', '.' or '-'")

        def info(number: int) -> dict:
            return {**dict(meta or {}), "plan": plan_rows(self.plan.for_participant(number, pid))}

        number, new = self.log.enrol(self.study.study_id, pid, info, token_hash=token,
                                     recruit=(recruit["platform"], recruit["id"]) if recruit else None)
        ps = self.participants
        with ps.locked(pid) as p:
            ps.write(p, [ps.event(p, "enrol" if new else "resume", {"number": number, **dict(meta or {})},
                                  client_ts, task=False)])
            return p

    def consent(self, participant: str, agreed: bool, client_ts: float | None = None) -> Progress:
        ps = self.participants
        with ps.locked(participant) as p:
            require(p, "consent")
            ps.write(p, [ps.event(p, "consent", {"agreed": bool(agreed)}, client_ts, task=False)])
            p.phase = "briefing" if agreed else "declined"
            if p.phase == "briefing" and not p.plan:
                p.phase = "done"
            return p
