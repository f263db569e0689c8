"""What a simulated user knows about its target: the information boundary, as a type.

A person searching for a photo knows what the photo shows; they do not know its file name, its rank
in the system, or the caption the index stores for it. `TargetKnowledge` is all a simulated user
receives about its target:

- `captions`: the description it started with, then the target's held-out captions (never the index
  caption: `queries.make_queries` keeps that one apart);
- `pixels`: the target image itself, for VLM-based users only (None otherwise);
- `recognise`: whether a *shown* image is the target (or one of the query's other relevant images), as a
  person who sees it would know. It holds only salted hashes of those ids, so the target id is nowhere
  in the object;
- `key`: a hash of the query id, to seed the user's random choices per query (stable across runs).

The runner (`runner.run_query`) is the one place that sees both the query and the index: it builds the
knowledge with `knowledge_of` and hands only that to the simulated user.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

_SALT = secrets.token_hex(8)  # per process: hashes cannot be matched against a table made beforehand


def _h(salt: str, image_id: str) -> str:
    return hashlib.sha256(f"{salt}\0{image_id}".encode()).hexdigest()


@dataclass(frozen=True)
class Recogniser:
    """Says whether a shown image is the target or a relevant one, without holding their ids."""

    salt: str
    target_hash: str
    relevant_hashes: frozenset[str] = frozenset()

    @classmethod
    def of(cls, target: str, relevant: Iterable[str] = (), salt: str = _SALT) -> Recogniser:
        return cls(salt, _h(salt, target), frozenset(_h(salt, r) for r in relevant if r and r != target))

    def is_target(self, image_id: str) -> bool:
        return _h(self.salt, image_id) == self.target_hash

    def is_relevant(self, image_id: str) -> bool:
        """The target or one of the query's listed relevant images (ground truth)."""
        h = _h(self.salt, image_id)
        return h == self.target_hash or h in self.relevant_hashes


@dataclass(frozen=True)
class TargetKnowledge:
    """Everything a simulated user may know about its target (see the module docstring)."""

    captions: tuple[str, ...]  # the description, then the held-out captions (never the index caption)
    recognise: Recogniser  # tells whether a shown image is the target / relevant (hashes only)
    key: str  # hash of the query id: seeds the user's random choices per query
    pixels: object | None = field(default=None, compare=False)  # the target image (PIL), VLM users only

    @property
    def description(self) -> str:
        return self.captions[0] if self.captions else ""

    @property
    def held_out(self) -> tuple[str, ...]:
        """The captions beyond the description (what an oracle may reveal, one per round)."""
        return self.captions[1:]


def knowledge_of(query, index=None, pixels: bool = False, salt: str = _SALT) -> TargetKnowledge:
    """The knowledge of `query`'s target: its description and held-out captions, and with `pixels` (and an
    `index` holding the target) the target image. `query` is an `evaluation.queries.Query`."""
    image = None
    if pixels and index is not None:
        from interactive_ir.errors import BadInputError
        from interactive_ir.index.imageio import open_image

        row = index.row_of.get(query.target)
        if row is not None:
            try:
                image = open_image(index.image_path(row))
            except BadInputError:
                image = None
    return TargetKnowledge(
        captions=tuple(query.knowledge),
        recognise=Recogniser.of(query.target, query.relevant, salt),
        key=_h("iir-sim-key", query.qid)[:16],  # a fixed salt: seeds stay the same from run to run
        pixels=image,
    )
