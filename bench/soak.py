"""Memory soak: N browser tabs x M events through Gradio's HTTP queue API; prints the server's RSS over time.

    python bench/soak.py --sessions 20 --events 500            # the web app, fake models, a tiny index
    python bench/soak.py --target repro --sessions 10 --events 1000   # the 15-line generator app of issue 15

The server runs in a child process (its RSS is read from /proc); each simulated tab has its own
session hash, holds a heartbeat connection like a browser (closing it closes the tab), and sends
events one after another: search, mark, more like my marks, answer, new search. After the events all
tabs close and RSS is read again once Gradio had time to drop their state.

Goals (issue 15): growth below 5 MB per 10,000 events after warm-up; RSS back within 10% of its
start (after warm-up) once the tabs close. The script prints both figures and PASS/FAIL for each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# --- the servers (run in the child process) ---------------------------------------------------------------
def trace_growth(spec: str) -> None:
    """IIR_SOAK_TRACEMALLOC="T1,T2": snapshot allocations at T1 and T2 seconds, log the largest growth to stderr."""
    import tracemalloc

    t1, t2 = (float(x) for x in spec.split(","))

    def counts():
        import collections
        import gc

        gc.collect()
        return collections.Counter(type(o).__name__ for o in gc.get_objects())

    def later():
        time.sleep(t1)
        before = counts()
        tracemalloc.start(30)  # from T1 only: imports and warm-up are not traced
        first = tracemalloc.take_snapshot()
        time.sleep(t2 - t1)
        grown = counts()
        grown.subtract(before)
        print("objects grown:", grown.most_common(12), file=sys.stderr)
        stats = tracemalloc.take_snapshot().compare_to(first, "traceback")
        for st in stats[:8]:
            print(f"{st.size_diff / 1e6:+.2f} MB in {st.count_diff:+d} blocks", file=sys.stderr)
            for line in st.traceback.format()[-24:]:
                print("   ", line, file=sys.stderr)
        sys.stderr.flush()

    threading.Thread(target=later, daemon=True).start()


def serve_repro(port: int, store_state: bool) -> None:
    """Issue 15's reproduction: a generator handler yielding dicts of outputs (the app's model-step style)."""
    import gradio as gr

    with gr.Blocks() as demo:
        state = gr.State({"n": 0}) if store_state else None
        box = gr.Textbox()
        out = gr.HTML()
        status = gr.Markdown()

        def step(text, st=None):
            yield {status: "working"}
            html = "<div>" + "".join(f"<p>{text} {i}</p>" for i in range(200)) + "</div>"
            yield {out: html, status: "done"} | ({state: {"n": st["n"] + 1}} if st is not None else {})

        box.submit(step, [box] + ([state] if state is not None else []),
                   [out, status] + ([state] if state is not None else []), api_name="step")
    demo.queue(default_concurrency_limit=4, max_size=512)
    demo.launch(server_name="127.0.0.1", server_port=port, quiet=True, prevent_thread_lock=True)
    _serving(demo)


def serve_app(port: int, workdir: Path) -> None:
    """The web app over a generated 48-image index with the fake embedder and the fake LLM."""
    sys.path.insert(0, str(ROOT / "tests"))
    from iir_testutils import build_tiny

    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import build_demo, launch_options

    os.environ.setdefault("IIR_CACHE_DIR", str(workdir / "cache"))
    r, _, _ = build_tiny(workdir, n=48)
    engine = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=8))
    demo = build_demo(engine, ["soak: fake models"])
    demo.queue(default_concurrency_limit=4, max_size=512)
    demo.launch(server_name="127.0.0.1", server_port=port, quiet=True, prevent_thread_lock=True, **launch_options(engine))
    _serving(demo)


def _serving(demo) -> None:
    if os.environ.get("IIR_SOAK_TRACEMALLOC"):
        trace_growth(os.environ["IIR_SOAK_TRACEMALLOC"])
    demo.block_thread()


# --- the driver -----------------------------------------------------------------------------------------
def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Tab:
    """One simulated browser tab: a session hash, a heartbeat connection, events sent one at a time."""

    def __init__(self, client, base: str, fns: dict[str, dict], timings: dict | None = None):
        self.client, self.base, self.fns = client, base, fns
        self.timings = timings if timings is not None else {}  # action -> [seconds]; "503 <action>" -> [count]
        self.session = uuid.uuid4().hex[:11]
        self.ids: list[str] = []  # result ids on the page (read from the returned HTML)
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._closed = threading.Event()
        self._beat.start()

    def _heartbeat(self) -> None:
        try:
            with self.client.stream("GET", f"{self.base}gradio_api/heartbeat/{self.session}", timeout=None) as r:
                for _ in r.iter_lines():
                    if self._closed.is_set():
                        return
        except Exception:  # noqa: BLE001 - the connection ends when the tab closes
            return

    def close(self) -> None:
        self._closed.set()

    def send(self, name: str, data: list, event_data=None) -> list:
        """Join the queue with one event and read its SSE stream to the end; returns the final output data."""
        fn = self.fns[name]
        body = {"data": data, "fn_index": fn["id"], "trigger_id": fn["trigger"], "session_hash": self.session,
                "event_data": event_data}
        t0 = time.monotonic()
        r = self.client.post(f"{self.base}gradio_api/queue/join", json=body, timeout=60)
        if r.status_code == 503:
            self.timings.setdefault(f"503 {name}", []).append(1)
        if r.status_code != 200:
            raise RuntimeError(f"{name}: HTTP {r.status_code} {r.text[:200]}")
        event_id = (r.json() or {}).get("event_id")
        out: list = []
        with self.client.stream("GET", f"{self.base}gradio_api/queue/data", params={"session_hash": self.session},
                                timeout=120) as s:
            for line in s.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if event_id and msg.get("event_id") not in (None, event_id):
                    continue  # another event of this tab
                if msg.get("msg") == "process_completed":
                    if not msg.get("success", True):
                        raise RuntimeError(f"{name} failed: {str(msg.get('output'))[:200]}")
                    out = (msg.get("output") or {}).get("data") or []
                    break
        self.timings.setdefault(name, []).append(time.monotonic() - t0)
        return out


def endpoints(client, base: str) -> dict[str, dict]:
    """api name -> {"id": fn index, "trigger": the first trigger's component id}."""
    cfg = client.get(f"{base}config", timeout=30).json()
    out = {}
    for i, dep in enumerate(cfg["dependencies"]):
        name = dep.get("api_name") or f"fn{i}"
        trig = dep["targets"][0][0] if dep.get("targets") else None
        out[name] = {"id": dep.get("id", i), "trigger": trig, "inputs": dep.get("inputs", [])}
    return out


def _ids(html: str) -> list[str]:
    import re

    return re.findall(r'<article class="[^"]*" data-id="([^"]+)"', html or "")


def app_script(tab: Tab, step: int, rng: random.Random) -> None:
    """One event of the web app's loop: describe, mark, more like my marks, answer, ... new search."""
    words = ["red dog", "blue car", "green tree on the beach", "white boat in the snow", "black cat in a park"]
    kind = step % 6
    # each action is its retrieval event, then its model step (the page chains them with .then)
    if kind == 0 or not tab.ids:
        out = tab.send("start", [None, rng.choice(words)])
        tab.send("start_model", [None])
    elif kind in (1, 2):
        out = tab.send("card", [None, "relevant" if kind == 1 else "irrelevant", rng.choice(tab.ids)])
    elif kind == 3:
        out = tab.send("feedback", [None, ""])
        tab.send("feedback_model", [None])
    elif kind == 4:
        out = tab.send("answer", [None, rng.choice(["yes", "it is big", "two of them"])])
        tab.send("answer_model", [None])
    else:
        out = tab.send("on_new", [None])
        tab.ids = []
        return
    html = next((o for o in out if isinstance(o, str) and "data-id" in o), None)
    if html is None:  # a dict update of the HTML component
        html = next((o.get("value") for o in out if isinstance(o, dict) and "data-id" in str(o.get("value", ""))), None)
    if html:
        tab.ids = _ids(html) or tab.ids


def repro_script(tab: Tab, step: int, rng: random.Random) -> None:
    inputs = tab.fns["step"]["inputs"]
    tab.send("step", [f"query {step}"] + [None] * (len(inputs) - 1))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", choices=("app", "repro", "repro-state"), default="app")
    p.add_argument("--sessions", type=int, default=20, help="simulated tabs, run concurrently (default 20)")
    p.add_argument("--events", type=int, default=250, help="events per tab (default 250)")
    p.add_argument("--warmup", type=float, default=0.2, help="fraction of events counted as warm-up (default 0.2)")
    p.add_argument("--samples", type=int, default=10, help="RSS readings during the run (default 10)")
    p.add_argument("--encoding", default="gzip, deflate, br", help="Accept-Encoding sent, as a browser does "
                   "(default 'gzip, deflate, br'; 'identity' for none)")
    p.add_argument("--close-wait", type=float, default=8.0, help="seconds to wait after closing the tabs")
    p.add_argument("--serve", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.sessions < 1 or a.events < 1:
        print("soak.py: error: --sessions and --events must be at least 1", file=sys.stderr)
        return 2
    if a.serve:  # the child
        if a.serve == "app":
            serve_app(a.port, a.workdir)
        else:
            serve_repro(a.port, a.serve == "repro-state")
        return 0
    return drive(a)


def drive(a) -> int:
    import tempfile

    import httpx

    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="iir-soak-"))
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", NO_PROXY="127.0.0.1,localhost")
    log_path = work / "server.log"
    child = subprocess.Popen([sys.executable, __file__, "--serve", a.target, "--port", str(port), "--workdir", str(work)],
                             env=env, stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    base = f"http://127.0.0.1:{port}/"
    limits = httpx.Limits(max_connections=4 * a.sessions + 8, max_keepalive_connections=2 * a.sessions + 4)
    client = httpx.Client(limits=limits, trust_env=False, headers={"Accept-Encoding": a.encoding})
    try:
        for _ in range(300):
            try:
                if client.get(f"{base}config", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if child.poll() is not None:
                print(f"soak.py: error: the server exited (see {work / 'server.log'})", file=sys.stderr)
                return 1
            time.sleep(0.5)
        fns = endpoints(client, base)
        script = app_script if a.target == "app" else repro_script
        total = a.sessions * a.events
        warm = max(1, int(total * a.warmup))
        every = max(1, total // a.samples)
        done = [0]
        lock = threading.Lock()
        errors: list[str] = []
        readings: list[tuple[int, float, float]] = []  # (events done, seconds, RSS MB)
        t0 = time.monotonic()
        start_rss = rss_mb(child.pid)
        print(f"target {a.target}: {a.sessions} tabs x {a.events} events; server RSS at start {start_rss:.1f} MB; "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'events':>8} {'seconds':>8} {'RSS MB':>8}")
        timings: dict[str, list] = {}
        tabs = [Tab(client, base, fns, timings) for _ in range(a.sessions)]

        def run(tab: Tab, seed: int):
            rng = random.Random(seed)
            for step in range(a.events):
                try:
                    script(tab, step, rng)
                except Exception as e:  # noqa: BLE001 - counted and shown
                    with lock:
                        errors.append(str(e)[:200])
                with lock:
                    done[0] += 1
                    n = done[0]
                if n % every == 0 or n == warm:
                    r = (n, time.monotonic() - t0, rss_mb(child.pid))
                    with lock:
                        readings.append(r)
                    print(f"{r[0]:>8} {r[1]:>8.1f} {r[2]:>8.1f}", flush=True)

        threads = [threading.Thread(target=run, args=(tab, i)) for i, tab in enumerate(tabs)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        end_rss = rss_mb(child.pid)
        for tab in tabs:
            tab.close()
        client.close()  # drops the heartbeat connections: the tabs are closed
        time.sleep(a.close_wait)
        closed_rss = rss_mb(child.pid)
        readings.sort()
        warm_rss = next((r for n, _, r in readings if n >= warm), start_rss)
        after = [(n, r) for n, _, r in readings if n >= warm]
        growth = (after[-1][1] - after[0][1]) / max(1, after[-1][0] - after[0][0]) * 10_000 if len(after) > 1 else 0.0
        elapsed = time.monotonic() - t0
        print(f"\n{total} events in {elapsed:.1f} s ({total / elapsed:.0f}/s), {len(errors)} errors"
              + (f" (first: {errors[0]})" if errors else ""))
        print(f"RSS: start {start_rss:.1f} MB, after warm-up ({warm} events) {warm_rss:.1f} MB, end {end_rss:.1f} MB, "
              f"{a.close_wait:g} s after the tabs closed {closed_rss:.1f} MB")
        ok_growth = growth < 5.0
        ok_close = closed_rss <= warm_rss * 1.10
        print(f"growth after warm-up: {growth:.1f} MB per 10,000 events (goal < 5): {'PASS' if ok_growth else 'FAIL'}")
        print(f"after closing: {closed_rss / warm_rss * 100 - 100:+.1f}% of the warm-up RSS (goal within 10%): "
              f"{'PASS' if ok_close else 'FAIL'}")
        print(f"\n{'action':<14} {'n':>6} {'p50 s':>7} {'p95 s':>7} {'HTTP 503':>8}")
        for name in sorted(k for k in timings if not k.startswith("503 ")):
            xs = sorted(timings[name])
            print(f"{name:<14} {len(xs):>6} {xs[len(xs) // 2]:>7.3f} {xs[min(len(xs) - 1, int(len(xs) * 0.95))]:>7.3f} "
                  f"{len(timings.get('503 ' + name, [])):>8}")
        print(f"load average now {os.getloadavg()[0]:.2f}; server log: {log_path}")
        return 0 if not errors else 1
    finally:
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()


if __name__ == "__main__":
    sys.exit(main())
