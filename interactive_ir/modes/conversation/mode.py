"""Conversation mode (PlugIR): the system asks about the image the user has in mind and narrows the
results with each answer.

A round of `answer` makes at most three LLM round trips: the reformulation of the dialogue into one
caption (CR: the REFINE step), then in the ASK step (`asking.Asker`) all q_n questioner prompts in one
batched call and all filter prompts in another. `answer(..., refine=False)` retrieves at once with the
dialogue as typed and leaves the rewrite to `refine`, which replaces the results and marks the round
refined. Methods (`PlugIRConfig.method`) follow the paper's ablation: "zs" (dialogue concatenated,
Table 17 questioner), "cr" (+ reformulation), "cr+rce" (+ candidates' captions, Table 18), "plugir"
(+ filtering, Algorithm 2). A session can pick its own method with `session.options.plugir_method`, its
questioner with `session.options.questioner`, and turn questions off with `session.options.ask_questions = False`.
A grounded question (no LLM) is answered by a click: `answer_choice`.
"""

from __future__ import annotations

import logging
import time

from interactive_ir.backends.redact import log_failure, public_clause
from interactive_ir.core.model_calls import MeteredLLM, add_llm_calls
from interactive_ir.core.session import Session, Turn
from interactive_ir.core.steps import Refinement, add_timings
from interactive_ir.core.text_search import TextSearch, set_results
from interactive_ir.errors import BackendError, BadInputError, SessionError
from interactive_ir.modes.conversation.asking import Asker
from interactive_ir.modes.conversation.plugir import grounded
from interactive_ir.modes.conversation.plugir import reformulate as cr
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig, plugir_config
from interactive_ir.modes.conversation.plugir.prompts import concat_dialogue
from interactive_ir.retrieval import query_updates
from interactive_ir.types import Question

__all__ = ["Conversation", "PlugIRConfig", "plugir_config", "Question", "Refinement"]

log = logging.getLogger(__name__)


class Conversation:
    """`start`, `answer`, `skip`, `answer_choice` and `refine`. Each records a round with its results; the
    engine asks the next question afterwards (`Asker`). Receives the search core, the LLM and the asker."""

    def __init__(self, core: TextSearch, llm, asker: Asker):
        self.core = core
        self.llm = llm  # an LLM backend or None: answers are then searched as typed
        self.asker = asker

    # --- rounds ---------------------------------------------------------------------------------------
    def start(self, session: Session, description: str) -> Turn:
        """Round 0: retrieve for the description."""
        self.core.check_open(session)
        if session.turns:
            raise SessionError("this search already has a description: answer the question, skip it, or start "
                               "a new search")
        text = self.core.check_text(self.core.read_query(session, description), "description")
        cfg = self.asker.plugir_for(session)
        t_start = time.perf_counter()
        session.description = text
        turn = Turn(round=0, kind="describe", query=text, user_text=text, method=cfg.method, started_at=time.time())
        turn.extra["plugir"] = {"reformulated": False}
        return self._retrieve_and_record(session, turn, cfg, t_start)

    def answer(self, session: Session, answer: str, refine: bool = True) -> Turn:
        """The user's answer to the pending question.

        `refine` True: the LLM rewrites the dialogue into one query (CR), then the round retrieves.
        False: the round retrieves at once with the dialogue as typed; `refine` rewrites it later.
        """
        self.core.check_open(session)
        if not session.turns:
            raise SessionError("describe the image you are looking for first")
        question = session.pending_question
        if not question:
            raise SessionError("there is no question to answer: skip to get a question, or search again")
        text = self.core.check_text(answer, "answer")
        cfg = self.asker.plugir_for(session)
        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind="answer", user_text=text, answered_question=question,
                    method=cfg.method, started_at=time.time())
        description = session.description or session.turns[0].query
        dialogue = [*session.dialogue(), (question, text)]
        wants_cr = cfg.reformulates and self.llm is not None
        if refine and wants_cr:
            ref, llm, error, seconds = self._reformulate(description, dialogue, cfg)
            turn.error = error
            turn.timings["reformulate"] = round(seconds, 6)
            add_llm_calls(turn, llm.calls(), llm.seconds, llm.round_trips)
        else:
            ref = cr.Reformulation(self._typed(description, dialogue), False)
            turn.timings["reformulate"] = 0.0
        turn.query = ref.query
        # reformulate_fallback: CR was wanted but the model failed or gave no usable caption
        turn.extra["plugir"] = {"reformulated": ref.reformulated,
                                "reformulate_fallback": bool(refine and wants_cr and not ref.reformulated)}
        if wants_cr and not refine:
            turn.extra["plugir"]["refine_due"] = True  # `refine` rewrites it
        return self._retrieve_and_record(session, turn, cfg, t_start)

    def skip(self, session: Session) -> Turn:
        """Drop the pending question (if any) and show the next page for the same query."""
        self.core.check_open(session)
        if not session.turns:
            raise SessionError("describe the image you are looking for first")
        query = session.current_query or session.description
        if not query:
            raise SessionError("there is no text query to continue from: describe the image or answer a question")
        cfg = self.asker.plugir_for(session)
        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind="skip", query=query, method=cfg.method, started_at=time.time())
        turn.extra["plugir"] = {"skipped_question": session.pending_question, "reformulated": False}
        return self._retrieve_and_record(session, turn, cfg, t_start, page=True)  # the same query: the next page

    def answer_choice(self, session: Session, option: int, question: Question | str | None = None) -> Turn:
        """The user clicked option `option` (0-based) of the pending question with options.

        The chosen option's candidates pull the query row and the other options' push it
        (`query_updates.reshape`); the dialogue records the click as text. `question` (the question the click
        was made on, as the page showed it) is checked against the pending one: a click on a question that
        a newer action replaced raises SessionError and changes nothing.
        """
        self.core.check_open(session)
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
        cfg = self.asker.plugir_for(session)
        t_start = time.perf_counter()
        base = self.asker.row_of(session, session.last)
        turn = Turn(round=len(session.turns), kind="answer", query=session.current_query or session.description,
                    user_text=grounded.answer_text(q, chosen), answered_question=q.text, method="grounded",
                    started_at=time.time())
        turn.extra["choice"] = {"index": index, "label": chosen.label, "image_id": chosen.image_id, "kind": q.kind}
        turn.extra["plugir"] = {"reformulated": False}
        t = time.perf_counter()
        row_of = self.core.index.row_of
        option_rows = [grounded.search_rows(self.core.retriever, [row_of[i] for i in o.members if i in row_of])
                       if o.members else None for o in q.options]
        qrow = query_updates.reshape(base, option_rows, index, cfg.grounded_pull, cfg.grounded_push,
                                cfg.grounded_temperature)
        turn.timings["reshape"] = round(time.perf_counter() - t, 6)
        turn = self._retrieve_and_record(session, turn, cfg, t_start, qrow=qrow)
        session.carry_row = [float(x) for x in qrow]  # later typed answers and skips keep what the clicks did
        return turn

    # --- REFINE ---------------------------------------------------------------------------------------
    def prepare_refine(self, session: Session) -> Refinement | None:
        """The LLM's rewrite of the last round's dialogue and its results, for an answer retrieved with
        `refine=False`; None when there is nothing to refine. The session is not changed."""
        turn = session.last
        if turn is None or turn.kind != "answer" or not turn.extra.get("plugir", {}).get("refine_due"):
            return None
        cfg = self.asker.plugir_for(session)
        description = session.description or session.turns[0].query
        dialogue = session.dialogue()
        ref, llm, error, seconds = self._reformulate(description, dialogue, cfg)
        t = time.perf_counter()
        qrow = self.asker.text_row(session, ref.query, cfg)
        hits, cands = self.asker.retrieve(session, qrow, cfg, before=turn)
        return Refinement(turn.round, turn.query, ref.query, ref.reformulated, tuple(hits), qrow,
                          cands, llm.calls(), llm.seconds, llm.round_trips,
                          {"reformulate": seconds, "retrieve": time.perf_counter() - t}, error)

    def apply_refine(self, session: Session, r: Refinement) -> Turn:
        """Replace the last round's query and results with `r` and mark the round refined.

        Raises SessionError when the session moved past that round, or the round changed since."""
        turn = session.last
        info = turn.extra.get("plugir", {}) if turn is not None else {}
        if turn is None or turn.round != r.round or turn.query != r.replaces or not info.get("refine_due") \
                or session.ended:
            raise SessionError(f"this rewrite was made for round {r.round}, and the search has moved on: it was "
                               "dropped")
        info.update(refine_due=False, refined=True, reformulated=r.reformulated,
                    reformulate_fallback=not r.reformulated, unrefined_query=turn.query)
        turn.query = r.query
        set_results(session, turn, r.hits)
        turn.query_row = r.row
        turn.candidates = r.candidates
        if r.error:
            turn.error = "; ".join(x for x in (turn.error, r.error) if x)
        add_timings(turn, {k: v for k, v in r.timings.items() if k != "retrieve"})
        turn.timings["refine_retrieve"] = round(r.timings.get("retrieve", 0.0), 6)
        add_llm_calls(turn, r.llm_calls, r.llm_seconds, r.round_trips)
        turn.timings["total"] = round(turn.timings.get("total", 0.0) + sum(r.timings.values()), 6)
        return turn

    # --- building blocks -----------------------------------------------------------------------------
    def _typed(self, description: str, dialogue) -> str:
        return concat_dialogue(description, dialogue)[: self.core.config.max_text_chars].strip()

    def _reformulate(self, description: str, dialogue, cfg: PlugIRConfig):
        """(Reformulation, the metered LLM, an error message, seconds): CR, or the dialogue as typed on failure."""
        llm = MeteredLLM(self.llm)
        t = time.perf_counter()
        error = ""
        try:
            ref = cr.reformulate(llm, description, dialogue, temperature=cfg.reformulate_temperature,
                                 max_tokens=cfg.reformulate_max_tokens, limit=self.core.config.max_text_chars)
        except BackendError as e:
            log_failure(log, "the reformulation", e)
            error = f"the reformulation model failed: {public_clause(e)}; searched with the dialogue as typed"
            ref = cr.Reformulation(self._typed(description, dialogue), False)
        return ref, llm, error, time.perf_counter() - t

    def _retrieve_and_record(self, session: Session, turn: Turn, cfg: PlugIRConfig, t_start: float,
                             qrow=None, page: bool = False) -> Turn:
        """RETRIEVE: the round's results (and S_R for its question) for `qrow` (None: the turn's query
        text with the carried row mixed in); then the round is recorded."""
        t = time.perf_counter()
        if qrow is None:
            qrow = self.asker.text_row(session, turn.query, cfg)
        hits, cands = self.asker.retrieve(session, qrow, cfg, page=page)
        turn.query_row = qrow
        turn.candidates = cands
        turn.timings["retrieve"] = round(time.perf_counter() - t, 6)
        return self.core.record(session, turn, hits, t_start)
