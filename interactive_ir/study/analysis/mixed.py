"""Mixed-effects analysis of a within-subject study: condition fixed, participant and task random.

For one metric y (a column of a table with one row per analysed task, or per participant x condition
for questionnaires given after each condition), `fit_metric` fits with statsmodels' MixedLM (REML):

    y ~ condition  +  (1 | participant)  +  variance component for task

(the task component is left out when the rows have no task, e.g. a SUS score per condition). From the
fixed effects it gives:

- the estimated mean of each condition with a 95% Wald interval (normal quantile, as MixedLM's own
  summary); the reference condition is the first one;
- every pairwise contrast (difference of means) with its z-test p-value, Holm-corrected over the pairs,
  and an effect size d = difference / sqrt(participant variance + task variance + residual variance),
  a standardised difference on the scale of one observation (Westfall, Kenny & Judd 2014);
- the order effect: the slope of `position` (the task's place in the participant's plan, 1, 2, ...)
  added to the model, i.e. the change per task of learning or fatigue.

Binary outcomes (found) are fitted as a linear probability mixed model: means are proportions and the
contrasts differences of proportions. Designs too small or unbalanced for the model are named in
`warnings`; a fit that fails (a singular design) gives its error instead of estimates.
"""

from __future__ import annotations

import math
import warnings as _warnings
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

MIN_PARTICIPANTS = 6  # below this many participants the random-effect variances are guesswork
MIN_PER_CONDITION = 4  # rows per condition
FIT_METHODS = ["lbfgs", "bfgs", "cg"]  # optimisers tried in order until one converges


@dataclass
class Contrast:
    a: str
    b: str
    diff: float  # mean(a) - mean(b)
    se: float
    ci_low: float
    ci_high: float
    p: float  # two-sided z-test
    p_holm: float  # Holm-corrected over all pairs of this metric
    d: float | None  # diff / sqrt(total variance)


@dataclass
class MetricModel:
    metric: str
    n: int  # rows used
    n_participants: int
    n_tasks: int | None
    means: dict[str, dict] = field(default_factory=dict)  # condition -> {mean, se, ci_low, ci_high, n}
    contrasts: list[Contrast] = field(default_factory=list)
    order_slope: dict | None = None  # {estimate, se, p} of position
    variances: dict[str, float] = field(default_factory=dict)  # participant, task, residual
    converged: bool = True
    warnings: list[str] = field(default_factory=list)
    error: str = ""  # why no estimates ("" when fitted)

    def to_dict(self) -> dict:
        return asdict(self)


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def _z_p(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


def _fit(model):
    """REML fit with the first optimiser (FIT_METHODS) that converges; else the first that gave a fit."""
    first, error = None, None
    for method in FIT_METHODS:
        try:
            fit = model.fit(reml=True, method=method)
        except (np.linalg.LinAlgError, ValueError) as e:
            error = error or e
            continue
        if fit.converged:
            return fit
        first = first or fit
    if first is None:
        raise error
    return first


def design_warnings(df, metric: str, conditions: list[str]) -> list[str]:
    """Why this metric's design is too small or unbalanced for a mixed model."""
    out = []
    n_p = df["participant"].nunique()
    counts = df.groupby("condition").size().reindex(conditions, fill_value=0)
    if n_p < MIN_PARTICIPANTS:
        out.append(f"{metric}: {n_p} participant(s): a mixed model needs at least {MIN_PARTICIPANTS} to estimate "
                   "the participant variance; read the estimates as descriptive")
    if (counts < MIN_PER_CONDITION).any():
        low = ", ".join(f"{c}={n}" for c, n in counts.items() if n < MIN_PER_CONDITION)
        out.append(f"{metric}: fewer than {MIN_PER_CONDITION} observations in {low}")
    if counts.max() > 0 and counts.min() < 0.8 * counts.max():
        out.append(f"{metric}: unbalanced design ({', '.join(f'{c}={n}' for c, n in counts.items())} observations)")
    return out


def fit_metric(df, metric: str, conditions: list[str], with_task: bool = True) -> MetricModel:
    """Fit one metric; `df` has columns participant, condition, position, metric, and task when `with_task`."""
    import pandas as pd
    import statsmodels.formula.api as smf

    data = df[df[metric].notna()].copy()
    data[metric] = data[metric].astype(float)
    conds = [c for c in conditions if c in set(data["condition"])]
    with_task = with_task and "task" in data and data["task"].nunique() > 1
    res = MetricModel(metric=metric, n=len(data), n_participants=int(data["participant"].nunique()),
                      n_tasks=int(data["task"].nunique()) if with_task else None)
    res.warnings = design_warnings(data, metric, conds)
    if len(conds) < 2 or res.n_participants < 2 or len(data) < len(conds) + 2:
        res.error = f"not enough data ({len(data)} rows, {len(conds)} condition(s), {res.n_participants} participants)"
        return res
    if data[metric].std() == 0:
        res.error = "no variation: every value is the same"
        return res
    data["condition"] = pd.Categorical(data["condition"], categories=conds)
    data["task"] = data["task"].astype(str) if with_task else "all"
    formula = f"Q('{metric}') ~ C(condition)"
    # crossed random effects: one group holding every row, participant and task as variance components
    # (MixedLM's variance components nest within groups, so grouping by participant would nest tasks)
    vc = {"participant": "0 + C(participant)"}
    if with_task:
        vc["task"] = "0 + C(task)"
    data["_all"] = 1
    try:
        with _warnings.catch_warnings(record=True) as caught:
            _warnings.simplefilter("always")
            fit = _fit(smf.mixedlm(formula, data, groups=data["_all"], re_formula="0", vc_formula=vc))
            order_fit = _fit(smf.mixedlm(formula + " + position", data, groups=data["_all"], re_formula="0",
                                         vc_formula=vc))
    except (np.linalg.LinAlgError, ValueError) as e:
        res.error = f"the mixed model could not be fitted ({e}); the design may be too small"
        return res
    res.converged = bool(fit.converged)
    if not res.converged:
        res.warnings.append(f"{metric}: the model fit did not converge; read the estimates with care")
    if any("boundary" in str(w.message).lower() or "singular" in str(w.message).lower() for w in caught):
        res.warnings.append(f"{metric}: a random-effect variance is estimated as 0 (participants or tasks differ "
                            "little on this metric); the condition estimates still hold")
    _estimates(res, fit, data, conds)
    _order_effect(res, order_fit, metric)
    return res



def _estimates(res: MetricModel, fit, data, conds: list[str]) -> None:
    """Condition means, pairwise contrasts (Holm-adjusted) and variance components of a fitted model."""
    names = list(fit.fe_params.index)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        cov = fit.cov_params().loc[names, names].to_numpy()
    beta = fit.fe_params.to_numpy()

    def row(c: str) -> np.ndarray:
        v = np.zeros(len(names))
        v[0] = 1.0
        if c != conds[0]:
            v[names.index(f"C(condition)[T.{c}]")] = 1.0
        return v

    vcomp = dict(zip(fit.model.exog_vc.names, fit.vcomp))
    var_p, var_t = float(vcomp.get("participant", 0.0)), float(vcomp.get("task", 0.0))
    var_e = float(fit.scale)
    res.variances = {"participant": var_p, "task": var_t, "residual": var_e}
    total_sd = math.sqrt(max(var_p + var_t + var_e, 0.0))
    for c in conds:
        v = row(c)
        est, se = float(v @ beta), float(math.sqrt(max(v @ cov @ v, 0.0)))
        res.means[c] = {"mean": est, "se": se, "ci_low": est - 1.96 * se, "ci_high": est + 1.96 * se,
                        "n": int((data["condition"] == c).sum())}
    raw = []
    for a, b in combinations(conds, 2):
        v = row(a) - row(b)
        diff, se = float(v @ beta), float(math.sqrt(max(v @ cov @ v, 0.0)))
        p = _z_p(diff / se) if se > 0 else 1.0
        raw.append(Contrast(a, b, diff, se, diff - 1.96 * se, diff + 1.96 * se, p, p,
                            diff / total_sd if total_sd > 0 else None))
    for c, ph in zip(raw, holm([c.p for c in raw])):
        c.p_holm = ph
    res.contrasts = raw


def _order_effect(res: MetricModel, order_fit, metric: str) -> None:
    """The slope of the task's position (learning or fatigue), from the model with position added."""
    if "position" not in order_fit.fe_params.index:
        return
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)  # a singular fit gives NaN standard errors
        est = float(order_fit.fe_params["position"])
        se = float(order_fit.bse_fe["position"])
    if math.isfinite(se) and se > 0:
        res.order_slope = {"estimate": est, "se": se, "p": _z_p(est / se)}
    else:
        res.warnings.append(f"{metric}: the order effect could not be estimated (singular fit)")


def analyse(df, metrics: dict[str, bool], conditions: list[str]) -> dict[str, dict]:
    """Fit every metric (name -> whether its rows have a task) present in `df`."""
    out = {}
    for metric, with_task in metrics.items():
        if metric in df and df[metric].notna().any():
            out[metric] = fit_metric(df, metric, conditions, with_task).to_dict()
    return out


def to_frame(rows: list[dict[str, Any]]):
    import pandas as pd

    return pd.DataFrame(rows)
