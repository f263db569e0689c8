"""Memory soak and load: N browser tabs x M events through Gradio's HTTP queue API; prints the server's
RSS over time, per-action latency, HTTP 503s and cross-talk.

    python bench/soak.py --sessions 20 --events 500            # the web app, fake models, a tiny index
    python bench/soak.py --target repro --sessions 10 --events 1000   # the 15-line generator app of issue 15
    python bench/soak.py --compare --sessions 4 --events 1000  # the memory fixes off, then on (same run)
    python bench/soak.py --sessions 200 --events 6             # load: 200 tabs, the app's queue settings
    python bench/soak.py --sessions 200 --events 500 --per-tab 25   # 200 tabs at once, opening and closing

The server runs in a child process (its RSS is read from /proc) with the app's queue settings
(IIR_CONCURRENCY, IIR_SEARCH_CONCURRENCY, IIR_QUEUE_SIZE or --queue-size) and its memory settings
(ui.session_ids: IIR_GRADIO_SESSION_FIX).
`--variant NAME:K=V,...` runs one server per variant, one after another, with those env settings, and
prints a table comparing them. IIR_SOAK_MALLINFO=S logs glibc's malloc figures every S s (server log).
IIR_SOAK_TRIM=S calls malloc_trim(0) every S s; IIR_MALLOC_ARENAS=0 leaves glibc's arenas as they are (the app
limits them to one: ui/serving/malloc_arenas.py); IIR_SOAK_FAKE_CALLS=all lets the fake LLM keep every call.
Each simulated tab has its own session hash, holds a heartbeat connection like a browser (closing it
closes the tab), and sends events one after another: search, mark, more like my marks, answer, new
search. Each tab types a word of its own: an output showing another tab's word is cross-talk. After the
events all tabs close and RSS is read again once Gradio had time to drop their state.

With `--per-tab K` each tab closes after K events (its heartbeat connection ends) and a new tab opens in
its place, so tabs open and close all through the run, as a day of visitors does.

Goals (issue 29, was 5 MB in issue 15): growth below 2 MB per 10,000 events after warm-up; RSS back within
10% of its start (after warm-up) once the tabs close; no cross-talk. The script prints each figure with PASS/FAIL,
and the growth after warm-up by kind of memory mapping (heap, anon, stack, file) and thread count.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
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
    from interactive_ir.ui.serving.process import install

    install()  # as app.py does (off with IIR_MALLOC_ARENAS=0, IIR_GRADIO_SESSION_FIX=0)
    import gradio as gr

    with gr.Blocks() as demo:
        state = gr.State({"n": 0}) if store_state else None
        box = gr.Textbox()
        out = gr.HTML()
        status = gr.Markdown()

        style = os.environ.get("IIR_SOAK_REPRO_STYLE", "generator")  # or "function", "async-generator"

        def page(text, st):
            html = "<div>" + "".join(f"<p>{text} {i}</p>" for i in range(200)) + "</div>"
            return {out: html, status: "done"} | ({state: {"n": st["n"] + 1}} if st is not None else {})

        def step_gen(text, st=None):
            yield {status: "working"}
            yield page(text, st)

        async def step_async(text, st=None):
            yield {status: "working"}
            yield page(text, st)

        def step_fn(text, st=None):
            return page(text, st)

        step = {"generator": step_gen, "function": step_fn, "async-generator": step_async}[style]

        box.submit(step, [box] + ([state] if state is not None else []),
                   [out, status] + ([state] if state is not None else []), api_name="step")
    demo.queue(default_concurrency_limit=4, max_size=512)
    demo.launch(server_name="127.0.0.1", server_port=port, quiet=True, prevent_thread_lock=True)
    _serving(demo)


def serve_app(port: int, workdir: Path) -> None:
    """The web app over a generated 48-image index with the fake embedder and the fake LLM."""
    from interactive_ir.ui.serving.process import install

    install()  # as app.py does first (IIR_MALLOC_ARENAS=0: glibc's default arenas)
    sys.path.insert(0, str(ROOT / "tests"))
    from iir_testutils import build_tiny

    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import build_demo, launch_options
    from interactive_ir.ui.startup import app_config

    cfg = app_config()  # the app's queue settings (IIR_CONCURRENCY, IIR_SEARCH_CONCURRENCY, IIR_QUEUE_SIZE)
    os.environ.setdefault("IIR_CACHE_DIR", str(workdir / "cache"))
    r, _, _ = build_tiny(workdir, n=48)
    keep = os.environ.get("IIR_SOAK_FAKE_CALLS", "")  # calls the fake LLM keeps: "all" (as before), or a number
    llm = FakeLLM(keep_calls=None) if keep == "all" else FakeLLM(keep_calls=int(keep)) if keep else FakeLLM()
    engine = build_engine(r, llm=llm, config=EngineConfig(k=8))
    demo = build_demo(engine, ["soak: fake models"], search_concurrency=cfg.search_concurrency,
                      click_concurrency=cfg.click_concurrency)
    demo.queue(default_concurrency_limit=cfg.concurrency, max_size=cfg.queue_size)
    demo.launch(server_name="127.0.0.1", server_port=port, quiet=True, prevent_thread_lock=True, **launch_options(engine))
    _serving(demo)


def log_mallinfo(every_s: float) -> None:
    """IIR_SOAK_MALLINFO=S: every S seconds log glibc's malloc figures (mallinfo2, all arenas) and Python's
    allocated block count to stderr: in-use bytes that grow are live memory, free bytes that grow are memory
    malloc keeps (fragmentation), neither growing while RSS grows points at memory outside malloc."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]

    try:
        fn = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        print("mallinfo2: not available (glibc 2.33 or later only)", file=sys.stderr)
        return
    fn.restype = MallInfo2

    def loop():
        while True:
            m = fn()
            print(f"mallinfo t={time.monotonic():.0f} RSS {rss_mb(os.getpid()):.1f} MB: sbrk+arenas {m.arena / 1e6:.1f} MB, "
                  f"in use {m.uordblks / 1e6:.1f} MB, free {m.fordblks / 1e6:.1f} MB, mmapped {m.hblkhd / 1e6:.1f} MB "
                  f"({m.hblks} blocks); python blocks {sys.getallocatedblocks()}; threads {threading.active_count()}",
                  file=sys.stderr, flush=True)
            time.sleep(every_s)

    threading.Thread(target=loop, daemon=True).start()


def gradio_sizes(demo) -> dict[str, int]:
    """The sizes of Gradio's per-tab and per-event records in this process: a record that grows with the
    tabs opened (and not with the tabs open) is what a closed tab leaves behind."""
    app, queue = getattr(demo, "server_app", None), getattr(demo, "_queue", None)
    holder = getattr(app, "state_holder", None)
    sizes = {
        "session_data": len(getattr(holder, "session_data", ())),
        "time_last_used": len(getattr(holder, "time_last_used", ())),
        "pending_messages": len(getattr(queue, "pending_messages_per_session", ())),
        "pending_event_ids": len(getattr(queue, "pending_event_ids_session", ())),
        "events": len(getattr(queue, "event_ids_to_events", ())),
        "analytics": len(getattr(queue, "event_analytics", ())),
        "iterators": len(getattr(app, "iterators", ())),
        "iterators_to_reset": len(getattr(app, "iterators_to_reset", ())),
        "pending_streams": len(getattr(demo, "pending_streams", ())),
        "pending_diff_streams": len(getattr(demo, "pending_diff_streams", ())),
    }
    return sizes


def log_sizes(demo, every_s: float) -> None:
    """IIR_SOAK_SIZES=S: every S seconds log the sizes of Gradio's per-tab records (`gradio_sizes`), Python's
    allocated blocks, the gc's object count and glibc's in-use and free bytes to stderr."""
    import ctypes
    import gc

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]

    try:
        mallinfo = ctypes.CDLL("libc.so.6").mallinfo2
        mallinfo.restype = MallInfo2
    except (OSError, AttributeError):
        mallinfo = None

    def loop():
        while True:
            time.sleep(every_s)
            m = mallinfo() if mallinfo else None
            malloc = f" malloc in use {m.uordblks / 1e6:.1f} free {m.fordblks / 1e6:.1f} MB;" if m else ""
            sizes = " ".join(f"{k}={v}" for k, v in gradio_sizes(demo).items())
            print(f"sizes t={time.monotonic():.0f} RSS {rss_mb(os.getpid()):.1f} MB;{malloc} python blocks "
                  f"{sys.getallocatedblocks()} objects {len(gc.get_objects())} threads {threading.active_count()}; "
                  f"{sizes}", file=sys.stderr, flush=True)

    threading.Thread(target=loop, daemon=True).start()


def trim_every(every_s: float) -> None:
    """IIR_SOAK_TRIM=S: call glibc's malloc_trim(0) every S seconds (a diagnostic: does freed memory that
    malloc keeps account for the growth?)."""
    import ctypes

    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        print("malloc_trim: not available", file=sys.stderr)
        return

    def loop():
        while True:
            time.sleep(every_s)
            trim(0)

    threading.Thread(target=loop, daemon=True).start()


def log_big_objects(at_s: float, min_kb: float = 256) -> None:
    """IIR_SOAK_BIG=T: at T seconds log the largest Python containers and strings (over `min_kb`), with the
    types of what refers to them: a list, dict or buffer that grows with every event shows up here."""
    import gc

    def later():
        time.sleep(at_s)
        gc.collect()
        big = []
        seen: set[int] = set()
        for o in gc.get_objects():
            try:
                size = sys.getsizeof(o)
                if size >= min_kb * 1024:
                    big.append((size, o))
                # what it refers to, gc-tracked or not: a dict of strings and numbers is not tracked by gc
                for v in gc.get_referents(o):
                    if not gc.is_tracked(v) and sys.getsizeof(v) >= min_kb * 1024 and id(v) not in seen:
                        seen.add(id(v))
                        big.append((sys.getsizeof(v), v))
            except Exception:  # noqa: BLE001 - a diagnostic: odd objects are skipped
                continue
        big.sort(key=lambda x: -x[0])
        for size, o in big[:15]:
            refs = [type(r).__name__ + (f"({len(r)})" if hasattr(r, "__len__") else "") for r in gc.get_referrers(o)[:5]
                    if r is not big]
            desc = f"len {len(o)}" if hasattr(o, "__len__") else ""
            sample = repr(o[:3] if isinstance(o, (list, str, bytes)) else list(o.items())[:2] if isinstance(o, dict) else "")[:300]
            print(f"big object: {size / 1e6:.2f} MB {type(o).__name__} {desc}; referrers {refs}; starts {sample}",
                  file=sys.stderr, flush=True)

    threading.Thread(target=later, daemon=True).start()


def _serving(demo) -> None:
    if os.environ.get("IIR_SOAK_BIG"):
        log_big_objects(float(os.environ["IIR_SOAK_BIG"]))
    if os.environ.get("IIR_SOAK_TRIM"):
        trim_every(float(os.environ["IIR_SOAK_TRIM"]))
    if os.environ.get("IIR_SOAK_MALLINFO"):
        log_mallinfo(float(os.environ["IIR_SOAK_MALLINFO"]))
    if os.environ.get("IIR_SOAK_TRACEMALLOC"):
        trace_growth(os.environ["IIR_SOAK_TRACEMALLOC"])
    if os.environ.get("IIR_SOAK_SIZES"):
        log_sizes(demo, float(os.environ["IIR_SOAK_SIZES"]))
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


_TAGS = itertools.count()


class Tab:
    """One simulated browser tab: a session hash, a heartbeat connection, events sent one at a time."""

    def __init__(self, client, base: str, fns: dict[str, dict], timings: dict | None = None, beat_client=None):
        self.client, self.base, self.fns = client, base, fns
        self.beat_client = beat_client  # the heartbeat's own client, closed with the tab (None: `client`'s)
        self.timings = timings if timings is not None else {}  # action -> [seconds]; "503 <action>" -> [count]
        self.session = uuid.uuid4().hex[:11]
        self.tag = f"zq{next(_TAGS)}"  # a word only this tab types: seen on another tab's page = cross-talk
        self.crosstalk = 0  # outputs that showed another tab's word
        self.missing = 0  # searches whose page did not show this tab's own word
        self.ids: list[str] = []  # result ids on the page (read from the returned HTML)
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._closed = threading.Event()
        self._beat.start()

    def _heartbeat(self) -> None:
        try:
            beat = self.beat_client or self.client
            with beat.stream("GET", f"{self.base}gradio_api/heartbeat/{self.session}", timeout=None) as r:
                for _ in r.iter_lines():
                    if self._closed.is_set():
                        return
        except Exception:  # noqa: BLE001 - the connection ends when the tab closes
            return

    def close(self) -> None:
        """The tab closes: with a heartbeat client of its own, its connection ends now (the server drops the
        tab's state); else when the shared client closes."""
        self._closed.set()
        if self.beat_client is not None:
            self.beat_client.close()

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
        if any(f"zq{n}" != self.tag for n in re.findall(r"\bzq(\d+)\b", str(out))):
            self.crosstalk += 1
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
    return re.findall(r'<article class="[^"]*" data-id="([^"]+)"', html or "")


def app_script(tab: Tab, step: int, rng: random.Random) -> None:
    """One event of the web app's loop: describe, mark, more like my marks, answer, ... new search."""
    words = ["red dog", "blue car", "green tree on the beach", "white boat in the snow", "black cat in a park"]
    kind = step % 6
    # each action is its retrieval event, then its model step (the page chains them with .then)
    if kind == 0 or not tab.ids:
        out = tab.send("start", [None, f"{rng.choice(words)} {tab.tag}"])
        if not re.search(rf"\b{tab.tag}\b", str(out)):
            tab.missing += 1
        tab.send("start_model", [None])
    elif kind in (1, 2):
        out = tab.send("card", [None, "relevant" if kind == 1 else "irrelevant", rng.choice(tab.ids)])
    elif kind == 3:
        out = tab.send("feedback", [None, ""])
        tab.send("feedback_model", [None])
    elif kind == 4:
        out = tab.send("answer", [None, f"{rng.choice(['yes', 'it is big', 'two of them'])} {tab.tag}"])
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


def memory_map(pid: int) -> dict[str, float]:
    """The server's RSS (MB) by kind of mapping: "heap" (glibc's main arena), "anon" (other arenas, large
    blocks, Python's own arenas), "stack", "file" (code and data of libraries); "maps": anon mapping count;
    "threads": thread count."""
    out = {"heap": 0.0, "anon": 0.0, "stack": 0.0, "file": 0.0, "maps": 0.0, "threads": 0.0}
    kind = "anon"
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                parts = line.split()
                if not parts[0].endswith(":"):  # a mapping's first line: address range, ..., path
                    path = parts[5] if len(parts) > 5 else ""
                    kind = ("heap" if path == "[heap]" else "stack" if path.startswith("[stack") else
                            "anon" if not path else "file" if path.startswith("/") else "other")
                    out["maps"] += kind == "anon"
                elif parts[0] == "Rss:" and kind in out:
                    out[kind] += int(parts[1]) / 1024
        with open(f"/proc/{pid}/status") as f:
            out["threads"] = float(next((line.split()[1] for line in f if line.startswith("Threads:")), "nan"))
    except OSError:  # the server exited, or /proc is not Linux's
        pass
    return out


def parse_variant(spec: str) -> tuple[str, dict[str, str]]:
    """'NAME:K=V,K=V' -> (NAME, {K: V}); ValueError with the fix for anything else."""
    name, _, rest = spec.partition(":")
    env = {}
    for kv in filter(None, (x.strip() for x in rest.split(","))):
        k, eq, v = kv.partition("=")
        if not eq or not k:
            raise ValueError(f"--variant {spec!r}: settings are K=V separated by commas, e.g. 'arena2:MALLOC_ARENA_MAX=2'")
        env[k] = v
    return name or "default", env


COMPARE = ["fixes off:IIR_GRADIO_SESSION_FIX=0,IIR_MALLOC_ARENAS=0,IIR_SOAK_FAKE_CALLS=all", "fixes on:"]  # --compare


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", choices=("app", "repro", "repro-state"), default="app")
    p.add_argument("--sessions", type=int, default=20, help="simulated tabs, run concurrently (default 20)")
    p.add_argument("--events", type=int, default=250, help="events per tab (default 250)")
    p.add_argument("--per-tab", type=int, default=0, help="events a tab sends before it closes and a new tab "
                   "opens in its place (default 0: the tabs stay open until the end)")
    p.add_argument("--warmup", type=float, default=0.2, help="fraction of events counted as warm-up (default 0.2)")
    p.add_argument("--samples", type=int, default=10, help="RSS readings during the run (default 10)")
    p.add_argument("--encoding", default="gzip, deflate, br", help="Accept-Encoding sent, as a browser does "
                   "(default 'gzip, deflate, br'; 'identity' for none)")
    p.add_argument("--close-wait", type=float, default=8.0, help="seconds to wait after closing the tabs")
    p.add_argument("--queue-size", type=int, help="app: most waiting events before HTTP 503 (default: the app's, "
                   "IIR_QUEUE_SIZE or 64)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME:K=V,...",
                   help="run a server per variant, one after another, with these env settings, and compare them "
                        "(e.g. --variant base: --variant 'arena2:MALLOC_ARENA_MAX=2')")
    p.add_argument("--compare", action="store_true",
                   help="the memory fixes off, then on: " + " / ".join(repr(v) for v in COMPARE))
    p.add_argument("--serve", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.sessions < 1 or a.events < 1 or a.per_tab < 0:
        print("soak.py: error: --sessions and --events must be at least 1, --per-tab at least 0", file=sys.stderr)
        return 2
    if a.serve:  # the child
        if a.serve == "app":
            serve_app(a.port, a.workdir)
        else:
            serve_repro(a.port, a.serve == "repro-state")
        return 0
    try:
        variants = [parse_variant(v) for v in (a.variant + (COMPARE if a.compare else []))] or [("default", {})]
    except ValueError as e:
        print(f"soak.py: error: {e}", file=sys.stderr)
        return 2
    if a.queue_size is not None:
        variants = [(n, {"IIR_QUEUE_SIZE": str(a.queue_size)} | env) for n, env in variants]
    results = []
    for name, env in variants:
        if len(variants) > 1:
            print(f"\n=== variant {name}: {' '.join(f'{k}={v}' for k, v in env.items()) or '(no settings)'}")
        results.append((name, drive(a, env)))
    if len(results) > 1:
        print(f"\n{'variant':<22} {'growth MB/10k':>13} {'start':>7} {'warm':>7} {'end':>7} {'closed':>7} "
              f"{'closed/warm':>11} {'errors':>6} {'load':>5}")
        for name, r in results:
            if r is None:
                print(f"{name:<22} (the server did not start)")
                continue
            print(f"{name:<22} {r['growth']:>13.1f} {r['start']:>7.1f} {r['warm']:>7.1f} {r['end']:>7.1f} "
                  f"{r['closed']:>7.1f} {r['closed'] / r['warm'] * 100 - 100:>+10.1f}% {r['errors']:>6} {r['load']:>5.2f}")
    return 0 if all(r is not None and not r["errors"] and not r["crosstalk"] for _, r in results) else 1


def _wait_ready(client, base: str, child, work: Path) -> bool:
    """Wait (up to 150 s) for the server to answer; False when it exited."""
    import httpx

    for _ in range(300):
        try:
            if client.get(f"{base}config", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if child.poll() is not None:
            print(f"soak.py: error: the server exited (see {work / 'server.log'})", file=sys.stderr)
            return False
        time.sleep(0.5)
    return True


def _run_tabs(a, tabs: list, script, pid: int, warm: int, every: int, t0: float, errors: list[str],
              readings: list[tuple[int, float, float]], maps: dict[str, dict[str, float]]) -> None:
    """Every tab runs its `a.events` events on its own thread; a reading of the server's RSS every `every`
    events (and the memory map after `warm`). With `a.per_tab`, a tab closes after that many events and a
    new one (appended to `tabs`) takes its place on the thread."""
    done = [0]
    lock = threading.Lock()

    def run(tab: Tab, seed: int):
        rng = random.Random(seed)
        j = 0  # the tab's own event count
        for _ in range(a.events):
            if a.per_tab and j == a.per_tab:
                tab.close()
                tab, j = reopen(tab), 0
                with lock:
                    tabs.append(tab)
            j += 1
            try:
                script(tab, j - 1, rng)
            except Exception as e:  # noqa: BLE001 - counted and shown
                with lock:
                    errors.append(str(e)[:200])
            with lock:
                done[0] += 1
                n = done[0]
            if n % every == 0 or n == warm:
                r = (n, time.monotonic() - t0, rss_mb(pid))
                if n == warm:
                    maps["warm"] = memory_map(pid)
                with lock:
                    readings.append(r)
                print(f"{r[0]:>8} {r[1]:>8.1f} {r[2]:>8.1f}", flush=True)

    threads = [threading.Thread(target=run, args=(tab, i)) for i, tab in enumerate(list(tabs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def reopen(tab: Tab) -> Tab:
    """A new tab in place of `tab` (closed): the same client, timings and endpoints, its own heartbeat client."""
    import httpx

    return Tab(tab.client, tab.base, tab.fns, tab.timings, beat_client=httpx.Client(trust_env=False))


def drive(a, extra_env: dict[str, str] | None = None) -> dict | None:
    """One server, one soak: prints its figures and returns them (None when the server did not start)."""
    import tempfile

    import httpx

    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="iir-soak-"))
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", NO_PROXY="127.0.0.1,localhost") | (extra_env or {})
    log_path = work / "server.log"
    child = subprocess.Popen([sys.executable, __file__, "--serve", a.target, "--port", str(port), "--workdir", str(work)],
                             env=env, stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    base = f"http://127.0.0.1:{port}/"
    limits = httpx.Limits(max_connections=4 * a.sessions + 8, max_keepalive_connections=2 * a.sessions + 4)
    client = httpx.Client(limits=limits, trust_env=False, headers={"Accept-Encoding": a.encoding})
    try:
        if not _wait_ready(client, base, child, work):
            return None
        fns = endpoints(client, base)
        script = app_script if a.target == "app" else repro_script
        total = a.sessions * a.events
        warm = max(1, int(total * a.warmup))
        every = max(1, total // a.samples)
        errors: list[str] = []
        readings: list[tuple[int, float, float]] = []  # (events done, seconds, RSS MB)
        maps: dict[str, dict[str, float]] = {}  # "warm" / "end" -> memory_map()
        t0 = time.monotonic()
        start_rss = rss_mb(child.pid)
        load = os.getloadavg()[0]
        churn = f", each tab closing after {a.per_tab} events and a new one opening" if a.per_tab else ""
        print(f"target {a.target}: {a.sessions} tabs x {a.events} events{churn}; server RSS at start "
              f"{start_rss:.1f} MB; load average {load:.2f}")
        print(f"{'events':>8} {'seconds':>8} {'RSS MB':>8}")
        timings: dict[str, list] = {}
        tabs = [Tab(client, base, fns, timings, beat_client=httpx.Client(trust_env=False) if a.per_tab else None)
                for _ in range(a.sessions)]
        _run_tabs(a, tabs, script, child.pid, warm, every, t0, errors, readings, maps)
        end_rss = rss_mb(child.pid)
        maps["end"] = memory_map(child.pid)
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
        print(f"\n{total} events in {elapsed:.1f} s ({total / elapsed:.0f}/s), {len(tabs)} tabs opened, {len(errors)} errors"
              + (f" (first: {errors[0]})" if errors else ""))
        print(f"RSS: start {start_rss:.1f} MB, after warm-up ({warm} events) {warm_rss:.1f} MB, end {end_rss:.1f} MB, "
              f"{a.close_wait:g} s after the tabs closed {closed_rss:.1f} MB")
        if "warm" in maps:
            w, e = maps["warm"], maps["end"]
            print("after warm-up, by mapping: " + ", ".join(f"{k} {e[k] - w[k]:+.1f} MB" for k in ("heap", "anon", "stack", "file"))
                  + f"; anon mappings {w['maps']:.0f} -> {e['maps']:.0f}; threads {w['threads']:.0f} -> {e['threads']:.0f}")
        ok_growth = growth < 2.0
        ok_close = closed_rss <= warm_rss * 1.10
        print(f"growth after warm-up: {growth:.1f} MB per 10,000 events (goal < 2): {'PASS' if ok_growth else 'FAIL'}")
        print(f"after closing: {closed_rss / warm_rss * 100 - 100:+.1f}% of the warm-up RSS (goal within 10%): "
              f"{'PASS' if ok_close else 'FAIL'}")
        crosstalk, missing = sum(t.crosstalk for t in tabs), sum(t.missing for t in tabs)
        if a.target == "app":
            print(f"cross-talk: {crosstalk} outputs showed another tab's words (goal 0); {missing} searches did not "
                  "show the tab's own words")
        print(f"\n{'action':<14} {'n':>6} {'p50 s':>7} {'p95 s':>7} {'HTTP 503':>8}")
        names = {k.removeprefix("503 ") for k in timings}
        for name in sorted(names):
            xs = sorted(timings.get(name, [])) or [float("nan")]
            print(f"{name:<14} {len(timings.get(name, [])):>6} {xs[len(xs) // 2]:>7.3f} "
                  f"{xs[min(len(xs) - 1, int(len(xs) * 0.95))]:>7.3f} {len(timings.get('503 ' + name, [])):>8}")
        load_end = os.getloadavg()[0]
        print(f"load average now {load_end:.2f}; server log: {log_path}")
        return {"growth": growth, "start": start_rss, "warm": warm_rss, "end": end_rss, "closed": closed_rss,
                "errors": len(errors), "crosstalk": crosstalk, "load": max(load, load_end)}
    finally:
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()


if __name__ == "__main__":
    sys.exit(main())
