"""The study log: an append-only SQLite event table that loses nothing acknowledged.

One database per study, `<IIR_STUDY_DIR>/<study_id>.sqlite` (default folder `./study_data`), in WAL
mode. Every `append` is one transaction that is committed before it returns; with
``synchronous=FULL`` (the default) the commit also fsyncs the WAL, so an acknowledged event survives a
killed server (kill -9) and a power cut. ``IIR_STUDY_SYNCHRONOUS=NORMAL`` is faster: in WAL mode a
committed transaction is in the OS page cache before `append` returns, so it still survives kill -9
of the server, but a power cut or OS crash may lose the last few commits.

Tables:
- ``events``: one row per event: id, study_id, participant, task (1-based position in the participant's
  plan, NULL outside tasks), target, condition, round (NULL outside search rounds), type, payload
  (JSON), client_ts and server_ts (unix seconds; client_ts NULL when the browser did not send one);
- ``participants``: participant id, enrolment number (0, 1, ...: the Latin-square row), time, meta;
- ``states``: the latest search session of each (participant, task), written in the same transaction
  as the event that changed it, so a reloaded page resumes exactly where it was;
- ``meta``: the study file as validated and run facts (index size, ...), for exports and reports;
- ``tokens``: the SHA-256 of each participant's secret token (the browser holds the token itself);
- ``recruits``: (platform, recruitment id) -> participant, so one recruitment id takes part once.

One connection is shared by all threads behind a lock (Gradio serves requests from a thread pool);
other processes (the `study export` command) may read at the same time.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interactive_ir.config import apply_env, apply_overrides
from interactive_ir.errors import BadInputError, IIRError, SessionError

log = logging.getLogger(__name__)

STUDY_ENV_PREFIX = "IIR_STUDY_"

EVENT_TYPES = (
    "enrol",  # a participant id was created or typed for the first time
    "resume",  # a known participant came back (page reload, new tab)
    "consent",  # payload: agreed (bool)
    "task_start",  # the participant started searching; payload: target, task_index, rounds, shown target
    "description",  # round 0 text
    "question_shown",  # the system's question after a round
    "answer",  # an answer to the pending question
    "skip",  # the participant skipped the question
    "feedback",  # relevant / irrelevant marks
    "reference",  # the reference image chosen for a relative caption
    "relative_caption",  # the relative caption
    "search",  # a rewritten text query (text mode)
    "results",  # shown ids, scores, the target's rank, timings, model latencies
    "click",  # the participant opened or selected an image
    "wrong_pick",  # the participant said "this is it" about another image
    "found",  # the participant picked the target: the task is solved
    "give_up",  # the participant gave up
    "budget_exhausted",  # the round budget ran out and the participant ended the task
    "timeout",  # the task's time limit ran out
    "screened_out",  # an answer ended the study for this participant
    "error",  # an error shown to the participant (bad input, a failing model)
    "refused",  # an action the participant's condition does not offer, refused; payload: action, message, what was sent
    "questionnaire",  # post-task answers
    "study_end",  # the last questionnaire was submitted
    "paradata",  # the page lost or got back focus or visibility, or went idle; payload: kind, sent_at (browser clock)
    "dres",  # what the live DRES link sent and got back: payload call, ok, status, verdict, message (failed: the body)
)
PARADATA_KINDS = ("blur", "focus", "hidden", "visible", "idle", "active")  # a paradata event's payload "kind"
TASK_END_TYPES = ("found", "give_up", "budget_exhausted", "timeout")


class StudyLogError(IIRError):
    """The study database cannot be opened or written."""


@dataclass(frozen=True)
class StudyLogConfig:
    """Where and how the study log is written; each field can be set by env `IIR_STUDY_<FIELD>`."""

    dir: Path = Path("study_data")  # folder of the study databases (IIR_STUDY_DIR)
    synchronous: str = "FULL"  # FULL: fsync every commit (survives power loss); NORMAL: survives a killed
    #                            process but a power cut may lose the last commits (see the module docstring)
    busy_timeout_ms: int = 10_000  # how long a writer waits for another process's lock before failing
    away_max_s: float = 30.0  # the report flags a task whose participant left the page (blur, hidden tab) for
    #                           longer than this in total (0: never); `study report --exclude-away` leaves them out
    away_max_defocus: int = 5  # ... or left it more often than this (0: never)


def study_log_config(environ: Mapping[str, str] | None = None, **overrides) -> StudyLogConfig:
    return apply_overrides(apply_env(StudyLogConfig(), STUDY_ENV_PREFIX, environ), **overrides)


def study_db_path(study_id: str, config: StudyLogConfig | None = None) -> Path:
    cfg = config or study_log_config()
    return Path(cfg.dir) / f"{study_id}.sqlite"


@dataclass
class Event:
    """One logged event."""

    type: str  # one of EVENT_TYPES
    participant: str
    study_id: str = ""
    task: int | None = None  # 1-based position in the participant's plan
    target: str | None = None
    condition: str | None = None
    round: int | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    client_ts: float | None = None  # the browser's clock, when sent
    server_ts: float = 0.0  # set when written
    id: int = 0  # set when written

    def to_row(self) -> dict[str, Any]:
        return {"id": self.id, "study_id": self.study_id, "participant": self.participant, "task": self.task,
                "target": self.target, "condition": self.condition, "round": self.round, "type": self.type,
                "payload": self.payload, "client_ts": self.client_ts, "server_ts": self.server_ts}


SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id TEXT NOT NULL,
    participant TEXT NOT NULL,
    task INTEGER,
    target TEXT,
    condition TEXT,
    round INTEGER,
    type TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}',
    client_ts REAL,
    server_ts REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_participant ON events (study_id, participant, id);
CREATE TABLE IF NOT EXISTS participants (
    study_id TEXT NOT NULL,
    participant TEXT NOT NULL,
    number INTEGER NOT NULL,
    created_at REAL NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (study_id, participant)
);
CREATE TABLE IF NOT EXISTS states (
    study_id TEXT NOT NULL,
    participant TEXT NOT NULL,
    task INTEGER NOT NULL,
    session TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (study_id, participant, task)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY,
    study_id TEXT NOT NULL,
    participant TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS recruits (
    study_id TEXT NOT NULL,
    platform TEXT NOT NULL,
    recruit_id TEXT NOT NULL,
    participant TEXT NOT NULL,
    PRIMARY KEY (study_id, platform, recruit_id)
);
"""


class AlreadyEnrolled(SessionError):
    """This recruitment id has taken part (or is taking part) already."""


def _json(value: Any) -> str:
    def default(o):
        if hasattr(o, "tolist"):
            return o.tolist()
        if hasattr(o, "item"):
            return o.item()
        return str(o)

    text = json.dumps(value, ensure_ascii=False, default=default, allow_nan=True)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: SQLite cannot store it as text, JSON can escape it
        text = json.dumps(value, ensure_ascii=True, default=default, allow_nan=True)
    return text


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


class StudyLog:
    """Append-only event log in one SQLite file. Thread-safe; every write is committed before returning."""

    def __init__(self, path: str | Path, synchronous: str = "FULL", busy_timeout_ms: int = 10_000):
        sync = str(synchronous).upper()
        if sync not in ("FULL", "NORMAL", "EXTRA"):
            raise BadInputError(f"synchronous must be FULL, EXTRA or NORMAL, got {synchronous!r}")
        self.path = Path(path)
        self.synchronous = sync
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=busy_timeout_ms / 1000, isolation_level=None,
                                         check_same_thread=False)
            mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StudyLogError(f"{self.path}: SQLite refused WAL mode (got {mode!r}); put IIR_STUDY_DIR on a "
                                    "local disk (network filesystems do not support WAL)")
            self._conn.execute(f"PRAGMA synchronous={sync}")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            self._conn.executescript(SCHEMA)
        except sqlite3.Error as e:
            raise StudyLogError(f"cannot open the study database {self.path}: {e}") from e
        self._lock = threading.Lock()

    @classmethod
    def for_study(cls, study_id: str, config: StudyLogConfig | None = None) -> StudyLog:
        cfg = config or study_log_config()
        return cls(study_db_path(study_id, cfg), cfg.synchronous, cfg.busy_timeout_ms)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> StudyLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- writing ---------------------------------------------------------------------------------
    def append(self, event: Event, state: tuple[str, int, str] | None = None) -> int:
        """Write one event (and optionally a session state) in one committed transaction; its id."""
        return self.append_many([event], state)[0]

    def append_many(self, events: Iterable[Event], state: tuple[str, int, str] | None = None,
                    study_id: str | None = None) -> list[int]:
        """Write events, and `state` = (participant, task, session JSON), atomically. Returns the ids.

        The events are durable (see the module docstring) when this returns.
        """
        events = list(events)
        for e in events:
            if e.type not in EVENT_TYPES:
                raise BadInputError(f"unknown event type {e.type!r}; known: {', '.join(EVENT_TYPES)}")
            if not e.participant:
                raise BadInputError("an event needs a participant id")
        now = time.time()
        ids: list[int] = []
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    for e in events:
                        cur = self._conn.execute(
                            "INSERT INTO events (study_id, participant, task, target, condition, round, type, "
                            "payload, client_ts, server_ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (e.study_id, e.participant, e.task, e.target, e.condition, e.round, e.type,
                             _json(e.payload), _finite(e.client_ts), now))
                        ids.append(int(cur.lastrowid))
                    if state is not None:
                        pid, task, session_json = state
                        sid = study_id if study_id is not None else (events[0].study_id if events else "")
                        self._conn.execute(
                            "INSERT OR REPLACE INTO states (study_id, participant, task, session, updated_at) "
                            "VALUES (?, ?, ?, ?, ?)", (sid, pid, task, session_json, now))
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as e:
                raise StudyLogError(f"cannot write to the study database {self.path}: {e}") from e
        for e, i in zip(events, ids):
            e.id, e.server_ts = i, now
        return ids

    def enrol(self, study_id: str, participant: str,
              meta: Mapping[str, Any] | Callable[[int], Mapping[str, Any]] | None = None,
              token_hash: str | None = None, recruit: tuple[str, str] | None = None) -> tuple[int, bool]:
        """Register a participant: (enrolment number, True if new). Numbers are 0, 1, 2, ... per study.

        `meta` may be a function of the new number (e.g. the participant's plan), stored atomically with it,
        as are `token_hash` (the participant's credential) and `recruit` = (platform, recruitment id);
        AlreadyEnrolled when that recruitment id is taken.
        """
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    row = self._conn.execute("SELECT number FROM participants WHERE study_id=? AND participant=?",
                                             (study_id, participant)).fetchone()
                    if row is not None:
                        self._conn.execute("COMMIT")
                        return int(row[0]), False
                    if recruit is not None and self._conn.execute(
                            "SELECT 1 FROM recruits WHERE study_id=? AND platform=? AND recruit_id=?",
                            (study_id, *recruit)).fetchone():
                        raise AlreadyEnrolled("this recruitment id has already started this study")
                    n = self._conn.execute("SELECT COALESCE(MAX(number) + 1, 0) FROM participants WHERE study_id=?",
                                           (study_id,)).fetchone()[0]
                    info = meta(int(n)) if callable(meta) else meta
                    self._conn.execute("INSERT INTO participants (study_id, participant, number, created_at, meta) "
                                       "VALUES (?, ?, ?, ?, ?)", (study_id, participant, n, time.time(),
                                                                  _json(dict(info or {}))))
                    if token_hash:
                        self._conn.execute("INSERT INTO tokens (token_hash, study_id, participant) VALUES (?, ?, ?)",
                                           (token_hash, study_id, participant))
                    if recruit is not None:
                        self._conn.execute("INSERT INTO recruits (study_id, platform, recruit_id, participant) "
                                           "VALUES (?, ?, ?, ?)", (study_id, *recruit, participant))
                    self._conn.execute("COMMIT")
                    return int(n), True
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as e:
                raise StudyLogError(f"cannot write to the study database {self.path}: {e}") from e

    def set_meta(self, key: str, value: Any) -> None:
        with self._lock:
            try:
                self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, _json(value)))
            except sqlite3.Error as e:
                raise StudyLogError(f"cannot write to the study database {self.path}: {e}") from e

    # --- reading ---------------------------------------------------------------------------------
    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.Error as e:
                raise StudyLogError(f"cannot read the study database {self.path}: {e}") from e

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT value FROM meta WHERE key=?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def participant(self, study_id: str, participant: str) -> dict | None:
        rows = self._query("SELECT participant, number, created_at, meta FROM participants "
                           "WHERE study_id=? AND participant=?", (study_id, participant))
        if not rows:
            return None
        p, n, t, meta = rows[0]
        return {"participant": p, "number": int(n), "created_at": t, "meta": json.loads(meta)}

    def participant_of_token(self, study_id: str, token_hash: str) -> str | None:
        rows = self._query("SELECT participant FROM tokens WHERE token_hash=? AND study_id=?", (token_hash, study_id))
        return rows[0][0] if rows else None

    def participants(self, study_id: str | None = None) -> list[dict]:
        sql = "SELECT study_id, participant, number, created_at, meta FROM participants"
        rows = self._query(sql + (" WHERE study_id=?" if study_id else "") + " ORDER BY study_id, number",
                           (study_id,) if study_id else ())
        return [{"study_id": s, "participant": p, "number": int(n), "created_at": t, "meta": json.loads(m)}
                for s, p, n, t, m in rows]

    def events(self, study_id: str | None = None, participant: str | None = None,
               types: Iterable[str] | None = None, after_id: int = 0) -> list[Event]:
        where, args = ["id > ?"], [after_id]
        if study_id is not None:
            where.append("study_id = ?")
            args.append(study_id)
        if participant is not None:
            where.append("participant = ?")
            args.append(participant)
        types = list(types or [])
        if types:
            where.append(f"type IN ({', '.join('?' * len(types))})")
            args.extend(types)
        rows = self._query("SELECT id, study_id, participant, task, target, condition, round, type, payload, "
                           f"client_ts, server_ts FROM events WHERE {' AND '.join(where)} ORDER BY id", tuple(args))
        return [Event(id=r[0], study_id=r[1], participant=r[2], task=r[3], target=r[4], condition=r[5], round=r[6],
                      type=r[7], payload=json.loads(r[8]), client_ts=r[9], server_ts=r[10]) for r in rows]

    def last_event_id(self, study_id: str, participant: str) -> int:
        """The id of the participant's last event (0 when none): changes whenever any process writes one."""
        return int(self._query("SELECT COALESCE(MAX(id), 0) FROM events WHERE study_id=? AND participant=?",
                               (study_id, participant))[0][0])

    def load_state(self, study_id: str, participant: str, task: int) -> str | None:
        rows = self._query("SELECT session FROM states WHERE study_id=? AND participant=? AND task=?",
                           (study_id, participant, task))
        return rows[0][0] if rows else None

    def last_activity(self, study_id: str) -> dict[str, float]:
        """Participant -> server time of their latest event."""
        rows = self._query("SELECT participant, MAX(server_ts) FROM events WHERE study_id=? GROUP BY participant",
                           (study_id,))
        return {p: float(t) for p, t in rows}

    def count(self, study_id: str | None = None) -> int:
        rows = self._query("SELECT COUNT(*) FROM events" + (" WHERE study_id=?" if study_id else ""),
                           (study_id,) if study_id else ())
        return int(rows[0][0])


def open_readonly(path: str | Path) -> StudyLog:
    """Open an existing study database (exports, reports); a clear error when it is not one."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"study database not found: {path} (study logs live in IIR_STUDY_DIR, "
                            f"default ./study_data, as <study_id>.sqlite)")
    try:
        probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = {r[0] for r in probe.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            probe.close()
    except sqlite3.DatabaseError as e:
        raise BadInputError(f"{path} is not an SQLite database: {e}") from e
    if "events" not in names:
        raise BadInputError(f"{path} is not a study log (no events table)")
    return StudyLog(path, synchronous=os.environ.get("IIR_STUDY_SYNCHRONOUS", "FULL"))
