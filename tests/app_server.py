"""The web app as a person starts it, for the tests that need the real process: `python app.py FLAGS` on a free
port of 127.0.0.1, waited for until it answers, then stopped (terminated, killed if it will not end).

The one start/stop block of the suite: the browser tests' `app_url`, the photo demo, the study pages and the
sign-in tests all start the app through `app_process` (or `start_app` / `stop_app` where a test stops it
itself). The environment is the caller's: each test says which models and folders the app gets."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 120.0  # a first start builds the demo index with the fake embedder: seconds, more on a busy box


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen | None = None, log: Path | None = None,
                  timeout: float = START_TIMEOUT_S) -> None:
    """Return once `url` answers 200; raise RuntimeError (with the log's tail) when `proc` exits first or
    `timeout` seconds pass."""
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log and log.exists() else ""
            raise RuntimeError(f"the app exited with code {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)  # wait-ok: polling the server until it answers
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise RuntimeError(f"the app did not answer at {url} within {timeout:.0f} s\n{tail}")


def start_app(flags: list[str], env: dict, log: Path, timeout: float = START_TIMEOUT_S) -> tuple[subprocess.Popen, str]:
    """Start `python app.py --host 127.0.0.1 --port P FLAGS` from the repository root with `env`, its output
    in `log`; return (process, "http://127.0.0.1:P/") once the page answers. A process that does not come up
    is stopped before the error is raised."""
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--host", "127.0.0.1", "--port", str(port),
                                 *flags], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url, proc, log, timeout)
    except BaseException:
        stop_app(proc)
        raise
    return proc, url


def stop_app(proc: subprocess.Popen) -> None:
    """Terminate the app; kill it if it has not ended within 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@contextlib.contextmanager
def app_process(flags: list[str], env: dict, log: Path, timeout: float = START_TIMEOUT_S) -> Iterator[str]:
    """`start_app` as a context: yields the page's URL (with its trailing slash) and stops the app on exit."""
    proc, url = start_app(flags, env, log, timeout)
    try:
        yield url
    finally:
        stop_app(proc)
