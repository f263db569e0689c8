"""The study log: WAL mode, durable commits, concurrent writers, and nothing acknowledged lost on kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from iir_testutils import ROOT

from interactive_ir.errors import BadInputError
from interactive_ir.study.log import Event, StudyLog, open_readonly, study_db_path, study_log_config


def test_wal_mode_and_synchronous(tmp_path):
    with StudyLog(tmp_path / "s.sqlite") as log:
        assert log._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert log._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with StudyLog(tmp_path / "n.sqlite", synchronous="normal") as log:
        assert log._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with pytest.raises(BadInputError, match="synchronous must be"):
        StudyLog(tmp_path / "x.sqlite", synchronous="OFF")


def test_config_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("IIR_STUDY_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("IIR_STUDY_SYNCHRONOUS", "NORMAL")
    cfg = study_log_config()
    assert cfg.synchronous == "NORMAL"
    assert study_db_path("pilot", cfg) == tmp_path / "logs" / "pilot.sqlite"
    with StudyLog.for_study("pilot", cfg) as log:
        log.append(Event("consent", "p1", "pilot", payload={"agreed": True}))
    assert (tmp_path / "logs" / "pilot.sqlite").is_file()


def test_events_round_trip_with_all_columns(tmp_path):
    with StudyLog(tmp_path / "s.sqlite") as log:
        t0 = time.time()
        ids = log.append_many([
            Event("task_start", "p1", "s", task=1, target="a.png", condition="A", payload={"rounds": 3}),
            Event("results", "p1", "s", task=1, target="a.png", condition="A", round=0,
                  payload={"shown": ["x", "y"], "target_rank": 7, "ünicode": "é"}, client_ts=123.5),
        ], state=("p1", 1, '{"turns": []}'), study_id="s")
        assert ids == [1, 2]
        evs = log.events("s", "p1")
        assert [e.type for e in evs] == ["task_start", "results"]
        r = evs[1]
        assert (r.task, r.target, r.condition, r.round, r.client_ts) == (1, "a.png", "A", 0, 123.5)
        assert r.payload == {"shown": ["x", "y"], "target_rank": 7, "ünicode": "é"}
        assert t0 <= r.server_ts <= time.time()
        assert log.load_state("s", "p1", 1) == '{"turns": []}'
        assert [e.id for e in log.events("s", types=["results"])] == [2]
        assert log.events("s", after_id=1)[0].id == 2 and log.count() == 2


def test_bad_events_are_refused_and_nothing_is_written(tmp_path):
    with StudyLog(tmp_path / "s.sqlite") as log:
        with pytest.raises(BadInputError, match="unknown event type 'clik'"):
            log.append_many([Event("click", "p", "s"), Event("clik", "p", "s")])
        with pytest.raises(BadInputError, match="needs a participant"):
            log.append(Event("click", "", "s"))
        assert log.count() == 0


def test_enrol_numbers_participants_in_order(tmp_path):
    with StudyLog(tmp_path / "s.sqlite") as log:
        assert log.enrol("s", "alice", lambda n: {"plan": [n]}) == (0, True)
        assert log.enrol("s", "bob") == (1, True)
        assert log.enrol("s", "alice") == (0, False)
        assert log.enrol("other", "carol") == (0, True)
        assert log.participant("s", "alice")["meta"] == {"plan": [0]}
        assert [p["participant"] for p in log.participants("s")] == ["alice", "bob"]


def test_concurrent_writers_lose_nothing(tmp_path):
    log = StudyLog(tmp_path / "s.sqlite", synchronous="NORMAL")
    n_threads, per = 8, 60
    errors = []

    def work(t):
        try:
            for i in range(per):
                log.append(Event("click", f"p{t}", "s", payload={"i": i}))
                if i % 10 == 0:
                    log.enrol("s", f"p{t}-{i}")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert log.count() == n_threads * per
    for t in range(n_threads):
        assert [e.payload["i"] for e in log.events("s", f"p{t}")] == list(range(per))
    numbers = sorted(p["number"] for p in log.participants("s"))
    assert numbers == list(range(n_threads * per // 10))  # no number given twice
    log.close()


def test_open_readonly_errors(tmp_path):
    with pytest.raises(BadInputError, match="study database not found"):
        open_readonly(tmp_path / "missing.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all, just some bytes" * 100)
    with pytest.raises(BadInputError, match="not an SQLite database"):
        open_readonly(junk)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(BadInputError, match="not a study log"):
        open_readonly(other)


WRITER = textwrap.dedent("""
    import sys, threading
    from interactive_ir.study.log import Event, StudyLog

    log = StudyLog(sys.argv[1], synchronous=sys.argv[2])
    out_lock = threading.Lock()

    def burst(t):
        i = 0
        while True:
            ev = Event("results", f"p{t}", "s", task=1, round=i, payload={"t": t, "i": i, "pad": "x" * 200})
            eid = log.append(ev, state=(f"p{t}", 1, '{"i": %d}' % i))
            with out_lock:  # acknowledged: committed before it is printed
                sys.stdout.write(f"{eid} {t} {i}\\n")
                sys.stdout.flush()
            i += 1

    for t in range(3):
        threading.Thread(target=burst, args=(t,), daemon=True).start()
    threading.Event().wait()
""")


@pytest.mark.parametrize("sync", ["FULL", "NORMAL"])
def test_kill_9_mid_burst_loses_no_acknowledged_event(tmp_path, sync):
    db = tmp_path / "burst.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db), sync], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    acked: list[tuple[int, int, int]] = []
    buf = b""
    deadline = time.time() + 60
    try:
        while len(acked) < 300 and time.time() < deadline:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            acked += [tuple(int(x) for x in ln.split()) for ln in lines if ln.strip()]
        assert proc.poll() is None, proc.stderr.read().decode()
        os.kill(proc.pid, signal.SIGKILL)  # mid-burst: the writer threads are still appending
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 300, "the writer did not acknowledge enough events before the deadline"
    # events acknowledged after our last read are still in the pipe; read them too
    rest = buf + proc.stdout.read()
    acked += [tuple(int(x) for x in ln.split()) for ln in rest.split(b"\n")[:-1] if ln.strip()]  # whole lines only
    assert (tmp_path / "burst.sqlite-wal").exists()  # the WAL was not checkpointed away: recovery is tested

    with StudyLog(db) as log:
        assert log._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {e.id: e for e in log.events("s")}
        for eid, t, i in acked:
            e = stored.get(eid)
            assert e is not None, f"acknowledged event {eid} is missing after kill -9"
            assert (e.participant, e.payload["t"], e.payload["i"], e.round) == (f"p{t}", t, i, i)
        for t in range(3):  # the saved state is at least as new as the last acknowledged event
            last = max((i for _, tt, i in acked if tt == t), default=None)
            if last is not None:
                assert json.loads(log.load_state("s", f"p{t}", 1))["i"] >= last
        assert len(stored) >= len(acked)


TWO_WRITERS = textwrap.dedent("""
    import sys, time
    from interactive_ir.study.log import Event, StudyLog

    db, name = sys.argv[1], sys.argv[2]
    log = StudyLog(db, synchronous="FULL")
    for i in range(300):
        log.append(Event("click", name, "s", payload={"i": i}))
        while i == 0 and log.count() < 2:  # both hold the database open and have written before going on
            time.sleep(0.01)
        if i % 10 == 0:
            log.enrol("s", f"{name}-{i}")
    log.close()
""")


def test_two_processes_writing_one_study_database_lose_nothing(tmp_path):
    """Replicas behind a proxy (deploy/nginx.conf) each open the study database: WAL, BEGIN IMMEDIATE and a
    busy timeout keep every event and give each enrolment its own number across processes."""
    db = tmp_path / "s.sqlite"
    StudyLog(db).close()  # created (WAL) before the writers race
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", TWO_WRITERS, str(db), name], env=env,
                              stderr=subprocess.PIPE) for name in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-500:]
    with StudyLog(db) as log:
        assert log.count() == 600
        for name in ("a", "b"):
            assert [e.payload["i"] for e in log.events("s", name)] == list(range(300))
        numbers = sorted(p["number"] for p in log.participants("s"))
        assert numbers == list(range(60))  # no Latin-square row given twice
        a, b = ([e.id for e in log.events("s", name)] for name in ("a", "b"))
    assert min(b) < max(a) and min(a) < max(b)  # the two wrote at the same time, not one after the other
