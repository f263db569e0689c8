"""The search rounds of a task, and the system's question after each.

A round checks the phase, the mode and the budget, runs the engine's action on a copy of the session
(`engines.run_round`, one table of the engine's actions), then logs the participant's input, the results
and the new session in one transaction; an error is logged with the input and raised, the session
unchanged. The question (the slow LLM step) runs afterwards in `ask`, outside the participant's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interactive_ir.core.session import Session, Turn
from interactive_ir.errors import BadInputError, IIRError, SessionError
from interactive_ir.study.engines import ConditionEngines, ask_step, run_round
from interactive_ir.study.flow.state import ActionRefused, Participants, copy_session, require
from interactive_ir.study.flow.tasks import TaskFlow
from interactive_ir.study.log import Event
from interactive_ir.study.progress import Progress
from interactive_ir.study.ranks import target_rank

# round action -> (the mode its condition must offer, None: any; the action its errors are logged as)
ROUND_KINDS = {
    "describe": (None, "description"),
    "answer": ("conversation", "answer"),
    "choose": ("conversation", "answer"),
    "skip": ("conversation", "skip"),
    "feedback": ("feedback", "feedback"),
    "relative": ("composed", "relative_caption"),
    "search": ("text", "search"),
}


TYPED = ("describe", "answer", "relative", "search")  # the rounds of the participant's own words (locked at first)


class DescriptionLocked(SessionError):
    """The task's organiser description is still the only query (`lock_description_s`): no typed words yet."""


class StaleQuestionError(SessionError):
    """A click on an option of a question that is no longer the pending one (a newer action replaced it)."""


def _keep_transient(src: Turn | None, dst: Turn | None) -> None:
    """Carry a turn's transient attributes (the query row it ranked with) over to its copy."""
    if src is not None and dst is not None:
        dst.__dict__.update({k: v for k, v in src.__dict__.items() if k.startswith("_")})


def _model_latencies(turn: Turn) -> list[dict]:
    return [{"stage": c.get("stage", ""), "model": c.get("model") or c.get("backend", ""),
             "latency_s": c.get("latency_s"), "error": c.get("error")} for c in turn.llm_calls]


def _question_options(turn: Turn) -> dict:
    """The shown question's kind and clickable options (label, image id), for the log and its replay."""
    q = turn.asked
    if q is None or not q.options:
        return {}
    return {"question_kind": q.kind, "options": [o.to_dict() for o in q.options]}


class Rounds:
    """Runs participants' search rounds. Every round method takes `ask`: True runs the question step too
    (scripts); the web page passes False, shows the results, then calls `ask` separately."""

    def __init__(self, participants: Participants, engines: ConditionEngines, tasks: TaskFlow):
        self.participants = participants
        self.engines = engines
        self.tasks = tasks

    # --- the rounds ---------------------------------------------------------------------------------
    def describe(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True,
                 organiser: bool = False) -> Turn:
        """Round 0: the first description (a conversation condition asks its first question after it);
        `organiser`: the task's locked description, run at its start (logged with by: "organiser")."""
        payload = {"text": text, **({"by": "organiser"} if organiser else {})}
        return self.round(participant, "describe", [("description", payload)], (text,), client_ts, ask,
                          organiser=organiser)

    def answer(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        with self.participants.locked(participant) as p:
            question = p.session.pending_question if p.session else ""
        return self.round(participant, "answer", [("answer", {"text": text, "question": question})], (text,),
                          client_ts, ask)

    def choose(self, participant: str, index: Any, question_text: str, client_ts: float | None = None,
               ask: bool = True, question_round: Any = None) -> Turn:
        """A click on option `index` (0-based) of the pending question with options (thumbnails, yes/no, none
        of these), logged as an answer whose text is the option's label. `question_text` (and, when given,
        `question_round`: the round the question asked about) is the question the click was made on: one that
        is no longer pending (the next round may ask the same words) raises StaleQuestionError, nothing logged."""
        with self.participants.locked(participant) as p:
            q, n = self._chosen(p, index, question_text, question_round, client_ts)
            chosen = q.options[n]
        payload = {"text": chosen.label, "question": q.text, "option": n, "kind": q.kind,
                   "image_id": chosen.image_id}
        return self.round(participant, "choose", [("answer", payload)], (n, q), client_ts, ask)

    def _chosen(self, p: Progress, index: Any, question_text: str, question_round: Any, client_ts: float | None):
        """(the pending question, the chosen option's number), or StaleQuestionError / BadInputError (logged)."""
        q = p.session.question if p.session else None
        try:
            rnd = None if question_round in (None, "") else int(question_round)
        except (TypeError, ValueError):
            rnd = -2  # garbage: matches no question
        if q is None or not q.options or q.text != question_text or (rnd is not None and rnd != q.round):
            raise StaleQuestionError("that question is no longer open: answer the current question, or "
                                     "search again")
        try:
            n = int(index)
        except (TypeError, ValueError):
            n = -1
        if not 0 <= n < len(q.options):
            msg = f"not an option: {index!r} (the question has {len(q.options)} options, numbered from 0)"
            ps = self.participants
            ps.write(p, [ps.event(p, "error", {"action": "answer", "message": msg, "question": q.text},
                                  client_ts, len(p.session.turns))])
            raise BadInputError(msg)
        return q, n

    def skip(self, participant: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        with self.participants.locked(participant) as p:
            question = p.session.pending_question if p.session else ""
        return self.round(participant, "skip", [("skip", {"question": question})], (), client_ts, ask)

    def feedback(self, participant: str, relevant: Sequence[str], irrelevant: Sequence[str] = (),
                 client_ts: float | None = None, ask: bool = True) -> Turn:
        rel, irr = list(relevant or []), list(irrelevant or [])
        with self.participants.locked(participant) as p:
            method = self.participants.condition_of(p).feedback_method if p.current else None
        return self.round(participant, "feedback", [("feedback", {"relevant": rel, "irrelevant": irr})],
                          (rel, irr, method), client_ts, ask)

    def relative(self, participant: str, caption: str, reference: str | None = None,
                 client_ts: float | None = None, ask: bool = True) -> Turn:
        """A relative caption about `reference` (a shown image id; None: the previous round's top result)."""
        with self.participants.locked(participant) as p:
            method = self.participants.condition_of(p).composed_method if p.current else None
            default_ref = p.session.last.shown[0] if p.session and p.session.last and p.session.last.shown else None
        inputs = [("reference", {"reference": reference or default_ref, "default": reference is None}),
                  ("relative_caption", {"text": caption})]
        return self.round(participant, "relative", inputs, (caption, reference, method), client_ts, ask)

    def search(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        """A rewritten text query (text mode)."""
        return self.round(participant, "search", [("search", {"text": text})], (text,), client_ts, ask)

    def check_offered(self, participant: str, action: str, client_ts: float | None = None) -> None:
        """Refuse (log and raise ActionRefused) round `action` when the participant's condition does not offer
        its mode; for a caller that checks its own input first (the page's "no marks yet")."""
        mode, logged_as = ROUND_KINDS[action]
        ps = self.participants
        with ps.locked(participant) as p:
            if p.phase == "search" and p.current is not None and mode is not None \
                    and mode not in ps.condition_of(p).modes:
                rnd = len(p.session.turns) if p.session else None
                raise ps.refuse(p, logged_as, f"this system does not offer {mode} in this task", client_ts, rnd)

    # --- one round ----------------------------------------------------------------------------------
    def round(self, participant: str, action: str, inputs: list[tuple[str, dict]], args: tuple,
              client_ts: float | None, ask: bool, organiser: bool = False) -> Turn:
        """Run round `action` (a key of ROUND_KINDS) with the engine's arguments `args`, logging `inputs`
        ((type, payload) pairs); then the question when `ask`. Typed words wait for the description lock's end
        unless they are the `organiser`'s."""
        turn = self._search(participant, action, inputs, args, client_ts, organiser)
        if not ask:
            return turn
        asked = self.ask(participant, client_ts)
        if asked is not None:  # the caller's turn object (it keeps the transient query row) gains the question
            for f in ("question", "question_fallback", "error", "llm_calls", "timings", "extra"):
                setattr(turn, f, getattr(asked, f))
        return turn

    def _search(self, participant: str, action: str, inputs: list[tuple[str, dict]], args: tuple,
                client_ts: float | None, organiser: bool = False) -> Turn:
        mode, logged_as = ROUND_KINDS[action]
        ps = self.participants
        with ps.locked(participant) as p:
            require(p, "search")
            self.tasks.check_time(p, client_ts)
            c = ps.condition_of(p)
            given = {k: v for _, pl in inputs for k, v in pl.items()}
            rnd = len(p.session.turns) if p.session else None
            try:
                left = p.lock_left(ps.clock()) if action in TYPED and not organiser else 0
                if left > 0:
                    raise DescriptionLocked(f"the organiser's description is the only query for {left:.0f} more "
                                            "second(s): look through its results; then you can type your own words")
                if mode is not None and mode not in c.modes:  # a round the page never offers (the API's)
                    raise ps.refuse(p, logged_as, f"this system does not offer {mode} in this task", client_ts,
                                    rnd, **given)
                _check_round(p, first=action == "describe")
                session = copy_session(p.session)
                turn = run_round(self.engines.of(c), session, action, *args)
            except ActionRefused:
                raise
            except Exception as e:
                msg = str(e) if isinstance(e, IIRError) else f"{type(e).__name__}: {e}"
                ps.write(p, [ps.event(p, "error", {"action": logged_as, "message": msg, **given}, client_ts, rnd)])
                raise
            events = [ps.event(p, t, pl, client_ts, turn.round) for t, pl in inputs]
            events += self._turn_events(p, session, turn, client_ts)
            ps.write(p, events, session)
            p.session = session
            return turn

    def _turn_events(self, p: Progress, session: Session, turn: Turn, client_ts: float | None) -> list[Event]:
        ps = self.participants
        target = p.current.task.target
        engine = self.engines.of(ps.condition_of(p))
        rank = target_rank(engine, session, turn, target)
        payload = {
            "kind": turn.kind, "method": turn.method, "query": turn.query, "shown": list(turn.shown),
            "scores": list(turn.scores), "target_rank": rank,
            "target_position": turn.shown.index(target) + 1 if target in turn.shown else None,
            "timings": dict(turn.timings), "model_latencies": _model_latencies(turn), "llm_calls": turn.llm_calls,
            "why": turn.why, "error": turn.error, "extra": turn.extra, "n_images": len(engine.retriever.index),
            "elapsed_s": round(ps.clock() - p.started_at, 3),
        }
        events = [ps.event(p, "results", payload, client_ts, turn.round)]
        if turn.question:
            events.append(ps.event(p, "question_shown", {"question": turn.question,
                                                         "fallback": turn.question_fallback,
                                                         **_question_options(turn)}, None, turn.round))
        if turn.error:
            events.append(ps.event(p, "error", {"action": turn.kind, "message": turn.error}, None, turn.round))
        return events

    # --- the question -------------------------------------------------------------------------------
    def ask(self, participant: str, client_ts: float | None = None) -> Turn | None:
        """The system's question about the round just shown (the slow LLM step, run after the results are on
        the page); None when no question is due.

        The model runs outside the participant's lock, so their clicks (marks, "This is it") go on meanwhile;
        a question whose round is no longer the current one when it arrives (the participant picked the
        target, gave up or searched again) is dropped."""
        ps = self.participants
        with ps.locked(participant) as p:
            if p.phase != "search" or p.ended or not p.session or not p.session.options.question_due:
                return None
            session = copy_session(p.session)
            _keep_transient(p.session.last, session.last)
            engine = self.engines.of(ps.condition_of(p))
            n_turns, position = len(p.session.turns), p.current.position
        turn = ask_step(engine, session)
        with ps.locked(participant) as p:
            current = (p.phase == "search" and not p.ended and p.current is not None and p.session is not None
                       and p.current.position == position and len(p.session.turns) == n_turns
                       and p.session.options.question_due)
            if not current:
                return None
            events = []
            if turn.question:
                events.append(ps.event(p, "question_shown", {"question": turn.question,
                                                             "fallback": turn.question_fallback,
                                                             **_question_options(turn),
                                                             "model_latencies": _model_latencies(turn),
                                                             "timings": dict(turn.timings)}, client_ts, turn.round))
            if turn.error:
                events.append(ps.event(p, "error", {"action": "question", "message": turn.error}, None, turn.round))
            ps.write(p, events, session)
            p.session = session
            return turn


def _check_round(p: Progress, first: bool) -> None:
    """Refuse a round the participant may not run now (SessionError, logged by the caller)."""
    if p.ended:
        raise SessionError("this task has ended")
    if first and p.described:
        raise SessionError("the first description was already given")
    if not first and not p.described:
        raise SessionError("describe the image you are looking for first")
    if not p.can_search:
        raise SessionError(f"the round budget ({p.budget}) is used up: pick the target among the "
                           "results or end the task")
