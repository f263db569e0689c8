"""How long superseded local LLM work holds the model: the time from a newer action (the supersede) to the
model's lock being free, and to the newer action's first model call being answered, for a generation
that nobody wants any more. Both ways are measured in the same run, alternating:

- `discard` (before): the page drops the result, but the generation runs on to its end;
- `cancel` (now): the page sets the work's cancel token; the generation stops at the next token.

    python bench/bench_cancel.py                      # transformers:smollm2, 3 repeats
    python bench/bench_cancel.py --llm transformers:smollm2 --max-tokens 200 --after 1.0 --repeats 5

It prints the figures and the load average (the machine is shared: compare the two rows, not runs).
It exits 1 when cancelling does not free the model sooner than discarding (a benchmark that can fail).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LONG = ("Write a long, detailed story about a dog who travels around the world, visiting many cities "
        "and meeting many people. Describe every place.")
NEXT = "Ask one short question about a photo of a dog on a beach."


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def one(llm, lock, mode: str, max_tokens: int, after: float) -> dict:
    from interactive_ir.backends.cancel import CancelToken
    from interactive_ir.errors import Cancelled

    token = CancelToken()
    done: dict = {}

    def superseded_work():
        t = time.perf_counter()
        try:
            done["reply"] = llm.generate([LONG], max_tokens=max_tokens, cancel=token if mode == "cancel" else None)[0]
        except Cancelled:
            done["reply"] = None
        done["ran_s"] = time.perf_counter() - t

    worker = threading.Thread(target=superseded_work, daemon=True)
    worker.start()
    time.sleep(after)  # the user acts while the model writes
    t0 = time.perf_counter()
    if mode == "cancel":
        token.cancel()
    with lock:  # the newer action's model step needs the model
        free_s = time.perf_counter() - t0
    llm.generate([NEXT], max_tokens=16)
    next_s = time.perf_counter() - t0
    worker.join()
    return {"free_s": free_s, "next_s": next_s, "ran_s": done.get("ran_s", 0.0), "stopped": done.get("reply") is None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llm", default="transformers:smollm2", help="a local LLM spec (transformers or llama-cpp)")
    p.add_argument("--max-tokens", type=int, default=200, help="the superseded generation's budget")
    p.add_argument("--after", type=float, default=1.0, help="seconds into the generation the newer action comes")
    p.add_argument("--repeats", type=int, default=3, help="supersedes per way (alternating)")
    args = p.parse_args(argv)
    if args.repeats < 1 or args.max_tokens < 1 or args.after < 0:
        print("error: --repeats and --max-tokens take positive numbers, --after a non-negative one", file=sys.stderr)
        return 2

    from interactive_ir.backends import make_llm
    from interactive_ir.errors import IIRError

    try:
        llm = make_llm(args.llm)
    except IIRError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    lock = getattr(getattr(llm, "loaded", None), "lock", None) or getattr(llm, "_lock", None)
    if lock is None:
        print(f"error: {args.llm} has no model lock to measure: give a local LLM (transformers:..., llama-cpp:...)",
              file=sys.stderr)
        return 2
    llm.generate([NEXT], max_tokens=4)  # warm up
    print(f"# {args.llm}; superseded generation: up to {args.max_tokens} tokens, newer action after {args.after:g} s;"
          f" load average at start: {load()}")
    rows: dict[str, list[dict]] = {"discard": [], "cancel": []}
    for _ in range(args.repeats):
        for mode in rows:
            rows[mode].append(one(llm, lock, mode, args.max_tokens, args.after))
    print("| superseded work | supersede -> model free p50 (s) | max | -> next call answered p50 (s) | "
          "superseded call ran p50 (s) | stopped early |")
    print("|---|---|---|---|---|---|")
    med = {}
    for mode, rs in rows.items():
        med[mode] = statistics.median(r["free_s"] for r in rs)
        print(f"| {mode} | {med[mode]:.3f} | {max(r['free_s'] for r in rs):.3f} | "
              f"{statistics.median(r['next_s'] for r in rs):.2f} | {statistics.median(r['ran_s'] for r in rs):.2f} | "
              f"{sum(r['stopped'] for r in rs)}/{len(rs)} |")
    ratio = med["discard"] / max(med["cancel"], 1e-6)
    print(f"\nmodel free after a supersede: {ratio:.0f}x sooner with cancelling; load average at end: {load()}")
    ok = med["cancel"] < med["discard"] and all(r["stopped"] for r in rows["cancel"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
