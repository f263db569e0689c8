"""`study simulate`: simulated participants through a whole study file into a fresh database, then the report."""

from __future__ import annotations

import pytest
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.study.dry_run import dry_run
from interactive_ir.study.log import StudyLog


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def test_simulated_participants_run_the_whole_study(tiny, tmp_path):
    pytest.importorskip("statsmodels")
    r, ids, caps = tiny
    study = tmp_path / "s.yaml"
    study.write_text(
        "study_id: sim\nrounds: 3\nk: 5\ntime_limit_s: 120\n"
        "recruitment: {platform: prolific, completion_code: C0MPL3T3}\n"
        "conditions:\n  A: {mode: plugir}\n  B: {mode: feedback, feedback_method: rocchio}\n"
        f"tasks: [{', '.join(ids[:4])}]\npractice: {ids[9]}\n"
        "questionnaires:\n  after_task: [{id: effective, text: Effective}]\n  after_condition: [sus]\n"
        "  end: [ueq_s, {id: attn, text: Choose 3, answer: 3}]\n")
    engine = build_engine(r, llm=FakeLLM())
    rep = dry_run(study, 6, db=tmp_path / "sim.sqlite", out=tmp_path / "report", engine=engine, plots=False)
    assert rep["outcomes"] == {"done": 6}
    with StudyLog(tmp_path / "sim.sqlite") as log:
        parts = log.participants("sim")
        assert len(parts) == 6 and all(p["meta"]["recruitment"]["id"].startswith("SIM") for p in parts)
        types = [e.type for e in log.events("sim")]
        assert types.count("study_end") == 6 and types.count("task_start") == 6 * 5
        assert "question_shown" in types and "feedback" in types
        forms = [e.payload["form"] for e in log.events("sim", types=["questionnaire"])]
        assert forms.count("condition") == 12 and forms.count("end") == 6 and forms.count("task") == 24
    assert rep["excluded"]["practice"] == 6 and rep["simulated"]["participants"] == 6
    assert {"found", "bri", "sus", "rating_effective"} <= set(rep["analysis"])
    assert rep["analysis"]["sus"]["n"] == 12 and rep["end_scores"]["ueqs_overall"]["n"] == 6
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Dry run" in html and "compare nothing" in html
    # a second run replaces its own simulated database, but never a real study's
    dry_run(study, 1, db=tmp_path / "sim.sqlite", out=tmp_path / "report", engine=engine, plots=False)
    real = StudyLog(tmp_path / "real.sqlite")
    real.enrol("sim", "P1")
    real.close()
    with pytest.raises(BadInputError, match="never writes into a study's own database"):
        dry_run(study, 1, db=tmp_path / "real.sqlite", engine=engine, plots=False)
