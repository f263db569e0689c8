"""The live link to a DRES server (`dres:` in the study file): each "This is it" is submitted, each round's results
go to DRES's result log and each click to its query-event log.

The study never waits for DRES and never fails because of it: the study's own events are committed first, then
handed to a background thread that logs in (POST /api/v2/login), finds the evaluation
(GET /api/v2/client/evaluation/list), and posts (POST /api/v2/submit/{evaluationId}, /api/v2/log/result,
/api/v2/log/query). What each request got back is written to the study log as a `dres` event (call, ok, HTTP
status, DRES's verdict or message); a request that failed after its retries (server down, a refusal) keeps its body
there, so nothing is lost: `study export --format dres` rebuilds every log from the study database anyway.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from interactive_ir.errors import IIRError
from interactive_ir.study.dres import SUBMIT_EVENTS, DresSettings, query_event, result_log, submission
from interactive_ir.study.log import Event, StudyLog

log = logging.getLogger(__name__)
VERDICTS = ("CORRECT", "WRONG", "INDETERMINATE", "UNDECIDABLE")


class DresError(IIRError):
    """A DRES request failed (server down, refused, or an answer that is not DRES's)."""

    def __init__(self, message: str, status: int | None = None, retry: bool = True):
        super().__init__(message)
        self.status, self.retry = status, retry


@dataclass
class _Job:
    call: str  # "submit", "log_result" or "log_query"
    body: dict
    source: Event  # the study event it comes from (participant, task, round)


class DresLink:
    """Sends a study's events to DRES from a background thread (see the module docstring)."""

    def __init__(self, settings: DresSettings, study_log: StudyLog, sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        self.log = study_log
        self._sleep = sleep
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._session: str | None = None
        self._evaluation: str | None = None
        self._thread = threading.Thread(target=self._work, name="dres-link", daemon=True)
        self._thread.start()

    # --- from the study (its events, already committed) --------------------------------------------------
    def on_events(self, events: list[Event]) -> None:
        """Queue what DRES should get of these committed events (a round's inputs and results, a click, a pick)."""
        s, inputs = self.settings, []
        for e in events:
            if e.type in SUBMIT_EVENTS and s.submit:
                self._queue.put(_Job("submit", submission(str(e.payload.get("image_id") or ""), s.collection), e))
            elif e.type == "results" and s.log_rounds:
                self._queue.put(_Job("log_result", result_log(e, inputs, s.collection), e))
                inputs = []
            elif query_event(e) is not None:
                inputs.append(e)
        if inputs and s.log_rounds:  # inputs without results (clicks, marks): a query-event log
            evs = [query_event(e) for e in inputs]
            self._queue.put(_Job("log_query", {"timestamp": evs[-1]["timestamp"], "events": evs}, inputs[-1]))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued was sent or given up on; False when `timeout` ran out first."""
        end = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < end:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def close(self, timeout: float = 10.0) -> None:
        self.flush(timeout)
        self._queue.put(None)

    # --- the background thread -----------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                self._send(job)
            except Exception as e:  # never let the thread die: the next job must go out
                log.warning("DRES link: %s", e)
            finally:
                self._queue.task_done()

    def _send(self, job: _Job) -> None:
        tries, err, reply = 1 + self.settings.retries, None, None
        for attempt in range(tries):
            try:
                reply = self._post(job)
                err = None
                break
            except DresError as e:
                err = e
                if e.status == 401:  # the session expired: log in again
                    self._session = None
                if not e.retry or attempt + 1 == tries:
                    break
                self._sleep(min(0.2 * 2 ** attempt, 2.0))
        payload = {"call": job.call, "ok": err is None, "attempts": attempt + 1}
        if err is None:
            verdict = next((v for v in (reply or {}).values() if isinstance(v, str) and v in VERDICTS), None)
            payload.update(status=200, verdict=verdict, message=str((reply or {}).get("description") or ""))
        else:
            payload.update(status=err.status, message=str(err), body=job.body)
            log.warning("DRES %s failed (kept in the study log): %s", job.call, err)
        src = job.source
        self.log.append(Event("dres", src.participant, src.study_id, task=src.task, target=src.target,
                              condition=src.condition, round=src.round, payload=payload))

    def _post(self, job: _Job) -> dict:
        session = self._login()
        q = "?" + urllib.parse.urlencode({"session": session})
        if job.call == "submit":
            path = f"/api/v2/submit/{urllib.parse.quote(self._evaluation_id(session), safe='')}"
        else:
            path = "/api/v2/log/result" if job.call == "log_result" else "/api/v2/log/query"
        return self._request("POST", path + q, job.body)

    def _login(self) -> str:
        if self._session is None:
            s = self.settings
            reply = self._request("POST", "/api/v2/login", {"username": s.username, "password": s.password})
            sid = reply.get("sessionId") if isinstance(reply, dict) else None
            if not sid:
                raise DresError("DRES login answered without a sessionId", retry=False)
            self._session = str(sid)
        return self._session

    def _evaluation_id(self, session: str) -> str:
        if self._evaluation is None:
            want = self.settings.evaluation
            reply = self._request("GET", "/api/v2/client/evaluation/list?" + urllib.parse.urlencode({"session": session}))
            evals = [e for e in reply if isinstance(e, dict)] if isinstance(reply, list) else []
            match = [e for e in evals if not want or want in (str(e.get("id")), str(e.get("name")))]
            if not match:
                names = ", ".join(str(e.get("name") or e.get("id")) for e in evals) or "none"
                raise DresError(f"DRES has no evaluation {want!r} running (running: {names})", retry=True)
            self._evaluation = str(match[0].get("id"))
        return self._evaluation

    def _request(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.settings.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.settings.timeout_s) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")[:500]
            try:
                text = str(json.loads(text).get("description") or text)
            except (ValueError, AttributeError):
                pass
            raise DresError(f"DRES refused {method} {path.split('?')[0]}: HTTP {e.code} {text}", e.code,
                            retry=e.code >= 500 or e.code == 401) from e
        except (urllib.error.URLError, OSError) as e:
            raise DresError(f"DRES at {self.settings.url} cannot be reached: {getattr(e, 'reason', e)}") from e
        try:
            return json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError as e:
            raise DresError(f"DRES answered {method} {path.split('?')[0]} with something that is not JSON") from e
