"""The ASK step: the next question about a round's results, by PlugIR's LLM questioner or grounded (no LLM).

`Asker.prepare` computes a `QuestionStep` without touching the session; `Asker.apply` makes its question
the pending one (refused when the session moved past that round). It also holds what the conversation
mode and the question share: the per-session PlugIR config and questioner, and the retrieval that fetches
a round's results and its candidate set S_R in one search.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from interactive_ir.backends.redact import public_clause, redact_text
from interactive_ir.core.model_calls import MeteredLLM, add_llm_calls
from interactive_ir.core.session import Session, Turn
from interactive_ir.core.steps import QuestionStep, add_timings
from interactive_ir.core.text_search import PAGING_KINDS, TextSearch, left_out
from interactive_ir.errors import BackendError, Cancelled, IIRError, SessionError
from interactive_ir.modes.conversation.plugir import grounded
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig, resolve_questioner
from interactive_ir.modes.conversation.plugir.pipeline import QuestionState, next_question
from interactive_ir.modes.conversation.plugir.rce import default_n_candidates, extract
from interactive_ir.retrieval.query_updates import carry_mix
from interactive_ir.types import Candidates, Hit, Question

log = logging.getLogger(__name__)


class Asker:
    """Writes questions. Receives the shared search core, the LLM (or None) and the PlugIR config."""

    def __init__(self, core: TextSearch, llm, config: PlugIRConfig):
        self.core = core
        self.llm = llm
        self.config = config

    # --- settings per session ------------------------------------------------------------------------
    def plugir_for(self, session: Session) -> PlugIRConfig:
        """The engine's config with the session's own method, if it chose one."""
        return self.config.with_method(session.options.plugir_method or None)

    @property
    def questions_enabled(self) -> bool:
        """True when this engine asks questions by default (an LLM, or grounded questions without one)."""
        return self.config.ask_questions and bool(resolve_questioner(self.config.questioner, self.llm))

    def questioner_for(self, session: Session) -> str:
        """"llm", "grounded", or "" (no questions) for this session: `session.options.questioner` (a study
        condition, a user's choice) else `PlugIRConfig.questioner`; "auto" resolves by the LLM."""
        return resolve_questioner(session.options.questioner or self.config.questioner, self.llm)

    def asks(self, session: Session) -> bool:
        """Does this session get a question after each round?"""
        return (self.config.ask_questions and session.options.ask_questions is not False
                and not session.ended and bool(self.questioner_for(session)))

    def n_candidates(self, cfg: PlugIRConfig | None = None) -> int:
        cfg = cfg or self.config
        size = len(self.core.index)
        return min(size, cfg.n_candidates) if cfg.n_candidates else default_n_candidates(
            size, cfg.candidate_fraction, cfg.min_candidates, cfg.max_candidates)

    @staticmethod
    def carry(session: Session) -> np.ndarray | None:
        """The row of the session's latest feedback, relative or clicked-answer round (None when none).

        Those rounds rank with rows a typed text cannot express (caption expansion, Rocchio, composed
        references, a grounded click). A typed answer or a skip after them mixes that row into its text row
        (`PlugIRConfig.carry_weight`), so a mixed session does not lose what they did; KL ranks its
        candidates the same way. A typed search clears it.
        """
        if not session.carry_row:
            return None
        return np.asarray(session.carry_row, np.float32)

    def text_row(self, session: Session, text: str, cfg: PlugIRConfig) -> np.ndarray:
        """The fused row of `text` with the carried row mixed in."""
        qrow = self.core.retriever.text_query_row(self.core.retriever.encode_text(text))
        return carry_mix(qrow, self.carry(session), cfg.carry_weight)

    def row_of(self, session: Session, turn: Turn) -> np.ndarray:
        """The query row `turn` ranked with (rebuilt from its query text and the carried row for a turn read
        back from JSON, which does not keep rows)."""
        if turn.query_row is not None:
            return turn.query_row
        return self.text_row(session, turn.query or session.current_query or session.description,
                             self.plugir_for(session))

    # --- retrieval with candidates -------------------------------------------------------------------
    def retrieve(self, session: Session, qrow: np.ndarray, cfg: PlugIRConfig, page: bool = False,
                 before: Turn | None = None) -> tuple[list[Hit], Candidates | None]:
        """(the top-k results, S_R or None) for `qrow` in one search: S_R, the top n candidates, is
        fetched when this session's next question uses it (None: the question step searches it). Only the
        k shown results become typed hits; S_R stays rows and scores."""
        k = self.core.config.k
        wants = cfg.uses_candidates or self.questioner_for(session) == "grounded"
        n = self.n_candidates(cfg) if wants and self.asks(session) else 0
        scores, rows = self.core.retrieve_rows(session, qrow, max(k, n), page=page, before=before)
        hits = self.core.retriever.hits(scores[:k], rows[:k])
        return hits, (Candidates(scores[:n], rows[:n]) if n else None)

    def candidates_for(self, session: Session, turn: Turn, cfg: PlugIRConfig, grounded_: bool) -> Candidates:
        """S_R for a round that did not fetch it (another mode's, or questions deferred): its own row."""
        if not cfg.uses_candidates and not grounded_:
            rows = [self.core.index.row_of[i] for i in turn.shown]
            return Candidates(np.asarray(turn.scores[: len(rows)], np.float32), np.asarray(rows, np.int64))
        pages = self.core.hides_seen(session) or turn.kind in PAGING_KINDS
        earlier = {i for t in session.turns if t is not turn for i in t.shown} if pages else set()
        earlier.update(left_out(session))  # never shown: not an option either
        return Candidates(*self.core.retriever.search_rows(self.row_of(session, turn), self.n_candidates(cfg),
                                                            exclude=earlier, **self.core.scope_for(session)))

    # --- the step ------------------------------------------------------------------------------------
    def prepare(self, session: Session) -> QuestionStep:
        """The next question about the last round's results; the session is not changed. Raises `Cancelled`
        when the LLM's call was cancelled (superseded work); other model failures are in `QuestionStep.error`."""
        turn = session.last
        if turn is None:
            raise SessionError("describe the image you are looking for first")
        if not self.asks(session):
            return QuestionStep(turn.round, None)
        query = turn.query or session.current_query or session.description
        if not query:
            return QuestionStep(turn.round, None)
        cfg = self.plugir_for(session)
        questioner = self.questioner_for(session)
        timings: dict = {}
        cands = turn.candidates
        if questioner == "grounded":
            try:
                if not cands:  # None, or an empty set
                    t = time.perf_counter()
                    cands = self.candidates_for(session, turn, cfg, grounded_=True)
                    timings["candidates"] = time.perf_counter() - t
                q, extra = self._grounded(session, turn, cfg, cands, timings)
            except IIRError as e:
                log.warning("grounded question step failed: %s", redact_text(e))
                return QuestionStep(turn.round, None, timings=timings,
                                    error=f"could not prepare a question: {public_clause(e)}")
            return QuestionStep(turn.round, q, {"grounded": extra}, timings)
        llm = MeteredLLM(self.llm)
        try:
            if cands is None:
                t = time.perf_counter()
                cands = self.candidates_for(session, turn, cfg, grounded_=False)
                if cfg.uses_candidates:
                    timings["candidates"] = time.perf_counter() - t
            state = QuestionState(
                description=session.description or session.turns[0].query or query,
                dialogue=session.dialogue(),
                query=query,
                asked=[t_.question for t_ in session.turns if t_.question],
                candidates=cands,
                carry=self.carry(session),
                carry_weight=cfg.carry_weight,
            )
            res = next_question(llm, self.core.retriever, self.core.captions_of, cfg, state,
                                self.core.config.max_text_chars)
        except Cancelled:  # superseded: nobody waits for this question
            raise
        except IIRError as e:
            log.warning("question step failed: %s", redact_text(e))
            return QuestionStep(turn.round, None, timings=timings, llm_calls=llm.calls(), llm_seconds=llm.seconds,
                                round_trips=llm.round_trips, error=f"could not prepare a question: {public_clause(e)}")
        q = Question(res.question, "fallback" if res.fallback else "llm", (), turn.round) if res.question else None
        return QuestionStep(turn.round, q, dict(res.extra), {**timings, **res.timings}, llm.calls(), llm.seconds,
                            llm.round_trips, res.error)

    def apply(self, session: Session, step: QuestionStep) -> Question | None:
        """Record `step` on its round and make its question the pending one.

        Raises SessionError when the session has moved past that round (a newer action superseded it)."""
        turn = session.last
        if turn is None or turn.round != step.round or session.ended:
            raise SessionError(f"this question was written for round {step.round}, and the search has moved on: "
                               "it was dropped")
        if step.error:
            turn.error = "; ".join(x for x in (turn.error, step.error) if x)
        if step.extra:
            turn.extra.setdefault("plugir", {}).update(step.extra)
        add_timings(turn, step.timings)
        add_llm_calls(turn, step.llm_calls, step.llm_seconds, step.round_trips)
        session.set_question(step.question)
        if step.question is not None:
            turn.question = step.question.text
            turn.question_fallback = step.question.kind == "fallback"
            turn.asked = step.question
        return step.question

    def ask(self, session: Session) -> Question | None:
        """`prepare` then `apply`; the time it took is added to the round's total."""
        t = time.perf_counter()
        q = self.apply(session, self.prepare(session))
        last = session.last
        last.timings["total"] = round(last.timings.get("total", 0.0) + time.perf_counter() - t, 6)
        return q

    def _grounded(self, session: Session, turn: Turn, cfg: PlugIRConfig, cands: Candidates,
                  timings: dict) -> tuple[Question | None, dict]:
        """A question with clickable options from the candidates (no LLM): see `plugir.grounded`."""
        if not len(cands):
            return None, {}
        t = time.perf_counter()
        recs = self.core.retriever.records_of(cands.rows)  # options name every member: ids and captions of all
        ids = [rec.id for rec in recs]
        cand_captions = [rec.caption for rec in recs]
        n_asked = sum(1 for t_ in session.turns if t_.asked is not None and t_.asked.grounded)
        style = grounded.style_for(cfg.grounded_style, n_asked)
        known = " ".join([session.description, *(f"{q} {a}" for q, a in session.dialogue())])
        asked = [t_.question for t_ in session.turns if t_.question]
        info: dict = {"style": style}
        q = None
        if style == "yesno":
            q = grounded.yesno_question(ids, cand_captions, known, asked, turn.round)
        if q is None:
            ctx = extract(ids, self.core.index.vectors(cands.rows, "image"), cfg.grounded_options,
                          cfg.kmeans_seed, cfg.sim_scale, cfg.kmeans_n_init)
            rep_ids = [ids[i] for i in ctx.representatives]
            try:
                caps = self.core.captions_of(rep_ids)
            except BackendError as e:
                info["caption_error"] = redact_text(e)
                caps = [cand_captions[i] for i in ctx.representatives]
            ctx.captions = list(caps)
            info["rce"] = ctx.summary()
            q = grounded.choice_question(ids, ctx.labels, ctx.representatives, caps, turn.round)
            if len(q.options) < 3:  # one cluster: a choice would tell nothing; a splitting word may
                q = grounded.yesno_question(ids, cand_captions, known, asked, turn.round) or q
        info["kind"] = q.kind
        timings["question"] = time.perf_counter() - t
        return q, info
