"""The photo index, built in the background while the page serves the clipart: `PhotoBuild`.

`start()` runs `python -m interactive_ir.ui.photos.child` (low priority: the app's process with its logging,
running `photo_child.build`) into a hidden folder beside the
index's place, reads its progress lines, and when it succeeds records the credit, opens the result once
(`load_index`) and renames it into place: nothing half-built is ever loaded. `status()` says where it
stands (`PhotoStatus`), for the page's note; `finished` is set when it is ready or has failed.

One build per index at a time: a lock file beside the index. A second process (a replica behind nginx)
waits for the first one's index instead of building it again. A failed build is logged once and shown on
the page; it is tried again on the next start, never in a loop.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

from interactive_ir.assembly.photo_child import PREFIX
from interactive_ir.assembly.photo_config import PhotoDemoConfig

log = logging.getLogger(__name__)

WAIT_POLL_S = 5.0  # how often a process waiting for another's build looks for its index
CHILD = "interactive_ir.ui.photos.child"  # the child process's entry (the app's logging; it runs photo_child.main)


@dataclass(frozen=True)
class PhotoStatus:
    """Where the photo index stands, as the page's note says it."""

    state: str  # "building", "ready" (built: the page switches), "failed", or "serving" (the page shows the photos)
    phase: str = ""  # while building: "starting", "download", "embed", or "elsewhere" (another process builds it)
    done: int = 0  # photos embedded so far
    total: int = 0  # photos to embed (the configured count until the build knows)
    why: str = ""  # when failed: what went wrong, in one line (logged; the page says it in plain words)
    unreachable: bool = False  # when failed: the Hub could not be reached


class PhotoBuild:
    """The photo index for `embedder_spec` at `out`, built in a child process."""

    def __init__(self, cfg: PhotoDemoConfig, embedder_spec: str, out: Path, *, python: str = sys.executable):
        self.cfg, self.embedder_spec, self.out = cfg, embedder_spec, Path(out)
        self.python = python
        self.finished = threading.Event()  # set once: ready or failed
        self._status = PhotoStatus("building", "starting", total=cfg.count)
        self._guard = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._lock_file = None

    @property
    def building(self) -> Path:
        """The hidden folder the child builds into (renamed to `out` once it is complete)."""
        return self.out.parent / f".{self.out.name}.building"

    def status(self) -> PhotoStatus:
        with self._guard:
            return self._status

    def _set(self, **changes) -> None:
        with self._guard:
            self._status = replace(self._status, **changes)

    @property
    def ready(self) -> bool:
        return self.status().state == "ready"

    # --- running -----------------------------------------------------------------------------------------
    def start(self) -> None:
        """Build in the background (or wait for another process's build); returns at once."""
        self.out.parent.mkdir(parents=True, exist_ok=True)
        if not self._take_lock():
            self._set(phase="elsewhere")
            log.info("photo demo: another process is building %s; serving the clipart until it is ready",
                     self.out.name)
            threading.Thread(target=self._wait_for_other, name="photo-build-wait", daemon=True).start()
            return
        for stale in self.out.parent.glob(f".{self.out.name}.building*"):  # an earlier start, killed half-way
            shutil.rmtree(stale, ignore_errors=True)
        try:
            self._proc = subprocess.Popen(self._command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, text=True, errors="replace", env=_child_env())
        except OSError as e:
            self.fail(f"the build could not be started ({e})")
            return
        atexit.register(self.stop)
        log.info("photo demo: building %s photos from %s in the background (pid %d, nice %d) into %s",
                 f"{self.cfg.count:,}", self.cfg.dataset, self._proc.pid, self.cfg.nice, self.out)
        threading.Thread(target=self._follow, name="photo-build", daemon=True).start()

    def _command(self) -> list[str]:
        c = self.cfg
        return [self.python, "-m", CHILD, "--out", str(self.building),
                "--embedder", self.embedder_spec, "--dataset", c.dataset, "--config", c.config, "--split", c.split,
                "--revision", c.revision, "--image-column", c.image_column, "--caption-column", c.caption_column,
                "--id-column", c.id_column, "--limit", str(c.count), "--nice", str(c.nice)]

    def _follow(self) -> None:
        """Read the child's lines until it exits, then finish or fail."""
        proc = self._proc
        tail: deque[str] = deque(maxlen=20)
        error, done = "", False
        for line in proc.stdout:  # type: ignore[union-attr]
            line = line.rstrip()
            words = line.split(" ", 2)
            if words[0] != PREFIX or len(words) < 2:
                if line.strip():
                    tail.append(line)
                continue
            kind, rest = words[1], words[2] if len(words) > 2 else ""
            if kind == "phase":
                self._set(phase=rest)
            elif kind == "progress":
                done_n, _, total = rest.partition(" ")
                if done_n.isdigit() and total.isdigit():
                    self._set(phase="embed", done=int(done_n), total=int(total))
            elif kind == "done":
                done = True
            elif kind == "error":
                error = rest
        proc.stdout.close()  # type: ignore[union-attr]
        code = proc.wait()
        if code == 0 and done:
            self._finish()
        else:
            why = error or (tail[-1] if tail else "") or f"the build exited with status {code}"
            self.fail(why, unreachable="cannot be reached" in why)

    def _finish(self) -> None:
        """Record the credit, open the index once, rename it into place."""
        from interactive_ir.assembly.app_index import open_credited
        from interactive_ir.errors import IIRError

        try:
            index = open_credited(self.building, self.cfg.credit(), self.embedder_spec)
            if self.out.exists():  # left by a build this lock did not see finish: replaced whole
                shutil.rmtree(self.out)
            os.rename(self.building, self.out)
        except (IIRError, OSError, ValueError) as e:
            self.fail(f"the built index could not be opened ({str(e).splitlines()[0][:300]})")
            return
        log.info("photo demo: %s photos ready in %s", f"{len(index):,}", self.out)
        self._set(state="ready", done=len(index), total=len(index))
        self._release()
        self.finished.set()

    def fail(self, why: str, unreachable: bool = False) -> None:
        """Give up: logged once, the page's note says so, the clipart keeps serving."""
        log.warning("photo demo: the photos from %s are not served (%s); the clipart gallery serves, tried again "
                    "on the next start", self.cfg.dataset, why)
        shutil.rmtree(self.building, ignore_errors=True)
        self._set(state="failed", why=why, unreachable=unreachable)
        self._release()
        self.finished.set()

    def _wait_for_other(self) -> None:
        """Another process holds the lock: its index, once the lock is free, or a failure (it did not finish)."""
        while not self.finished.is_set():
            if self._take_lock():
                if _loads(self.out, self.embedder_spec):
                    self._set(state="ready")
                    self._release()
                    self.finished.set()
                else:
                    self.fail("the other process's build did not finish")
                return
            self.finished.wait(WAIT_POLL_S)

    def stop(self) -> None:
        """Stop the child (the app is exiting); its half-built folder is removed on the next start."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    # --- the lock ----------------------------------------------------------------------------------------
    def _take_lock(self) -> bool:
        try:
            import fcntl
        except ImportError:  # not POSIX: one process per index folder is up to the operator
            return True
        fh = open(self.out.parent / f".{self.out.name}.lock", "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            return False
        self._lock_file = fh
        return True

    def _release(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the file drops the lock
            self._lock_file = None


def _child_env() -> dict:
    """The app's environment, with this package importable wherever the app was started from."""
    import interactive_ir

    root = str(Path(interactive_ir.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def _loads(path: Path, embedder_spec: str) -> bool:
    from interactive_ir.errors import IIRError
    from interactive_ir.index import load_index

    try:
        load_index(path, expect_embedder=embedder_spec)
        return True
    except (IIRError, OSError):
        return False
