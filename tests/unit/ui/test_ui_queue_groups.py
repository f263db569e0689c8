"""Instant actions under load, through Gradio's real HTTP queue (issue 15): a relevance mark is handled
while other tabs' slow searches and slow clicks fill their queue groups, and two quick marks of one tab
both land (Gradio hands every event of a tab the same state object; the tab's lock orders them)."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest
from iir_testutils import query_modes

ROOT = Path(__file__).resolve().parents[3]
HOLD_S = 60.0  # how long a held handler waits for the state it needs before giving up (only a failing run waits)


def _serve(tmp_path, monkeypatch, **build):
    pytest.importorskip("gradio")
    pytest.importorskip("httpx")
    from iir_testutils import build_tiny

    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import build_demo, launch_options
    from interactive_ir.ui.serving import uploads

    monkeypatch.setenv("IIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    uploads.default_store.cache_clear()
    r, _, _ = build_tiny(tmp_path, n=24)
    engine = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=6), belief=query_modes())
    demo = build_demo(engine, **build)
    demo.queue(default_concurrency_limit=1, max_size=1024)
    demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True,
                **launch_options(engine))
    return demo


@pytest.fixture
def served(tmp_path, monkeypatch):
    demos = []

    def make(**build):
        demos.append(_serve(tmp_path, monkeypatch, **build))
        return demos[-1]

    yield make
    from interactive_ir.ui.serving import uploads

    for d in demos:
        d.close()
    uploads.default_store.cache_clear()


def _tabs(demo, n):
    import httpx

    sys.path.insert(0, str(ROOT / "bench"))
    import soak

    client = httpx.Client(trust_env=False, limits=httpx.Limits(max_connections=4 * n + 8))
    fns = soak.endpoints(client, demo.local_url)
    return client, [soak.Tab(client, demo.local_url, fns) for _ in range(n)]


def _tab_state(demo, tab):
    from interactive_ir.ui.state import UIState

    record = demo.server_app.state_holder.session_data[tab.session]
    return next(v for v in record.state_data.values() if isinstance(v, UIState))


def _results_html(out) -> str:
    for o in out:
        html = o.get("value") if isinstance(o, dict) else o
        if isinstance(html, str) and "<article" in html:
            return html
    return ""


def _send_together(tab, datas: list[list]) -> list[tuple[float, list]]:
    """Join the queue with several "card" events of one tab, then read their answers from one stream (as a
    browser does): [(time it arrived, output data)] in arrival order."""
    import json

    fn = tab.fns["card"]
    ids = []
    for data in datas:
        r = tab.client.post(f"{tab.base}gradio_api/queue/join", timeout=30,
                            json={"data": data, "fn_index": fn["id"], "trigger_id": fn["trigger"],
                                  "session_hash": tab.session})
        assert r.status_code == 200, r.text
        ids.append(r.json()["event_id"])
    done = []
    with tab.client.stream("GET", f"{tab.base}gradio_api/queue/data", params={"session_hash": tab.session},
                           timeout=60) as s:
        for line in s.iter_lines():
            msg = json.loads(line[5:]) if line.startswith("data:") else {}
            if msg.get("msg") == "process_completed" and msg.get("event_id") in ids:
                assert msg.get("success"), msg
                done.append((time.monotonic(), msg["output"]["data"]))
                if len(done) == len(ids):
                    break
    return done


def _started(tab, words="a red dog"):
    return sys.modules["soak"]._ids(_results_html(tab.send("start", [None, f"{words} {tab.tag}"])))


def _wait_for(cond, timeout: float = 60.0) -> bool:
    """Poll `cond` until true (a state, not a time: the timeout only ends a run whose state never comes)."""
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.02)  # wait-ok: polling a state set by the server's threads
    return cond()


def test_a_mark_is_handled_while_other_tabs_fill_the_search_and_click_groups(served, monkeypatch):
    """The slow handlers of four other tabs hold until the mark has been answered: a mark queued behind them
    could never be answered while they hold, so each would give up waiting (a timeout, reported)."""
    from interactive_ir.ui import handlers

    start, new_search = handlers.start, handlers.new_search
    entered, mark_answered, held_until_mark, holding = [], threading.Event(), [], threading.Event()

    def hold():
        if holding.is_set():  # once every tab has its first results
            entered.append(1)
            held_until_mark.append(mark_answered.wait(HOLD_S))

    def slow_start(engine, st, description, **kw):
        hold()
        return start(engine, st, description, **kw)

    def slow_new(engine, st):
        hold()
        return new_search(engine, st)

    # patched before the page is built: its action table holds the handler functions themselves
    monkeypatch.setattr(handlers, "start", slow_start)
    monkeypatch.setattr(handlers, "new_search", slow_new)
    demo = served(search_concurrency=1, click_concurrency=1)
    client, (me, *others) = _tabs(demo, 5)
    ids = _started(me)
    for t in others:
        t.ids = _started(t)
    holding.set()
    busy_threads = [threading.Thread(target=t.send, args=("start", [None, "a slow search"])) for t in others[:2]]
    busy_threads += [threading.Thread(target=t.send, args=("on_new", [None])) for t in others[2:]]
    for th in busy_threads:
        th.start()
    # each group ("act", "ui": one slot each) has a slow event in its handler, the others wait behind them
    assert _wait_for(lambda: len(entered) >= 2), entered
    out = me.send("card", [None, "relevant", ids[0]])
    mark_answered.set()
    for th in busy_threads:
        th.join(HOLD_S + 60)
    assert held_until_mark == [True] * 4  # none gave up: the mark was answered while they held their slots
    assert _tab_state(demo, me).marks == {ids[0]: True} and re.search(rf'is-rel[^"]*" data-id="{re.escape(ids[0])}"', _results_html(out))
    client.close()


def test_two_quick_marks_of_one_tab_both_land_and_the_last_page_shows_both(served, monkeypatch):
    """One tab's two marks run one after the other (the tab's lock) while another tab's mark runs beside
    them: the other tab's handler holds until one of this tab's is inside its own, which it could not be if
    the click group ran one event at a time (then one would give up waiting for the other: reported)."""
    from types import MappingProxyType

    from interactive_ir.ui import card_actions, handlers
    from interactive_ir.ui.card_actions import CardAction

    demo = served(click_concurrency=8)
    client, (me, other) = _tabs(demo, 2)
    ids = _started(me)
    other_ids = _started(other, "a blue car")
    mine_state, toggle = _tab_state(demo, me), handlers.toggle_mark
    inside, most_inside, other_in, met = [0], [0], threading.Event(), []
    lock = threading.Lock()

    def slow_toggle(engine, st, image_id, relevant):
        if st is not mine_state:  # the other tab's mark holds until one of mine is in its handler too
            other_in.set()
            met.append(_wait_for(lambda: inside[0] > 0, HOLD_S))
            return toggle(engine, st, image_id, relevant)
        with lock:
            inside[0] += 1
            most_inside[0] = max(most_inside[0], inside[0])
        try:
            if not met:  # ... and mine holds until the other tab's is in its handler
                met.append(other_in.wait(HOLD_S))
            time.sleep(0.3)  # wait-ok: a window in which, without the tab's ordering, the second mark would run too
            return toggle(engine, st, image_id, relevant)
        finally:
            with lock:
                inside[0] -= 1

    # the card table's mark rows (`card_actions`: it holds the handler functions themselves)
    rows = dict(card_actions.CARD_ACTIONS)
    rows["relevant"], rows["irrelevant"] = CardAction(slow_toggle, (True,)), CardAction(slow_toggle, (False,))
    monkeypatch.setattr(card_actions, "CARD_ACTIONS", MappingProxyType(rows))
    theirs = threading.Thread(target=lambda: other.send("card", [None, "relevant", other_ids[0]]))
    theirs.start()
    # a browser sends both clicks at once and reads their answers from one stream
    done = _send_together(me, [[None, "relevant", ids[0]], [None, "irrelevant", ids[1]]])
    theirs.join(HOLD_S + 60)
    assert _tab_state(demo, me).marks == {ids[0]: True, ids[1]: False}  # both landed
    assert _tab_state(demo, other).marks == {other_ids[0]: True}
    # the answer that arrived last renders both marks (each event renders the state it left, in order)
    last = _results_html(max(done, key=lambda d: d[0])[1])
    assert re.search(rf'<article class="[^"]*is-rel[^"]*" data-id="{re.escape(ids[0])}"', last)
    assert re.search(rf'<article class="[^"]*is-irr[^"]*" data-id="{re.escape(ids[1])}"', last)
    assert most_inside[0] == 1  # one tab's two marks ran one after the other ...
    assert met and all(met)  # ... while another tab's mark ran beside them (neither gave up waiting for the other)
    client.close()
