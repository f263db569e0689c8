"""The search engine: one object, shared read-only by every user, that moves a `Session` forward.

Modes are mixins, one module each, so they can be mixed within a session:
- conversation (PlugIR questions and answers): `interactive_ir.conversation.ConversationMixin`
- relevance feedback: `interactive_ir.feedback.FeedbackMixin`
- composed search (reference + relative caption): `interactive_ir.composed.ComposedMixin`
The engine receives its backends; it never builds them.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from interactive_ir.errors import BackendError, BadInputError, SessionError
from interactive_ir.retrieval import Retriever, check_query_text
from interactive_ir.session import Session, Turn
from interactive_ir.types import Hit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineConfig:
    k: int = 10  # results shown per round
    exclude_shown: bool = True  # each round shows only images not shown before in the session
    max_text_chars: int = 2000  # longest description, answer or relative caption accepted
    caption_cache_size: int = 10_000  # captioner captions kept per engine (by image id); 0 turns the cache off


QUERY_ROW_ATTR = "query_row"  # the Turn field with the row the turn ranked with (transient: never serialised)

# what to do when a text field is empty, by field
_EMPTY_HINTS = {
    "answer": "type an answer, or skip the question",
    "relative caption": "say how your image differs from the reference",
}


def _mixins() -> tuple[type, ...]:
    found = []
    for mod, cls in (("interactive_ir.conversation", "ConversationMixin"), ("interactive_ir.feedback", "FeedbackMixin"),
                     ("interactive_ir.composed", "ComposedMixin")):
        try:
            found.append(getattr(importlib.import_module(mod), cls))
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
    return tuple(found)


class EngineBase:
    """Text search turns, paging, 'found', and caption lookup. Mode mixins build on these."""

    def __init__(self, retriever: Retriever, llm=None, captioner=None, vlm=None,
                 config: EngineConfig = EngineConfig(), **mode_configs):
        self.retriever = retriever
        self.llm = llm  # an LLM backend or None (question mode disabled, feedback/compose still work)
        self.captioner = captioner  # a Captioner or None (stored captions only)
        self.vlm = vlm  # a VLM or None (no re-ranking)
        self.config = config
        self.mode_configs = mode_configs  # per-mode config dataclasses, by name ("plugir", "feedback", ...)
        self._captions: OrderedDict[str, str] = OrderedDict()  # captioner captions by image id, oldest first
        self._captions_lock = threading.Lock()  # the engine is shared by every user's thread

    @property
    def index(self):
        return self.retriever.index

    # --- building blocks ---------------------------------------------------------------------
    def check_text(self, text: str, what: str = "text") -> str:
        if what in _EMPTY_HINTS and not (text or "").strip():
            raise BadInputError(f"the {what} is empty: {_EMPTY_HINTS[what]}")
        try:
            return check_query_text(text, self.config.max_text_chars)
        except BadInputError as e:
            raise BadInputError(str(e).replace("the query", f"the {what}")) from None

    def exclude_for(self, session: Session) -> list[str]:
        return session.shown_ids() if self.config.exclude_shown else []

    def caption_of(self, image_id: str) -> str:
        """Stored caption, else one from the captioner, else ''."""
        return self.captions_of([image_id])[0]

    def captions_of(self, image_ids: Sequence[str]) -> list[str]:
        """Each image's stored caption, else the captioner's, else ''.

        The images with neither a stored nor a cached caption go to the captioner in one call; its
        captions are kept in a per-engine LRU cache (`EngineConfig.caption_cache_size` entries). Raises
        SessionError for an id not in the index and BackendError when the captioner fails; an image file
        that cannot be opened gets '' (and a warning in the log).
        """
        rows = []
        for image_id in image_ids:
            row = self.index.row_of.get(image_id)
            if row is None:
                raise SessionError(f"no image {image_id!r} in this index")
            rows.append(row)
        out = [self.index.records[row].caption for row in rows]
        if self.captioner is None:
            return out
        todo: dict[str, int] = {}  # id -> row, for the captions still missing
        with self._captions_lock:
            for i, (image_id, row) in enumerate(zip(image_ids, rows)):
                if out[i]:
                    continue
                if image_id in self._captions:
                    self._captions.move_to_end(image_id)
                    out[i] = self._captions[image_id]
                else:
                    todo[image_id] = row
        if todo:
            made = self._caption_rows(todo)
            out = [made.get(image_id, c) if not c else c for image_id, c in zip(image_ids, out)]
        return out

    def _caption_rows(self, todo: dict[str, int]) -> dict[str, str]:
        """One captioner call for the images `todo` (id -> row); caches and returns {id: caption}."""
        from interactive_ir.imageio import open_image

        ids, images = [], []
        for image_id, row in todo.items():
            try:
                images.append(open_image(self.index.image_path(row)))
                ids.append(image_id)
            except BadInputError as e:
                log.warning("cannot caption %s: %s", image_id, e)
        if not images:
            return {}
        caps = self.captioner.caption(images)
        if len(caps) != len(images):
            raise BackendError(f"the captioner returned {len(caps)} captions for {len(images)} images")
        made = {i: " ".join((c or "").split()) for i, c in zip(ids, caps)}
        size = max(0, int(self.config.caption_cache_size))
        if size:
            with self._captions_lock:
                for image_id, cap in made.items():
                    self._captions[image_id] = cap
                    self._captions.move_to_end(image_id)
                while len(self._captions) > size:
                    self._captions.popitem(last=False)
        return made

    def hits_of(self, turn: Turn) -> list[Hit]:
        """The hits a turn showed, rebuilt from the index (for the UI and CLI)."""
        return [self.retriever.hit(self.index.row_of[i], s) for i, s in zip(turn.shown, turn.scores)]

    def retrieve_row(self, session: Session, qrow, k: int | None = None) -> list[Hit]:
        return self.retriever.search_row(qrow, k or self.config.k, exclude=self.exclude_for(session))

    @staticmethod
    def note_row(turn: Turn, qrow) -> None:
        """Remember the query row `turn` ranked with (transient: the next question's candidates use it)."""
        turn.query_row = np.asarray(qrow, np.float32)

    def record(self, session: Session, turn: Turn, hits: Iterable[Hit], t_start: float) -> Turn:
        """Attach hits and timings, append the turn to the session, and return it.

        `t_start` is the `time.perf_counter()` reading when the turn began.
        """
        hits = list(hits)
        turn.shown = [h.id for h in hits]
        turn.scores = [round(float(h.score), 6) for h in hits]
        turn.why = {h.id: list(h.why) for h in hits if h.why}
        turn.started_at = turn.started_at or time.time()
        turn.finished_at = time.time()
        for prev in session.turns:
            prev.candidates = None  # only the newest round's candidates feed a question
        session.turns.append(turn)
        self.after_turn(session, turn)
        turn.timings["total"] = round(time.perf_counter() - t_start, 6)
        return turn

    def after_turn(self, session: Session, turn: Turn) -> None:
        """Hook run after every turn of any mode (the conversation mode asks its next question here)."""

    # --- plain text search (no LLM) ----------------------------------------------------------
    def new_session(self, **meta) -> Session:
        return Session(meta=dict(meta))

    def search_text(self, session: Session, text: str, kind: str = "search") -> Turn:
        """Retrieve for `text` as this round's query (the description on round 0)."""
        self._check_open(session)
        text = self.check_text(text, "description" if not session.turns else "query")
        t_start = time.perf_counter()
        if not session.turns:
            session.description = text
            kind = "describe"
        turn = Turn(round=len(session.turns), kind=kind, query=text, user_text=text, method="text",
                    started_at=time.time())
        t = time.perf_counter()
        qrow = self.retriever.text_query_row(self.retriever.encode_text(text))
        hits = self.retrieve_row(session, qrow)
        turn.timings["retrieve"] = round(time.perf_counter() - t, 6)
        self.note_row(turn, qrow)
        # a typed query starts afresh: it replaces what feedback and relative captions built up
        session.carry_row, session.composed_history, session.feedback_query = [], [], []
        return self.record(session, turn, hits, t_start)

    def found(self, session: Session, image_id: str) -> dict:
        """The user found the target: record round and rank (in the round it was shown)."""
        if session.found:
            raise SessionError(f"this search already ended: {session.found['id']} was found in round "
                               f"{session.found['round']}; start a new search")
        for t in reversed(session.turns):
            if image_id in t.shown:
                session.found = {"id": image_id, "round": t.round, "rank": t.shown.index(image_id) + 1,
                                 "time": time.time()}
                return session.found
        raise SessionError(f"image {image_id!r} was never shown in this search")

    def _check_open(self, session: Session) -> None:
        if session.ended:
            raise SessionError("this search has ended; start a new search")


def build_engine(retriever: Retriever, llm=None, captioner=None, vlm=None, config: EngineConfig = EngineConfig(),
                 **mode_configs) -> EngineBase:
    """An engine with every available mode mixed in."""
    cls = type("Engine", (*_mixins(), EngineBase), {})
    return cls(retriever, llm=llm, captioner=captioner, vlm=vlm, config=config, **mode_configs)
