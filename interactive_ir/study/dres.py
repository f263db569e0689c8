"""DRES interop: the study log's events in the wire format of DRES (the Distributed Retrieval Evaluation Server of
VBS and LSC), and the study file's `dres:` settings of the live link (`interactive_ir.study.dres_link`).

DRES's client API (v2) takes query-event logs (what the user did: {timestamp, category, type, value}), result logs
(what the system showed: {timestamp, sortType, resultSetAvailability, results: [{answer, rank, score}], events}) and
submissions ({answerSets: [{answers: [{mediaItemName, mediaItemCollectionName}]}]}, judged CORRECT or WRONG).
Timestamps are unix milliseconds of the server's clock. The mapping of study events to DRES categories:

- TEXT: a description, an answer to the system's question (typed or a clicked option), a relative caption, a
  rewritten query, a skipped question (value "");
- IMAGE: the reference image of a relative caption;
- BROWSING: relevance marks (the feedback round and the clicks on the tiles), opening an image, paging;
- FILTER: a click whose action is a filter (`filter...`), or any input carrying `filters`.

Study file::

    dres:
      url: http://127.0.0.1:8080      # the DRES server
      username: team1
      password_env: DRES_PASSWORD     # the environment variable holding the password (never the file)
      evaluation: vbs-kis             # the evaluation's id or name ("" = the first one the server lists)
      collection: flickr8k            # mediaItemCollectionName of the submitted images ("" = none)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from interactive_ir.study.config_fields import bool_field, check_keys, num_field, text_field
from interactive_ir.study.config_types import StudyConfigError

CATEGORIES = ("TEXT", "IMAGE", "SKETCH", "FILTER", "BROWSING", "COOPERATION", "OTHER")
# study event type -> (DRES category, DRES type)
INPUT_EVENTS = {
    "description": ("TEXT", "description"),
    "answer": ("TEXT", "answer"),
    "skip": ("TEXT", "skip"),
    "relative_caption": ("TEXT", "caption"),
    "search": ("TEXT", "query"),
    "reference": ("IMAGE", "reference"),
    "feedback": ("BROWSING", "relevance_feedback"),
    "click": ("BROWSING", "click"),
}
SUBMIT_EVENTS = ("found", "wrong_pick")  # "This is it": judged CORRECT (the target) or WRONG


@dataclass(frozen=True)
class DresSettings:
    """The live link to a DRES server (`dres:` in the study file)."""

    url: str  # the server's address, e.g. http://127.0.0.1:8080 (its API under /api/v2)
    username: str = ""  # the team's (participant's) DRES user
    password_env: str = "DRES_PASSWORD"  # the environment variable holding that user's password
    evaluation: str = ""  # the evaluation's id or name ("" = the first evaluation the server lists)
    collection: str = ""  # mediaItemCollectionName sent with submitted images ("" = none)
    submit: bool = True  # submit each "This is it" (the target: CORRECT, another image: WRONG)
    log_rounds: bool = True  # send each round's results (result log) and each click (query-event log)
    timeout_s: float = 5.0  # seconds per request; the study never waits for DRES (a background thread sends)
    retries: int = 2  # more tries of a failed request (a refusal is not retried); then it is logged as failed

    @property
    def password(self) -> str:
        return os.environ.get(self.password_env, "") if self.password_env else ""


def parse_dres(value: Any) -> DresSettings | None:
    """The `dres:` section (None when absent)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise StudyConfigError("dres: give a mapping such as {url: http://127.0.0.1:8080, username: team1}")
    check_keys(value, ("url", "username", "password_env", "evaluation", "collection", "submit", "log_rounds",
                       "timeout_s", "retries"), "dres")
    url = text_field(value.get("url", ""), "dres.url").strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise StudyConfigError(f"dres.url: give the server's http(s) address, got {url!r}")
    timeout = num_field(value.get("timeout_s", 5.0), "dres.timeout_s")
    retries = value.get("retries", 2)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        raise StudyConfigError(f"dres.retries: give a whole number from 0 to 10, got {retries!r}")
    if not 0 < timeout <= 120:
        raise StudyConfigError(f"dres.timeout_s: give seconds between 0 and 120, got {timeout!r}")
    return DresSettings(url=url, username=text_field(value.get("username", ""), "dres.username"),
                        password_env=text_field(value.get("password_env", "DRES_PASSWORD"), "dres.password_env"),
                        evaluation=text_field(value.get("evaluation", ""), "dres.evaluation"),
                        collection=text_field(value.get("collection", ""), "dres.collection"),
                        submit=bool_field(value.get("submit", True), "dres.submit"),
                        log_rounds=bool_field(value.get("log_rounds", True), "dres.log_rounds"),
                        timeout_s=float(timeout), retries=retries)


# ---------------------------------------------------------------- the wire format


def ms(ts: float | None) -> int:
    return int(round(float(ts or 0.0) * 1000))


def query_event(e) -> dict | None:
    """One study event (an Event or its row) as a DRES QueryEvent; None when it is no user input."""
    etype, p = _get(e, "type"), _get(e, "payload") or {}
    if not isinstance(p, Mapping):
        p = {}
    if etype not in INPUT_EVENTS:
        return None
    category, kind = INPUT_EVENTS[etype]
    if etype == "feedback":
        value = json.dumps({"relevant": list(p.get("relevant") or []), "irrelevant": list(p.get("irrelevant") or [])})
    elif etype == "click":
        action = str(p.get("action") or "open")
        category = "FILTER" if action.startswith("filter") else "BROWSING"
        kind, value = action, str(p.get("value") or p.get("image_id") or "")
    elif etype == "reference":
        value = str(p.get("reference") or "")
    else:
        value = str(p.get("text") or "")
    if p.get("filters"):
        category, kind, value = "FILTER", "filter", json.dumps(p["filters"], sort_keys=True, default=str)
    return {"timestamp": ms(_get(e, "server_ts")), "category": category, "type": kind, "value": value}


def query_events(events: Iterable) -> list[dict]:
    return [q for q in (query_event(e) for e in events) if q is not None]


def result_log(results, inputs: Iterable = (), collection: str = "") -> dict:
    """A `results` event as a DRES QueryResultLog, with the round's inputs as its events."""
    p = _get(results, "payload") or {}
    shown, scores = list(p.get("shown") or []), list(p.get("scores") or [])
    items = []
    for i, image in enumerate(shown):
        item = {"answer": answer(str(image), collection), "rank": i + 1}
        if i < len(scores) and isinstance(scores[i], (int, float)):
            item["score"] = float(scores[i])
        items.append(item)
    return {"timestamp": ms(_get(results, "server_ts")), "sortType": "rank",
            "resultSetAvailability": "top_k", "results": items, "events": query_events(inputs)}


def answer(image_id: str, collection: str = "") -> dict:
    a = {"mediaItemName": image_id}
    if collection:
        a["mediaItemCollectionName"] = collection
    return a


def submission(image_id: str, collection: str = "") -> dict:
    """An ApiClientSubmission of one image."""
    return {"answerSets": [{"answers": [answer(image_id, collection)]}]}


def _get(e, name: str):
    return e.get(name) if isinstance(e, Mapping) else getattr(e, name, None)
