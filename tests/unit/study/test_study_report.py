"""Export and report on a synthetic study database whose values are computed by hand here."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from interactive_ir.cli import main
from interactive_ir.errors import BadInputError
from interactive_ir.study.analysis.export import COLUMNS, event_rows, export_events, to_bytes
from interactive_ir.study.analysis.report import build_report, read_sessions, summary_markdown, write_report
from interactive_ir.study.analysis.stats import average_ranks, mean_ci, pearson, spearman, t_quantile, t_quantile_table
from interactive_ir.study.log import Event, StudyLog

LN = math.log
T1, T2 = 12.706205, 4.302653  # t_{0.975} for 1 and 2 degrees of freedom

# (participant, task, condition, ranks by round, end, found round, seconds, effective, efficient)
SESSIONS = [
    ("p1", 1, "A", [100, 10, 1], "found", 2, 30.0, 5, 4),
    ("p2", 1, "A", [50, 50], "give_up", None, 20.0, 2, 1),
    ("p1", 2, "B", [20, 5], "found", 1, 10.0, 4, 5),
    ("p2", 2, "B", [1], "found", 0, 5.0, 5, 5),
    ("p3", 1, "B", [100, 100, 100], "budget_exhausted", None, 60.0, 1, 2),
]
# per-session BRI with T = 2 (budget): ln(pi0 pi2) / 4 + ln(pi1) / 2 over best ranks so far
BRI = [LN(100 * 1) / 4 + LN(10) / 2,  # = ln 10
       LN(50 * 50) / 4 + LN(50) / 2,  # padded 50, 50, 50 = ln 50
       LN(20 * 5) / 4 + LN(5) / 2,
       0.0,  # 1, 1, 1
       LN(100)]


def synth(path) -> StudyLog:
    log = StudyLog(path)
    log.set_meta("study", {"study_id": "syn", "k": 10, "conditions": [{"name": "A"}, {"name": "B"}],
                           "questions": [{"id": "effective", "type": "likert"}, {"id": "efficient", "type": "likert"},
                                         {"id": "comments", "type": "text"}]})
    log.set_meta("run", {"n_images": 100})
    for pid in ("p1", "p2", "p3"):
        log.enrol("syn", pid)
        log.append(Event("consent", pid, "syn", payload={"agreed": True}, client_ts=1000.0))
    for pid, task, cond, ranks, end, found_round, secs, eff, effi in SESSIONS:
        ctx = {"participant": pid, "study_id": "syn", "task": task, "target": f"t{task}.png", "condition": cond}
        log.append(Event("task_start", payload={"rounds": 2, "task_index": task - 1}, **ctx))
        for rnd, rank in enumerate(ranks):
            log.append(Event("description" if rnd == 0 else "search", round=rnd, payload={"text": f"q{rnd}"}, **ctx))
            log.append(Event("results", round=rnd, payload={"target_rank": rank, "shown": ["x"] * 10}, **ctx))
        payload = {"time_s": secs, "rounds_used": len(ranks) - 1}
        if found_round is not None:
            payload["found_round"] = found_round
        log.append(Event(end, round=len(ranks) - 1, payload=payload, **ctx))
        log.append(Event("questionnaire", payload={"answers": {"effective": eff, "efficient": effi,
                                                               "comments": "é, \"quoted\""}}, **ctx))
    # an unfinished task: counted as started, left out of the metrics
    ctx = {"participant": "p3", "study_id": "syn", "task": 2, "target": "t2.png", "condition": "A"}
    log.append(Event("task_start", payload={"rounds": 2}, **ctx))
    log.append(Event("results", round=0, payload={"target_rank": 1}, **ctx))
    return log


@pytest.fixture
def db(tmp_path):
    log = synth(tmp_path / "syn.sqlite")
    yield log
    log.close()


# ---------------------------------------------------------------- stats


def test_t_quantiles():
    assert t_quantile_table(1) == 12.706 and t_quantile_table(4) == 2.776 and t_quantile_table(35) == 2.042
    assert t_quantile_table(5000) == 1.96
    assert t_quantile(2) == pytest.approx(T2, abs=1e-5)
    with pytest.raises(ValueError):
        t_quantile_table(0)


def test_mean_ci_by_hand():
    m = mean_ci([2, 4, 6, None])  # mean 4, sd 2, se 2 / sqrt 3
    assert (m.n, m.mean, m.sd) == (3, 4.0, 2.0)
    assert m.ci_low == pytest.approx(4 - T2 * 2 / math.sqrt(3), abs=1e-5)
    assert m.ci_high == pytest.approx(4 + T2 * 2 / math.sqrt(3), abs=1e-5)
    assert mean_ci([7]).ci_low is None and mean_ci([7]).mean == 7 and mean_ci([]).mean is None


def test_correlations_by_hand():
    assert list(average_ranks([10, 30, 20, 30])) == [1, 3.5, 2, 3.5]
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x = 1..4, y = 1, 3, 2, 4: deviations -1.5 -.5 .5 1.5 and -1.5 .5 -.5 1.5 -> 4 / 5
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 10, 100, 1000], [1, 3, 2, 4]) == pytest.approx(0.8)  # monotone x: same ranks
    assert pearson([1, 1, 1], [1, 2, 3]) is None and spearman([1, 2], [2, 1]) is None


# ---------------------------------------------------------------- sessions and report


def test_read_sessions(db):
    sessions = read_sessions(db)
    assert len(sessions) == 6
    s = sessions[1]
    assert (s.participant, s.task, s.condition, s.ranks, s.ended, s.time_s) == ("p2", 1, "A", [50, 50], "give_up", 20.0)
    assert sessions[0].found_round == 2 and sessions[0].ratings["effective"] == 5
    assert sessions[5].ended == "" and sessions[5].ranks == [1]


def test_report_values_by_hand(db):
    rep = build_report(db)
    assert rep["n_participants"] == 3 and rep["n_sessions_started"] == 6 and rep["n_sessions_ended"] == 5
    assert rep["likert_questions"] == ["effective", "efficient"] and rep["ks"] == [1, 5, 10]
    a, b = rep["conditions"]["A"], rep["conditions"]["B"]
    assert list(rep["conditions"]) == ["A", "B"]
    assert (a["n_sessions"], b["n_sessions"], a["n_participants"], b["n_participants"]) == (2, 3, 2, 3)

    # BRI: A = mean(ln 10, ln 50); two values: se = |difference| / 2
    assert a["bri"]["mean"] == pytest.approx((LN(10) + LN(50)) / 2)
    # the t-interval (mean +- T1 (ln 50 - ln 10) / 2) is clipped to BRI's range [0, ln(n_images + 1)]
    assert a["bri"]["mean"] + T1 * (LN(50) - LN(10)) / 2 > LN(101)
    assert (a["bri"]["ci_low"], a["bri"]["ci_high"]) == (0.0, pytest.approx(LN(101)))
    assert b["bri"]["mean"] == pytest.approx((BRI[2] + 0 + LN(100)) / 3)
    assert a["metrics"]["bri"] == pytest.approx(a["bri"]["mean"])  # same T for all: both ways agree

    # found rate, rounds and time to found
    assert a["found_rate"] == 0.5 and b["found_rate"] == pytest.approx(2 / 3)
    assert (a["gave_up"], b["budget_exhausted"]) == (1, 1)
    assert a["rounds_to_found"]["mean"] == 2 and a["rounds_to_found"]["n"] == 1
    assert b["rounds_to_found"]["mean"] == 0.5  # rounds 1 and 0: sd 1/sqrt 2, se 1/2
    assert 0.5 - T1 * 0.5 < 0 and b["rounds_to_found"]["ci_low"] == 0.0  # clipped: rounds are >= 0
    assert b["time_to_found_s"]["mean"] == 7.5 and b["time_to_found_s"]["ci_high"] == pytest.approx(7.5 + T1 * 2.5, rel=1e-5)
    assert a["time_per_task_s"]["mean"] == 25.0

    # Hits@10 by round over best ranks: A: (100,10,1) and (50,50,50); B: (20,5,5), (1,1,1), (100,100,100)
    assert a["metrics"]["hits@10"] == [0.0, 0.5, 0.5]
    assert b["metrics"]["hits@10"] == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert b["metrics"]["hits@1"] == pytest.approx([1 / 3] * 3)
    assert a["metrics"]["n_rounds"] == 3 and a["metrics"]["n_images"] == 100

    # questionnaire: A effective 5, 2 -> 3.5, se 1.5; B effective 4, 5, 1 -> 10/3, sd sqrt(13/3)
    qa, qb = a["questionnaire"]["effective"], b["questionnaire"]["effective"]
    assert qa["mean"] == 3.5 and qa["sd"] == pytest.approx(math.sqrt(4.5))
    assert (qa["ci_low"], qa["ci_high"]) == (1.0, 5.0)  # 3.5 -+ T1 * 1.5 clipped to the 1..5 scale
    assert qb["mean"] == pytest.approx(10 / 3) and qb["sd"] == pytest.approx(math.sqrt(13 / 3))
    assert 10 / 3 + T2 * math.sqrt(13 / 3) / math.sqrt(3) > 5 and qb["ci_high"] == 5.0
    assert b["questionnaire"]["efficient"]["mean"] == 4.0

    # PlugIR Table 2: per-session BRI vs "effective" over all five sessions
    # BRI ranks: 3, 4, 2, 1, 5; rating ranks (5, 2, 4, 5, 1): 4.5, 2, 3, 4.5, 1
    # deviations from 3: (0, 1, -1, -2, 2) and (1.5, -1, 0, 1.5, -2): sum of products -8, squares 10 and 9.5
    corr = rep["correlation_bri_rating"]["effective"]
    assert corr["n"] == 5 and corr["spearman"] == pytest.approx(-8 / math.sqrt(95))
    y = [5, 2, 4, 5, 1]
    mx, my = sum(BRI) / 5, sum(y) / 5
    sxy = sum((u - mx) * (v - my) for u, v in zip(BRI, y))
    sxx, syy = sum((u - mx) ** 2 for u in BRI), sum((v - my) ** 2 for v in y)
    assert corr["pearson"] == pytest.approx(sxy / math.sqrt(sxx * syy))
    assert corr["pearson"] < -0.8 and 0 <= corr["pearson_p"] <= 1
    # within B (3 sessions): BRI ranks 2, 1, 3 against ratings 4, 5, 1 (ranks 2, 3, 1): perfectly reversed
    assert b["correlation_bri_rating"]["effective"]["spearman"] == pytest.approx(-1.0)
    assert a["correlation_bri_rating"]["effective"]["spearman"] is None  # two sessions: undefined


def test_report_headline_by_hand(db, tmp_path):
    """Found rate, the rank at each round itself (median), ln(final / round-0 rank); hard = round 0 beyond k=10."""
    rep = build_report(db)
    a, b = rep["conditions"]["A"]["headline"], rep["conditions"]["B"]["headline"]
    # A: (100, 10, 1) found and (50, 50, 50); B: (20, 5, 5) found, (1, 1, 1) found, (100, 100, 100)
    assert a["all"]["median_rank"] == [75.0, 30.0, 25.5] and a["all"]["found_rate"] == 0.5
    assert a["all"]["log_ratio"]["mean"] == pytest.approx((LN(1 / 100) + 0) / 2)
    assert b["all"]["log_ratio"]["mean"] == pytest.approx(LN(5 / 20) / 3)
    assert a["hard"]["n"] == 2 and b["hard"]["n"] == 2 and b["hard"]["found_rate"] == 0.5
    md = summary_markdown(rep)
    assert md.index("## Retrieval: headline") < md.index("for comparison with the papers") < md.index("BRI (lower")
    assert "| A | 2 | 0.500 |" in md and "75 > 30 > 26" in md


def test_report_needs_ended_tasks(tmp_path):
    with StudyLog(tmp_path / "empty.sqlite") as log:
        log.append(Event("task_start", "p", "s", task=1, payload={"rounds": 2}))
        with pytest.raises(BadInputError, match="no ended task"):
            build_report(log)


def test_write_report_files(db, tmp_path):
    rep = write_report(db, tmp_path / "out")
    names = sorted(p.split("/")[-1] for p in rep["files"])
    assert names == ["analysis_conditions.csv", "analysis_tasks.csv", "bri_by_condition.png", "bri_vs_ratings.png",
                     "data_dictionary.csv", "hits_by_round.png", "questionnaires.csv", "ratings.png", "report.html",
                     "report.json", "sessions.csv", "summary.md"]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Mixed-effects models" in page and "<img src='ratings.png'" in page and "Data dictionary" in page
    assert "participant(s): a mixed model needs at least 6" in page  # the design is too small: said so
    for f in rep["files"]:
        if f.endswith(".png"):
            with open(f, "rb") as fh:
                assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["conditions"]["A"]["bri"]["mean"] == pytest.approx((LN(10) + LN(50)) / 2)
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "| A | 2 | 3.107 [" in md and "| effective | 5 | -0.821 |" in md
    rows = list(csv.DictReader(open(tmp_path / "out" / "sessions.csv")))
    # every started task, the unended one unscored (blank BRI)
    assert len(rows) == 6 and rows[0]["ranks"] == "[100, 10, 1]" and rows[3]["bri"] == "0.0"
    assert rows[5]["ended"] == "" and rows[5]["bri"] == ""
    assert rows[1]["rating_effective"] == "2"


# ---------------------------------------------------------------- export


def test_export_rows(db):
    rows = event_rows(db)
    assert len(rows) == db.count() and [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    assert tuple(rows[0]) == COLUMNS
    r = next(r for r in rows if r["type"] == "questionnaire")
    assert r["payload"]["answers"]["effective"] == 5 and r["participant_number"] == 0
    assert r["server_time"].endswith("+00:00") and rows[0]["client_ts"] == 1000.0
    numbered = [r for r in rows if r["round"] is not None]
    assert numbered and all(r["page_round"] == r["round"] + 1 for r in numbered)  # the page's "Round N"
    assert all(r["page_round"] is None for r in rows if r["round"] is None)
    assert COLUMNS[:8] == ("id", "study_id", "participant", "participant_number", "task", "target", "condition",
                           "round")  # older readers' columns keep their places


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_formats_round_trip(db, tmp_path, fmt):
    out = tmp_path / f"events.{fmt}"
    n = export_events(db, out)
    rows = event_rows(db)
    assert n == len(rows)
    if fmt == "csv":
        back = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
        assert [int(b["id"]) for b in back] == [r["id"] for r in rows]
        assert [json.loads(b["payload"]) for b in back] == [r["payload"] for r in rows]
        assert back[0]["round"] == "" and list(back[0]) == list(COLUMNS)
    elif fmt == "jsonl":
        back = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert back == rows
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(out).to_pylist()
        assert [t["id"] for t in table] == [r["id"] for r in rows]
        assert [json.loads(t["payload"]) for t in table] == [r["payload"] for r in rows]
        assert table[0]["round"] is None and table[-1]["round"] == 0


def test_export_unknown_format(db, tmp_path):
    with pytest.raises(BadInputError, match="unknown export format 'xlsx'"):
        export_events(db, tmp_path / "x.xlsx")
    with pytest.raises(BadInputError, match="unknown export format"):
        to_bytes([], "xml")


# ---------------------------------------------------------------- command line


def test_cli_export_report_validate(db, tmp_path, capsys):
    path = str(db.path)
    assert main(["study", "export", "--db", path, "--format", "jsonl", "--out", str(tmp_path / "e.jsonl")]) == 0
    assert f"exported {db.count()} event(s)" in capsys.readouterr().out
    assert main(["study", "export", "--db", path]) == 0  # default: CSV beside the database
    assert (tmp_path / "syn.events.csv").is_file()
    assert main(["study", "report", "--db", path, "--out", str(tmp_path / "rep"), "--no-plots", "--k", "1,10"]) == 0
    out = capsys.readouterr().out
    assert "report of 5 ended task(s) by 3 participant(s)" in out
    assert not list((tmp_path / "rep").glob("*.png"))
    assert json.loads((tmp_path / "rep" / "report.json").read_text())["ks"] == [1, 10]
    assert main(["study", "report", "--db", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "r2")]) == 1
    assert "study database not found" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("study_id: x\nconditions: {A: {mode: plgir}}\ntasks: [a.png]\n")
    assert main(["study", "validate", str(bad)]) == 1
    assert "conditions.A.mode: 'plgir' is not one of" in capsys.readouterr().err


def test_cli_validate_and_plan_the_example(capsys):
    from iir_testutils import ROOT

    example = str(ROOT / "assets" / "study" / "example_study.yaml")
    assert main(["study", "validate", example]) == 0
    out = capsys.readouterr().out
    assert "OK: study 'demo-pilot', 3 condition(s)" in out and "6 task(s) on 320 images" in out
    assert main(["study", "plan", example, "--participants", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("participant 0: plugir:animals_bee_0145.png")
