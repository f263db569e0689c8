"""Latency of the search loop as a person feels it: the running web app driven through its HTTP API.

For each action (describe, answer, skip, mark + more, relative caption, and a new search submitted while
a question is still being written) it measures the time to results (the action's own event returns the
new round) and the time to the next question (its model event returns with a question on the page),
over N sessions, and prints p50/p95 per action and per LLM speed.

    python bench/bench_loop.py                           # fake models, LLM sleeps 0 and 2 s per call
    python bench/bench_loop.py --sleeps 0,1,4 --sessions 20
    python bench/bench_loop.py --models default          # the default offline models (slow start-up)
    python bench/bench_loop.py --url http://127.0.0.1:7860/   # an app already running

Goals (exit code 1 when missed): time to results <= 1 s at p95 for every action whatever the LLM's
speed, and no action refused while model work is pending. The LLM-sleep-0 run is the baseline: the
"x base" column is each p95 against it, measured in the same run (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACTIONS = ("describe", "answer", "skip", "mark", "more", "relative", "new search while asking")
GOAL_RESULTS_S = 1.0
REFUSED = re.compile(r"Still working|wait for it|⚠|Something went wrong")
DESCRIPTIONS = ("a dog playing with a ball", "a red car on the road", "a cake with candles", "a house with a garden",
                "a cat sleeping", "a tree in autumn", "a boat on the sea", "a bird on a branch")


@dataclass
class Figures:
    results: dict[str, list[float]] = field(default_factory=lambda: {a: [] for a in ACTIONS})
    question: dict[str, list[float]] = field(default_factory=lambda: {a: [] for a in ACTIONS})
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(llm: str, models: str, k: int, tmp: Path) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1",
               IIR_INDICES_DIR=str(tmp / "indices"), IIR_CACHE_DIR=str(tmp / "cache"))
    for key in ("PORT", "GRADIO_SERVER_PORT", "GRADIO_SERVER_NAME", "OPENAI_API_KEY", "IIR_LLM_BASE_URL", "HF_TOKEN"):
        env.pop(key, None)
    if models == "fake":
        env.update(IIR_EMBEDDER="fake:32", IIR_LLM=llm, HF_HUB_OFFLINE="1")
    else:  # the default offline models (what a first start on this machine gets)
        env.pop("IIR_LLM", None)
        env.pop("IIR_EMBEDDER", None)
    log = tmp / f"app-{port}.log"
    out = open(log, "w")
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--host", "127.0.0.1", "--port", str(port),
                             "-k", str(k)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    end = time.time() + 600
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with code {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return proc, url, log
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"the app did not come up within 600 s (log: {log})")


def text(html) -> str:
    return re.sub(r"<[^>]+>", " ", str(html))


class Tab:
    """One browser tab, as the HTTP API sees it (its own session and gr.State)."""

    OUT = ("state", "status", "results", "dialogue")

    def __init__(self, url: str, figures: Figures):
        from gradio_client import Client

        self.c = Client(url, verbose=False)
        self.f = figures
        self.last: tuple = ()

    def _status(self, out) -> str:
        return str(out[0]) if out else ""

    def act(self, endpoint: str, *args) -> tuple:
        out = self.c.predict(*args, api_name=endpoint)
        status = self._status(out)
        if REFUSED.search(status):
            self.f.refused.append(f"{endpoint}: {status[:120]}")
        self.last = out
        return out

    def ids(self) -> list[str]:
        return re.findall(r'<article class="[^"]*" data-id="([^"]+)"', str(self.last[1])) if self.last else []

    def question(self) -> str:
        m = re.search(r'class="iir-question"[^>]*>(.*?)</div>', str(self.last[2]) if self.last else "", re.S)
        return text(m.group(1)) if m else ""

    def timed(self, action: str, endpoint: str, *args, model: bool = True) -> None:
        t0 = time.perf_counter()
        self.act(endpoint, *args)
        self.f.results[action].append(time.perf_counter() - t0)
        if model:
            self.follow(action, endpoint, t0)

    def follow(self, action: str, endpoint: str, t0: float) -> None:
        out = self.c.predict(api_name=f"{endpoint}_model")
        if out and isinstance(out[2], str):
            self.last = out
        if self.question():
            self.f.question[action].append(time.perf_counter() - t0)


def one_session(url: str, f: Figures, n: int) -> None:
    tab = Tab(url, f)
    tab.timed("describe", "/start", DESCRIPTIONS[n % len(DESCRIPTIONS)])
    if tab.question():
        tab.timed("answer", "/answer", "it is bigger and brighter")
        tab.timed("skip", "/skip")
    ids = tab.ids()
    if ids:
        t0 = time.perf_counter()
        tab.act("/card", "relevant", ids[0])
        tab.act("/card", "irrelevant", ids[-1])
        f.results["mark"].append((time.perf_counter() - t0) / 2)
        tab.timed("more", "/feedback", "")
        tab.timed("relative", "/relative", "the same but at night", "")
    # a new search while the question of a skip is being written (the pending step is superseded)
    if tab.question():
        tab.act("/skip")
        job = tab.c.submit(api_name="/skip_model")
        time.sleep(0.05)
        t0 = time.perf_counter()
        tab.act("/start", "a new search typed meanwhile")
        f.results["new search while asking"].append(time.perf_counter() - t0)
        if "a new search typed meanwhile" not in text(tab.last[2]):
            f.errors.append("the new search did not run while a question was pending")
        try:
            job.result(timeout=600)
        except Exception as e:  # the superseded step ends without output
            f.errors.append(f"superseded step: {e}")
        tab.follow("new search while asking", "/start", t0)


def run(url: str, sessions: int) -> Figures:
    f = Figures()
    for n in range(sessions):
        try:
            one_session(url, f, n)
        except Exception as e:
            f.errors.append(f"session {n}: {type(e).__name__}: {e}")
    return f


def table(label: str, f: Figures, base: Figures | None) -> list[str]:
    rows = [f"\n### {label}\n", "| action | n | results p50 (s) | results p95 (s) | x base p95 | question p50 (s) "
            "| question p95 (s) |", "|---|---|---|---|---|---|---|"]
    for a in ACTIONS:
        r, q = f.results[a], f.question[a]
        ratio = ""
        if base is not None and base.results[a]:
            ratio = f"{pct(r, .95) / max(pct(base.results[a], .95), 1e-9):.2f}"
        qs = (f"{pct(q, .5):.2f} | {pct(q, .95):.2f}") if q else "- | -"
        rows.append(f"| {a} | {len(r)} | {pct(r, .5):.3f} | {pct(r, .95):.3f} | {ratio} | {qs} |")
    rows.append(f"\nrefused: {len(f.refused)}; errors: {len(f.errors)}")
    rows += [f"- refused {x}" for x in f.refused[:5]] + [f"- error {x}" for x in f.errors[:5]]
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sleeps", default="0,2", help="fake LLM seconds per call, one app per value (first = baseline)")
    p.add_argument("--sessions", type=int, default=10, help="sessions per app (each runs every action once)")
    p.add_argument("--models", choices=("fake", "default"), default="fake",
                   help="fake: fake:32 embedder + fake:sleep=S LLM; default: the app's default offline models")
    p.add_argument("-k", type=int, default=8, help="results per round")
    p.add_argument("--url", help="measure an app already running at this URL instead of starting one")
    a = p.parse_args(argv)
    if a.sessions < 1:
        p.error("--sessions must be at least 1")
    try:
        sleeps = [float(x) for x in a.sleeps.split(",") if x.strip()]
    except ValueError:
        p.error(f"--sleeps takes numbers separated by commas, got {a.sleeps!r}")
    load = os.getloadavg()
    print(f"# bench_loop: {a.sessions} sessions per app, k={a.k}, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} at start ({os.cpu_count()} CPUs)")
    runs: list[tuple[str, Figures]] = []
    if a.url:
        runs.append((f"app at {a.url}", run(a.url, a.sessions)))
    else:
        configs = [(f"fake:sleep={s:g}", f"fake LLM sleeping {s:g} s per call") for s in sleeps] \
            if a.models == "fake" else [("", "default offline models")]
        with tempfile.TemporaryDirectory(prefix="bench-loop-") as tmp:
            for llm, label in configs:
                t = time.perf_counter()
                proc, url, log = start_app(llm, a.models, a.k, Path(tmp))
                print(f"started the app ({label}) in {time.perf_counter() - t:.1f} s")
                try:
                    Tab(url, Figures()).act("/start", "warm up")  # first request: lazy imports, caches
                    runs.append((label, run(url, a.sessions)))
                finally:
                    proc.terminate()
                    try:
                        proc.wait(15)
                    except subprocess.TimeoutExpired:
                        proc.kill()
    base = runs[0][1] if len(runs) > 1 else None
    ok = True
    for label, f in runs:
        print("\n".join(table(label, f, base if f is not base else None)))
        worst = max((pct(f.results[x], .95) for x in ACTIONS if f.results[x]), default=float("nan"))
        if not worst <= GOAL_RESULTS_S or f.refused or f.errors:
            ok = False
    load = os.getloadavg()
    print(f"\nload average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"goal (results p95 <= {GOAL_RESULTS_S:g} s for every action, nothing refused, no error): "
          + ("met" if ok else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
