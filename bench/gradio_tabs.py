"""A browser tab spoken in Gradio's own HTTP protocol, written apart from `bench/soak.py` (an independent
client for the replica load test and the independent soak).

Each `Tab` is one browser: its own HTTP client and cookies (so a proxy's affinity cookie keeps it on one
replica), its page load (`GET /`), a heartbeat stream held open like a browser's (closing it closes the
tab on the server), and events sent one after another: `POST gradio_api/queue/join`, then its answer read
from `GET gradio_api/queue/data` (server-sent events). Each tab types a word of its own (`tag`): an answer
showing another tab's word is cross-talk.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
import uuid

import httpx

_TAGS = itertools.count()
TAG_RE = re.compile(r"\bqx(\d+)z\b")
WORDS = ["red dog", "blue car", "green tree on the beach", "white boat in the snow", "black cat in a park"]


def api_table(config: dict) -> dict[str, dict]:
    """api name -> {"id", "trigger", "n_inputs"} from the page's `/config`."""
    out = {}
    for i, dep in enumerate(config["dependencies"]):
        name = dep.get("api_name") or f"fn{i}"
        trig = dep["targets"][0][0] if dep.get("targets") else None
        out[name] = {"id": dep.get("id", i), "trigger": trig, "n_inputs": len(dep.get("inputs", []))}
    return out


class Tab:
    """One browser tab (see the module docstring). Not thread-safe: one tab sends one event at a time."""

    def __init__(self, base: str, timeout: float = 120.0):
        self.base = base.rstrip("/") + "/"
        self.http = httpx.Client(timeout=timeout, headers={"Accept-Encoding": "gzip, deflate, br"})
        self.session = uuid.uuid4().hex[:11]
        self.tag = f"qx{next(_TAGS)}z"
        self.crosstalk = 0  # answers that showed another tab's word
        self.errors: list[str] = []
        self.drops: list[str] = []  # heartbeat streams that ended while the tab was open
        self.ids: list[str] = []
        self.events = 0
        self._closed = threading.Event()
        self.http.get(self.base).raise_for_status()  # the page: a proxy sets its affinity cookie here
        self.api = api_table(self.http.get(f"{self.base}config").json())
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        try:
            with self.http.stream("GET", f"{self.base}gradio_api/heartbeat/{self.session}", timeout=None) as r:
                for _ in r.iter_lines():
                    if self._closed.is_set():
                        return
        except Exception as e:  # noqa: BLE001 - the stream ends when the tab closes or the server stops
            if not self._closed.is_set():
                self.drops.append(f"heartbeat: {type(e).__name__}: {str(e)[:120]}")
            return
        if not self._closed.is_set():
            self.drops.append("heartbeat: the server ended the stream")

    def close(self) -> None:
        """Close the tab: the heartbeat stream ends (the server drops the tab's state) and the client."""
        self._closed.set()
        self.http.close()

    def send(self, name: str, data: list) -> list:
        """One event: join the queue, read the answer's stream to its end; the output data."""
        fn = self.api[name]
        body = {"data": data, "fn_index": fn["id"], "trigger_id": fn["trigger"], "session_hash": self.session,
                "event_data": None}
        r = self.http.post(f"{self.base}gradio_api/queue/join", json=body)
        if r.status_code != 200:
            raise RuntimeError(f"{name}: HTTP {r.status_code} {r.text[:200]}")
        event_id = r.json().get("event_id")
        out: list = []
        with self.http.stream("GET", f"{self.base}gradio_api/queue/data", params={"session_hash": self.session}) as s:
            for line in s.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if event_id and msg.get("event_id") not in (None, event_id):
                    continue
                if msg.get("msg") == "process_completed":
                    if not msg.get("success", True):
                        raise RuntimeError(f"{name} failed: {str(msg.get('output'))[:200]}")
                    out = (msg.get("output") or {}).get("data") or []
                    break
        if any(f"qx{n}z" != self.tag for n in TAG_RE.findall(str(out))):
            self.crosstalk += 1
        self.events += 1
        return out

    def step(self, i: int) -> None:
        """Event `i` of a search loop: describe (with the tab's word), mark a result, mark another, new search."""
        kind = i % 4
        if kind == 0 or not self.ids:
            out = self.send("start", [None, f"{WORDS[i % len(WORDS)]} {self.tag}"])
            html = next((str(o) for o in out if "data-id" in str(o)), "")
            self.ids = re.findall(r'data-id="([^"]+)"', html)
            if self.tag not in str(out):
                self.errors.append("a search's page did not show the tab's own words")
        elif kind in (1, 2):
            self.send("card", [None, "relevant" if kind == 1 else "irrelevant", self.ids[i % len(self.ids)]])
        else:
            self.send("on_new", [None])
            self.ids = []


def run_tabs(base: str, tabs: int, seconds: float, events_per_tab: int | None = None) -> dict:
    """`tabs` tabs, each on its own thread, sending events for `seconds` (or `events_per_tab` each).

    Returns events, events_s (throughput), crosstalk, errors (first few) and p50/p95 latency (s)."""
    lat: list[float] = []
    res = {"events": 0, "crosstalk": 0, "errors": [], "drops": []}
    lock = threading.Lock()
    t_end = time.monotonic() + seconds

    def one() -> None:
        try:
            tab = Tab(base)
        except Exception as e:  # noqa: BLE001 - counted, the run goes on
            with lock:
                res["errors"].append(f"open: {e}")
            return
        try:
            i = 0
            while (events_per_tab is None and time.monotonic() < t_end) or (events_per_tab and i < events_per_tab):
                t0 = time.monotonic()
                tab.step(i)
                with lock:
                    lat.append(time.monotonic() - t0)
                i += 1
        except Exception as e:  # noqa: BLE001
            with lock:
                res["errors"].append(f"{type(e).__name__}: {str(e)[:160]}")
        finally:
            tab.close()
            with lock:
                res["events"] += tab.events
                res["crosstalk"] += tab.crosstalk
                res["errors"] += tab.errors[:3]
                res["drops"] += tab.drops

    t0 = time.monotonic()
    threads = [threading.Thread(target=one) for _ in range(tabs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lat.sort()
    res.update(seconds=round(wall, 2), events_s=round(res["events"] / wall, 1) if wall else 0.0,
               p50_s=round(lat[len(lat) // 2], 3) if lat else None,
               p95_s=round(lat[int(len(lat) * 0.95)], 3) if lat else None)
    res["errors"] = res["errors"][:5]
    res["n_drops"], res["drops"] = len(res["drops"]), res["drops"][:5]
    return res
