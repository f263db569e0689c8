"""Model steps run on reused threads (ui/step_threads.py): a steady load makes no new thread per step, a busy
or hung thread never makes a step wait, idle threads end, and every job runs exactly once."""

import threading
import time
from concurrent import futures

from interactive_ir.ui import events
from interactive_ir.ui.step_threads import StepThreads


def _until(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_model_steps_one_after_another_run_on_the_same_thread():
    # a thread per step made a new thread (its stack, SQLite connection, faiss scratch) every few events
    first = events.in_background(threading.get_native_id)
    one = first.result(timeout=5)
    _until(lambda: events.STEP_THREADS.idle() >= 1)
    again = [events.in_background(threading.get_native_id).result(timeout=5) for _ in range(5)]
    assert again == [one] * 5


def test_a_busy_thread_never_makes_a_step_wait():
    pool = StepThreads(idle_s=5)
    release = threading.Event()
    hung = futures.Future()
    pool.submit(lambda: hung.set_result(release.wait(10)))  # a model call that hangs
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(2), "the second step waited behind the first"
    assert pool.started == 2
    release.set()
    assert hung.result(timeout=5) is True


def test_idle_threads_end_and_a_new_one_starts_later():
    pool = StepThreads(idle_s=0.05, name="iir-test-idle")
    ran = threading.Event()
    pool.submit(ran.set)
    assert ran.wait(2)
    _until(lambda: not any(t.name == "iir-test-idle" for t in threading.enumerate()))
    assert pool.idle() == 0
    again = threading.Event()
    pool.submit(again.set)
    assert again.wait(2) and pool.started == 2


def test_an_error_that_escapes_a_job_is_logged_and_the_thread_lives_on(caplog):
    pool = StepThreads(idle_s=5)
    ids = []

    def boom():
        ids.append(threading.get_native_id())
        raise RuntimeError("a job that does not handle its error")

    pool.submit(boom)
    _until(lambda: pool.idle() == 1)
    out = futures.Future()
    pool.submit(lambda: out.set_result(threading.get_native_id()))
    assert out.result(timeout=5) == ids[0] and pool.started == 1
    assert "did not handle" in caplog.text


def test_every_job_runs_exactly_once_while_threads_time_out_around_it():
    # idle_s so short that threads end while jobs arrive: a job handed to a thread that just timed out still runs
    pool = StepThreads(idle_s=0.001)
    counts = [0] * 400
    lock = threading.Lock()

    def job(i):
        with lock:
            counts[i] += 1

    for i in range(400):
        pool.submit(lambda i=i: job(i))
        if i % 7 == 0:
            time.sleep(0.002)
    _until(lambda: sum(counts) == 400)
    time.sleep(0.05)
    assert counts == [1] * 400
