"""Conversation mode (PlugIR): the system asks about the image the user has in mind and narrows the
results with each answer.

A turn of `answer` makes at most three LLM round trips: the reformulation of the dialogue into one
caption (CR, before retrieval), then in `after_turn` all q_n questioner prompts in one batched call and
all filter prompts in another. Methods (`PlugIRConfig.method`) follow the paper's ablation:
"zs" (dialogue concatenated, Table 17 questioner), "cr" (+ reformulation), "cr+rce" (+ candidates'
captions, Table 18), "plugir" (+ filtering, Algorithm 2). A session can pick its own method with
`session.meta["plugir_method"]` and turn questions off with `session.meta["ask_questions"] = False`.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from interactive_ir.errors import BackendError, BadInputError, IIRError, SessionError
from interactive_ir.llm_log import LoggedLLM
from interactive_ir.plugir import grounded
from interactive_ir.plugir import reformulate as cr
from interactive_ir.plugir.config import METHODS, PlugIRConfig, plugir_config, resolve_questioner
from interactive_ir.plugir.pipeline import QuestionState, carry_mix, next_question
from interactive_ir.plugir.prompts import concat_dialogue
from interactive_ir.plugir.rce import default_n_candidates, extract
from interactive_ir.session import Session, Turn
from interactive_ir.types import Hit, Question

__all__ = ["ConversationMixin", "PlugIRConfig", "plugir_config", "METHODS", "Question"]

log = logging.getLogger(__name__)

class _TurnLLM(LoggedLLM):
    """`LoggedLLM` that also sums the wall time spent in the backend."""

    def __init__(self, llm, log_list):
        super().__init__(llm, log_list)
        self.seconds = 0.0

    def generate(self, prompts, **kw):
        t = time.perf_counter()
        try:
            return super().generate(prompts, **kw)
        finally:
            self.seconds += time.perf_counter() - t


class ConversationMixin:
    """`start`, `answer`, `skip` and the `after_turn` hook that asks the next question."""

    # --- configuration ----------------------------------------------------------------------------
    @property
    def plugir_config(self) -> PlugIRConfig:
        cfg = self.mode_configs.get("plugir")
        if cfg is None:
            cfg = self.mode_configs["plugir"] = plugir_config()
        return cfg

    def plugir_for(self, session: Session) -> PlugIRConfig:
        """The engine's config with the session's own method, if it chose one."""
        return self.plugir_config.with_method(session.meta.get("plugir_method"))

    @property
    def questions_enabled(self) -> bool:
        """True when this engine asks questions by default (an LLM, or grounded questions without one)."""
        return self.plugir_config.ask_questions and bool(resolve_questioner(self.plugir_config.questioner, self.llm))

    def questioner_for(self, session: Session) -> str:
        """"llm", "grounded", or "" (no questions) for this session: `session.meta["questioner"]` (a study
        condition, a user's choice) else `PlugIRConfig.questioner`; "auto" resolves by the LLM."""
        return resolve_questioner(session.meta.get("questioner") or self.plugir_config.questioner, self.llm)

    def n_candidates(self, cfg: PlugIRConfig | None = None) -> int:
        cfg = cfg or self.plugir_config
        return min(len(self.index), cfg.n_candidates) if cfg.n_candidates else default_n_candidates(
            len(self.index), cfg.candidate_fraction, cfg.min_candidates)

    # --- mode methods -----------------------------------------------------------------------------
    def start(self, session: Session, description: str) -> Turn:
        """Round 0: retrieve for the description; `after_turn` then asks the first question."""
        self._check_open(session)
        if session.turns:
            raise SessionError("this search already has a description: answer the question, skip it, or start "
                               "a new search")
        text = self.check_text(description, "description")
        cfg = self.plugir_for(session)
        t_start = time.perf_counter()
        session.description = text
        turn = Turn(round=0, kind="describe", query=text, user_text=text, method=cfg.method, started_at=time.time())
        turn.extra["plugir"] = {"reformulated": False}
        hits = self._retrieve_for_question(session, turn, cfg)
        return self.record(session, turn, hits, t_start)

    def answer(self, session: Session, answer: str) -> Turn:
        """The user's answer to the pending question: rewrite the dialogue into a query, retrieve, ask again."""
        self._check_open(session)
        if not session.turns:
            raise SessionError("describe the image you are looking for first")
        question = session.pending_question
        if not question:
            raise SessionError("there is no question to answer: skip to get a question, or search again")
        text = self.check_text(answer, "answer")
        cfg = self.plugir_for(session)
        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind="answer", user_text=text, answered_question=question,
                    method=cfg.method, started_at=time.time())
        description = session.description or session.turns[0].query
        dialogue = [*session.dialogue(), (question, text)]
        limit = self.config.max_text_chars
        llm = _TurnLLM(self.llm, []) if self.llm is not None else None
        t = time.perf_counter()
        if cfg.reformulates and llm is not None:
            try:
                ref = cr.reformulate(llm, description, dialogue, temperature=cfg.reformulate_temperature,
                                     max_tokens=cfg.reformulate_max_tokens, limit=limit)
            except BackendError as e:
                turn.error = f"the reformulation model failed ({e}); searched with the dialogue as typed"
                ref = cr.Reformulation(concat_dialogue(description, dialogue)[:limit].strip(), False)
        else:
            ref = cr.Reformulation(concat_dialogue(description, dialogue)[:limit].strip(), False)
        turn.timings["reformulate"] = round(time.perf_counter() - t, 6)
        turn.query = ref.query
        # reformulate_fallback: CR was wanted but the model failed or gave no usable caption
        turn.extra["plugir"] = {"reformulated": ref.reformulated,
                                "reformulate_fallback": bool(cfg.reformulates and llm is not None and not ref.reformulated)}
        # the session changes only from here on
        session.pending_question = ""
        self._add_llm_log(turn, llm)
        hits = self._retrieve_for_question(session, turn, cfg)
        return self.record(session, turn, hits, t_start)

    def skip(self, session: Session) -> Turn:
        """Drop the pending question (if any), show the next results for the same query, ask another."""
        self._check_open(session)
        if not session.turns:
            raise SessionError("describe the image you are looking for first")
        query = session.current_query or session.description
        if not query:
            raise SessionError("there is no text query to continue from: describe the image or answer a question")
        cfg = self.plugir_for(session)
        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind="skip", query=query, method=cfg.method, started_at=time.time())
        turn.extra["plugir"] = {"skipped_question": session.pending_question, "reformulated": False}
        session.pending_question = ""
        hits = self._retrieve_for_question(session, turn, cfg)
        return self.record(session, turn, hits, t_start)

    def after_turn(self, session: Session, turn: Turn) -> None:
        """Ask the next question about the current results (any mode's turn), or clear the pending one."""
        session.set_question(None)
        parent = getattr(super(), "after_turn", None)
        if parent is not None:
            parent(session, turn)
        if self._asks(session):
            self._ask(session, turn)

    def ask(self, session: Session) -> Question | None:
        """The ASK step on its own: write the next question about the last round's results, make it the
        pending one and return it (None when this session asks no questions, or there is nothing to ask)."""
        self._check_open(session)
        turn = session.last
        if turn is None:
            raise SessionError("describe the image you are looking for first")
        session.set_question(None)
        if not self._asks(session):
            return None
        t = time.perf_counter()
        q = self._ask(session, turn)
        turn.timings["total"] = round(turn.timings.get("total", 0.0) + time.perf_counter() - t, 6)
        return q

    def _ask(self, session: Session, turn: Turn) -> Question | None:
        query = turn.query or session.current_query or session.description
        if not query:
            return None
        cfg = self.plugir_for(session)
        questioner = self.questioner_for(session)
        cands = turn.candidates
        if questioner == "grounded":
            try:
                if not cands:
                    cands = self._candidates_after(session, turn, query, cfg, grounded=True)
                q = self._grounded_question(session, turn, cfg, cands)
            except IIRError as e:
                log.warning("grounded question step failed: %s", e)
                turn.error = "; ".join(x for x in (turn.error, f"could not prepare a question ({e})") if x)
                return None
            return self._set_question(session, turn, q)
        llm = _TurnLLM(self.llm, [])
        try:
            if cands is None:
                cands = self._candidates_after(session, turn, query, cfg)
            state = QuestionState(
                description=session.description or session.turns[0].query or query,
                dialogue=session.dialogue(),
                query=query,
                asked=[t.question for t in session.turns if t.question],
                candidates=cands,
                carry=self._carry(session),
                carry_weight=cfg.carry_weight,
            )
            res = next_question(llm, self.retriever, self.captions_of, cfg, state, self.config.max_text_chars)
        except IIRError as e:
            log.warning("question step failed: %s", e)
            turn.error = "; ".join(x for x in (turn.error, f"could not prepare a question ({e})") if x)
            self._add_llm_log(turn, llm)
            return None
        if res.error:
            turn.error = "; ".join(x for x in (turn.error, res.error) if x)
        turn.extra.setdefault("plugir", {}).update(res.extra)
        for k, v in res.timings.items():
            turn.timings[k] = round(turn.timings.get(k, 0.0) + v, 6)
        self._add_llm_log(turn, llm)
        if not res.question:
            return None
        return self._set_question(session, turn, Question(res.question, "fallback" if res.fallback else "llm", (),
                                                          turn.round))

    @staticmethod
    def _set_question(session: Session, turn: Turn, q: Question | None) -> Question | None:
        if q is None:
            return None
        turn.question = q.text
        turn.question_fallback = q.kind == "fallback"
        turn.asked = q
        session.set_question(q)
        return q

    def _grounded_question(self, session: Session, turn: Turn, cfg: PlugIRConfig, cands: list[Hit]) -> Question | None:
        """A question with clickable options from the candidates (no LLM): see `plugir.grounded`."""
        if not cands:
            return None
        t = time.perf_counter()
        ids = [h.id for h in cands]
        n_asked = sum(1 for t_ in session.turns if t_.asked is not None and t_.asked.grounded)
        style = grounded.style_for(cfg.grounded_style, n_asked)
        known = " ".join([session.description, *(f"{q} {a}" for q, a in session.dialogue())])
        asked = [t_.question for t_ in session.turns if t_.question]
        info: dict = {"style": style}
        q = None
        if style == "yesno":
            q = grounded.yesno_question(ids, [h.caption for h in cands], known, asked, turn.round)
        if q is None:
            ctx = extract(ids, self.index.vectors([h.row for h in cands], "image"), cfg.grounded_options,
                          cfg.kmeans_seed, cfg.sim_scale, cfg.kmeans_n_init)
            rep_ids = [ids[i] for i in ctx.representatives]
            try:
                caps = self.captions_of(rep_ids)
            except BackendError as e:
                info["caption_error"] = str(e)
                caps = [cands[i].caption for i in ctx.representatives]
            ctx.captions = list(caps)
            info["rce"] = ctx.summary()
            q = grounded.choice_question(ids, ctx.labels, ctx.representatives, caps, turn.round)
            if len(q.options) < 3:  # one cluster: a choice would tell nothing; a splitting word may
                q = grounded.yesno_question(ids, [h.caption for h in cands], known, asked, turn.round) or q
        info["kind"] = q.kind
        turn.extra.setdefault("plugir", {})["grounded"] = info
        turn.timings["question"] = round(turn.timings.get("question", 0.0) + time.perf_counter() - t, 6)
        return q

    def answer_choice(self, session: Session, option: int, question: Question | str | None = None) -> Turn:
        """The user clicked option `option` (0-based) of the pending question with options.

        The chosen option's candidates pull the query row and the other options' push it
        (`grounded.reshape`); the dialogue records the click as text. `question` (the question the click
        was made on, as the page showed it) is checked against the pending one: a click on a question that
        a newer action replaced raises SessionError and changes nothing.
        """
        self._check_open(session)
        if not session.turns:
            raise SessionError("describe the image you are looking for first")
        q = session.question
        shown_text = question.text if isinstance(question, Question) else question
        if q is None or not q.options:
            if shown_text:
                raise SessionError("that question is no longer open: a newer action replaced it; answer the "
                                   "current question or search again")
            raise SessionError("there is no question with options to answer: type an answer, or skip")
        if shown_text is not None and (shown_text != q.text or (isinstance(question, Question) and question != q)):
            raise SessionError("that question is no longer open: a newer action replaced it; choose among the "
                               "options of the current question")
        try:
            index = int(option)
        except (TypeError, ValueError):
            raise BadInputError(f"the option must be a number from 1 to {len(q.options)}, got {option!r}") from None
        if not 0 <= index < len(q.options):
            raise BadInputError(f"there is no option {index + 1}: the question has {len(q.options)} options")
        chosen = q.options[index]
        cfg = self.plugir_for(session)
        t_start = time.perf_counter()
        base = self.row_of(session, session.last)
        turn = Turn(round=len(session.turns), kind="answer", query=session.current_query or session.description,
                    user_text=grounded.answer_text(q, chosen), answered_question=q.text, method="grounded",
                    started_at=time.time())
        turn.extra["choice"] = {"index": index, "label": chosen.label, "image_id": chosen.image_id, "kind": q.kind}
        turn.extra["plugir"] = {"reformulated": False}
        t = time.perf_counter()
        row_of = self.index.row_of
        option_rows = [grounded.search_rows(self.retriever, [row_of[i] for i in o.members if i in row_of])
                       if o.members else None for o in q.options]
        qrow = grounded.reshape(base, option_rows, index, cfg.grounded_pull, cfg.grounded_push)
        turn.timings["reshape"] = round(time.perf_counter() - t, 6)
        # the session changes only from here on
        session.set_question(None)
        hits = self._retrieve_for_question(session, turn, cfg, qrow=qrow)
        session.carry_row = [float(x) for x in qrow]  # later typed answers and skips keep what the clicks did
        return self.record(session, turn, hits, t_start)

    def row_of(self, session: Session, turn: Turn):
        """The query row `turn` ranked with (rebuilt from its query text and the carried row for a turn
        read back from JSON)."""
        if turn.query_row is not None:
            return turn.query_row
        query = turn.query or session.current_query or session.description
        qrow = self.retriever.text_query_row(self.retriever.encode_text(query))
        return carry_mix(qrow, self._carry(session), self.plugir_for(session).carry_weight)

    # --- helpers --------------------------------------------------------------------------------
    def _asks(self, session: Session) -> bool:
        """Will `after_turn` ask a question in this session?"""
        return (self.plugir_config.ask_questions and session.meta.get("ask_questions") is not False
                and not session.ended and bool(self.questioner_for(session)))

    def _retrieve_for_question(self, session: Session, turn: Turn, cfg: PlugIRConfig, qrow=None) -> list[Hit]:
        """Retrieve this turn's results; in the same search, the candidate set S_R for the question step.

        `qrow` None: the row of the turn's query text (with the carried row mixed in)."""
        t = time.perf_counter()
        k = self.config.k
        wants = cfg.uses_candidates or self.questioner_for(session) == "grounded"
        n = self.n_candidates(cfg) if wants and self._asks(session) else 0
        if qrow is None:
            qrow = self.retriever.text_query_row(self.retriever.encode_text(turn.query))
            qrow = carry_mix(qrow, self._carry(session), cfg.carry_weight)
        hits = self.retrieve_row(session, qrow, max(k, n))
        self.note_row(turn, qrow)
        turn.candidates = hits[:n] if n else None  # S_R of this round's question (None: the question step searches it)
        turn.timings["retrieve"] = round(time.perf_counter() - t, 6)
        return hits[:k]

    def _candidates_after(self, session: Session, turn: Turn, query: str, cfg: PlugIRConfig,
                          grounded: bool = False) -> list[Hit]:
        """S_R for a turn made by another mode: search its query text, excluding what earlier turns showed."""
        if not cfg.uses_candidates and not grounded:
            return self.hits_of(turn)
        t = time.perf_counter()
        earlier = {i for t_ in session.turns if t_ is not turn for i in t_.shown} if self.config.exclude_shown else set()
        qrow = turn.query_row  # the row the turn ranked with (feedback, relative caption)
        if qrow is None:
            qrow = self.retriever.text_query_row(self.retriever.encode_text(query))
        hits = self.retriever.search_row(qrow, self.n_candidates(cfg), exclude=earlier)
        turn.timings["candidates"] = round(time.perf_counter() - t, 6)
        return hits

    @staticmethod
    def _carry(session: Session):
        """The row of the session's latest feedback or relative round (None when there is none).

        Feedback and relative-caption rounds rank with rows a typed text cannot express (caption expansion,
        Rocchio, composed references). An answer or skip after them mixes that row into its text row
        (`PlugIRConfig.carry_weight`), so a mixed session does not lose what the clicks or the reference did;
        the question step ranks its KL candidates the same way. A typed search clears it.
        """
        if not session.carry_row:
            return None
        return np.asarray(session.carry_row, np.float32)

    @staticmethod
    def _add_llm_log(turn: Turn, llm: _TurnLLM | None) -> None:
        if llm is None or not llm.log:
            return
        turn.llm_calls.extend(c.to_dict() for c in llm.log)
        llm.log.clear()
        turn.timings["llm"] = round(turn.timings.get("llm", 0.0) + llm.seconds, 6)
        turn.extra["llm_round_trips"] = turn.extra.get("llm_round_trips", 0) + llm.round_trips
        llm.seconds, llm.round_trips = 0.0, 0
