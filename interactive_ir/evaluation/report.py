"""Evaluation outputs: ranks.json, metrics.json, a CSV by round, and PNG plots.

The headline metrics (`evaluation.headline`: targets found within the budget, the rank at each round among
the unseen images, the log-ratio of the final rank to round 0, each against paging) come first in every
output; BRI and best-so-far Hits@K stay, labelled as being for comparison with the papers.

Per protocol (folder ``OUT/<protocol>/``):
- ``ranks.json``: query id -> the target's rank at each round (what ``python -m interactive_ir metrics`` reads);
- ``metrics.json``: `metrics.compute_all` plus run facts (queries, errors, seconds, model calls) and ``headline``;
- ``targets.json``: query id -> its headline outcome (found, rank by round, images viewed, hard), for the
  paired comparison with paging;
- ``by_round.csv``: one row per round: median_rank (headline: among the unseen images), hits@K (best so far), at_round@K (the target in the top K at that
  round itself; = recall@K), mrr@K, ndcg@K, best rank, rank percentile, shown, and the round's costs
  (wall and CPU seconds, engine LLM round trips, simulated-user model round trips, per query);
- ``hits_recall.png``: Hits@10 (cumulative) and Recall@10 (per round) by round.
Across protocols (folder ``OUT/``): ``summary.json``, ``summary.csv`` (one row per protocol and round),
``hits_recall.png`` (every protocol) and ``bri.png`` (BRI bars, when there are several protocols).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from interactive_ir.evaluation.metrics import BOOTSTRAP, bootstrap_ci, compute_all  # noqa: F401 (re-exported)

PLOT_K = 10  # the K of the Hits@K / Recall@K plots and tables (PlugIR reports Hits@10)
SUBSET_KS = (1, 2, 3)  # the K of CIRR's Recall_subset@K (a subset group holds 5 candidates)


def _write_json(path: Path, data) -> Path:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return path


def shown_by_round(shown_ranks: Mapping[str, Sequence[int | None]], n_rounds: int) -> list[float]:
    """Share of queries whose target was actually shown at some round <= t (ragged rows carry forward)."""
    if not shown_ranks:
        return []
    out = []
    for t in range(n_rounds):
        hit = 0
        for row in shown_ranks.values():
            if any(r is not None for r in row[: t + 1]):
                hit += 1
        out.append(hit / len(shown_ranks))
    return out


def run_metrics(ranks: Mapping[str, Sequence[int]], n_images: int, ks: Sequence[int] = (1, 5, 10),
                shown_ranks: Mapping[str, Sequence[int | None]] | None = None, facts: Mapping | None = None,
                rounds: int | None = None) -> dict:
    """`compute_all` over `ranks` (scored over rounds 0..`rounds`), plus `shown` (share of targets shown so
    far, by round) and `facts`."""
    out = compute_all(dict(ranks), ks=ks, n_images=n_images, rounds=rounds)
    if shown_ranks:
        out["shown"] = shown_by_round(shown_ranks, out["n_rounds"])
    if facts:
        out.update(facts)
    return out


def costs(records: Sequence[Mapping], n_rounds: int) -> dict:
    """Costs per query (whole search) and per turn (by round, averaged over the queries that played it)."""
    n = max(1, len(records))
    keys = ("wall_seconds", "cpu_seconds", "llm_round_trips", "user_round_trips")
    total = {
        "wall_seconds_per_query": sum(r.get("seconds", 0.0) for r in records) / n,
        "cpu_seconds_per_query": sum(r.get("cpu_seconds", 0.0) for r in records) / n,
        "llm_round_trips_per_query": sum(r.get("llm_round_trips", 0) for r in records) / n,
        "user_round_trips_per_query": sum(r.get("user_round_trips", 0) for r in records) / n,
    }
    turns = [t for r in records for t in r.get("turns", [])]
    per_turn = {f"{k}_per_turn": (sum(t.get(k, 0) for t in turns) / len(turns) if turns else 0.0) for k in keys}
    by_round = {k: [] for k in keys}
    for t in range(n_rounds):
        played = [r["turns"][t] for r in records if len(r.get("turns", [])) > t]
        for k in keys:
            by_round[k].append(sum(x.get(k, 0) for x in played) / len(played) if played else 0.0)
    out = {k: round(v, 6) for k, v in {**total, **per_turn}.items()}
    out["by_round"] = {k: [round(v, 6) for v in vs] for k, vs in by_round.items()}
    return out


def summarise(records: Sequence[Mapping], n_images: int, ks: Sequence[int] = (1, 5, 10),
              relevant: Mapping[str, Sequence[str]] | None = None,
              rounds: int | None = None, page: int | None = None) -> tuple[dict[str, list[int]], dict]:
    """(ranks by query, metrics) from a protocol's checkpoint records.

    `headline` holds the headline metrics (`evaluation.headline`: found within the budget of `page` images a
    round, by default the largest page shown, the rank at each round, the log-ratio) and `headline_targets`
    each target's outcome (written to targets.json, not to metrics.json), for the paired comparison with paging.

    Queries that failed before any rank was recorded are left out and counted in `n_failed`; timing
    figures (which differ between identical runs) sit under `"timing"`. With `relevant` (query id ->
    ground-truth relevant ids besides the target), `accumulated_recall` (Zhu et al., eq. 2), `relevant_recall@K`
    (Zhu et al.'s single-turn Recall@K: the share of the relevant images in the top K, by round) and `map@K`
    (CIRCO: from every ground truth's rank over the index; for older checkpoints over each round's shown
    list, for K up to its length) are added. Queries with a subset group
    (CIRR) add `recall_subset@K` for K in `SUBSET_KS`, over the queries that have one (`n_subset_queries`).
    """
    ok = [r for r in records if r.get("ranks")]
    ranks = {r["qid"]: list(r["ranks"]) for r in ok}
    shown = {r["qid"]: list(r["shown_ranks"]) for r in ok}
    facts = run_facts(records, ok)
    if not ranks:
        return ranks, {"n_queries": 0, **facts}
    metrics = run_metrics(ranks, n_images, ks, shown, facts, rounds)
    for k in ks:
        metrics[f"at_round@{k}"] = metrics[f"recall@{k}"]  # the target in the top k at that round itself
    metrics["costs"] = costs(ok, metrics["n_rounds"])
    metrics["labels"] = {"headline": "headline (found within the budget, rank at each round, log-ratio; vs paging)",
                         "bri, best_rank, hits@K": "for comparison with the papers (best so far: rewards a query "
                                                   "that moves at random)"}
    metrics["intervals"] = intervals(ranks, n_images, rounds, ks)
    if shown:  # known-item success: the target was shown to the user at some round
        metrics["intervals"]["found"] = found_interval(shown)
    if relevant:
        metrics.update(relevant_metrics(ok, relevant, ks, metrics["n_rounds"]))
    metrics.update(subset_metrics(ok, rounds))
    metrics.update(headline_metrics(ok, rounds if rounds is not None else metrics["n_rounds"] - 1, page))
    return ranks, metrics


def headline_metrics(ok: Sequence[Mapping], rounds: int, page: int | None = None) -> dict:
    """{"headline": the summary, "headline_targets": per-target outcomes} (`evaluation.headline`)."""
    from interactive_ir.evaluation import headline

    k = page or max((len(t.get("shown") or ()) for r in ok for t in r.get("turns", [])), default=0)
    if k < 1:
        return {}
    rows = headline.outcomes(ok, k, rounds)
    return {"headline": headline.summary(rows, k, rounds, headline.rank_source(ok)),
            headline.TARGETS: {q: o.to_dict() for q, o in rows.items()}}


def _public(metrics: Mapping) -> dict:
    """The metrics without the per-target outcomes (they go to targets.json)."""
    from interactive_ir.evaluation.headline import TARGETS

    return {k: v for k, v in metrics.items() if k != TARGETS}


def run_facts(records: Sequence[Mapping], ok: Sequence[Mapping]) -> dict:
    """How the run went: failures, why queries stopped, turn errors, the simulated user's replies, the
    engine's LLM calls, and timing (`ok`: the records with ranks)."""
    from collections import Counter

    n = max(1, len(records))
    turns = [t for r in ok for t in r["turns"]]
    return {
        "n_failed": len(records) - len(ok),
        "stops": dict(Counter(r["stop"].split(":", 1)[0] for r in records)),
        "turn_errors": sum(1 for t in turns if t.get("error")),
        "user_reply_sources": dict(Counter(t["user"]["source"] for t in turns if "source" in t.get("user", {}))),
        "user_uncertain_answers": sum(1 for t in turns if t.get("user", {}).get("uncertain")),
        "engine_llm_calls_per_query": round(sum(t["llm_calls"] for t in turns) / n, 3),
        "timing": {
            "seconds_per_query": round(sum(r["seconds"] for r in records) / n, 4),
            "engine_llm_seconds_per_query": round(sum(r["engine_llm_seconds"] for r in records) / n, 4),
            "user_seconds_per_query": round(sum(r["sim_seconds"] for r in records) / n, 4),
        },
    }


def found_interval(shown: Mapping[str, Sequence[int | None]]) -> list[float]:
    """95% interval of the share of targets shown to the user at some round."""
    found = [1.0 if any(x is not None for x in row) else 0.0 for row in shown.values()]
    return [round(x, 6) for x in bootstrap_ci(found)]


def _padded(by_round: list, n_rounds: int) -> list:
    """A by-round list carried to `n_rounds` with its last value (queries that stopped keep it)."""
    return by_round + by_round[-1:] * (n_rounds - len(by_round))


def relevant_metrics(ok: Sequence[Mapping], relevant: Mapping[str, Sequence[str]], ks: Sequence[int],
                     n_rounds: int) -> dict:
    """With several ground truths: accumulated recall, map@K and relevant_recall@K by round, and
    `n_map_queries` ({} when no query has other relevant images)."""
    from interactive_ir.evaluation.metrics import (
        accumulated_recall,
        map_at_k,
        map_at_k_from_ranks,
        relevant_recall_at_k,
    )

    rel = {r["qid"]: [r["target"], *relevant.get(r["qid"], ())] for r in ok if relevant.get(r["qid"])}
    if not rel:
        return {}
    shown_lists = {q: [t["shown"] for t in r["turns"]] for r in ok if (q := r["qid"]) in rel}
    out = {"accumulated_recall": _padded(accumulated_recall(shown_lists, rel), n_rounds)}
    ranked = {r["qid"]: r["relevant_ranks"] for r in ok if r["qid"] in rel and r.get("relevant_ranks")}
    every = len(ranked) == len(rel)  # the ranks of every ground truth over the whole index: any K
    page = max((len(x) for rows in shown_lists.values() for x in rows), default=0)
    for k in ks:
        if every:
            out[f"map@{k}"] = _padded(map_at_k_from_ranks(ranked, k), n_rounds)
            # Zhu et al.'s Recall@K of the relevant images (single turn: round 0)
            out[f"relevant_recall@{k}"] = _padded(relevant_recall_at_k(ranked, k), n_rounds)
        elif k <= page:  # an older checkpoint: over each round's shown list only
            out[f"map@{k}"] = _padded(map_at_k(shown_lists, rel, k), n_rounds)
    out["n_map_queries"] = len(rel)
    return out


def subset_metrics(ok: Sequence[Mapping], rounds: int | None) -> dict:
    """CIRR's Recall_subset@K by round over the queries with a subset group, and `n_subset_queries`."""
    from interactive_ir.evaluation.metrics import rank_matrix, recall_subset_at_k

    subset = {r["qid"]: list(r["subset_ranks"]) for r in ok if r.get("subset_ranks")}
    if not subset:
        return {}
    out = {f"recall_subset@{k}": recall_subset_at_k(rank_matrix(subset, None, rounds), k) for k in SUBSET_KS}
    out["n_subset_queries"] = len(subset)
    return out


def per_query_values(ranks: Mapping[str, Sequence[int]], n_images: int, rounds: int | None, k: int) -> dict:
    """Per-query BRI, best-so-far hit@k and at-round hit@k at the last round (query order kept)."""
    import numpy as np

    from interactive_ir.evaluation.metrics import bri_per_query, rank_matrix

    m = rank_matrix(dict(ranks), n_images, rounds)
    best = np.minimum.accumulate(m.ranks, axis=1)
    return {"qids": list(m.query_ids), "bri": list(bri_per_query(m).values()),
            f"hits@{k}": list((best[:, -1] <= k).astype(float)), f"at_round@{k}": list((m.ranks[:, -1] <= k).astype(float))}


def intervals(ranks: Mapping[str, Sequence[int]], n_images: int, rounds: int | None, ks: Sequence[int]) -> dict:
    """95% bootstrap intervals of BRI and, for K = 10 (or the largest K), final-round Hits@K and at-round@K."""
    k = 10 if 10 in ks else max(ks)
    vals = per_query_values(ranks, n_images, rounds, k)
    return {name: [round(x, 6) for x in bootstrap_ci(vals[name])] for name in ("bri", f"hits@{k}", f"at_round@{k}")}


def paired_difference(a: Mapping[str, Sequence[int]], b: Mapping[str, Sequence[int]], n_images: int,
                      rounds: int | None, k: int = 10) -> dict:
    """Mean difference a - b over the queries both ran, with 95% paired bootstrap intervals."""
    va, vb = per_query_values(a, n_images, rounds, k), per_query_values(b, n_images, rounds, k)
    common = [q for q in va["qids"] if q in set(vb["qids"])]
    ia, ib = {q: i for i, q in enumerate(va["qids"])}, {q: i for i, q in enumerate(vb["qids"])}
    out = {"n": len(common)}
    for name in ("bri", f"hits@{k}", f"at_round@{k}"):
        d = [va[name][ia[q]] - vb[name][ib[q]] for q in common]
        lo, hi = bootstrap_ci(d)
        out[name] = {"mean": round(sum(d) / max(1, len(d)), 6), "ci": [round(lo, 6), round(hi, 6)]}
    return out


def by_round_rows(metrics: Mapping, ks: Sequence[int]) -> list[dict]:
    rows = []
    for t in range(metrics.get("n_rounds", 0)):
        row: dict = {"round": t}
        median = ((metrics.get("headline") or {}).get("all") or {}).get("median_rank") or []
        if t < len(median):
            row["median_rank"] = median[t]
        for k in ks:
            for name in ("hits", "at_round", "mrr", "ndcg"):
                key = f"{name}@{k}" if f"{name}@{k}" in metrics else f"recall@{k}"
                row[f"{name}@{k}"] = metrics[key][t]
        row["best_rank"] = metrics["best_rank"][t]
        if "rank_percentile" in metrics:
            row["rank_percentile"] = metrics["rank_percentile"][t]
        if metrics.get("shown"):
            row["shown"] = metrics["shown"][t]
        if t < len(metrics.get("accumulated_recall") or ()):
            row["accumulated_recall"] = metrics["accumulated_recall"][t]
        for k, values in (metrics.get("costs") or {}).get("by_round", {}).items():
            if t < len(values):
                row[k] = values[t]
        rows.append(row)
    return rows


def _write_csv(path: Path, rows: list[dict]) -> Path:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()})
    return path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colour(i: int, n: int):
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return cmap(i % cmap.N)


def plot_hits_recall(path: Path, results: Mapping[str, Mapping], k: int = PLOT_K) -> Path | None:
    """Two panels by round: Hits@k (cumulative, PlugIR Figure 3) and Recall@k (per round, Figure 5)."""
    results = {p: m for p, m in results.items() if f"hits@{k}" in m}
    if not results:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2 + 0.18 * max(0, len(results) - 4)), dpi=110, sharey=True)
    markers = "osD^v<>pPX*h"
    for i, (name, m) in enumerate(results.items()):
        rounds = list(range(m["n_rounds"]))
        style = {"color": _colour(i, len(results)), "marker": markers[i % len(markers)], "ms": 4, "label": name}
        axes[0].plot(rounds, m[f"hits@{k}"], "-", **style)
        axes[1].plot(rounds, m[f"recall@{k}"], "--", **style)
    for ax, title in zip(axes, (f"Hits@{k}, best so far (for comparison with the papers)",
                                f"at-round@{k} (in the top {k} at that round itself)")):
        ax.set_xlabel("round")
        ax.set_ylim(-0.02, 1.05)  # lines at 0 and 1 stay visible
        ax.grid(alpha=0.3)
        ax.set_title(title, fontsize=9)
        ax.xaxis.get_major_locator().set_params(integer=True)
    axes[0].set_ylabel("share of queries")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.02 + 0.04 * ((len(labels) + 3) // 4), 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_bri(path: Path, results: Mapping[str, Mapping]) -> Path | None:
    """BRI per protocol as bars (lower is better)."""
    items = [(p, m["bri"]) for p, m in results.items() if m.get("bri") is not None and math.isfinite(m["bri"])]
    if not items:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * len(items) + 2), 3.8), dpi=110)
    names, values = zip(*items)
    bars = ax.bar(range(len(items)), values, color=[_colour(i, len(items)) for i in range(len(items))])
    for b, v in zip(bars, values):
        ax.annotate(f"{v:.2f}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(items)))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("BRI (lower is better)")
    ax.set_title("Best log Rank Integral by protocol (for comparison with the papers)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_protocol_report(folder: Path, ranks: Mapping[str, Sequence[int]], metrics: Mapping,
                          ks: Sequence[int] = (1, 5, 10), name: str = "") -> dict[str, Path]:
    """ranks.json, metrics.json, by_round.csv and hits_recall.png in `folder`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    from interactive_ir.evaluation.headline import TARGETS

    files = {
        "ranks": _write_json(folder / "ranks.json", {q: list(r) for q, r in ranks.items()}),
        "metrics": _write_json(folder / "metrics.json", _public(metrics)),
        "csv": _write_csv(folder / "by_round.csv", by_round_rows(metrics, ks)),
    }
    if metrics.get(TARGETS):
        files["targets"] = _write_json(folder / "targets.json", metrics[TARGETS])
    png = plot_hits_recall(folder / "hits_recall.png", {name or folder.name: metrics})
    if png:
        files["plot"] = png
    return files


def write_summary(folder: Path, results: Mapping[str, Mapping], ks: Sequence[int] = (1, 5, 10),
                  merge: bool = True) -> dict[str, Path]:
    """summary.json, summary.csv, hits_recall.png and (several protocols) bri.png in `folder`.

    With `merge`, protocols already in an earlier summary.json of `folder` (and not in `results`) are
    kept, so several `eval` runs into one folder add up to one summary."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    previous = {}
    if merge and (folder / "summary.json").exists():
        try:
            previous = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            previous = {}
    results = {**{p: m for p, m in previous.items() if p not in results}, **results}
    files = {"json": _write_json(folder / "summary.json", {p: _public(m) for p, m in results.items()})}
    rows = []
    for p, m in results.items():
        for r in by_round_rows(m, ks):
            rows.append({"protocol": p, "bri": m.get("bri"), **r})
    if rows:
        files["csv"] = _write_csv(folder / "summary.csv", rows)
    comparable = {p: m for p, m in results.items() if not m.get("not_comparable")}
    png = plot_hits_recall(folder / "hits_recall.png", comparable)  # a loop test is never drawn beside others
    if png:
        files["plot"] = png
    results = comparable
    if len(results) > 1:
        bri = plot_bri(folder / "bri.png", results)
        if bri:
            files["bri"] = bri
    return files


def _ci(m: Mapping, name: str, scale: float = 1.0, fmt: str = "{:.1f}") -> str:
    ci = (m.get("intervals") or {}).get(name)
    if not ci or any(x is None or x != x for x in ci):
        return ""
    return " [" + fmt.format(scale * ci[0]) + ", " + fmt.format(scale * ci[1]) + "]"


def markdown_table(results: Mapping[str, Mapping], k: int = PLOT_K, extra: Sequence[str] = ("s/query",)) -> str:
    """A Markdown table of the papers' metrics (not the headline: see `headline.markdown`): protocol, BRI
    [95% CI], best-so-far Hits@k at each round and at the last round with its interval, at-round Hits@k at the
    last round [95% CI] (percent), and costs per query.

    A protocol run with a fake simulated user or a fake engine LLM is marked and a note under the table
    says it is a loop test, not a comparison."""
    n = max((m.get("n_rounds", 0) for m in results.values()), default=0)
    head = (["protocol", "BRI [95% CI]"] + [f"H@{k} r{t}" for t in range(n)]
            + [f"H@{k} last [95% CI]", f"at-round@{k} last [95% CI]", "found (shown) [95% CI]"] + [
                {"s/query": "s/query", "cpu/query": "CPU s/query", "llm": "LLM trips/query"}.get(e, e) for e in extra])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fake = []
    for p, m in results.items():
        hits = m.get(f"hits@{k}", [])
        at = m.get(f"at_round@{k}") or m.get(f"recall@{k}", [])
        name = p + (" (FAKE)" if m.get("not_comparable") else "")
        if m.get("not_comparable"):
            fake.append(f"{p}: {m['not_comparable']}")
        cells = [name, "-" if m.get("bri") is None else f"{m['bri']:.3f}" + _ci(m, "bri", fmt="{:.3f}")]
        cells += [f"{100 * hits[t]:.1f}" if t < len(hits) else "" for t in range(n)]
        cells.append(f"{100 * hits[-1]:.1f}" + _ci(m, f"hits@{k}", 100) if hits else "-")
        cells.append(f"{100 * at[-1]:.1f}" + _ci(m, f"at_round@{k}", 100) if at else "-")
        shown = m.get("shown") or []
        cells.append(f"{100 * shown[-1]:.1f}" + _ci(m, "found", 100) if shown else "-")
        c = m.get("costs") or {}
        for e in extra:
            if e == "s/query":
                sq = m.get("timing", {}).get("seconds_per_query")
                cells.append("-" if sq is None else f"{sq:.2f}")
            elif e == "cpu/query":
                cells.append(f"{c['cpu_seconds_per_query']:.2f}" if "cpu_seconds_per_query" in c else "-")
            elif e == "llm":
                cells.append(f"{c['llm_round_trips_per_query']:.1f}" if "llm_round_trips_per_query" in c else "-")
        lines.append("| " + " | ".join(cells) + " |")
    if fake:
        lines.append("")
        lines += [f"NOT A COMPARISON - {f}" for f in fake]
    return "\n".join(lines)
