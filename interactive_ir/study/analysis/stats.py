"""Small statistics for study reports: means with t-based 95% confidence intervals, Pearson and Spearman.

scipy is used for the t quantile and p-values when installed; without it the quantile comes from a
table (two-sided 95%, i.e. t_{0.975, df}; a df between table rows uses the next smaller row, which
gives a slightly wider, conservative interval) and p-values are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

# t_{0.975, df}: the two-sided 95% critical value of Student's t
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
        29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 80: 1.990, 100: 1.984, 120: 1.980}
Z975 = 1.960


def t_quantile_table(df: int) -> float:
    """t_{0.975, df} from the table (the next smaller tabulated df; 1.96 beyond 1000)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df > 1000:
        return Z975
    return T975[max(d for d in T975 if d <= df)]


def t_quantile(df: int) -> float:
    """t_{0.975, df}: scipy's exact value when installed, else the table."""
    try:
        from scipy import stats
    except ImportError:
        return t_quantile_table(df)
    return float(stats.t.ppf(0.975, df))


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float | None
    sd: float | None  # sample standard deviation (ddof=1); None for n < 2
    ci_low: float | None  # mean -/+ t_{0.975, n-1} sd / sqrt(n); None for n < 2
    ci_high: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def mean_ci(values: Sequence[float | None], low: float | None = None, high: float | None = None) -> MeanCI:
    """Mean and 95% t-interval of the non-missing values; the interval is clipped to [`low`, `high`], the
    range the values can take (a Likert scale, BRI >= 0, times >= 0), when given."""
    x = np.array([float(v) for v in values if v is not None and math.isfinite(float(v))], dtype=np.float64)
    n = len(x)
    if n == 0:
        return MeanCI(0, None, None, None, None)
    m = float(x.mean())
    if n < 2:
        return MeanCI(1, m, None, None, None)
    sd = float(x.std(ddof=1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    lo, hi = m - half, m + half
    if low is not None:
        lo = max(lo, low)
    if high is not None:
        hi = min(hi, high)
    return MeanCI(n, m, sd, lo, hi)


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their positions."""
    x = np.asarray(values, np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), np.float64)
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None with fewer than 3 pairs or a constant variable."""
    a, b = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(a) != len(b):
        raise ValueError(f"pearson: {len(a)} x values but {len(b)} y values")
    if len(a) < 3:
        return None
    a, b = a - a.mean(), b - b.mean()
    den = math.sqrt(float((a * a).sum()) * float((b * b).sum()))
    return None if den == 0 else float((a * b).sum() / den)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the average ranks."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} x values but {len(y)} y values")
    if len(x) < 3:
        return None
    return pearson(average_ranks(x), average_ranks(y))


def correlation(x: Sequence[float], y: Sequence[float]) -> dict:
    """{"n", "pearson", "spearman", "pearson_p", "spearman_p"} (p-values only with scipy)."""
    out = {"n": len(x), "pearson": pearson(x, y), "spearman": spearman(x, y), "pearson_p": None, "spearman_p": None}
    if out["pearson"] is not None and out["spearman"] is not None:
        try:
            from scipy import stats
        except ImportError:
            return out
        out["pearson_p"] = float(stats.pearsonr(x, y)[1])
        out["spearman_p"] = float(stats.spearmanr(x, y)[1])
    return out
