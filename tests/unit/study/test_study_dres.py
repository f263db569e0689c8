"""DRES / LSC interop (issue 28, D3): `study export --format dres|lsc-csv`, and the live DRES link tested against a
local stand-in of DRES's client API on 127.0.0.1 (up, refusing, down)."""

from __future__ import annotations

import csv
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.cli import main
from interactive_ir.engine import build_engine
from interactive_ir.study.config import StudyConfigError, parse_study
from interactive_ir.study.log import StudyLog, open_readonly
from interactive_ir.study.runner import StudyRunner


class StandInDres:
    """DRES's client API as a stand-in: login, evaluation list, submit (judged against `correct`), result and
    query logs. `refuse` makes every submit answer 412; `fail_first` 503s the first N requests."""

    def __init__(self, correct: set[str], refuse: bool = False, fail_first: int = 0):
        self.correct, self.refuse, self.fail_first = correct, refuse, fail_first
        self.requests: list[tuple[str, str, dict, dict]] = []  # (method, path, query, body)
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _reply(self, code: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._handle("GET", {})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self._handle("POST", json.loads(self.rfile.read(n) or b"{}"))

            def _handle(self, method, body):
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                stand_in.requests.append((method, url.path, query, body))
                if stand_in.fail_first > 0:
                    stand_in.fail_first -= 1
                    return self._reply(503, {"status": False, "description": "busy"})
                if url.path == "/api/v2/login":
                    if body.get("password") != "s3cret":
                        return self._reply(401, {"status": False, "description": "Invalid credentials"})
                    return self._reply(200, {"sessionId": "sess-1", "username": body.get("username")})
                if query.get("session") != "sess-1":
                    return self._reply(401, {"status": False, "description": "Unauthorized"})
                if url.path == "/api/v2/client/evaluation/list":
                    return self._reply(200, [{"id": "ev-9", "name": "kis-study", "type": "SYNCHRONOUS"}])
                if url.path == "/api/v2/submit/ev-9":
                    if stand_in.refuse:
                        return self._reply(412, {"status": False, "description": "Submission rejected"})
                    item = body["answerSets"][0]["answers"][0]["mediaItemName"]
                    verdict = "CORRECT" if item in stand_in.correct else "WRONG"
                    return self._reply(200, {"status": True, "submission": verdict, "description": "judged"})
                if url.path in ("/api/v2/log/result", "/api/v2/log/query"):
                    return self._reply(200, {"status": True, "description": "Log received"})
                return self._reply(404, {"status": False, "description": "no such endpoint"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def paths(self, path: str) -> list[dict]:
        return [b for m, p, q, b in self.requests if p == path]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def make_runner(tiny, tmp_path, dres=None):
    r, ids, caps = tiny
    d = {"study_id": "kis", "rounds": 3, "k": 24, "practice": ids[5],
         "conditions": {"F": {"mode": "feedback", "feedback_method": "rocchio"}}, "tasks": ids[:2]}
    if dres is not None:
        d["dres"] = dres
    log = StudyLog(tmp_path / "kis.sqlite")
    return StudyRunner(parse_study(d), build_engine(r, llm=FakeLLM()), log), log, caps


def play_task(runner, pid, caps, find=True):
    """Describe, mark two images, a feedback round, a wrong pick, then the target (k covers the tiny index)."""
    p = runner.start_task(pid)
    target = p.current.task.target
    turn = runner.describe(pid, caps[target][0])
    others = [i for i in turn.shown if i != target]
    runner.click(pid, others[0], "mark_relevant")
    runner.feedback(pid, [others[0]], [others[1]])
    assert runner.pick(pid, others[2]) is False
    if find:
        assert runner.pick(pid, target) is True
    else:
        runner.give_up(pid)
    runner.submit_questionnaire(pid, {"effective": 4, "efficient": 3, "comments": ""})
    return target, others


def run_participant(runner, caps, pid="P1"):
    runner.enrol(pid)
    runner.consent(pid, True)
    runner.start_task(pid)  # the practice task: left out of the exports
    runner.give_up(pid)
    return [play_task(runner, pid, caps, find=True), play_task(runner, pid, caps, find=False)]


def test_dres_and_lsc_exports_of_a_study_log(tiny, tmp_path):
    runner, log, caps = make_runner(tiny, tmp_path)
    (t1, o1), (t2, o2) = run_participant(runner, caps)
    log.close()

    assert main(["study", "export", "--db", str(tmp_path / "kis.sqlite"), "--format", "dres",
                 "--collection", "flickr"]) == 0
    data = json.loads((tmp_path / "kis.dres.json").read_text())
    assert [(t["task"], t["topic"], t["status"]) for t in data["tasks"]] == [(2, "1", "found"), (3, "2", "give_up")]
    first = data["tasks"][0]
    cats = [(q["events"][0]["category"], q["events"][0]["type"]) for q in first["query_event_logs"]]
    assert cats == [("TEXT", "description"), ("BROWSING", "mark_relevant"), ("BROWSING", "relevance_feedback")]
    assert first["query_event_logs"][0]["events"][0]["value"] == caps[t1][0]
    r0, r1 = first["result_logs"]
    assert [e["category"] for e in r0["events"]] == ["TEXT"]  # the description that ranked round 0
    assert [e["type"] for e in r1["events"]] == ["mark_relevant", "relevance_feedback"]
    assert r0["results"][0]["rank"] == 1 and r0["results"][0]["answer"]["mediaItemCollectionName"] == "flickr"
    assert len(r0["results"]) == 24 and all(isinstance(x["score"], float) for x in r0["results"])
    assert r1["timestamp"] >= r0["timestamp"] > 1e12  # unix milliseconds
    subs = [(s["submission"]["answerSets"][0]["answers"][0]["mediaItemName"], s["verdict"])
            for s in first["submissions"]]
    assert subs == [(o1[2], "WRONG"), (t1, "CORRECT")]
    assert [s["verdict"] for s in data["tasks"][1]["submissions"]] == ["WRONG"]

    assert main(["study", "export", "--db", str(tmp_path / "kis.sqlite"), "--format", "lsc-csv",
                 "--group", "UNI"]) == 0
    rows = list(csv.reader((tmp_path / "kis.lsc.csv").open()))
    assert [r[:4] for r in rows] == [["UNI", "F-P1", "1", o1[2]], ["UNI", "F-P1", "1", t1], ["UNI", "F-P1", "2", o2[2]]]
    secs = [float(r[4]) for r in rows]
    assert secs[0] <= secs[1] and all(s >= 0 for s in secs)
    with open_readonly(tmp_path / "kis.sqlite") as log2:  # the score of the latest round that showed the image
        res = [e for e in log2.events(types=["results"]) if e.task == 2 and t1 in e.payload["shown"]][-1].payload
    assert float(rows[1][5]) == pytest.approx(res["scores"][res["shown"].index(t1)], abs=1e-5)


def test_the_live_link_submits_picks_and_logs_rounds_to_dres(tiny, tmp_path, monkeypatch):
    r, ids, caps = tiny
    monkeypatch.setenv("DRES_PASSWORD", "s3cret")
    server = StandInDres(correct={ids[0], ids[1]})
    try:
        runner, log, caps = make_runner(tiny, tmp_path, {"url": server.url, "username": "team1",
                                                         "evaluation": "kis-study", "collection": "flickr"})
        (t1, o1), _ = run_participant(runner, caps)
        assert runner.dres.flush(10)
        subs = server.paths("/api/v2/submit/ev-9")
        names = [s["answerSets"][0]["answers"][0]["mediaItemName"] for s in subs]
        assert names[-3:] == [o1[2], t1, _[1][2]] and subs[0]["answerSets"][0]["answers"][0][
            "mediaItemCollectionName"] == "flickr"
        results = server.paths("/api/v2/log/result")
        assert len(results) >= 4 and results[0]["results"][0]["rank"] == 1
        assert any(e["type"] == "relevance_feedback" for r_ in results for e in r_["events"])
        assert any(e["type"] == "mark_relevant" for q in server.paths("/api/v2/log/query") for e in q["events"])
        assert len(server.paths("/api/v2/login")) == 1  # one session for the whole study
        dres = [e.payload for e in log.events(types=["dres"])]
        verdicts = [d["verdict"] for d in dres if d["call"] == "submit"]
        assert verdicts[-3:] == ["WRONG", "CORRECT", "WRONG"] and all(d["ok"] for d in dres)
    finally:
        server.close()


def test_a_dres_server_that_refuses_or_is_down_loses_nothing_and_the_study_goes_on(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("DRES_PASSWORD", "s3cret")
    server = StandInDres(correct=set(), refuse=True, fail_first=2)  # two 503s (retried), then every submit 412
    try:
        runner, log, caps = make_runner(tiny, tmp_path, {"url": server.url, "username": "team1", "retries": 3})
        runner.dres._sleep = lambda s: None
        (t1, o1), _ = run_participant(runner, caps)
        assert runner.dres.flush(10)
        dres = [e.payload for e in log.events(types=["dres"])]
        refused = [d for d in dres if d["call"] == "submit"]
        assert refused and all(not d["ok"] and d["status"] == 412 and d["attempts"] == 1 for d in refused)
        assert "Submission rejected" in refused[0]["message"]
        assert refused[1]["body"]["answerSets"][0]["answers"][0]["mediaItemName"]  # the body is kept
        assert all(d["ok"] for d in dres if d["call"] != "submit")  # the 503s were retried
        assert [e.type for e in log.events(types=["found"])] == ["found"]  # the study's own verdict stands
    finally:
        server.close()

    with socket.socket() as s:  # a port nobody listens on: the server is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runner, log, caps = make_runner(tiny, tmp_path / "down", {"url": f"http://127.0.0.1:{port}", "retries": 1,
                                                              "timeout_s": 1})
    runner.dres._sleep = lambda s: None
    (t1, o1), _ = run_participant(runner, caps)
    assert runner.dres.flush(20)
    assert runner.progress("P1").phase == "done"
    failed = [e.payload for e in log.events(types=["dres"])]
    assert failed and all(not d["ok"] and "cannot be reached" in d["message"] for d in failed)
    assert {d["call"] for d in failed} == {"submit", "log_result", "log_query"}
    assert sum(d["call"] == "submit" for d in failed) == len(log.events(types=["found", "wrong_pick"]))
    # and the export rebuilds every DRES log from the study database
    data = json.loads(json.dumps(__import__("interactive_ir.study.analysis.interop", fromlist=["x"]).dres_export(log)))
    assert sum(len(t["submissions"]) for t in data["tasks"]) == 3


def test_the_dres_settings_are_checked():
    base = {"study_id": "s", "conditions": {"A": "feedback"}, "tasks": ["a.jpg"]}
    s = parse_study({**base, "dres": {"url": "http://127.0.0.1:8080/", "username": "u"}})
    assert s.dres.url == "http://127.0.0.1:8080" and s.dres.submit and s.dres.password_env == "DRES_PASSWORD"
    assert "password" not in json.dumps(s.to_dict()["dres"]).replace("password_env", "")
    for bad, msg in (({"url": "ftp://x"}, "dres.url"), ({"url": "http://x", "retries": -1}, "dres.retries"),
                     ({"url": "http://x", "pasword_env": "X"}, "did you mean 'password_env'"),
                     ("http://x", "give a mapping")):
        with pytest.raises(StudyConfigError, match=msg):
            parse_study({**base, "dres": bad})
    assert parse_study(base).dres is None
