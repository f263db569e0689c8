"""Relevance feedback: the user marks shown results relevant (or not), and the next page shows only
images not shown before.

Methods (Zhu et al., "Enhancing Interactive Image Retrieval With Query Rewriting Using Large Language Models
and Vision Language Models"):
- "expand": the expanded query C^t = the query followed by the captions of up to 2 relevant images
  (stored, else from the captioner); C^t grows over consecutive feedback rounds. No LLM.
- "summary", "keywords", "cot": an LLM rewrites C^t (topic summary, "image of <tags>", or keywords then
  a new description); a junk reply or a failing LLM falls back to "expand" (noted on the turn).
- "rocchio": q' = alpha q + beta mean(relevant image vectors) - gamma mean(not-relevant image vectors)
  on the query embedding (alpha=1, beta=0.75, gamma=0.15); q is the previous Rocchio vector when the
  previous round was Rocchio, else the embedding of the current query. Stored in `session.feedback_query`.
Text methods use only relevant marks; with no caption to add (only "not relevant" marks, or no captions
and no captioner) they fall back to Rocchio, which uses both.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from interactive_ir.backends.redact import log_failure, public_clause
from interactive_ir.core.session import Session, Turn
from interactive_ir.core.text_search import OnCore, TextSearch
from interactive_ir.errors import BackendError, BadInputError
from interactive_ir.modes.feedback.config import ENV_PREFIX, MODE, FeedbackConfig, feedback_config
from interactive_ir.retrieval.query_updates import rocchio

log = logging.getLogger(__name__)


def plain_expansion(expanded: list[str]) -> str:
    """C^t as one query: the texts as sentences, in order ("a dog. a brown dog on sand.")."""
    return " ".join(t.strip().rstrip(" .") + "." for t in expanded if t.strip(" ."))


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[: cut.rfind(" ")] if " " in cut else cut


class Feedback(OnCore):
    """`feedback(session, relevant, irrelevant=(), method=None) -> Turn`. Receives the search core, the LLM
    (None: the text methods expand with captions only) and its config."""

    def __init__(self, core: TextSearch, llm, config: FeedbackConfig):
        self.core = core
        self.llm = llm
        self.feedback_config = config

    def resolve_feedback_method(self, method: str | None) -> str:
        return MODE.resolve(method or self.feedback_config.method, self.llm is not None)

    def feedback(self, session: Session, relevant: list[str], irrelevant: list[str] = (),
                 method: str | None = None) -> Turn:
        """One feedback round over the marks; the page shows only unseen images."""
        self.core.check_open(session)
        rel = list(dict.fromkeys(str(i) for i in (relevant or [])))
        irr = list(dict.fromkeys(str(i) for i in (irrelevant or [])))
        if not rel and not irr:
            raise BadInputError("mark at least one shown image as relevant or not relevant")
        both = set(rel) & set(irr)
        if both:
            raise BadInputError(f"image {sorted(both)[0]!r} is marked both relevant and not relevant")
        session.require_shown(rel + irr)
        m = self.resolve_feedback_method(method)
        cfg = self.feedback_config

        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind="feedback", relevant=rel, irrelevant=irr, method=m,
                    started_at=time.time())
        new_rocchio = None
        if m == "rocchio":
            new_rocchio = self._rocchio_vector(session, rel, irr, turn)
            qvec = new_rocchio
        else:
            qvec = self._text_feedback(session, rel, turn, m)
            if qvec is None:  # nothing to add to the query: use the marks in the vector space instead
                turn.extra["fallback"] = ("no caption to add (no relevant image with a caption): "
                                          "used Rocchio on the marks")
                turn.method = "rocchio"
                new_rocchio = self._rocchio_vector(session, rel, irr, turn)
                qvec = new_rocchio
        t = time.perf_counter()
        qrow = self.retriever.text_query_row(qvec, cfg.tau)
        hits = self.retriever.search_row(qrow, self.config.k, exclude=self.core.exclude_for(session, page=True),
                                         **self.core.scope_for(session))
        turn.timings["retrieve"] = round(time.perf_counter() - t, 6)
        if new_rocchio is not None:
            session.feedback_query = [float(x) for x in new_rocchio]
        turn.query_row = qrow
        session.carry_row = [float(x) for x in qrow]  # later answers and skips keep this round's effect
        return self.core.record(session, turn, hits, t_start)

    # --- vector space --------------------------------------------------------------------------------
    def _rocchio_vector(self, session: Session, rel: list[str], irr: list[str], turn: Turn) -> np.ndarray:
        cfg = self.feedback_config
        t = time.perf_counter()
        last = session.last
        if last is not None and last.kind == "feedback" and last.method == "rocchio" and session.feedback_query:
            q = np.asarray(session.feedback_query, np.float32)
            turn.extra["rocchio_base"] = "previous Rocchio vector"
        else:
            q = self.retriever.encode_text(session.current_query or session.description)
            turn.extra["rocchio_base"] = "current query"
        rows = self.index.row_of
        rel_v = self.index.vectors([rows[i] for i in rel], "image") if rel else None
        irr_v = self.index.vectors([rows[i] for i in irr], "image") if irr else None
        out = rocchio(q, rel_v, irr_v, cfg.rocchio_alpha, cfg.rocchio_beta, cfg.rocchio_gamma)
        turn.query = session.current_query
        turn.timings["rocchio"] = round(time.perf_counter() - t, 6)
        return out

    # --- natural-language space ----------------------------------------------------------------------
    def _expansion_base(self, session: Session) -> list[str]:
        """C^{t-1}: the previous feedback round's expansion, else [the current query]."""
        last = session.last
        if last is not None and last.kind == "feedback" and last.extra.get("expanded"):
            return list(last.extra["expanded"])
        return [session.current_query or session.description]

    def _relevant_captions(self, rel: list[str], turn: Turn) -> list[str]:
        """Captions of the first relevant images (one captioner call for those without a stored one)."""
        ids = rel[: max(0, self.feedback_config.max_relevant_captions)]
        try:
            caps = self.core.captions_of(ids)
        except BackendError as e:  # the stored captions still count
            caps = [self.index.records[self.index.row_of[i]].caption for i in ids]
            turn.extra.setdefault("caption_errors", []).extend(f"{i}: {e}" for i, c in zip(ids, caps) if not c)
        return [" ".join(c.split()) for c in caps if c and c.strip()]

    def _text_feedback(self, session: Session, rel: list[str], turn: Turn, method: str) -> np.ndarray | None:
        """Expand (and rewrite) the query; None when there is no caption to add."""
        from interactive_ir.core.model_calls import generate
        from interactive_ir.modes.feedback.prompts import build_prompt, parse_rewrite

        cfg = self.feedback_config
        t = time.perf_counter()
        base = self._expansion_base(session)
        known = {b.lower().rstrip(". ") for b in base}
        caps = self._relevant_captions(rel, turn)
        turn.timings["captions"] = round(time.perf_counter() - t, 6)
        if not caps:
            return None
        new = list(dict.fromkeys(c for c in caps if c.lower().rstrip(". ") not in known))  # [] keeps the query
        expanded = base + new
        turn.extra["expanded"] = expanded
        turn.extra["captions_added"] = new
        query = plain_expansion(expanded)
        n_feedback = 1 + sum(1 for t in session.turns if t.kind == "feedback")
        rewrites = MODE.method(method).needs_llm
        if rewrites and n_feedback < cfg.rewrite_from:
            turn.extra["rewrite"] = f"feedback round {n_feedback}: caption expansion only (the LLM rewrites from " \
                                    f"feedback round {cfg.rewrite_from}, as Zhu et al.)"
        elif rewrites:
            try:
                reply = generate(self.llm, [build_prompt(method, expanded)], turn=turn, stage="rewrite",
                                 temperature=cfg.temperature, max_tokens=cfg.max_tokens)[0]
                rewritten = parse_rewrite(method, reply, expanded, cfg.keywords_prefix)
                if rewritten:
                    query = rewritten
                else:
                    turn.extra["fallback"] = "the LLM reply had no usable rewrite: used the plain expansion"
            except BackendError as e:
                log_failure(log, "the feedback rewrite", e)
                turn.error = f"the LLM failed: {public_clause(e)}; searched with the plain expansion"
        query = _shorten(query, self.config.max_text_chars)
        turn.query = query
        t = time.perf_counter()
        vec = self.retriever.encode_text(query)
        turn.timings["encode"] = round(time.perf_counter() - t, 6)
        return vec


__all__ = ["ENV_PREFIX", "FeedbackConfig", "Feedback", "feedback_config", "plain_expansion", "rocchio"]
