"""The threads that model steps run on: reused while the page is busy, never a queue to wait in.

A model step used to start a thread of its own. Under a steady load that is a new thread every few events,
and each new thread costs more than its stack: its own SQLite connection (`index/metadata.py`), its own faiss
scratch indices (`index/rerank.py`), its own OpenMP team and Python frame stacks, all made again and freed
again, which left the server's memory creeping up in steps under `bench/soak.py` (docs/benchmarks/memory-soak.md).
`StepThreads` keeps finished threads for `idle_s` and hands them the next step. It never makes a
step wait: when no thread is idle (every one is busy, perhaps with a hung model call that was superseded) a new
one starts, as before. A thread idle for `idle_s` ends, so a quiet server keeps none.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Job = Callable[[], None]


class StepThreads:
    """Runs each job at once: on the thread that went idle last, or on a new thread when none is idle."""

    def __init__(self, idle_s: float = 120.0, name: str = "iir-model-step"):
        self.idle_s = idle_s  # how long a finished thread waits for the next job before it ends
        self.name = name  # the threads' name (seen in py-spy, gdb and the soak's thread counts)
        self._idle: list[queue.SimpleQueue] = []  # the inboxes of idle threads, the last to go idle at the end
        self._lock = threading.Lock()
        self.started = 0  # threads started so far (a test and the soak read it)

    def submit(self, job: Job) -> None:
        """Run `job()` now, on an idle thread or a new one. `job` handles its own errors (one that escapes is
        logged and the thread goes on)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
            if inbox is None:
                self.started += 1
        if inbox is not None:
            inbox.put(job)
            return
        threading.Thread(target=self._work, args=(queue.SimpleQueue(), job), name=self.name, daemon=True).start()

    def idle(self) -> int:
        """Threads waiting for a job now."""
        with self._lock:
            return len(self._idle)

    def _work(self, inbox: queue.SimpleQueue, job: Job | None) -> None:
        while job is not None:
            try:
                job()
            except BaseException:  # noqa: BLE001 - the thread must live on to be reused
                log.exception("a model step's thread caught an error its job did not handle")
            job = None  # not kept alive while idle
            with self._lock:
                self._idle.append(inbox)
            try:
                job = inbox.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if any(box is inbox for box in self._idle):
                        self._idle.remove(inbox)  # idle too long: this thread ends
                        job = None
                        continue
                job = inbox.get()  # `submit` took this inbox just as the wait ended: its job is on the way
