"""The participant state machine, independent of any UI.

consent -> for each task of the participant's plan: briefing (the target, when shown) -> search with the
assigned condition within the round budget -> found / give up / budget exhausted -> questionnaire ->
next task -> done.

Every action is logged before it is acknowledged (see `interactive_ir.study.log`), together with the
search session it produced, so `progress(participant)` can rebuild a participant's place from the
database alone: a participant who reloads the page, or comes back after a server restart, resumes where
they were. The web page (`interactive_ir.study.ui`), a terminal, or a test script drive a `StudyRunner`
with the same calls.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from interactive_ir.errors import BadInputError, IIRError, SessionError
from interactive_ir.core.session import Session, Turn
from interactive_ir.study.assign import Assignment, assign
from interactive_ir.study.config import ID_RE, Condition, StudyConfig, Task, resolve_practice, resolve_tasks
from interactive_ir.study.engines import ask_step, check_condition, choice_call, condition_engine, retrieve_step
from interactive_ir.study.instruments import score_form
from interactive_ir.study.log import TASK_END_TYPES, Event, StudyLog
from interactive_ir.study.progress import Progress
from interactive_ir.study.questionnaire import attention_results, check_answers, screened_out
from interactive_ir.study.ranks import target_rank

log = logging.getLogger(__name__)

TIME_GRACE_S = 2.0  # a client timer firing this early (clock skew, latency) still ends the task
TOKEN_BYTES = 32  # 256 random bits per participant token


def token_hash(token: str) -> str:
    """What the database keeps of a token: its SHA-256 (a leaked database does not give the tokens)."""
    return hashlib.sha256(str(token).encode("utf-8", "surrogatepass")).hexdigest()


class TaskTimeout(SessionError):
    """The task's time limit passed: the task ended as "timeout"."""


class StaleQuestionError(SessionError):
    """A click on an option of a question that is no longer the pending one (a newer action replaced it)."""


class StudyClosed(SessionError):
    """The study closed (`closes_at`): nobody new may start a task."""


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    progress: Progress | None = None


def _copy(session: Session) -> Session:
    return Session.from_dict(session.to_dict())


def _keep_transient(src: Turn | None, dst: Turn | None) -> None:
    """Carry a turn's transient attributes (the query row it ranked with) over to its copy."""
    if src is not None and dst is not None:
        dst.__dict__.update({k: v for k, v in src.__dict__.items() if k.startswith("_")})


def _model_latencies(turn: Turn) -> list[dict]:
    return [{"stage": c.get("stage", ""), "model": c.get("model") or c.get("backend", ""),
             "latency_s": c.get("latency_s"), "error": c.get("error")} for c in turn.llm_calls]


class StudyRunner:
    """Runs one study for many participants over one engine (thread-safe; one lock per participant)."""

    def __init__(self, study: StudyConfig, engine, log: StudyLog, tasks: Sequence[Task] | None = None,
                 engine_for: Callable[[Condition], Any] | None = None, clock: Callable[[], float] = time.time):
        self.study = study
        self.engine = engine
        self.log = log
        self.clock = clock
        ids = engine.retriever.index.ids
        self.tasks = list(tasks) if tasks is not None else resolve_tasks(study, ids, self._caption)
        self.practice = resolve_practice(study, ids, self._caption)
        self._engines: dict[str, Any] = {}
        self._engine_for = engine_for
        for c in study.conditions:
            self.check_condition(c)
        self._slots: dict[str, _Slot] = {}
        self._slots_lock = threading.Lock()
        log.set_meta("study", study.to_dict())
        log.set_meta("run", {"n_images": len(ids), "index": str(getattr(engine.retriever.index, "path", "")),
                             "embedder": getattr(engine.retriever.index, "embedder_spec", ""),
                             "llm": getattr(engine.llm, "spec", None) if engine.llm is not None else None,
                             "tasks": [dataclasses.asdict(t) for t in self.tasks], "started_at": clock()})

    # --- engines per condition --------------------------------------------------------------------
    def _caption(self, image_id: str) -> str:
        try:
            return self.engine.caption_of(image_id)
        except IIRError:
            return ""

    def engine_of(self, condition: Condition):
        """The engine serving `condition`: the shared one, or one with the condition's k and settings."""
        if condition.name in self._engines:
            return self._engines[condition.name]
        if self._engine_for is not None:
            eng = self._engine_for(condition)
        else:
            eng = condition_engine(self.engine, self.study, condition)
        self._engines[condition.name] = eng
        return eng

    def check_condition(self, c: Condition) -> None:
        """Raise StudyConfigError when this engine cannot run condition `c` (missing mode or LLM)."""
        check_condition(self.engine_of(c), c)

    # --- participants -----------------------------------------------------------------------------
    def new_participant_id(self) -> str:
        for _ in range(100):
            pid = "P" + secrets.token_hex(3).upper()
            if self.log.participant(self.study.study_id, pid) is None:
                return pid
        raise SessionError("could not generate a free participant id; type one instead")

    def plan_for(self, number: int, participant: str) -> list[Assignment]:
        """The participant's plan: the practice task (under their first condition), then the assigned tasks."""
        plan = assign(self.tasks, [c.name for c in self.study.conditions], self.study.counterbalance, number,
                      participant, self.study.seed)
        if self.practice is None:
            return plan
        plan = [Assignment(position=0, task=self.practice, condition=plan[0].condition), *plan]
        return [dataclasses.replace(a, position=i) for i, a in enumerate(plan, 1)]

    def due_forms(self, p: Progress) -> list[str]:
        """Questionnaires due when the current task ends: after the task, after its condition's block (when
        the next task is under another condition), at the end of the study. None after the practice task."""
        if p.current is None or p.current.task.practice:
            return []
        nxt = p.plan[p.index + 1] if p.index + 1 < len(p.plan) else None
        forms = ["task"] if self.study.questions else []
        if self.study.after_condition and (nxt is None or nxt.condition != p.current.condition):
            forms.append("condition")
        if self.study.end_questions and nxt is None:
            forms.append("end")
        return forms

    def is_closed(self) -> bool:
        return self.study.closes_at is not None and self.clock() >= self.study.closes_at

    def join(self, agreed: bool, recruit: Mapping[str, Any] | None = None,
             client_ts: float | None = None) -> tuple[Progress, str]:
        """Enrol a new participant through the consent page: (their progress, their secret token).

        The token (256 random bits, URL-safe) is the participant's only credential: the browser keeps it and
        sends it with every call (`participant_of`). `recruit` = {"platform", "id", "params"} from the URL is
        recorded; a recruitment id that has started already raises AlreadyEnrolled (one participation each).
        """
        if self.is_closed():
            raise StudyClosed("this study has closed and takes no new participants; thank you for your interest")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        rec = dict(recruit) if recruit and recruit.get("id") else None
        meta = {"recruitment": rec} if rec else {}
        p = self.enrol(None, client_ts, meta, token=token_hash(token), recruit=rec)
        return self.consent(p.participant, agreed, client_ts), token

    def participant_of(self, token: Any) -> str | None:
        """The participant holding `token`, or None (never says whether some participant id exists)."""
        if not isinstance(token, str) or not 20 <= len(token) <= 200:
            return None
        return self.log.participant_of_token(self.study.study_id, token_hash(token))

    def enrol(self, participant: str | None = None, client_ts: float | None = None,
              meta: Mapping[str, Any] | None = None, token: str | None = None,
              recruit: Mapping[str, Any] | None = None) -> Progress:
        """Create a participant (a generated id when None) or resume a known one (scripts and tests; the web
        page enrols only through `join`). `token` is the hash kept for the participant's token."""
        pid = (participant or "").strip() or self.new_participant_id()
        if not ID_RE.match(pid):
            raise BadInputError(f"participant id {pid!r} is not valid: use 1-64 letters, digits, '_', '.' or '-'")

        def info(number: int) -> dict:
            plan = self.plan_for(number, pid)
            return {**dict(meta or {}), "plan": [{"position": a.position, "task_index": a.task.index,
                                                  "target": a.task.target, "prompt": a.task.prompt,
                                                  "rounds": a.task.rounds, "condition": a.condition,
                                                  "time_limit_s": a.task.time_limit_s, "practice": a.task.practice}
                                                 for a in plan]}

        number, new = self.log.enrol(self.study.study_id, pid, info, token_hash=token,
                                     recruit=(recruit["platform"], recruit["id"]) if recruit else None)
        with self._locked(pid) as p:
            self._write(p, [self._event(p, "enrol" if new else "resume", {"number": number, **dict(meta or {})},
                                        client_ts, task=False)])
            return p

    def progress(self, participant: str) -> Progress:
        with self._locked(participant) as p:
            return p

    def _slot(self, pid: str) -> _Slot:
        with self._slots_lock:
            return self._slots.setdefault(pid, _Slot())

    @contextmanager
    def _locked(self, pid: str) -> Iterator[Progress]:
        slot = self._slot(pid)
        with slot.lock:
            if slot.progress is None:
                slot.progress = self._rebuild(pid)
            yield slot.progress

    def _rebuild(self, pid: str) -> Progress:
        sid = self.study.study_id
        info = self.log.participant(sid, pid)
        if info is None:
            raise SessionError(f"unknown participant {pid!r}: enter your participant id, or start as a new "
                               "participant")
        stored = info["meta"].get("plan")
        plan = self._stored_plan(stored) if stored else self.plan_for(info["number"], pid)
        p = Progress(participant=pid, number=info["number"], plan=plan, recruit=info["meta"].get("recruitment") or {})
        consent, screened = None, False
        for e in self.log.events(sid, pid):
            if e.type == "consent":
                consent = bool(e.payload.get("agreed"))
            elif e.type == "task_start":
                p.index, p.phase, p.ended, p.wrong_picks = e.task - 1, "search", "", 0
                p.started_at = float(e.payload.get("started_at") or e.server_ts)
            elif e.type == "wrong_pick":
                p.wrong_picks += 1
            elif e.type in TASK_END_TYPES:
                p.ended, p.phase = e.type, "questionnaire"
                p.forms = self.due_forms(p)
                if not p.forms:
                    p.index, p.ended, p.phase = e.task, "", "briefing"
            elif e.type == "questionnaire":
                form = e.payload.get("form", "task")
                p.forms = [f for f in p.forms if f != form]
                if not p.forms:
                    p.index, p.ended, p.phase = e.task, "", "briefing"
            elif e.type == "screened_out":
                screened = True
        if screened:
            p.phase = "screened_out"
        elif consent is None:
            p.phase = "consent"
        elif not consent:
            p.phase = "declined"
        elif p.phase == "consent":
            p.phase = "briefing"
        if p.phase == "briefing" and p.index >= len(p.plan):
            p.phase = "done"
        if p.phase in ("search", "questionnaire") and p.current is not None:
            saved = self.log.load_state(sid, pid, p.index + 1)
            p.session = Session.from_json(saved) if saved else self._new_session(p)
        return p

    def _stored_plan(self, rows: list[dict]) -> list[Assignment]:
        by_index = {t.index: t for t in self.tasks}
        out = []
        for r in rows:
            task = by_index.get(r["task_index"])
            if r.get("practice"):
                task = self.practice if self.practice and self.practice.target == r["target"] else None
            if task is None or task.target != r["target"]:  # the study file changed: keep what was assigned
                task = Task(index=r["task_index"], target=r["target"], prompt=r.get("prompt", ""), rounds=r["rounds"],
                            time_limit_s=r.get("time_limit_s"), practice=bool(r.get("practice")))
            out.append(Assignment(position=r["position"], task=task, condition=r["condition"]))
        return out

    # --- logging ----------------------------------------------------------------------------------
    def _event(self, p: Progress, type_: str, payload: Mapping[str, Any] | None = None,
               client_ts: float | None = None, round_: int | None = None, task: bool = True) -> Event:
        a = p.current if task else None
        return Event(type=type_, participant=p.participant, study_id=self.study.study_id,
                     task=a.position if a else None, target=a.task.target if a else None,
                     condition=a.condition if a else None, round=round_, payload=dict(payload or {}),
                     client_ts=client_ts)

    def _write(self, p: Progress, events: list[Event], session: Session | None = None) -> list[int]:
        state = None
        if session is not None and p.current is not None:
            state = (p.participant, p.current.position, session.to_json())
        return self.log.append_many(events, state, study_id=self.study.study_id)

    def log_error(self, participant: str, action: str, message: str, client_ts: float | None = None) -> None:
        """Record an error the participant saw (the UI calls this for errors outside the runner)."""
        with self._locked(participant) as p:
            rnd = p.session.round if p.session and p.session.turns else None
            self._write(p, [self._event(p, "error", {"action": action, "message": message}, client_ts, rnd,
                                        task=p.phase in ("search", "questionnaire"))])

    # --- consent and tasks ------------------------------------------------------------------------
    @staticmethod
    def _require(p: Progress, phase: str) -> None:
        if p.phase != phase:
            raise SessionError(f"this step is not available now (the participant is at {p.phase!r}, not {phase!r})")

    def consent(self, participant: str, agreed: bool, client_ts: float | None = None) -> Progress:
        with self._locked(participant) as p:
            self._require(p, "consent")
            self._write(p, [self._event(p, "consent", {"agreed": bool(agreed)}, client_ts, task=False)])
            p.phase = "briefing" if agreed else "declined"
            if p.phase == "briefing" and not p.plan:
                p.phase = "done"
            return p

    def condition_of(self, p: Progress) -> Condition:
        if p.current is None:
            raise SessionError("all tasks are done")
        return self.study.condition(p.current.condition)

    def _new_session(self, p: Progress) -> Session:
        a, c = p.current, self.condition_of(p)
        meta = {"study_id": self.study.study_id, "participant": p.participant, "task": a.position,
                "task_index": a.task.index, "condition": a.condition, "target": a.task.target,
                "ask_questions": "conversation" in c.modes}
        if c.conversation_method:
            meta["plugir_method"] = c.conversation_method
        return self.engine_of(c).new_session(**meta)

    def start_task(self, participant: str, client_ts: float | None = None) -> Progress:
        """Leave the briefing: the clock of this task starts now."""
        with self._locked(participant) as p:
            self._require(p, "briefing")
            if self.is_closed():
                raise StudyClosed("this study has closed: your answers so far are saved, and no new task can start. "
                                  "Please tell the researcher (on your recruitment platform, if you came from one)")
            a, c = p.current, self.condition_of(p)
            session = self._new_session(p)
            e = self._event(p, "task_start", {"task_index": a.task.index, "total": p.n_tasks, "rounds": a.task.rounds,
                                              "practice": a.task.practice, "time_limit_s": a.task.time_limit_s,
                                              "started_at": self.clock(),
                                              "show_target": self.study.show_target, "prompt": a.task.prompt,
                                              "modes": list(c.modes), "label": c.label,
                                              "k": self.engine_of(c).config.k, "session_id": session.session_id},
                            client_ts)
            self._write(p, [e], session)
            p.phase, p.session, p.ended, p.wrong_picks = "search", session, "", 0
            p.started_at = e.payload["started_at"]
            return p

    # --- search rounds ----------------------------------------------------------------------------
    def _search(self, participant: str, mode: str | None, action: str, inputs: list[tuple[str, dict]],
                call: Callable[[Any, Session], Turn], client_ts: float | None, first: bool = False) -> Turn:
        """Run one search round: check the phase, mode and budget, call the engine on a copy of the session,
        then log the participant's input events (`inputs`: (type, payload) pairs), the results and the new
        session in one transaction. An error is logged (with the inputs) and raised; the session is unchanged."""
        with self._locked(participant) as p:
            self._require(p, "search")
            self._check_time(p, client_ts)
            c = self.condition_of(p)
            try:
                if p.ended:
                    raise SessionError("this task has ended")
                if mode is not None and mode not in c.modes:
                    raise SessionError(f"this system does not offer {mode} in this task")
                if first and p.described:
                    raise SessionError("the first description was already given")
                if not first and not p.described:
                    raise SessionError("describe the image you are looking for first")
                if not p.can_search:
                    raise SessionError(f"the round budget ({p.budget}) is used up: pick the target among the "
                                       "results or end the task")
                session = _copy(p.session)
                turn = retrieve_step(self.engine_of(c), session, call)
            except Exception as e:
                rnd = len(p.session.turns) if p.session else None
                msg = str(e) if isinstance(e, IIRError) else f"{type(e).__name__}: {e}"
                given = {k: v for _, pl in inputs for k, v in pl.items()}
                self._write(p, [self._event(p, "error", {"action": action, "message": msg, **given}, client_ts,
                                            rnd)])
                raise
            events = [self._event(p, t, pl, client_ts, turn.round) for t, pl in inputs]
            events += self._turn_events(p, session, turn, client_ts)
            self._write(p, events, session)
            p.session = session
            return turn

    def _turn_events(self, p: Progress, session: Session, turn: Turn, client_ts: float | None) -> list[Event]:
        target = p.current.task.target
        engine = self.engine_of(self.condition_of(p))
        rank = target_rank(engine, session, turn, target)
        payload = {
            "kind": turn.kind, "method": turn.method, "query": turn.query, "shown": list(turn.shown),
            "scores": list(turn.scores), "target_rank": rank,
            "target_position": turn.shown.index(target) + 1 if target in turn.shown else None,
            "timings": dict(turn.timings), "model_latencies": _model_latencies(turn), "llm_calls": turn.llm_calls,
            "why": turn.why, "error": turn.error, "extra": turn.extra, "n_images": len(engine.retriever.index),
            "elapsed_s": round(self.clock() - p.started_at, 3),
        }
        events = [self._event(p, "results", payload, client_ts, turn.round)]
        if turn.question:
            events.append(self._event(p, "question_shown", {"question": turn.question,
                                                            "fallback": turn.question_fallback}, None, turn.round))
        if turn.error:
            events.append(self._event(p, "error", {"action": turn.kind, "message": turn.error}, None, turn.round))
        return events

    def ask(self, participant: str, client_ts: float | None = None) -> Turn | None:
        """The system's question about the round just shown (the slow LLM step, run after the results are on
        the page); None when no question is due.

        The model runs outside the participant's lock, so their clicks (marks, "This is it") go on meanwhile;
        a question whose round is no longer the current one when it arrives (the participant picked the
        target, gave up or searched again) is dropped."""
        with self._locked(participant) as p:
            if p.phase != "search" or p.ended or not p.session or not p.session.meta.get("question_due"):
                return None
            session = _copy(p.session)
            _keep_transient(p.session.last, session.last)
            engine = self.engine_of(self.condition_of(p))
            n_turns, position = len(p.session.turns), p.current.position
        turn = ask_step(engine, session)
        with self._locked(participant) as p:
            current = (p.phase == "search" and not p.ended and p.current is not None and p.session is not None
                       and p.current.position == position and len(p.session.turns) == n_turns
                       and p.session.meta.get("question_due"))
            if not current:
                return None
            events = []
            if turn.question:
                events.append(self._event(p, "question_shown", {"question": turn.question,
                                                                "fallback": turn.question_fallback,
                                                                "model_latencies": _model_latencies(turn),
                                                                "timings": dict(turn.timings)}, client_ts, turn.round))
            if turn.error:
                events.append(self._event(p, "error", {"action": "question", "message": turn.error}, None,
                                          turn.round))
            self._write(p, events, session)
            p.session = session
            return turn

    def _then_ask(self, participant: str, turn: Turn, ask: bool, client_ts: float | None) -> Turn:
        if not ask:
            return turn
        asked = self.ask(participant, client_ts)
        if asked is not None:  # the caller's turn object (it keeps the transient query row) gains the question
            for f in ("question", "question_fallback", "error", "llm_calls", "timings", "extra"):
                setattr(turn, f, getattr(asked, f))
        return turn

    def describe(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        """Round 0: the first description (a conversation condition asks its first question after it).

        Every round method takes `ask`: True runs the question step too (scripts); the web page passes False,
        shows the results, then calls `ask` (the slow LLM step) separately."""
        def call(engine, s):
            return engine.start(s, text) if s.meta.get("ask_questions") else engine.search_text(s, text)

        turn = self._search(participant, None, "description", [("description", {"text": text})], call, client_ts,
                            first=True)
        return self._then_ask(participant, turn, ask, client_ts)

    def answer(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        with self._locked(participant) as p:
            question = p.session.pending_question if p.session else ""
        turn = self._search(participant, "conversation", "answer",
                            [("answer", {"text": text, "question": question})], lambda e, s: e.answer(s, text),
                            client_ts)
        return self._then_ask(participant, turn, ask, client_ts)

    def choose(self, participant: str, index: Any, question_text: str, client_ts: float | None = None,
               ask: bool = True, question_round: Any = None) -> Turn:
        """A click on option `index` (0-based) of the pending question with options (thumbnails, yes/no, none
        of these), logged as an answer whose text is the option's label. `question_text` (and, when given,
        `question_round`: the round the question asked about) is the question the click was made on: one that
        is no longer pending (the next round may ask the same words) raises StaleQuestionError, nothing logged."""
        with self._locked(participant) as p:
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
                self._write(p, [self._event(p, "error", {"action": "answer", "message": msg, "question": q.text},
                                            client_ts, len(p.session.turns))])
                raise BadInputError(msg)
            chosen = q.options[n]
        payload = {"text": chosen.label, "question": q.text, "option": n, "kind": q.kind,
                   "image_id": chosen.image_id}
        turn = self._search(participant, "conversation", "answer", [("answer", payload)],
                            choice_call(n, q), client_ts)
        return self._then_ask(participant, turn, ask, client_ts)

    def skip(self, participant: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        with self._locked(participant) as p:
            question = p.session.pending_question if p.session else ""
        turn = self._search(participant, "conversation", "skip", [("skip", {"question": question})],
                            lambda e, s: e.skip(s), client_ts)
        return self._then_ask(participant, turn, ask, client_ts)

    def feedback(self, participant: str, relevant: Sequence[str], irrelevant: Sequence[str] = (),
                 client_ts: float | None = None, ask: bool = True) -> Turn:
        rel, irr = list(relevant or []), list(irrelevant or [])
        with self._locked(participant) as p:
            method = self.condition_of(p).feedback_method if p.current else None
        turn = self._search(participant, "feedback", "feedback",
                            [("feedback", {"relevant": rel, "irrelevant": irr})],
                            lambda e, s: e.feedback(s, rel, irr, method=method), client_ts)
        return self._then_ask(participant, turn, ask, client_ts)

    def relative(self, participant: str, caption: str, reference: str | None = None,
                 client_ts: float | None = None, ask: bool = True) -> Turn:
        """A relative caption about `reference` (a shown image id; None: the previous round's top result)."""
        with self._locked(participant) as p:
            method = self.condition_of(p).composed_method if p.current else None
            default_ref = p.session.last.shown[0] if p.session and p.session.last and p.session.last.shown else None
        inputs = [("reference", {"reference": reference or default_ref, "default": reference is None}),
                  ("relative_caption", {"text": caption})]
        turn = self._search(participant, "composed", "relative_caption", inputs,
                            lambda e, s: e.relative(s, caption, reference=reference, method=method), client_ts)
        return self._then_ask(participant, turn, ask, client_ts)

    def search(self, participant: str, text: str, client_ts: float | None = None, ask: bool = True) -> Turn:
        """A rewritten text query (text mode)."""
        turn = self._search(participant, "text", "search", [("search", {"text": text})],
                            lambda e, s: e.search_text(s, text, kind="search"), client_ts)
        return self._then_ask(participant, turn, ask, client_ts)

    # --- clicks and the end of a task --------------------------------------------------------------
    def click(self, participant: str, image_id: str, action: str = "open", client_ts: float | None = None) -> None:
        """Log a click on an image (opening it, selecting it as a reference, marking it, ...)."""
        image_id, action = str(image_id)[:500], str(action)[:64]
        with self._locked(participant) as p:
            self._require(p, "search")
            rnd = p.session.round if p.session and p.session.turns else None
            self._write(p, [self._event(p, "click", {"image_id": image_id, "action": action,
                                                     "is_target": image_id == p.current.task.target}, client_ts, rnd)])

    def current_marks(self, participant: str) -> tuple[dict[str, bool], str]:
        """The marks (image id -> relevant) and reference the participant clicked on the current round's
        results, rebuilt from the click events (a reloaded page or a restarted server loses none)."""
        with self._locked(participant) as p:
            if p.phase != "search" or not p.session or not p.session.turns:
                return {}, ""
            rnd, task = p.session.round, p.current.position
        marks: dict[str, bool] = {}
        ref = ""
        for e in self.log.events(self.study.study_id, participant, types=["click"]):
            if e.task != task or e.round != rnd:
                continue
            image_id, action = e.payload.get("image_id", ""), e.payload.get("action", "")
            if action in ("mark_relevant", "mark_irrelevant"):
                marks[image_id] = action == "mark_relevant"
            elif action == "unmark":
                marks.pop(image_id, None)
            elif action in ("reference", "unreference"):
                ref = image_id if action == "reference" else ""
        return marks, ref

    def pick(self, participant: str, image_id: str, client_ts: float | None = None) -> bool:
        """"This is the image": True (task solved) when it is the target, else False (logged, search goes on)."""
        with self._locked(participant) as p:
            self._require(p, "search")
            self._check_time(p, client_ts)
            if p.ended:
                raise SessionError("this task has ended")
            if not p.session or image_id not in p.session.shown_ids():
                raise SessionError(f"image {image_id!r} was not shown in this task: pick one of the results")
            rnd = p.session.round
            if image_id != p.current.task.target:
                self._write(p, [self._event(p, "wrong_pick", {"image_id": image_id}, client_ts, rnd)])
                p.wrong_picks += 1
                return False
            session = _copy(p.session)
            found = self.engine_of(self.condition_of(p)).found(session, image_id)
            payload = {"image_id": image_id, "found_round": found["round"], "position": found["rank"],
                       "rounds_used": p.rounds_used, "time_s": round(self.clock() - p.started_at, 3),
                       "wrong_picks": p.wrong_picks}
            self._end(p, "found", payload, client_ts, rnd, session)
            return True

    def give_up(self, participant: str, client_ts: float | None = None) -> Progress:
        """End the task without the target ("budget_exhausted" when the budget was used up)."""
        with self._locked(participant) as p:
            self._require(p, "search")
            self._check_time(p, client_ts)
            if p.ended:
                raise SessionError("this task has ended")
            kind = "budget_exhausted" if p.described and p.rounds_used >= p.budget else "give_up"
            self._stop(p, kind, client_ts)
            return p

    def timeout(self, participant: str, client_ts: float | None = None) -> Progress:
        """The page's timer ran out: end the task as "timeout" if its time is up (else nothing changes)."""
        with self._locked(participant) as p:
            if p.phase == "search" and not p.ended:
                left = p.time_left(self.clock())
                if left is not None and left <= TIME_GRACE_S:
                    self._stop(p, "timeout", client_ts)
            return p

    def _check_time(self, p: Progress, client_ts: float | None) -> None:
        """End the task as "timeout" (and say so) when its time limit has passed."""
        left = p.time_left(self.clock())
        if left is not None and left <= 0:
            self._stop(p, "timeout", client_ts)
            raise TaskTimeout(f"the {p.time_limit} s for this task are up, so it has ended")

    def _stop(self, p: Progress, kind: str, client_ts: float | None) -> None:
        """End the task without the target: give_up, budget_exhausted or timeout."""
        session = _copy(p.session)
        session.meta["gave_up" if kind != "timeout" else "timed_out"] = True
        rnd = session.round if session.turns else None
        payload = {"rounds_used": p.rounds_used, "time_s": round(self.clock() - p.started_at, 3),
                   "wrong_picks": p.wrong_picks}
        self._end(p, kind, payload, client_ts, rnd, session)

    def _end(self, p: Progress, kind: str, payload: dict, client_ts: float | None, rnd: int | None,
             session: Session) -> None:
        """Log the end of the task; then its questionnaires, or (none due, e.g. practice) the next task."""
        payload = {**payload, "practice": p.practising}
        self._write(p, [self._event(p, kind, payload, client_ts, rnd)], session)
        p.session, p.ended, p.phase = session, kind, "questionnaire"
        p.forms = self.due_forms(p)
        if not p.forms:
            self._next(p)

    def _next(self, p: Progress) -> None:
        p.index += 1
        p.session, p.ended, p.wrong_picks, p.forms = None, "", 0, []
        p.phase = "done" if p.index >= len(p.plan) else "briefing"

    # --- questionnaires ---------------------------------------------------------------------------
    def check_answers(self, answers: Mapping[str, Any], form: str = "task") -> dict[str, Any]:
        return check_answers(self.study.form(form), answers)

    def submit_questionnaire(self, participant: str, answers: Mapping[str, Any],
                             client_ts: float | None = None) -> Progress:
        """Answers of the participant's current form (`Progress.form`), checked, scored and logged."""
        with self._locked(participant) as p:
            self._require(p, "questionnaire")
            form = p.form or "task"
            items = self.study.form(form)
            try:
                clean = check_answers(items, answers)
            except BadInputError as e:
                self._write(p, [self._event(p, "error", {"action": "questionnaire", "form": form,
                                                         "message": str(e)}, client_ts)])
                raise
            payload = {"form": form, "answers": clean, "scores": score_form(items, clean), "ended": p.ended,
                       "attention": attention_results(items, clean)}
            events = [self._event(p, "questionnaire", payload, client_ts)]
            out = screened_out(items, clean)
            last = p.index + 1 >= len(p.plan) and len(p.forms) <= 1
            if out:
                events.append(self._event(p, "screened_out", {"items": out}, None, task=False))
            elif last:
                events.append(self._event(p, "study_end", {"tasks": p.n_tasks}, None, task=False))
            self._write(p, events)
            p.forms = p.forms[1:]
            if out:
                p.phase = "screened_out"
            elif not p.forms:
                self._next(p)
            return p
