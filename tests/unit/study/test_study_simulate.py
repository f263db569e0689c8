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


def test_the_participant_never_describes_a_target_by_the_index_caption_when_it_has_another():
    from types import SimpleNamespace

    from interactive_ir.study.config import Task
    from interactive_ir.study.simulate import INDEX_CAPTION, NOTHING, OTHER_CAPTIONS, TASK_PROMPT, participant_text

    index = SimpleNamespace(row_of={"a.jpg": 0, "b.jpg": 1, "c.jpg": 2}, records=[
        SimpleNamespace(captions=["indexed a", "other a", "third a"]),
        SimpleNamespace(captions=["indexed b"]),
        SimpleNamespace(captions=[])])

    def task(target, prompt=""):
        return Task(index=0, target=target, prompt=prompt, rounds=3)

    said = participant_text(index, task("a.jpg", "indexed a"), "a prompt")
    assert (said.description, said.captions, said.source) == ("other a", ("third a",), OTHER_CAPTIONS)
    said = participant_text(index, task("b.jpg", "indexed b"), "a dog from the study file")
    assert (said.description, said.captions, said.source) == ("a dog from the study file", (), TASK_PROMPT)
    # the task's prompt made from the index caption (show_target: false, no prompt in the file) is not used
    said = participant_text(index, task("b.jpg", "indexed b"), "")
    assert (said.description, said.source) == ("indexed b", INDEX_CAPTION)
    said = participant_text(index, task("c.jpg"), "")
    assert said.description == "a photo" and said.source == NOTHING and "c.jpg" not in said.description


def test_the_dry_run_describes_with_other_captions_or_the_study_prompt_and_says_when_it_had_neither(tiny, tmp_path):
    pytest.importorskip("statsmodels")
    r, ids, caps = tiny
    study = tmp_path / "s.yaml"
    study.write_text("study_id: sim2\nrounds: 2\nk: 5\nconditions:\n  A: {mode: feedback, feedback_method: rocchio}\n"
                     f"tasks: [{ids[0]}, {ids[1]}]\n")
    engine = build_engine(r, llm=FakeLLM())
    rep = dry_run(study, 2, db=tmp_path / "sim.sqlite", out=tmp_path / "report", engine=engine, plots=False)
    assert rep["participant_text"] == {"other captions": 4} and "note" not in rep["simulated"]
    with StudyLog(tmp_path / "sim.sqlite") as log:
        said = {e.payload["text"] for e in log.events("sim2", types=["description"])}
    assert said == {caps[ids[0]][1], caps[ids[1]][1]}  # never the indexed caption, caps[id][0]

    # an index with no captions: the study file's prompt where it gives one, else a flow-only note
    bare, bare_ids, _ = build_tiny(tmp_path / "bare", captions=False)
    study.write_text("study_id: sim3\nrounds: 2\nk: 5\nconditions:\n  A: {mode: feedback, feedback_method: rocchio}\n"
                     f"tasks: [{{target: {bare_ids[0]}, prompt: a green dog in the street}}, {bare_ids[1]}]\n")
    rep = dry_run(study, 1, db=tmp_path / "sim3.sqlite", out=tmp_path / "report3", engine=build_engine(bare),
                  plots=False)
    assert rep["participant_text"] == {"task prompt": 1, "nothing": 1}
    assert "checks the flow only" in rep["simulated"]["note"] and "1 of 2 task(s)" in rep["simulated"]["note"]
    assert "checks the flow only" in (tmp_path / "report3" / "report.html").read_text()
    with StudyLog(tmp_path / "sim3.sqlite") as log:
        said = [e.payload["text"] for e in log.events("sim3", types=["description"])]
    assert sorted(said) == ["a green dog in the street", "a photo"] and not any(i in said for i in bare_ids)


def test_the_simulate_command_says_where_descriptions_came_from(monkeypatch, capsys, tmp_path):
    import argparse

    from interactive_ir.commands import study_cmd
    from interactive_ir.study import dry_run as dry_run_mod

    note = "in 1 of 2 task(s) the simulated participant had only ...: the dry run checks the flow only"
    rep = {"outcomes": {"done": 1}, "database": "x.sqlite", "out": "r", "n_sessions_ended": 2, "warnings": [],
           "participant_text": {"index caption": 1, "other captions": 1}, "simulated": {"note": note}}
    monkeypatch.setattr(dry_run_mod, "dry_run", lambda *a, **kw: rep)
    args = argparse.Namespace(study_command="simulate", study_file=tmp_path / "s.yaml", participants=1, db=None,
                              out=None, index=None, llm="", embedder="", seed=0, no_plots=True)
    assert study_cmd.run(args) == 0
    out = capsys.readouterr().out
    assert "from: index caption (1 task(s)), other captions (1 task(s))" in out and f"note: {note}" in out
