"""Several app processes behind nginx (deploy/nginx.conf) against one: throughput and cross-talk.

    python bench/bench_replicas.py                       # 1 process direct, 1 and 2 behind nginx; 8 s each
    python bench/bench_replicas.py --tabs 16 --seconds 5 --replicas 1 2 3

Each configuration runs `python app.py` processes (the fake LLM, a generated 48-image index that every
process memory-maps from the same folder) on free ports of 127.0.0.1, and nginx with deploy/nginx.conf
(only its ports and upstream lines changed) in a temporary prefix, then drives `--tabs` tabs of
bench/gradio_tabs.py (search with the tab's own word, two marks, new search) for `--seconds`. It prints
events per second, latency, cross-talk and how the tabs spread over the processes (nginx's access log).
Needs nginx (Debian: `apt-get install -y nginx`). tests/system/test_replicas.py runs `Replicas` too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
CONF = ROOT / "deploy" / "nginx.conf"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_conf(listen: int, upstreams: list[int]) -> str:
    """deploy/nginx.conf with its listening port and its upstream servers changed, nothing else."""
    text = CONF.read_text()
    lines = re.findall(r"^ *server 127\.0\.0\.1:\d+ .*;$", text, flags=re.M)
    if len(lines) < 1:
        raise RuntimeError(f"{CONF}: no 'server 127.0.0.1:PORT ...;' upstream line")
    pad = re.match(r"^ *", lines[0]).group(0)
    rest = lines[0].split(None, 2)[2]
    servers = "\n".join(f"{pad}server 127.0.0.1:{p} {rest}" for p in upstreams)
    text = text.replace("\n".join(lines), servers)
    return text.replace("listen 127.0.0.1:7860;", f"listen 127.0.0.1:{listen};")


def wait_http(url: str, procs: list[subprocess.Popen], timeout: float = 120.0) -> None:
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"process {p.args[:4]} exited with {p.returncode} before {url} answered")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer in {timeout:.0f} s")


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def tiny_index(workdir: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from iir_testutils import build_tiny

    build_tiny(workdir, n=48)
    return workdir / "index"


class Replicas:
    """`n` app processes over one index, behind nginx (`proxy=True`) or the first one alone (`proxy=False`).

    A context manager: `base` is the URL to open; `apps` the app processes; `prefix` nginx's folder."""

    def __init__(self, workdir: Path, n: int = 2, index: Path | None = None, proxy: bool = True,
                 app_args: tuple[str, ...] = ("--llm", "fake")):
        self.workdir, self.n, self.proxy, self.app_args = Path(workdir), n, proxy, app_args
        self.index = index
        self.apps: list[subprocess.Popen] = []
        self.nginx: subprocess.Popen | None = None
        self.ports = [free_port() for _ in range(n)]
        self.prefix = self.workdir / "nginx"
        self.base = ""

    def __enter__(self) -> Replicas:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        index = self.index or tiny_index(self.workdir)
        env = {**os.environ, "IIR_CACHE_DIR": str(self.workdir / "cache"), "PYTHONUNBUFFERED": "1"}
        for i, port in enumerate(self.ports):
            log = open(self.workdir / f"app{i}.log", "w")  # noqa: SIM115 - closed with the process's end
            self.apps.append(subprocess.Popen(
                [sys.executable, str(ROOT / "app.py"), "--index", str(index), "--host", "127.0.0.1", "--port",
                 str(port), "--trusted-proxies", "127.0.0.1", *self.app_args],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
        for port in self.ports:
            wait_http(f"http://127.0.0.1:{port}/", self.apps)
        if not self.proxy:
            self.base = f"http://127.0.0.1:{self.ports[0]}/"
            return
        if NGINX is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install -y nginx)")
        self.prefix.mkdir(parents=True, exist_ok=True)
        listen = free_port()
        (self.prefix / "nginx.conf").write_text(nginx_conf(listen, self.ports))
        self.nginx = subprocess.Popen([NGINX, "-p", str(self.prefix), "-e", "error.log", "-c",
                                       str(self.prefix / "nginx.conf"), "-g", "daemon off;"],
                                      stdout=subprocess.DEVNULL, stderr=open(self.prefix / "stderr.log", "w"))
        self.base = f"http://127.0.0.1:{listen}/"
        wait_http(self.base, [self.nginx], timeout=20)

    def __exit__(self, *exc) -> None:
        stop(([self.nginx] if self.nginx else []) + self.apps)

    def served_by(self) -> dict[str, set[str]]:
        """From nginx's access log: each browser's affinity cookie -> the app processes that served it."""
        out: dict[str, set[str]] = defaultdict(set)
        log = self.prefix / "access.log"
        for line in log.read_text().splitlines() if log.exists() else []:
            m = re.search(r"upstream=(\S+) replica=(\S+)", line)
            if m and m.group(1) != "-":
                out[m.group(2)].add(m.group(1))
        return dict(out)


def measure(n: int, proxy: bool, tabs: int, seconds: float) -> dict:
    from gradio_tabs import run_tabs

    with tempfile.TemporaryDirectory(prefix="iir-replicas-") as d, Replicas(Path(d), n, proxy=proxy) as r:
        run_tabs(r.base, 2, 1.5)  # warm-up: imports and first searches in every process
        res = run_tabs(r.base, tabs, seconds)
        if proxy:
            spread = defaultdict(int)
            for ups in r.served_by().values():
                spread["+".join(sorted(ups))] += 1
            res["browsers_per_process"] = sorted(spread.values(), reverse=True)
            res["browsers_on_two_processes"] = sum("+" in k for k in spread)
    return {"processes": n, "proxy": "nginx" if proxy else "none", **res}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tabs", type=int, default=16, help="tabs sending events at once (default 16)")
    p.add_argument("--seconds", type=float, default=8.0, help="seconds per configuration (default 8)")
    p.add_argument("--replicas", type=int, nargs="+", default=[1, 2], help="process counts behind nginx")
    p.add_argument("--no-direct", action="store_true", help="skip the run of one process without nginx")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    runs = [] if a.no_direct else [measure(1, False, a.tabs, a.seconds)]
    runs += [measure(n, True, a.tabs, a.seconds) for n in a.replicas]
    if a.json:
        print(json.dumps(runs, indent=1))
        return 0
    print(f"{a.tabs} tabs, {a.seconds:.0f} s each, on {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f})")
    print("processes proxy  events/s  p50 s  p95 s  cross-talk  errors  browsers per process")
    for r in runs:
        print(f"{r['processes']:>9} {r['proxy']:<6} {r['events_s']:>8} {r['p50_s']:>6} {r['p95_s']:>6} "
              f"{r['crosstalk']:>10} {len(r['errors']):>7}  {r.get('browsers_per_process', '')}")
        for e in r["errors"]:
            print("   error:", e)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
