"""Rounds moved by the belief over the collection (`retrieval.belief`): "this one is closest" and "none of these".

A click on the shown image that looks most like the one in mind (or on "none of these") is evidence for
every image of the collection at once; the next page shows the most probable unseen images and a few
chosen to learn from (`Turn.extra["learn"]`). The belief's text term is the latest round's query row, so
the belief follows whatever mode moved the query before; it lives on the session (`Session.belief`, never
serialised) and is rebuilt from the session's rounds when missing (a session loaded from JSON).
"""

from __future__ import annotations

import time

import numpy as np

from interactive_ir.core.session import Session, Turn
from interactive_ir.core.text_search import OnCore, TextSearch, left_out
from interactive_ir.errors import SessionError
from interactive_ir.retrieval.belief import Belief, BeliefConfig
from interactive_ir.types import Hit

CLOSEST = "closest"  # the turn kind of a belief round


class BeliefRounds(OnCore):
    """The "closest image" action over a shared `TextSearch` core."""

    def __init__(self, core: TextSearch, config: BeliefConfig):
        self.core = core
        self.belief_config = config

    # --- the session's belief ---------------------------------------------------------------------
    def _query_row(self, session: Session) -> np.ndarray:
        """The latest round's query row (re-encoded from its text after a JSON round trip)."""
        for t in reversed(session.turns):
            if t.query_row is not None:
                return np.asarray(t.query_row, np.float32)
        text = session.current_query or session.description
        if not text:
            raise SessionError("describe the image first: a click needs results to choose from")
        return self.retriever.text_query_row(self.retriever.encode_text(text))

    def belief_of(self, session: Session) -> Belief:
        """The session's belief, brought up to date with its latest query and every image it has shown."""
        qrow = self._query_row(session)
        b = session.belief
        if b is None:
            b = Belief.over(self.retriever, qrow, self.belief_config)
            for t in session.turns:  # replay the clicks of a session that was loaded without its belief
                if t.kind == CLOSEST and t.extra.get("options"):
                    options = [i for i in t.extra["options"] if i in self.index.row_of]
                    clicked = t.extra.get("clicked")
                    b.click(self._rows(options), options.index(clicked) if clicked in options else None)
            session.belief = b
        elif b.query is None or not np.array_equal(b.query, qrow):
            b.set_query(qrow)
        # shown and not found: not the one; and what the session never shows (a benchmark's reference image)
        b.rule_out(self._rows([*session.shown_ids(), *left_out(session)], strict=False))
        return b

    def _rows(self, ids, strict: bool = True) -> list[int]:
        rows = []
        for i in ids:
            r = self.index.row_of.get(i)
            if r is None:
                if strict:
                    raise SessionError(f"image {i!r} is no longer in this index: start a new search")
                continue
            rows.append(int(r))
        return rows

    # --- the action ---------------------------------------------------------------------------------
    def closest(self, session: Session, image_id: str | None) -> Turn:
        """The user picked `image_id` among the last round's results as closest to the image in mind (None:
        none of these is close). The next page comes from the updated belief."""
        self.core.check_open(session)
        last = session.last
        if last is None or not last.shown:
            raise SessionError("describe the image first: a click needs results to choose from")
        if image_id is not None and image_id not in last.shown:
            raise SessionError(f"image {image_id!r} is not among the results on the page: pick one of them")
        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind=CLOSEST, query=last.query, method="belief",
                    user_text=image_id or "none of these", started_at=time.time())
        b = self.belief_of(session)
        options = [i for i in last.shown if i in self.index.row_of]
        b.click(self._rows(options), options.index(image_id) if image_id in options else None)
        posterior = b.log_posterior()  # once: the page and the round's ranking both read it
        rows, logp, n_best = b.page(self.config.k, logp=posterior)
        turn.timings["retrieve"] = round(time.perf_counter() - t_start, 6)
        hits = [Hit(h.id, h.row, h.path, float(np.exp(lp)), h.caption)
                for h, lp in zip(self.retriever.hits(np.exp(logp).astype(np.float32), rows), logp)]
        turn.extra.update({"clicked": image_id, "options": options, "learn": [h.id for h in hits[n_best:]]})
        turn.query_row = np.asarray(b.query, np.float32)
        turn.ranking = b.ranking(len(self.index), posterior)
        return self.core.record(session, turn, hits, t_start)
