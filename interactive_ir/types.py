"""Typed values shared across the engine."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
"""A 2-D array of L2-normalised float32 row vectors."""


@dataclass(frozen=True)
class Hit:
    """One search result."""

    id: str  # the image id: its path relative to the indexed folder (posix separators)
    row: int  # the image's row in the index
    path: str  # absolute path of the image file (may not exist for caption-only collections)
    score: float  # similarity score, higher is better
    caption: str = ""  # first stored caption, "" when the index has none
    why: list[str] = field(default_factory=list)  # reasons recorded by a re-ranker, for the UI
    seen: bool = False  # True when an earlier round of the same search already showed it (a "seen" badge)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Candidates:
    """A candidate set (PlugIR's S_R) as row arrays, best first: no `Hit`, path or metadata per candidate.

    Metadata is read only for the few candidates something needs (`Retriever.hits`, `Retriever.ids_of`)."""

    scores: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32), compare=False)  # best first
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), compare=False)  # index rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, part: slice) -> Candidates:
        """The candidates in `part` (a slice of ranks)."""
        if not isinstance(part, slice):
            raise TypeError("Candidates take a slice of ranks; Retriever.hits gives typed results")
        return Candidates(self.scores[part], self.rows[part])

    @classmethod
    def of(cls, hits) -> Candidates:
        """From typed hits (a Candidates passes through)."""
        if isinstance(hits, Candidates):
            return hits
        hits = list(hits)
        return cls(np.array([h.score for h in hits], np.float32), np.array([h.row for h in hits], np.int64))


NONE_OF_THESE = "none of these"  # the label of the option that rejects every other option


@dataclass(frozen=True)
class Option:
    """One clickable answer of a question with options."""

    label: str  # what the user reads: a short caption, "none of these", "yes", "no"
    image_id: str = ""  # the image shown with it (a cluster's representative); "" for none/yes/no
    members: tuple[str, ...] = ()  # candidate image ids it stands for: pulled when chosen, pushed when another is

    def to_dict(self) -> dict:
        return {"label": self.label, "image_id": self.image_id, "members": list(self.members)}

    @classmethod
    def from_dict(cls, d: dict) -> Option:
        return cls(str(d.get("label", "")), str(d.get("image_id", "")), tuple(str(i) for i in d.get("members", ())))


QUESTION_KINDS = ("llm", "fallback", "choice", "yesno")


@dataclass(frozen=True)
class Question:
    """A question the system asks after a round's results."""

    text: str  # the question as shown ("Which is closest to your image?")
    kind: str = "llm"  # "llm" (written by the LLM), "fallback" (built from captions), "choice" or "yesno" (grounded)
    options: tuple[Option, ...] = ()  # the clickable answers (grounded questions); () = a typed answer
    round: int = -1  # the round whose results it asks about (-1: unknown, e.g. set by old code)

    @property
    def grounded(self) -> bool:
        """True for the questions answered by a click (no LLM wrote them)."""
        return self.kind in ("choice", "yesno")

    def to_dict(self) -> dict:
        return {"text": self.text, "kind": self.kind, "options": [o.to_dict() for o in self.options],
                "round": self.round}

    @classmethod
    def from_dict(cls, d: dict | None) -> Question | None:
        if not d:
            return None
        return cls(str(d.get("text", "")), str(d.get("kind", "llm")),
                   tuple(Option.from_dict(o) for o in d.get("options", ())), int(d.get("round", -1)))
