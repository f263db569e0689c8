"""The parts every search mode shares: `EngineConfig`, and `TextSearch` (text checks, captions, retrieval
with the seen/hidden policy, recording a round, plain text search, "found").

`interactive_ir.engine.Engine` owns one `TextSearch` and hands it to each mode object.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from interactive_ir.config import DEFAULT_K, MAX_TEXT_CHARS
from interactive_ir.core.options import SessionOptions
from interactive_ir.core.session import Session, Turn
from interactive_ir.errors import BackendError, BadInputError, SessionError
from interactive_ir.retrieval.retriever import Retriever, check_query_text
from interactive_ir.types import Hit

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class EngineConfig:
    """Engine settings; each field can be set by env `IIR_<FIELD>` (`engine_config`)."""

    k: int = DEFAULT_K  # results shown per round
    hide_seen: bool = False  # False: a round shows the top-k over the whole collection, images shown before marked
    #                          seen (Hit.seen, Turn.seen), so a better query brings the best ones back; "More like my
    #                          marks" (feedback) and skip still page through unseen images. True: every round shows
    #                          only images not shown before in the session (the evaluation protocols' setting)
    max_text_chars: int = MAX_TEXT_CHARS  # longest description, answer or relative caption accepted (the
    #                                       retriever reads the same variable, IIR_MAX_TEXT_CHARS)
    caption_cache_size: int = 10_000  # captioner captions kept per engine (by image id); 0 turns the cache off
    fold_similarity: float = 0.95  # results whose vectors have at least this cosine show as one card, "+N similar"
    #                                (retrieval/duplicates.py; bench/bench_duplicates.py); 0 turns folding off
    no_match_quantile: float = 0.05  # "no close match" when a description's best result stands out less than in
    #                                  this share of calibration searches whose image came first (the false alarms;
    #                                  its manifest's score_profile, retrieval/score_profile.py); 0: off


def engine_config(environ=None, **overrides) -> EngineConfig:
    """The defaults, then `IIR_*` env vars (IIR_HIDE_SEEN, ...), then non-None `overrides` (CLI flags). `k` is
    never read from the environment: IIR_K is the page's (`assembly.options.AppConfig`); each entry point gives
    the engine its k."""
    import os

    from interactive_ir.config import apply_env, apply_overrides

    env = {n: v for n, v in (os.environ if environ is None else environ).items() if n != _PAGE_K_ENV}
    if env.get(_OLD_HIDE_SEEN_ENV, "") != "" and env.get("IIR_HIDE_SEEN", "") == "":  # a deployment set up before
        env = {**env, "IIR_HIDE_SEEN": env[_OLD_HIDE_SEEN_ENV]}
    return apply_overrides(apply_env(EngineConfig(), environ=env), **overrides)


_PAGE_K_ENV = "IIR_K"  # the page's k (AppConfig.k), not EngineConfig.k
_OLD_HIDE_SEEN_ENV = "IIR_EXCLUDE_SHOWN"  # hide_seen's env variable when the field was called exclude_shown


PAGING_KINDS = ("feedback", "skip")  # rounds that page through unseen images whatever EngineConfig.hide_seen says
NOTE_KINDS = ("describe", "search")  # rounds ranked by a typed description alone: "no close match" can judge them
QUERY_ROW_ATTR = "query_row"  # the Turn field with the row the turn ranked with (transient: never serialised)

# what to do when a text field is empty, by field
_EMPTY_HINTS = {
    "answer": "type an answer, or skip the question",
    "relative caption": "say how your image differs from the reference",
}


class TextSearch:
    """What every mode builds on: text checks, caption lookup, retrieval with the seen/hidden policy,
    recording a round into the session, plain text search and "found". Shared read-only by every user."""

    def __init__(self, retriever: Retriever, captioner=None, config: EngineConfig = EngineConfig()):
        self.retriever = retriever
        self.captioner = captioner  # a Captioner or None (stored captions only)
        self.config = config
        self.record_hooks: list[Callable[[Session, Turn], None]] = []  # called with each recorded round (probes)
        self._captions: OrderedDict[str, str] = OrderedDict()  # captioner captions by image id, oldest first
        self._captions_lock = threading.Lock()  # the engine is shared by every user's thread
        self._histograms: dict[str, tuple] = {}  # a search's filters -> its date histogram (a few kept)

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

    def hides_seen(self, session: Session) -> bool:
        """Whether this session's rounds show only unseen images: its own choice, `session.options.hide_seen`
        (the web page's per-tab option), else `EngineConfig.hide_seen`."""
        own = session.options.hide_seen
        return self.config.hide_seen if own is None else bool(own)

    def exclude_for(self, session: Session, page: bool = False, before: Turn | None = None) -> list[str]:
        """The ids a round leaves out: `left_out(session)`, and those shown before when it pages (`page`) or
        the session hides them (`hides_seen`). `before`: a round already in the session (a refinement of it):
        only what the rounds before it showed."""
        fixed = left_out(session)
        if not (page or self.hides_seen(session)):
            return fixed
        turns = session.turns if before is None else session.turns[: session.turns.index(before)]
        return list(dict.fromkeys([*fixed, *(i for t in turns for i in t.shown)]))

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
        from interactive_ir.index.imageio import open_image

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
        """The hits a turn showed, rebuilt from the index (for the UI and CLI); `seen` marks those an earlier
        round showed too."""
        seen = set(turn.seen)
        return [dataclasses.replace(self.retriever.hit(self.index.row_of[i], s), seen=i in seen)
                for i, s in zip(turn.shown, turn.scores)]

    def read_query(self, session: Session, text: str) -> str:
        """The description in a typed query (`query_language.py`); its filters and NOT terms become the
        session's when it has any, or when it starts the session. QueryError names a malformed token, an
        unknown field or one the index holds no data for."""
        from interactive_ir.retrieval.query_language import parse_query

        q = parse_query(text or "")
        if q.plain and session.turns:
            return q.text
        self.retriever.scope_rows(q.filters)  # checked now: a bad filter (or one keeping nothing) fails first
        filters = " ".join(f.token for f in q.filters)
        session.filters, session.not_terms = filters, list(q.nots)
        return q.text

    def scope_for(self, session: Session) -> dict:
        """`allow=` and `nots=` for this session's searches (its filters' rows, its NOT terms' query rows)."""
        if not (session.filters or session.not_terms):
            return {}
        from interactive_ir.retrieval.query_language import parse_query

        allow = self.retriever.filter_rows(parse_query(session.filters).filters)
        return {"allow": allow, "nots": self.retriever.not_rows(session.not_terms)}

    def retrieve_row(self, session: Session, qrow, k: int | None = None, page: bool = False,
                     before: Turn | None = None) -> list[Hit]:
        return self.retriever.search_row(qrow, k or self.config.k, exclude=self.exclude_for(session, page, before),
                                         **self.scope_for(session))

    def retrieve_rows(self, session: Session, qrow, k: int | None = None, page: bool = False,
                      before: Turn | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows) of `retrieve_row`'s search, best first: no metadata read (`Retriever.hits` types them)."""
        return self.retriever.search_rows(qrow, k or self.config.k, exclude=self.exclude_for(session, page, before),
                                          **self.scope_for(session))

    def record(self, session: Session, turn: Turn, hits: Iterable[Hit], t_start: float) -> Turn:
        """Attach hits and timings, append the turn to the session, and return it.

        `t_start` is the `time.perf_counter()` reading when the turn began.
        """
        set_results(session, turn, hits)
        turn.started_at = turn.started_at or time.time()
        turn.finished_at = time.time()
        for prev in session.turns:
            prev.candidates = None  # only the newest round's candidates feed a question
        session.set_question(None)  # a new round answers, skips or leaves the pending question
        session.turns.append(turn)
        for hook in self.record_hooks:
            hook(session, turn)
        turn.timings["total"] = round(time.perf_counter() - t_start, 6)
        return turn

    # --- plain text search (no LLM) ----------------------------------------------------------
    def new_session(self, options: SessionOptions | None = None, **meta) -> Session:
        """A new search: `options` (its mode, questions, hide seen), `meta` its data (source, target, ...)."""
        return Session(meta=dict(meta), options=options if options is not None else SessionOptions())

    def search_text(self, session: Session, text: str, kind: str = "search") -> Turn:
        """Retrieve for `text` as this round's query (the description on round 0)."""
        self.check_open(session)
        text = self.check_text(self.read_query(session, text), "description" if not session.turns else "query")
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
        turn.query_row = np.asarray(qrow, np.float32)
        # a typed query starts afresh: it replaces what feedback and relative captions built up
        session.carry_row, session.composed_history, session.feedback_query = [], [], []
        return self.record(session, turn, hits, t_start)

    def close_match(self, session: Session, turn: Turn | None = None):
        """Whether a typed description's round (`turn`, default the last) has a close match: how far its best
        result stands out from the next ones, against this index's calibration (`retrieval.score_profile`);
        None for other rounds, a search with NOT terms (they move scores), or an index without a current profile."""
        from interactive_ir.retrieval.score_profile import PROFILE_KEY, STANDOUT_K, CloseMatch, close_match

        turn = turn if turn is not None else session.last
        if (turn is None or turn.kind not in NOTE_KINDS or not turn.scores or session.not_terms
                or self.config.no_match_quantile <= 0):
            return None
        unknown = self._unknown_words(turn)
        if unknown:  # no caption uses any of its words ("asdf qwerty"): whatever stands out, nothing is close
            return CloseMatch(round(float(turn.scores[0]), 4), 0.0, 0.0, self.config.no_match_quantile, None, True,
                              unknown)
        profile = self.index.manifest.get(PROFILE_KEY)
        if not isinstance(profile, dict) or turn.query_row is None:
            return None
        scores, _ = self.retriever.search_rows(turn.query_row, STANDOUT_K, **self.scope_for(session))
        return close_match(profile, scores, self.retriever.default_tau, self.config.no_match_quantile)

    def _unknown_words(self, turn: Turn) -> tuple[str, ...]:
        """The typed description's words when no stored caption of a caption index uses any of them (not for a
        multilingual embedder: its queries need not share the captions' language)."""
        from interactive_ir.backends.embedders import is_multilingual
        from interactive_ir.retrieval.vocabulary import caption_vocabulary, unknown_words

        spec = str(getattr(getattr(self.retriever, "embedder", None), "spec", "") or "")
        if is_multilingual(spec) or not (turn.query or "").strip():
            return ()
        return unknown_words(turn.query, caption_vocabulary(self.index))

    def duplicate_groups(self, turn: Turn) -> list[list[str]]:
        """The turn's shown ids as groups of near-duplicates (`retrieval.duplicates.fold`), each headed by its
        best ranked image, in rank order; every group has one id when folding is off."""
        from interactive_ir.retrieval.duplicates import fold

        if not turn.shown or self.config.fold_similarity <= 0:
            return [[i] for i in turn.shown]
        rows = [self.index.row_of[i] for i in turn.shown]
        groups = fold(self.index.vectors(rows, "image"), float(self.config.fold_similarity))
        return [[turn.shown[i] for i in g] for g in groups]

    # --- the page's filter row, sort by date and date histogram -----------------------------------
    def facets(self) -> dict[str, list[tuple[str, int]]]:
        """The commonest folders, cameras, years and user-field values of the collection, with counts
        (`index.filters.facets`); {} for an index without metadata."""
        from interactive_ir.index.filters import facets

        return facets(self.index.meta.sql())

    def date_histogram(self, session: Session) -> tuple[str, list[tuple[str, int]]]:
        """How many of the images the session's filters keep (all without filters) were taken in each year, or
        in each month when they span two years or fewer (`index.filters.date_counts`)."""
        from interactive_ir.index.filters import date_counts
        from interactive_ir.retrieval.query_language import parse_query

        rows = self.retriever.filter_rows(parse_query(session.filters or "").filters)
        key = session.filters or ""
        with self._captions_lock:
            got = self._histograms.get(key)
        if got is None:
            got = date_counts(self.index.meta.sql(), rows)
            with self._captions_lock:
                if len(self._histograms) >= 16:
                    self._histograms.pop(next(iter(self._histograms)))
                self._histograms[key] = got
        return got

    def dates_of(self, image_ids: Sequence[str]) -> dict[str, float]:
        """id -> date (seconds since 1970: EXIF date taken, else the file's time) of those images that have one."""
        from interactive_ir.index.filters import dates_of

        rows = self.index.row_of.many(image_ids)
        got = dates_of(self.index.meta.sql(), rows.values())
        return {i: got[r] for i, r in rows.items() if r in got}

    # --- more like this (no LLM) -------------------------------------------------------------
    def like_row(self, image_id: str) -> np.ndarray:
        """The query row of "more like this" for an indexed image: its image vector on an image index
        (image->image: the caption half of the row is left out), its caption's vector on a caption index."""
        row = self.index.row_of.get(image_id)
        if row is None:
            raise SessionError(f"no image {image_id!r} in this index")
        vec = self.retriever.row_vector(row, "image")  # a caption index's "image" vectors are its captions
        if not np.any(vec):
            raise BadInputError(f"image {image_id!r} has no vector to search with (no caption): describe it "
                                "in words instead")
        return np.asarray(self.retriever.query_row(vec, None), np.float32)

    def more_like(self, session: Session, image_id: str) -> Turn:
        """A new round of the same search ranked by one result's own vector ("more like this", `like_row`):
        the session's filters and NOT terms stay, the image itself is left out, and later answers and skips
        keep this round's effect (the carried row)."""
        self.check_open(session)
        if not session.turns:
            raise SessionError("there is no search yet: describe the image you are looking for first")
        image_id = str(image_id or "").strip()
        qrow = self.like_row(image_id)
        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind="like", query=session.current_query, method="like",
                    started_at=time.time(), extra={"like": image_id})
        exclude = list(dict.fromkeys([*self.exclude_for(session), image_id]))
        t = time.perf_counter()
        hits = self.retriever.search_row(qrow, self.config.k, exclude=exclude, **self.scope_for(session))
        turn.timings["retrieve"] = round(time.perf_counter() - t, 6)
        turn.query_row = qrow
        session.carry_row = [float(x) for x in qrow]  # later answers and skips keep this round's effect
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

    def check_open(self, session: Session) -> None:
        if session.ended:
            raise SessionError("this search has ended; start a new search")


def left_out(session: Session) -> list[str]:
    """The ids this session never shows, `session.meta["exclude"]` (a composed benchmark's reference image)."""
    return [str(i) for i in session.meta.get("exclude") or ()]


def set_results(session: Session, turn: Turn, hits: Iterable[Hit]) -> None:
    """Write `hits` into `turn` (ids, scores, re-ranker reasons) and mark those an earlier round showed as seen."""
    hits = list(hits)
    earlier = {i for t in session.turns if t is not turn for i in t.shown}
    turn.shown = [h.id for h in hits]
    turn.scores = [round(float(h.score), 6) for h in hits]
    turn.seen = [i for i in turn.shown if i in earlier]
    turn.why = {h.id: list(h.why) for h in hits if h.why}


class OnCore:
    """A part built on a `TextSearch` core (`self.core`): its retriever, index, captioner and config, read
    through the core so every mode sees the same ones."""

    core: TextSearch

    @property
    def retriever(self) -> Retriever:
        return self.core.retriever

    @property
    def index(self):
        return self.core.index

    @property
    def captioner(self):
        return self.core.captioner

    @property
    def config(self) -> EngineConfig:
        """The engine's config (k, text limits, the seen/hidden policy)."""
        return self.core.config

