"""The mixed-effects analysis: a simulated study with a known effect is recovered; Holm by hand;
practice and timed-out tasks are left out; small designs are warned about."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("statsmodels")

from interactive_ir.study.analysis.mixed import fit_metric, holm, to_frame  # noqa: E402
from interactive_ir.study.analysis.report import build_report  # noqa: E402
from interactive_ir.study.log import Event, StudyLog  # noqa: E402


def simulated(effect: float, n_participants: int = 16, n_tasks: int = 6, seed: int = 0):
    """y = 10 + effect * [condition B] + participant (sd 2) + task (sd 1) + noise (sd 1.5)."""
    rng = np.random.default_rng(seed)
    pe, te = rng.normal(0, 2, n_participants), rng.normal(0, 1, n_tasks)
    rows = []
    for p in range(n_participants):
        for t in range(n_tasks):
            c = "B" if (t + p) % 2 else "A"
            rows.append({"participant": f"p{p}", "task": t, "condition": c, "position": t + 1,
                         "y": 10 + effect * (c == "B") + pe[p] + te[t] + rng.normal(0, 1.5)})
    return to_frame(rows)


@pytest.mark.parametrize("effect", [3.0, -2.0])
def test_a_known_effect_is_recovered(effect):
    m = fit_metric(simulated(effect), "y", ["A", "B"])
    assert not m.error
    (c,) = m.contrasts  # A - B
    assert np.sign(-c.diff) == np.sign(effect) and abs(-c.diff - effect) < 0.8
    assert c.ci_low < c.diff < c.ci_high and c.p_holm < 0.001
    assert m.means["A"]["ci_low"] < m.means["A"]["mean"] < m.means["A"]["ci_high"]
    assert abs(m.means["A"]["mean"] - 10) < 2.0
    assert m.variances["participant"] > m.variances["task"] > 0  # sd 2 vs sd 1
    assert abs(c.d) == pytest.approx(abs(c.diff) / np.sqrt(sum(m.variances.values())))


def test_no_effect_is_not_significant():
    m = fit_metric(simulated(0.0, seed=3), "y", ["A", "B"])
    assert m.contrasts[0].p_holm > 0.05 and abs(m.contrasts[0].diff) < 0.8


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04: 3 x 0.01 = 0.03; 2 x 0.03 = 0.06; 1 x 0.04 = 0.04 -> raised to 0.06 (monotone)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5] and holm([0.9, 0.8]) == [1.0, 1.0]


def _session(log, pid, pos, task, cond, rank, end, practice=False, time_s=30.0):
    kw = {"participant": pid, "study_id": "sim", "task": pos, "target": f"t{task}.png", "condition": cond}
    log.append_many([Event(type="task_start", payload={"task_index": task, "rounds": 2, "practice": practice}, **kw),
                     Event(type="results", round=0, payload={"target_rank": rank}, **kw),
                     Event(type=end, round=0, payload={"found_round": 0, "time_s": time_s, "rounds_used": 0,
                                                       "practice": practice}, **kw)])


def test_the_report_models_the_design_and_leaves_out_practice_and_timeouts(tmp_path):
    log = StudyLog(tmp_path / "sim.sqlite")
    log.set_meta("study", {"study_id": "sim", "k": 10, "conditions": [{"name": "A"}, {"name": "B"}],
                           "questions": []})
    log.set_meta("run", {"n_images": 1000})
    rng = np.random.default_rng(1)
    for p in range(12):
        pid = f"p{p}"
        _session(log, pid, 1, -1, "A", 1, "found", practice=True, time_s=1.0)  # practice: always instant
        for t in range(4):
            cond = "B" if (t + p) % 2 else "A"
            rank = int(rng.integers(1, 5)) if cond == "B" else int(rng.integers(50, 400))
            _session(log, pid, t + 2, t, cond, rank, "give_up", time_s=100.0 + rng.normal(0, 5))
        _session(log, pid, 6, 4, "A", 1, "timeout", time_s=300.0)  # timed out: never analysed
    rep = build_report(log)
    assert rep["excluded"] == {"practice": 12, "timeout": 12}
    bri = rep["analysis"]["bri"]
    assert bri["n"] == 48 and bri["means"]["A"]["n"] == 24 and bri["means"]["B"]["n"] == 24
    (c,) = bri["contrasts"]
    assert c["diff"] > 0 and c["p_holm"] < 0.001  # A (ranks 50-400) has the larger (worse) BRI than B (1-4)
    assert rep["analysis"]["found"]["error"] == "no variation: every value is the same"
    assert not [w for w in rep["warnings"] if "participant(s)" in w or "unbalanced" in w]  # 12 people, balanced
    assert bri["order_slope"] is not None


def test_small_or_unbalanced_designs_are_warned_about():
    from interactive_ir.study.analysis.mixed import design_warnings

    df = simulated(1.0, n_participants=4, n_tasks=2)
    notes = design_warnings(df, "y", ["A", "B"])
    assert any("4 participant(s): a mixed model needs at least 6" in n for n in notes)
    uneven = df[~((df["condition"] == "B") & (df["participant"].isin(["p0", "p1", "p2"])))]
    assert any("unbalanced design (A=4, B=1" in n for n in design_warnings(uneven, "y", ["A", "B"]))
