"""The `queries` and `eval` commands: caption hold-out, outputs, metrics agreement, resume after a
crash (and after a half-written line), refusal of a changed run, and bad input."""

from __future__ import annotations

import csv
import json

import pytest
from eval_fixtures import build_bench

from interactive_ir.backends.llms import FakeLLM, fake_reply
from interactive_ir.cli import main
from interactive_ir.evaluation.queries import make_queries, read_caption_rows, read_queries


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return build_bench(tmp_path_factory.mktemp("clibench"))


def eval_args(bench, out, protocol="zs,feedback:expand,composed:compose", limit=8, *extra):
    return ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--protocol", protocol,
            "--llm", "fake", "--rounds", "2", "--limit", str(limit), "--out", str(out), "--no-progress", *extra]


def strip_timing(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in ("timing", "costs")}  # wall and CPU seconds vary


# --- queries ---------------------------------------------------------------------------------------------

def test_queries_command_holds_captions_out(bench, tmp_path, capsys):
    caps, qs = tmp_path / "idx.jsonl", tmp_path / "q.jsonl"
    assert main(["queries", "--captions", str(bench.captions_file), "--out-captions", str(caps),
                 "--out-queries", str(qs), "--split", "dev", "--limit", "10", "--seed", "3"]) == 0
    assert "50 images" in capsys.readouterr().out
    full = dict(read_caption_rows(bench.captions_file))
    index_caps = {json.loads(line)["image"]: json.loads(line)["captions"] for line in caps.read_text().splitlines()}
    assert set(index_caps) == set(full) and all(len(c) == 1 for c in index_caps.values())
    queries = read_queries(qs)
    assert len(queries) == 10
    for q in queries:
        held = [index_caps[q.target][0], q.description, *q.captions]
        assert sorted(held) == sorted(full[q.target])  # each caption used exactly once
        assert index_caps[q.target][0] not in q.knowledge  # the user never sees the index caption


def test_hold_out_is_per_image_and_seeded(bench):
    rows = read_caption_rows(bench.captions_file, "dev")
    a, b = make_queries(rows, seed=0), make_queries(rows, limit=5, seed=0)
    by_target = {q.target: q for q in a.queries}
    assert a.index_captions == b.index_captions  # the limit changes neither the index nor any image's split
    assert all(by_target[q.target] == q for q in b.queries)
    assert [q.target for q in b.queries] == [q.target for q in a.queries[:5]]
    c = make_queries(rows, seed=1)
    assert c.index_captions != a.index_captions
    one = make_queries([("x.jpg", ["only caption"]), ("y.jpg", ["one", "two"])])
    assert one.skipped == ["x.jpg"] and one.index_captions["x.jpg"] == ["only caption"]
    assert [q.target for q in one.queries] == ["y.jpg"]


def test_queries_split_needs_a_split_field(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_text('{"image": "a.jpg", "captions": ["x", "y"]}\n')
    assert main(["queries", "--captions", str(path), "--out-captions", str(tmp_path / "i.jsonl"), "--out-queries",
                 str(tmp_path / "q.jsonl"), "--split", "dev"]) == 1
    assert 'no "split" field' in capsys.readouterr().err


# --- eval: outputs -----------------------------------------------------------------------------------------

def test_eval_writes_reports_that_the_metrics_command_agrees_with(bench, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(eval_args(bench, out)) == 0
    table = capsys.readouterr().out
    assert "| zs (FAKE) |" in table and "| composed:compose |" in table  # the fake LLM wrote zs's questions
    assert "NOT A COMPARISON - zs: the engine's LLM is the fake one" in table
    for name in ("zs", "feedback-expand", "composed-compose"):
        folder = out / name
        for f in ("ranks.json", "metrics.json", "by_round.csv", "hits_recall.png", "checkpoint.jsonl"):
            assert (folder / f).exists(), (name, f)
        assert (folder / "hits_recall.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        ranks = json.loads((folder / "ranks.json").read_text())
        assert len(ranks) == 8 and all(1 <= len(r) <= 3 for r in ranks.values())  # a shown target ends the search
        metrics = json.loads((folder / "metrics.json").read_text())
        assert main(["metrics", str(folder / "ranks.json"), "--n-images", "50", "--rounds", "2"]) == 0
        again = json.loads(capsys.readouterr().out)
        assert again["bri"] == pytest.approx(metrics["bri"]) and again["hits@10"] == metrics["hits@10"]
        rows = list(csv.DictReader(open(folder / "by_round.csv")))
        assert [float(r["hits@10"]) for r in rows] == pytest.approx(metrics["hits@10"], abs=1e-6)
        assert metrics["n_images"] == 50 and metrics["n_queries"] == 8
    assert (out / "zs" / "dialogues.json").exists()  # conversation runs can be replayed
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {"zs", "feedback:expand", "composed:compose"}
    assert (out / "bri.png").read_bytes()[:4] == b"\x89PNG" and (out / "summary.csv").exists()


def test_replaying_a_runs_dialogues_from_the_command_line(bench, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(eval_args(bench, out, "zs")) == 0
    assert main(eval_args(bench, out, "fixed-dialogue", 8, "--dialogues", str(out / "zs" / "dialogues.json"))) == 0
    zs = json.loads((out / "zs" / "ranks.json").read_text())
    replay = json.loads((out / "fixed-dialogue-concat" / "ranks.json").read_text())
    assert replay == zs
    assert set(json.loads((out / "summary.json").read_text())) == {"zs", "fixed-dialogue:concat"}  # merged


# --- eval: resume ------------------------------------------------------------------------------------------

class Crash:
    """A fake LLM responder that raises KeyboardInterrupt (a Ctrl-C) at its n-th prompt."""

    def __init__(self, n):
        self.n, self.seen = n, 0

    def __call__(self, text):
        self.seen += 1
        if self.seen == self.n:
            raise KeyboardInterrupt
        return fake_reply(text)


def test_resume_after_a_crash_equals_an_uninterrupted_run(bench, tmp_path, monkeypatch, capsys):
    full, crashed = tmp_path / "full", tmp_path / "crashed"
    assert main(eval_args(bench, full, "plugir", 8)) == 0
    import interactive_ir.backends as backends

    real = backends.make_llm
    monkeypatch.setattr(backends, "make_llm", lambda spec, **kw: FakeLLM(responder=Crash(60), spec=spec))
    assert main(eval_args(bench, crashed, "plugir", 8)) == 130  # interrupted mid-run
    lines = (crashed / "plugir" / "checkpoint.jsonl").read_text().splitlines()
    assert 2 <= len(lines) < 9  # the header and some, not all, finished queries
    assert not (crashed / "plugir" / "ranks.json").exists()
    with open(crashed / "plugir" / "checkpoint.jsonl", "a") as f:
        f.write('{"qid": "half-writ')  # as if killed while writing
    monkeypatch.setattr(backends, "make_llm", real)
    capsys.readouterr()
    assert main(eval_args(bench, crashed, "plugir", 8)) == 0
    a = json.loads((full / "plugir" / "ranks.json").read_text())
    b = json.loads((crashed / "plugir" / "ranks.json").read_text())
    assert a == b and list(a) == list(b)
    ma = json.loads((full / "plugir" / "metrics.json").read_text())
    mb = json.loads((crashed / "plugir" / "metrics.json").read_text())
    assert strip_timing(ma) == strip_timing(mb)
    records = [json.loads(x) for x in (crashed / "plugir" / "checkpoint.jsonl").read_text().splitlines()[1:]]
    assert len(records) == 8 and len({r["qid"] for r in records}) == 8


def test_a_larger_limit_resumes_and_changed_settings_are_refused(bench, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(eval_args(bench, out, "feedback:expand", 4)) == 0
    assert main(eval_args(bench, out, "feedback:expand", 6)) == 0  # 4 resumed, 2 new
    assert len((out / "feedback-expand" / "checkpoint.jsonl").read_text().splitlines()) == 1 + 6
    capsys.readouterr()
    assert main(eval_args(bench, out, "feedback:expand", 6, "--seed", "1")) == 1
    err = capsys.readouterr().err
    assert "other settings (seed differ)" in err and "--fresh" in err
    assert main(eval_args(bench, out, "feedback:expand", 6, "--seed", "1", "--fresh")) == 0
    assert len((out / "feedback-expand" / "checkpoint.jsonl").read_text().splitlines()) == 1 + 6


def test_resuming_with_changed_queries_is_refused(bench, tmp_path, capsys):
    """Same ids and targets but other descriptions: the old ranks would be wrong, so resuming is refused."""
    out = tmp_path / "run"
    assert main(eval_args(bench, out, "feedback:expand", 4)) == 0
    changed = tmp_path / "changed.jsonl"
    rows = [json.loads(x) for x in bench.queries_file.read_text().splitlines() if x.strip()]
    changed.write_text("".join(json.dumps({**r, "description": "a red bus"}) + "\n" for r in rows))
    args = eval_args(bench, out, "feedback:expand", 4)
    args[args.index("--queries") + 1] = str(changed)
    capsys.readouterr()
    assert main(args) == 1
    assert "another description" in capsys.readouterr().err
    assert main([*args, "--fresh"]) == 0


def test_stopping_early_is_scored_over_the_whole_round_budget(bench, tmp_path):
    out = tmp_path / "run"
    assert main(eval_args(bench, out, "rocchio", 8, "--stop-on-found")) == 0
    ranks = json.loads((out / "rocchio" / "ranks.json").read_text())
    metrics = json.loads((out / "rocchio" / "metrics.json").read_text())
    assert metrics["n_rounds"] == 3 and len(metrics["hits@10"]) == 3  # --rounds 2: rounds 0, 1, 2
    assert any(len(r) < 3 for r in ranks.values())  # some queries stopped early (found at once)


def test_retry_failed_reruns_only_the_queries_an_error_ended(bench, tmp_path, monkeypatch):
    from interactive_ir.evaluation import runner

    full, out = tmp_path / "full", tmp_path / "run"
    assert main(eval_args(bench, full, "feedback:expand", 6)) == 0
    real, calls = runner.run_query, []

    def flaky(engine, protocol, q, *a, **kw):  # the endpoint is down for the 2nd query
        calls.append(q.qid)
        res = real(engine, protocol, q, *a, **kw)
        if len(calls) == 2:
            res.ranks, res.stop = res.ranks[:1], "error: the LLM endpoint timed out"
        return res

    monkeypatch.setattr(runner, "run_query", flaky)
    assert main(eval_args(bench, out, "feedback:expand", 6)) == 0
    failed = calls[1]
    ranks = lambda d: json.loads((d / "feedback-expand" / "ranks.json").read_text())  # noqa: E731
    assert len(ranks(out)[failed]) == 1
    calls.clear()
    assert main(eval_args(bench, out, "feedback:expand", 6)) == 0  # a plain resume keeps the error
    assert calls == [] and len(ranks(out)[failed]) == 1
    assert main(eval_args(bench, out, "feedback:expand", 6, "--retry-failed")) == 0
    assert calls == [failed]  # only the failed query ran again
    assert ranks(out) == ranks(full) and list(ranks(out)) == list(ranks(full))


# --- eval: bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol, llm, message", [
    ("telepathy", "fake", "unknown protocol 'telepathy'"),
    ("plugir", None, "need an LLM"),
    ("fixed-dialogue", "fake", "pass --dialogues FILE"),
])
def test_eval_refuses_bad_requests(bench, tmp_path, capsys, protocol, llm, message):
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--protocol", protocol,
            "--out", str(tmp_path / "o"), "--no-progress", "--limit", "2"] + (["--llm", llm] if llm else [])
    assert main(args) == 1
    assert message in capsys.readouterr().err


def test_eval_refuses_queries_with_no_target_in_the_index(bench, tmp_path, capsys):
    q = tmp_path / "q.jsonl"
    q.write_text('{"target": "elsewhere.jpg", "description": "a cat"}\n')
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(q), "--protocol", "rocchio",
            "--out", str(tmp_path / "o"), "--no-progress"]
    assert main(args) == 1
    assert "none of the queries' targets is in the index" in capsys.readouterr().err


# --- report helpers ----------------------------------------------------------------------------------------

def _record(qid, target, ranks, shown_ranks, shown, stop="rounds"):
    turns = [{"round": t, "rank": r, "shown_rank": s, "shown": ids, "llm_calls": 1, "user": {"source": "llm"}}
             for t, (r, s, ids) in enumerate(zip(ranks, shown_ranks, shown))]
    return {"qid": qid, "target": target, "ranks": ranks, "shown_ranks": shown_ranks, "turns": turns, "stop": stop,
            "seconds": 2.0, "engine_llm_seconds": 1.0, "sim_seconds": 0.5, "dialog": []}


def test_summarise_adds_shown_share_accumulated_recall_and_counts():
    from interactive_ir.evaluation.report import summarise

    records = [
        _record("q1", "t1", [12, 3, 1], [None, 3, None], [["a", "b"], ["t1", "c"], ["r1", "d"]]),
        _record("q2", "t2", [5, 5], [None, None], [["r2", "e"], ["f", "g"]], stop="stopped: nothing was shown"),
        _record("q3", "t3", [], [], [], stop="error: boom"),
    ]
    ranks, m = summarise(records, n_images=20, ks=(1, 5, 10), relevant={"q1": ["r1", "r9"], "q2": ["r2"]})
    assert ranks == {"q1": [12, 3, 1], "q2": [5, 5]}
    assert m["n_failed"] == 1 and m["stops"] == {"rounds": 1, "stopped": 1, "error": 1}
    # q1's target is shown at round 1; q2's never: shown share by round 0, 1, 2 = 0, 1/2, 1/2
    assert m["shown"] == [0.0, 0.5, 0.5]
    # relevant sets: q1 {t1, r1, r9}: round 0 none, round 1 t1, round 2 t1+r1 -> 0, 1/3, 2/3
    #                q2 {t2, r2}: round 0 r2 -> 1/2, carried forward -> 1/2, 1/2, 1/2
    assert m["accumulated_recall"] == pytest.approx([0.25, (1 / 3 + 0.5) / 2, (2 / 3 + 0.5) / 2])
    from interactive_ir.evaluation.report import by_round_rows

    rows = by_round_rows(m, (1, 5, 10))  # the CSV by round carries it too
    assert [r["accumulated_recall"] for r in rows] == pytest.approx(m["accumulated_recall"])
    # hits@10 (q2 padded to [5, 5, 5]): round 0 q2 only -> 0.5, then both
    assert m["hits@10"] == [0.5, 1.0, 1.0]
    assert m["user_reply_sources"] == {"llm": 5} and m["engine_llm_calls_per_query"] == pytest.approx(5 / 3, abs=1e-3)
    assert m["timing"]["seconds_per_query"] == 2.0


# --- presets, the simulated user's line, costs and at-round figures --------------------------------------

def test_a_preset_sets_the_papers_settings_and_an_explicit_flag_wins(bench, tmp_path, capsys):
    out = tmp_path / "fisd"
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--preset", "fisd",
            "--limit", "3", "--out", str(out), "--no-progress", "--rounds", "2"]
    assert main(args) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("preset fisd: A sanity check on CIR") and "rounds=5" in lines[0]
    assert "the flag wins: --rounds 2 overrides the fisd preset's 5" in text
    assert "simulated user: model-free" in text and "stop when the target is shown: yes" in text
    assert "--no-stop-on-found" not in text
    metrics = json.loads((out / "composed-compose" / "metrics.json").read_text())
    assert metrics["settings"]["rounds"] == 2 and metrics["settings"]["k"] == 10 and metrics["preset"] == "fisd"
    rows = list(csv.DictReader(open(out / "composed-compose" / "by_round.csv")))
    assert {"hits@10", "at_round@10", "wall_seconds", "cpu_seconds", "llm_round_trips", "user_round_trips"} <= set(rows[0])
    assert float(rows[0]["cpu_seconds"]) >= 0 and metrics["costs"]["llm_round_trips_per_query"] == 0


def test_plugir_preset_says_which_pipeline_choices_this_build_lacks(bench, tmp_path, capsys):
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--preset", "plugir",
            "--llm", "fake", "--limit", "1", "--rounds", "1", "--out", str(tmp_path / "p"), "--no-progress"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "preset plugir" in text and "plugir.reformulate_max_tokens=512" in text
    assert "stop when the target is shown: no" in text
    assert "keeps the rank of the round it was found in" in text  # --no-stop-on-found says what it keeps
    metrics = json.loads((tmp_path / "p" / "plugir" / "metrics.json").read_text())
    assert metrics["costs"]["llm_round_trips_per_query"] >= 1  # the fake LLM was asked


def test_a_fake_llm_as_simulated_user_is_said_and_compares_nothing(bench, tmp_path, capsys):
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--protocol",
            "composed:compose,none", "--llm", "fake", "--answerer", "llm", "--limit", "2", "--rounds", "1",
            "--out", str(tmp_path / "f"), "--no-progress"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "THE SIMULATED USER IS A FAKE MODEL" in text
    assert "NOT A COMPARISON - composed:compose: the simulated user is the fake LLM" in text
    assert not (tmp_path / "f" / "bri.png").exists()  # no comparison drawn


def test_unknown_preset_is_a_one_line_error(bench, tmp_path, capsys):
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--preset", "nope",
            "--out", str(tmp_path / "x"), "--no-progress"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "unknown preset 'nope'; choose one of plugir, chatir, zhu, imagescope, fisd" in err
    assert not (tmp_path / "x").exists()


def test_tables_print_intervals_and_paired_differences(bench, tmp_path, capsys):
    from interactive_ir.evaluation.tables import main as tables

    out = tmp_path / "runs" / "pass"
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--protocol",
            "none,oracle,grounded", "--limit", "12", "--rounds", "2", "-k", "3", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    capsys.readouterr()
    assert tables([str(tmp_path / "runs"), "pass", "--rounds", "2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("load average: ")
    assert "Paired differences against `none`, on every target" in text
    assert "| oracle | 12 |" in text and "| grounded | 12 |" in text
    assert "at-round@10 last [95% CI]" in text


def test_eval_runs_the_pages_users_with_errors_and_overlooks(bench, tmp_path, capsys):
    out = tmp_path / "users"
    args = ["eval", "--index", str(bench.index_dir), "--queries", str(bench.queries_file), "--protocol",
            "user:click,user:question,user:typing", "--rounds", "2", "--limit", "6", "--out", str(out),
            "--no-progress", "--user-noise", "0.25", "--overlook", "1", "--user-similarity", "bm25"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "similarity: bm25, 25% of clicks and answers at random" in printed
    assert "100% of shown targets overlooked" in printed
    for name in ("user-click", "user-question", "user-typing"):
        lines = (out / name / "checkpoint.jsonl").read_text().splitlines()
        header = json.loads(lines[0])["header"]
        assert header["overlook"] == 1.0 and header["backends"]["sim"]["noise"] == 0.25
        records = [json.loads(x) for x in lines[1:]]
        assert all(r["found_round"] is None for r in records)  # every shown target overlooked
        shown = [t for r in records for t in r["turns"] if r["target"] in t["shown"]]
        assert all(t.get("overlooked") for t in shown)
    assert shown, "a target was shown (and missed) in the last protocol"
