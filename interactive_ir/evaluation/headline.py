"""The headline metrics of a simulated-search run: they measure what a person gets, and paging is the bar.

A person looking for one image can always scroll down the ranked list of their description: paging
(protocol `none`, the next k unseen images each round). Interaction earns its place only if it finds the
target sooner, so every headline metric is compared with paging, target by target:

* **Found within the budget**: the share of targets shown within the first R rounds, counting at most the
  first ``k (R + 1)`` distinct images shown (the same number of images viewed as paging; round 0 included).
* **Rank at each round**: the target's rank at that round itself (not the best so far) among the images no
  earlier round showed, i.e. how far the person would still have to scroll (its place on the page once
  shown; a search that stopped carries its last rank forward). Under this rank paging moves too (by k a
  round). Runs recorded before it existed fall back to the rank over the whole index (``rank_source``).
  Reported as the median over targets, by round.
* **Log-ratio** ``ln(rank_R / rank_0)`` per target: below 0 the search brought the target closer. Its mean.

Each is compared with paging by a 95% paired bootstrap interval (resampling targets, seeded) of the mean
difference (protocol minus paging), over every target and over the "hard" ones: those paging's round 0
(the description alone) ranks below k, the only ones interaction can help with.

BRI (PlugIR) and best-so-far Hits@K are *not* headline metrics: both take the best rank so far, so any
query that moves at random collects its lucky rounds and scores better than paging (wrong relevance marks
do, on the test fixture and on Flickr8k), while finding fewer targets. They stay, for comparison with the
papers, and every output labels them so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from interactive_ir.evaluation.metrics import bootstrap_ci

PAGING = "none"  # the baseline protocol: the description's ranked list, the next k unseen images each round
TARGETS = "headline_targets"  # the metrics key of the per-target outcomes (written to <protocol>/targets.json)
PAPERS_LABEL = "for comparison with the papers (not a headline metric: it rewards a query that moves at random)"


@dataclass(frozen=True)
class TargetOutcome:
    """One target's search, as the headline metrics see it."""

    found: bool  # shown within the budget of images viewed
    ranks: tuple[float, ...]  # rank at rounds 0..R (among the unseen images; the last carried forward)
    viewed: int  # distinct images shown until it was found (or the budget ran out)
    hard: bool  # its round-0 rank is beyond the first page of k

    @property
    def log_ratio(self) -> float:
        return math.log(self.ranks[-1] / self.ranks[0])

    def to_dict(self) -> dict:
        return {"found": self.found, "ranks": list(self.ranks), "viewed": self.viewed, "hard": self.hard}

    @classmethod
    def from_dict(cls, d: Mapping) -> TargetOutcome:
        return cls(bool(d["found"]), tuple(float(x) for x in d["ranks"]), int(d["viewed"]), bool(d["hard"]))


def found_within(target: str, pages: Sequence[Sequence[str]], budget: int) -> tuple[bool, int]:
    """(whether `target` is among the first `budget` distinct images of `pages`, in the order shown; how many
    distinct images were viewed until then)."""
    seen: dict[str, None] = {}
    for page in pages:
        for image in page:
            if image in seen:
                continue
            if len(seen) >= budget:
                return False, len(seen)
            seen[image] = None
            if image == target:
                return True, len(seen)
    return False, len(seen)


def rank_source(records: Sequence[Mapping]) -> str:
    """"unseen" when every record has its ranks among the unseen images, else "index" (older checkpoints)."""
    return "unseen" if records and all(r.get("unseen_ranks") for r in records) else "index"


def outcomes(records: Sequence[Mapping], k: int, rounds: int) -> dict[str, TargetOutcome]:
    """Each checkpoint record (`target`, `turns[].shown`, `unseen_ranks` or `ranks`) as a `TargetOutcome`,
    by query id; the budget is ``k (rounds + 1)`` images. Records without ranks are left out."""
    source = rank_source(records)
    out = {}
    for r in records:
        ranks = [float(x) for x in (r.get("unseen_ranks") if source == "unseen" else r.get("ranks")) or ()]
        if not ranks:
            continue
        ranks = (ranks + ranks[-1:] * (rounds + 1 - len(ranks)))[: rounds + 1]
        pages = [t.get("shown") or [] for t in r.get("turns", [])][: rounds + 1]
        found, viewed = found_within(r["target"], pages, k * (rounds + 1))
        out[r["qid"]] = TargetOutcome(found, tuple(ranks), viewed, ranks[0] > k)
    return out


def _interval(values: Sequence[float], seed: int) -> list[float | None]:
    lo, hi = bootstrap_ci(values, seed=seed)
    return [None if lo != lo else round(lo, 6), None if hi != hi else round(hi, 6)]


def _group(rows: Sequence[TargetOutcome], seed: int) -> dict:
    if not rows:
        return {"n": 0}
    found = [float(o.found) for o in rows]
    ratios = [o.log_ratio for o in rows]
    ranks = np.array([o.ranks for o in rows])
    return {"n": len(rows), "found": round(float(np.mean(found)), 6), "found_ci": _interval(found, seed),
            "median_rank": [float(np.median(ranks[:, t])) for t in range(ranks.shape[1])],
            "log_ratio": round(float(np.mean(ratios)), 6), "log_ratio_ci": _interval(ratios, seed),
            "viewed": round(float(np.mean([o.viewed for o in rows])), 3)}


def summary(rows: Mapping[str, TargetOutcome], k: int, rounds: int, source: str = "unseen", seed: int = 0) -> dict:
    """The headline figures of one protocol, over every target and over its hard ones (JSON-able)."""
    every = list(rows.values())
    return {"k": k, "rounds": rounds, "budget_images": k * (rounds + 1), "rank_source": source,
            "all": _group(every, seed), "hard": _group([o for o in every if o.hard], seed)}


def _paired(a: Sequence[float], b: Sequence[float], seed: int) -> dict:
    d = [x - y for x, y in zip(a, b, strict=True)]
    return {"mean": round(float(np.mean(d)), 6) if d else None, "ci": _interval(d, seed)}


def versus(rows: Mapping[str, TargetOutcome], base: Mapping[str, TargetOutcome], seed: int = 0) -> dict:
    """Paired differences (protocol minus `base`) over the targets both ran, and over those `base`'s round 0
    left beyond the first page: found (share; +0.1 = 10 points more found) and log-ratio (negative = closer
    than the baseline brought it), each with a 95% paired bootstrap interval."""
    out = {}
    for scope in ("all", "hard"):
        common = [q for q in rows if q in base and (scope == "all" or base[q].hard)]
        out[scope] = {"n": len(common),
                      "found": _paired([float(rows[q].found) for q in common], [float(base[q].found) for q in common],
                                       seed),
                      "log_ratio": _paired([rows[q].log_ratio for q in common], [base[q].log_ratio for q in common],
                                           seed)}
    return out


# ---------------------------------------------------------------- the table


def _pct(x, signed: bool = False) -> str:
    return "-" if x is None else (f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}")


def _num(x, signed: bool = True) -> str:
    return "-" if x is None else (f"{x:+.2f}" if signed else f"{x:.2f}")


def _diff(d: Mapping | None, fmt) -> str:
    if not d or d.get("mean") is None:
        return ""
    lo, hi = d["ci"]
    return f" ({fmt(d['mean'])} [{fmt(lo)}, {fmt(hi)}])" if lo is not None else f" ({fmt(d['mean'])})"


def _rank(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}".rstrip("0").rstrip(".")


def markdown(results: Mapping[str, Mapping], scope: str = "all") -> str:
    """The headline table of `results` (protocol -> metrics with "headline"), over every target ("all") or the
    hard ones ("hard"): found within the budget % (difference vs paging in points [95% CI]), median rank
    by round, mean log-ratio (difference vs paging [95% CI])."""
    rows = {p: m["headline"] for p, m in results.items() if (m.get("headline") or {}).get(scope, {}).get("n")}
    if not rows:
        return ""
    h = next(iter(rows.values()))
    lines = [f"| protocol | targets | found within {h['rounds']} rounds ({h['budget_images']} images), % "
             f"(vs paging, pts [95% CI]) | median rank, rounds 0-{h['rounds']} | mean ln(rank_{h['rounds']}/rank_0) "
             "(vs paging [95% CI]) |", "|---|---|---|---|---|"]
    for p, hd in rows.items():
        g, vs = hd[scope], (hd.get("vs_paging") or {}).get(scope)
        name = p + (" (paging, the baseline)" if p == PAGING else "") + (
            " (FAKE)" if results[p].get("not_comparable") else "")
        lines.append(f"| {name} | {g['n']} | {_pct(g['found'])}{_diff(vs and vs['found'], lambda x: _pct(x, True))} | "
                     f"{' > '.join(_rank(x) for x in g['median_rank'])} | "
                     f"{_num(g['log_ratio'])}{_diff(vs and vs['log_ratio'], _num)} |")
    return "\n".join(lines)


def as_outcomes(rows: Mapping[str, Mapping | TargetOutcome]) -> dict[str, TargetOutcome]:
    """Per-target outcomes from their JSON form (targets.json, `metrics[TARGETS]`)."""
    return {q: o if isinstance(o, TargetOutcome) else TargetOutcome.from_dict(o) for q, o in rows.items()}


def compare_with_paging(results: Mapping[str, dict], targets: Mapping[str, Mapping], seed: int = 0) -> bool:
    """Add `headline.vs_paging` to every protocol of `results` from the per-target `targets` (protocol -> qid ->
    outcome or its dict); False when paging is not among them (nothing to compare with)."""
    targets = {p: as_outcomes(t) for p, t in targets.items() if t}
    base = targets.get(PAGING)
    if not base:
        return False
    for p, m in results.items():
        if p != PAGING and p in targets and m.get("headline"):
            m["headline"]["vs_paging"] = versus(targets[p], base, seed)
    return True


def stored_targets(folder, results: Mapping[str, Mapping]) -> dict[str, dict]:
    """The per-target outcomes of `results` (protocol -> metrics), and paging's from `folder/none/targets.json`
    when an earlier `eval` into the same folder ran it and this one did not."""
    import json
    from pathlib import Path

    out = {p: m[TARGETS] for p, m in results.items() if m.get(TARGETS)}
    path = Path(folder) / PAGING / "targets.json"
    lengths = {len(o["ranks"]) for rows in out.values() for o in rows.values()}
    if PAGING not in out and path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return out
        if {len(o["ranks"]) for o in old.values()} <= lengths:  # the same round budget only
            out[PAGING] = old
    return out


def report_text(results: Mapping[str, Mapping], has_paging: bool) -> str:
    """What `eval` prints first: the headline tables (every target, then the hard ones) and how to read them."""
    first = next((m["headline"] for m in results.values() if m.get("headline")), None)
    if first is None:
        return ""
    rank = ("its rank among the images not shown yet" if first["rank_source"] == "unseen"
            else "its rank over the whole index (an older run: paging's rank does not move)")
    out = ["## Headline: does interaction find the target sooner than paging?", "",
           f"found = the target shown within {first['rounds']} rounds of {first['k']} (at most "
           f"{first['budget_images']} distinct images viewed); rank = {rank}, at that round itself; ln-ratio < 0: "
           "closer than at round 0. In brackets: protocol minus paging, paired on the target, 95% bootstrap "
           "interval.", "", "Every target:", "", markdown(results, "all")]
    hard = markdown(results, "hard")
    if hard:
        out += ["", f"Hard targets (the description alone ranks them beyond {first['k']}):", "", hard]
    if not has_paging:
        out += ["", f"(no paging run to compare with: add --protocol {PAGING} to the same --out)"]
    return "\n".join(out)
