"""How one search behaves, chosen when it starts: the page's Options, a study condition, an eval protocol.

`SessionOptions` is a field of `Session` (`session.options`). Records written before it existed kept
these choices as keys of `Session.meta` ("belief", "questioner", "ask_questions", "hide_seen",
"question_due", "plugir_method"); they still load (`from_meta`), and a session is written with the same
keys (`to_meta`), so saved searches, study databases and eval outputs read as before.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

LEGACY_ORDER = ("ask_questions", "plugir_method", "belief", "questioner", "hide_seen", "question_due")
BELIEF = "belief"  # the mode name of the belief over the collection (`modes/belief/`)


@dataclass
class SessionOptions:
    """The behaviour choices of one session (a default leaves the engine's own setting in force)."""

    mode: str = ""  # whose actions the generic ones reach (`Engine.reply`, `choose`, `skip`, `mark`, ...):
    #                 "belief": every action is evidence for the belief over the collection; "": each
    #                 action its own mode (answers the conversation, marks feedback, references composed)
    questioner: str = ""  # who writes its questions: "auto" or a questioner of the mode table; "": the
    #                       engine's `PlugIRConfig.questioner`
    ask_questions: bool | None = None  # False: no question after its rounds; None/True: the engine's setting
    hide_seen: bool | None = None  # show only images not shown before; None: `EngineConfig.hide_seen`
    question_due: bool | None = None  # (the study) a round's question is still to be asked; None: never set
    plugir_method: str = ""  # its own conversation method ("plugir", "zs", ...); "": the engine's

    @property
    def on_belief(self) -> bool:
        return self.mode == BELIEF

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> SessionOptions:
        """The options a record kept as `meta` keys (they are removed from `meta`)."""
        out = cls()
        if meta.pop("belief", None):
            out.mode = BELIEF
        for name in ("questioner", "plugir_method"):
            value = meta.pop(name, None)
            if value:
                setattr(out, name, str(value))
        for name in ("ask_questions", "hide_seen", "question_due"):
            if name in meta:
                value = meta.pop(name)
                setattr(out, name, None if value is None else bool(value))
        return out

    def merge(self, other: SessionOptions) -> SessionOptions:
        """These options with `other`'s set fields (a field left at its default keeps this one's value)."""
        defaults = SessionOptions()
        for f in fields(self):
            value = getattr(other, f.name)
            if value != getattr(defaults, f.name):
                setattr(self, f.name, value)
        return self

    def to_meta(self) -> dict[str, Any]:
        """The `meta` keys records have always carried for these choices (only those set)."""
        out: dict[str, Any] = {}
        for name in LEGACY_ORDER:  # the order the page, the study and eval wrote them in
            value = True if name == "belief" and self.mode == BELIEF else getattr(self, name, None)
            if value is not None and value != "":
                out[name] = value
        return out
