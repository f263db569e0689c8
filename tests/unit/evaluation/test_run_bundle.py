"""Run bundles (issue 28, D6): `eval --bundle` and `study export --bundle` write one self-describing folder that
`metrics DIR` and `study report --db DIR` re-score without models; the committed example stays re-scorable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_fixtures import build_bench
from iir_testutils import build_tiny

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.cli import main
from interactive_ir.engine import build_engine
from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.bundle import FORMAT, read_bundle, rescore
from interactive_ir.study.analysis.report import write_report
from interactive_ir.study.bundle import bundle_log, study_bundle
from interactive_ir.study.config import parse_study
from interactive_ir.study.log import StudyLog, open_readonly
from interactive_ir.study.runner import StudyRunner

EXAMPLE = Path(__file__).resolve().parents[3] / "bench" / "bundle_example"
SCORED = ("bri", "hits@1", "hits@5", "hits@10", "mrr@10", "success_rate@10", "rounds_to_success@10", "best_rank")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return build_bench(tmp_path_factory.mktemp("bundlebench"))


def test_eval_bundle_is_self_describing_and_rescores_without_models(bench, tmp_path, capsys):
    out, bundle = tmp_path / "run", tmp_path / "bundle"
    assert main(["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--protocol",
                 "zs,feedback:rocchio", "--llm", "fake", "--rounds", "2", "--limit", "5", "--out", str(out),
                 "--no-progress", "--bundle", str(bundle)]) == 0
    meta = read_bundle(bundle)
    assert meta["kind"] == "eval" and meta["format"] == FORMAT and meta["versions"]["python"]
    assert set(meta["runs"]) == {"zs", "rocchio"} and meta["runs"]["zs"]["n_images"] == 50
    assert meta["config"]["protocols"]["zs"]["rounds"] == 2 and meta["config"]["protocols"]["zs"]["index"]["path"] == "index"
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    assert all(f.endswith((".json", ".jsonl")) for f in files)  # no images
    # eval's own per-target records, unchanged: a tool reads `target` and `turns[].shown`
    ckpt = [json.loads(x) for x in (out / "zs" / "checkpoint.jsonl").read_text().splitlines()][1:]
    recs = [json.loads(x) for x in (bundle / "zs" / "records.jsonl").read_text().splitlines()]
    assert [(r["target"], [t["shown"] for t in r["turns"]]) for r in recs] == \
        [(r["target"], [t["shown"] for t in r["turns"]]) for r in ckpt]
    assert all(r.get("dialog") is not None for r in recs)  # the dialogues travel along
    capsys.readouterr()
    assert main(["metrics", str(bundle)]) == 0
    again = json.loads(capsys.readouterr().out)
    for name in ("zs", "rocchio"):
        saved = json.loads((out / name.replace(":", "-") / "metrics.json").read_text())
        assert {k: again[name][k] for k in SCORED} == {k: saved[k] for k in SCORED}
        assert again[name]["headline"]["all"] == saved["headline"]["all"]  # the headline: found, median rank, log-ratio
    # what `metrics RANKS.json` reads is in there too
    capsys.readouterr()
    assert main(["metrics", str(bundle / "zs" / "ranks.json"), "--n-images", "50", "--rounds", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["bri"] == pytest.approx(again["zs"]["bri"])


def test_the_committed_example_bundle_rescores_to_its_own_metrics():
    meta = read_bundle(EXAMPLE)
    size = sum(p.stat().st_size for p in EXAMPLE.rglob("*") if p.is_file())
    assert size < 40_000, f"the example bundle grew to {size} bytes"
    again = rescore(EXAMPLE)
    for name, run in meta["runs"].items():
        saved = json.loads((EXAMPLE / run["folder"] / "metrics.json").read_text())
        assert {k: again[name][k] for k in SCORED} == {k: saved[k] for k in SCORED}


def test_a_study_bundle_rescores_in_metrics_and_in_the_report(tmp_path, capsys):
    r, ids, caps = build_tiny(tmp_path / "tiny")
    study = parse_study({"study_id": "sb", "rounds": 2, "k": 4, "tasks": ids[:4],
                         "conditions": {"F": {"mode": "feedback", "feedback_method": "rocchio"}, "T": {"mode": "text"}}})
    log = StudyLog(tmp_path / "sb.sqlite")
    runner = StudyRunner(study, build_engine(r, llm=FakeLLM()), log)
    for pid in ("P1", "P2"):
        runner.enrol(pid, recruit={"platform": "prolific", "id": f"PROLIFIC{pid}"})
        runner.consent(pid, True)
        while runner.progress(pid).phase == "briefing":
            p = runner.start_task(pid)
            target, mode = p.current.task.target, runner.condition_of(p).modes[0]
            turn = runner.describe(pid, caps[target][0])
            if mode == "feedback":
                runner.feedback(pid, [turn.shown[0]], [])
            else:
                runner.search(pid, caps[target][1])
            if target in runner.progress(pid).session.shown_ids():
                runner.pick(pid, target)
            else:
                runner.give_up(pid)
            runner.submit_questionnaire(pid, {"effective": 4, "efficient": 3, "comments": ""})
    log.close()

    bundle = tmp_path / "bundle"
    assert main(["study", "export", "--db", str(tmp_path / "sb.sqlite"), "--bundle", str(bundle)]) == 0
    meta = read_bundle(bundle)
    assert meta["kind"] == "study" and set(meta["runs"]) == {"F", "T"} and meta["config"]["study"]["study_id"] == "sb"
    assert "PROLIFIC" not in "".join(p.read_text() for p in bundle.rglob("*") if p.is_file())  # no recruitment ids
    recs = [json.loads(x) for x in (bundle / "F" / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 4 and all(len(x["ranks"]) == len(x["turns"]) == 2 for x in recs)
    assert recs[0]["turns"][0]["kind"] == "description" and len(recs[0]["turns"][0]["shown"]) == 4
    capsys.readouterr()
    assert main(["metrics", str(bundle)]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["F"]["n_queries"] == 4 and scored["T"]["n_queries"] == 4

    with open_readonly(tmp_path / "sb.sqlite") as original:
        direct = write_report(original, tmp_path / "rep1", plots=False)
    with open_readonly(bundle_log(bundle)) as rebuilt:
        again = write_report(rebuilt, tmp_path / "rep2", plots=False)
    def pick(rep):
        return {c: (d["bri"]["mean"], d["found_rate"], d["n_sessions"]) for c, d in rep["conditions"].items()}

    assert pick(again) == pick(direct) and again["n_participants"] == 2
    assert main(["study", "report", "--db", str(bundle), "--out", str(tmp_path / "rep3"), "--no-plots"]) == 0


def test_folders_that_are_not_bundles_are_refused_clearly(tmp_path):
    with pytest.raises(BadInputError, match="not a run bundle"):
        read_bundle(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"format": "interactive_ir run bundle 9", "runs": {}}))
    with pytest.raises(BadInputError, match="this version reads"):
        rescore(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"format": FORMAT, "kind": "eval", "runs": {}}))
    with pytest.raises(BadInputError, match="no study log"):
        bundle_log(tmp_path)
    with pytest.raises(BadInputError, match="no task to bundle"):
        StudyLog(tmp_path / "empty.sqlite").close()
        study_bundle(tmp_path / "empty.sqlite", tmp_path / "b")
