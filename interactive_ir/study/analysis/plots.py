"""PNG plots of a study report (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from interactive_ir.errors import BackendUnavailable


def _plt():
    try:
        import matplotlib
    except ImportError as e:
        raise BackendUnavailable("plots need matplotlib: pip install 'interactive_ir[eval]' (or pass --no-plots)") from e
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _err(d: dict) -> tuple[float, float]:
    if d["mean"] is None or d["ci_low"] is None:
        return 0.0, 0.0
    return d["mean"] - d["ci_low"], d["ci_high"] - d["mean"]


def write_plots(rep: dict, sessions: Sequence, out: Path) -> list[Path]:
    """bri_by_condition.png, hits_by_round.png, ratings.png, bri_vs_ratings.png; the paths written."""
    plt = _plt()
    conds = list(rep["conditions"])
    files = []

    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(conds) + 2), 3.5))
    means = [rep["conditions"][c]["bri"]["mean"] or 0.0 for c in conds]
    errs = list(zip(*[_err(rep["conditions"][c]["bri"]) for c in conds]))
    ax.bar(conds, means, yerr=errs, capsize=4, color="#4c78a8")
    ax.set_ylabel("BRI (lower is better)")
    ax.set_title("Best log Rank Integral per condition (95% CI)")
    fig.tight_layout()
    files.append(out / "bri_by_condition.png")
    fig.savefig(files[-1], dpi=120)
    plt.close(fig)

    k = rep["ks"][-1]
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    styles = [("o", "-"), ("s", "--"), ("D", ":"), ("^", "-."), ("v", "-"), ("P", "--")]
    for i, c in enumerate(conds):
        hits = rep["conditions"][c]["metrics"][f"hits@{k}"]
        marker, line = styles[i % len(styles)]  # conditions with equal values stay distinguishable
        ax.plot(range(len(hits)), hits, marker=marker, linestyle=line, ms=7 - 1.5 * (i % 3), label=c)
    ax.set_xlabel("round")
    ax.set_ylabel(f"Hits@{k}")
    ax.set_ylim(-0.03, 1.05)
    ax.set_title(f"Hits@{k} by round")
    ax.legend()
    fig.tight_layout()
    files.append(out / "hits_by_round.png")
    fig.savefig(files[-1], dpi=120)
    plt.close(fig)

    qids = rep["likert_questions"]
    if qids:
        fig, ax = plt.subplots(figsize=(max(4, 1.5 * len(qids) * len(conds) / 2 + 2), 3.5))
        width = 0.8 / max(1, len(conds))
        for j, c in enumerate(conds):
            stats = [rep["conditions"][c]["questionnaire"][q] for q in qids]
            xs = [i + (j - (len(conds) - 1) / 2) * width for i in range(len(qids))]
            errs = list(zip(*[_err(s) for s in stats]))
            ax.bar(xs, [s["mean"] or 0.0 for s in stats], width, yerr=errs, capsize=3, label=c)
        ax.set_xticks(range(len(qids)), qids)
        ax.set_ylim(0, 5.5)
        ax.set_ylabel("mean rating")
        ax.set_title("Questionnaire (95% CI)")
        ax.legend()
        fig.tight_layout()
        files.append(out / "ratings.png")
        fig.savefig(files[-1], dpi=120)
        plt.close(fig)

        fig, axes = plt.subplots(1, len(qids), figsize=(3.5 * len(qids), 3.3), squeeze=False)
        for ax, q in zip(axes[0], qids):
            for c in conds:
                pts = [(s.bri, s.ratings.get(q)) for s in sessions
                       if s.condition == c and s.bri is not None and isinstance(s.ratings.get(q), (int, float))]
                if pts:
                    ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=c, alpha=0.7)
            r = rep["correlation_bri_rating"][q]
            rho = "-" if r["spearman"] is None else f"{r['spearman']:.2f}"
            pr = "-" if r["pearson"] is None else f"{r['pearson']:.2f}"
            ax.set_title(f"{q}: Spearman {rho}, Pearson {pr}", fontsize=9)
            ax.set_xlabel("session BRI")
            ax.set_ylabel("rating")
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        files.append(out / "bri_vs_ratings.png")
        fig.savefig(files[-1], dpi=120)
        plt.close(fig)
    return files
