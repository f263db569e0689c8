"""An independent memory soak of the web app: tabs opening and closing, spoken in raw Gradio HTTP.

    python bench/soak_tabs.py --events 4000 --tabs 20 --per-tab 25

Written apart from bench/soak.py (which builds its own server in-process): this starts `python app.py`
itself (the fake LLM, a generated 48-image index), and drives it with bench/gradio_tabs.py: `--tabs`
tabs at once, each opening the page, holding a heartbeat, sending `--per-tab` events (search with its own
word, two marks, new search) and closing; a new tab takes its place until `--events` events are sent.
It reads the app process's RSS from /proc after the warm-up (the first `--warmup` share of the events),
at the end, and once the tabs are closed and `--close-wait` seconds passed, and prints:
growth per 10,000 events after warm-up (goal: under 2 MB), RSS after closing against the warm start
(goal: within 10%), cross-talk and errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_replicas import Replicas  # noqa: E402
from gradio_tabs import Tab  # noqa: E402


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))


class Churn:
    """Tabs opening and closing until `total` events are sent; `at(n, fn)` runs fn once n events are done."""

    def __init__(self, base: str, total: int, per_tab: int):
        self.base, self.total, self.per_tab = base, total, per_tab
        self.sent = self.opened = self.crosstalk = self.drops = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._marks: list[tuple[int, threading.Event]] = []

    def at(self, n: int) -> threading.Event:
        ev = threading.Event()
        self._marks.append((n, ev))
        return ev

    def _take(self) -> bool:
        with self._lock:
            if self.sent >= self.total:
                return False
            self.sent += 1
            for n, ev in self._marks:
                if self.sent >= n:
                    ev.set()
            return True

    def worker(self) -> None:
        while self.sent < self.total:
            try:
                tab = Tab(self.base)
            except Exception as e:  # noqa: BLE001 - counted; the soak goes on
                self.errors.append(f"open: {type(e).__name__}: {e}")
                if len(self.errors) > 50:
                    return
                continue
            with self._lock:
                self.opened += 1
            try:
                for i in range(self.per_tab):
                    if not self._take():
                        break
                    tab.step(i)
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{type(e).__name__}: {str(e)[:160]}")
            finally:
                tab.close()
                with self._lock:
                    self.crosstalk += tab.crosstalk
                    self.drops += len(tab.drops)
                    self.errors += tab.errors[:2]


def soak(events: int, tabs: int, per_tab: int, warmup: float, close_wait: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="iir-soak-tabs-") as d, Replicas(Path(d), 1, proxy=False) as r:
        pid = r.apps[0].pid
        churn = Churn(r.base, events, per_tab)
        warm = churn.at(int(events * warmup))
        marks = [(n, churn.at(n)) for n in range(events // 10, events + 1, events // 10)]
        trace: list[tuple[int, float]] = []

        def sample() -> None:  # RSS at every tenth of the events: does it level off? (also printed, to stderr)
            for n, ev in marks:
                ev.wait()
                trace.append((n, round(rss_mb(pid), 1)))
                print(f"{n} events, {time.monotonic() - t0:.0f} s: RSS {trace[-1][1]} MB, {churn.opened} tabs opened, "
                      f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)

        t0 = time.monotonic()
        threading.Thread(target=sample, daemon=True).start()
        threads = [threading.Thread(target=churn.worker, daemon=True) for _ in range(tabs)]
        for t in threads:
            t.start()
        warm.wait()
        rss_warm, n_warm, t_warm = rss_mb(pid), churn.sent, time.monotonic()
        for t in threads:
            t.join()
        rss_end, n_end, t_end = rss_mb(pid), churn.sent, time.monotonic()
        time.sleep(close_wait)  # the closed tabs' heartbeats ended: the server drops their state
        rss_closed = rss_mb(pid)
    per_10k = (rss_end - rss_warm) / max(1, n_end - n_warm) * 10_000
    return {"events": n_end, "tabs_opened": churn.opened, "tabs_at_once": tabs, "seconds": round(t_end - t0, 1),
            "events_s": round(n_end / (t_end - t0), 1), "warm_after_events": n_warm,
            "rss_warm_mb": round(rss_warm, 1), "rss_end_mb": round(rss_end, 1), "rss_closed_mb": round(rss_closed, 1),
            "growth_mb_per_10k": round(per_10k, 2), "closed_vs_warm_pct": round(100 * (rss_closed / rss_warm - 1), 1),
            "after_warmup_s": round(t_end - t_warm, 1), "crosstalk": churn.crosstalk, "heartbeat_drops": churn.drops,
            "errors": churn.errors[:5], "n_errors": len(churn.errors), "rss_by_events": trace,
            "load_end": round(os.getloadavg()[0], 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=4000, help="events in all (default 4000)")
    p.add_argument("--tabs", type=int, default=20, help="tabs open at once (default 20)")
    p.add_argument("--per-tab", type=int, default=25, help="events per tab before it closes (default 25)")
    p.add_argument("--warmup", type=float, default=0.2, help="share of the events counted as warm-up (default 0.2)")
    p.add_argument("--close-wait", type=float, default=8.0, help="seconds after the last tab closed (default 8)")
    a = p.parse_args(argv)
    res = soak(a.events, a.tabs, a.per_tab, a.warmup, a.close_wait)
    print(json.dumps(res, indent=1))
    ok_growth, ok_close = res["growth_mb_per_10k"] < 2, abs(res["closed_vs_warm_pct"]) <= 10
    print(f"growth after warm-up: {res['growth_mb_per_10k']} MB per 10,000 events: {'PASS' if ok_growth else 'FAIL'} "
          f"(< 2); after closing: {res['closed_vs_warm_pct']:+}% of the warm start: {'PASS' if ok_close else 'FAIL'} "
          f"(within 10%); cross-talk {res['crosstalk']}, errors {res['n_errors']}")
    return 0 if ok_growth and ok_close and not res["crosstalk"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
