"""Composed benchmarks by their own rules: a CIR triplet's reference image is left out of the ranking (never
shown, never counted above the target), as FISD, CIRR, CIRCO and FashionIQ score; `--keep-reference` brings
back the old numbers. And `reproduce NAME --help` gives each target's own data layout."""

from __future__ import annotations

import json
import shutil
from pathlib import PurePosixPath

import numpy as np
import pytest
from iir_testutils import build_tiny

from interactive_ir.cli import main
from interactive_ir.evaluation.protocols import get_protocol
from interactive_ir.evaluation.queries import Query
from interactive_ir.evaluation.runner import RunConfig, protocol_engine, run_query
from interactive_ir.evaluation.simulators import make_user


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("cir")
    retriever, ids, caps = build_tiny(root / "build")
    return root, retriever, ids, caps


def _order(retriever, row) -> list[str]:
    """Every image id, best first, under a query row (the rank source `Turn.query_row`)."""
    scores = retriever.all_scores(np.asarray(row, np.float32))
    return [retriever.index.ids[i] for i in np.argsort(-scores, kind="stable")]


def _nearest_reference_triplets(retriever, ids, caps, protocol: str, n: int = 2) -> list[tuple[str, str, str]]:
    """(reference, caption, target) triplets whose reference is the nearest neighbour of the round-0 query and
    whose target is the next image: the target ranks 2 with the reference, 1 without it."""
    p = get_protocol(protocol)
    engine = protocol_engine(p, retriever, RunConfig(k=5, progress=False))
    out = []
    for ref in ids:
        caption = caps[ref][0]
        session = engine.new_session()
        turn = (engine.relative(session, caption, reference=ref) if p.family == "composed"
                else engine.search_text(session, caption))
        order = _order(retriever, turn.query_row)
        if order[0] == ref:
            out.append((ref, caption, order[1]))
    assert len(out) >= n, "the tiny index has no triplet whose reference is its query's nearest neighbour"
    return out[:n]


def _run(retriever, protocol: str, query: Query, **cfg):
    p = get_protocol(protocol)
    rc = RunConfig(progress=False, **cfg)
    sessions = []
    res = run_query(protocol_engine(p, retriever, rc), p, query, make_user(retriever.index), rc, sessions.append)
    return res, sessions[0]


def test_the_targets_rank_leaves_the_reference_out_and_keep_reference_brings_the_old_rank_back(tiny):
    _, retriever, ids, caps = tiny
    for ref, caption, target in _nearest_reference_triplets(retriever, ids, caps, "composed:compose"):
        near_ref = retriever.query_row(retriever.row_vector(retriever.index.row_of[ref], "image"), None)
        other = next(i for i in _order(retriever, near_ref) if i not in (ref, target))
        q = Query(qid="t", target=target, description=caption, reference=ref, relevant=(other,))
        res, session = _run(retriever, "composed:compose", q, rounds=0, k=5)
        assert res.ranks == [1] and res.shown_ranks == [1]  # shown first, and ranked first
        assert ref not in session.turns[0].shown and session.meta["exclude"] == [ref]
        kept, kept_session = _run(retriever, "composed:compose", q, rounds=0, k=5, keep_reference=True)
        assert kept.ranks == [2] and "exclude" not in kept_session.meta  # the old number: the reference above it
        assert res.relevant_ranks[0][0] == 1 and kept.relevant_ranks[0][0] == 2  # CIRCO's ranks too
        assert res.relevant_ranks[0][1] <= kept.relevant_ranks[0][1]


@pytest.mark.parametrize("protocol", ["none", "rocchio", "feedback:expand"])
def test_the_reference_is_never_shown_in_any_round_of_any_protocol(tiny, protocol):
    """Five rounds of 5 page through all 24 images: every one is shown but the left-out reference."""
    _, retriever, ids, caps = tiny
    ((ref, caption, target),) = _nearest_reference_triplets(retriever, ids, caps, "none", n=1)
    q = Query(qid="t", target=target, description=caption, reference=ref)
    res, session = _run(retriever, protocol, q, rounds=4, k=5, stop_on_found=False)
    shown = session.shown_ids()
    assert ref not in shown and res.ranks[0] == 1 and res.shown_ranks[0] == 1
    assert len(shown) == len(ids) - 1  # the others were all shown: only the reference is missing
    kept, kept_session = _run(retriever, protocol, q, rounds=4, k=5, stop_on_found=False, keep_reference=True)
    assert kept_session.turns[0].shown[0] == ref and kept.ranks[0] == 2


def test_a_composed_search_never_shows_the_triplets_reference_in_later_rounds(tiny):
    _, retriever, ids, caps = tiny
    ((ref, caption, target),) = _nearest_reference_triplets(retriever, ids, caps, "composed:compose", n=1)
    q = Query(qid="t", target=ids[-1] if ids[-1] != ref else ids[0], description=caption, reference=ref,
              captions=("a thing", "another thing"))
    res, session = _run(retriever, "composed:compose", q, rounds=3, k=5, stop_on_found=False)
    assert len(session.turns) == 4 and all(ref not in t.shown for t in session.turns)


def test_exclude_for_adds_the_sessions_left_out_ids_to_every_policy(tiny):
    from interactive_ir.engine import EngineConfig, build_engine

    _, retriever, ids, _ = tiny
    engine = build_engine(retriever, config=EngineConfig(k=3))
    core = engine.core
    s = engine.new_session(exclude=[ids[0]])
    assert core.exclude_for(s) == [ids[0]]  # nothing hidden by policy, the reference all the same
    first = engine.search_text(s, "a red dog on the beach")
    assert ids[0] not in first.shown
    assert core.exclude_for(s, page=True) == [ids[0], *[i for i in first.shown]]
    assert core.exclude_for(s, page=True, before=first) == [ids[0]]
    assert core.exclude_for(engine.new_session()) == []


def _cir_data(root, rows, name: str):
    data = root / f"data-{name}"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir()
    shutil.copytree(root / "build" / "index", data / "index")
    (data / name).write_text(json.dumps(rows))
    return data


def test_reproduce_fisd_scores_without_the_reference_and_its_header_says_so(tiny, capsys):
    root, retriever, ids, caps = tiny
    triplets = _nearest_reference_triplets(retriever, ids, caps, "composed:compose")
    stem = lambda i: PurePosixPath(i).stem  # noqa: E731
    rows = [{"id": n, "type": "addition", "reference": stem(r), "target": stem(t), "relative_caption": c}
            for n, (r, c, t) in enumerate(triplets)]
    data = _cir_data(root, rows, "fisd.json")
    for keep, rank, line in ((False, 1, "reference images left out of the ranking"),
                             (True, 2, "reference images KEPT in the ranking")):
        out = root / f"out-{keep}"
        argv = ["reproduce", "fisd", "--data", str(data), "--out", str(out), "--no-progress"]
        assert main(argv + (["--keep-reference"] if keep else [])) == 0
        text = capsys.readouterr().out
        header = next(ln for ln in text.splitlines() if ln.startswith("== fisd"))
        assert line in header
        assert (f"reference image {'KEPT' if keep else 'left out of'}") in text  # eval's own header line
        ranks = json.loads((out / "fisd" / "composed-compose" / "ranks.json").read_text())
        assert sorted(r[0] for r in ranks.values()) == [rank] * len(rows)
        run_line = next(ln for ln in text.splitlines() if ln.startswith("| this run"))
        assert run_line.split("|")[3].strip() == ("100.00" if rank == 1 else "0.00")  # Addition's Recall@1


def test_eval_on_a_cirr_file_leaves_the_reference_out_of_a_text_search_too(tiny, capsys):
    root, retriever, ids, caps = tiny
    triplets = _nearest_reference_triplets(retriever, ids, caps, "none")
    stem = lambda i: PurePosixPath(i).stem  # noqa: E731
    rows = [{"pairid": n, "reference": stem(r), "target_hard": stem(t), "caption": c,
             "img_set": {"members": [stem(r), stem(t)]}} for n, (r, c, t) in enumerate(triplets)]
    data = _cir_data(root, rows, "cap.rc2.val.json")
    for keep, rank in ((False, 1), (True, 2)):
        out = root / f"eval-{keep}"
        argv = ["eval", "--index", str(data / "index"), "--queries", str(data / "cap.rc2.val.json"),
                "--queries-format", "cirr", "--protocol", "none", "--rounds", "0", "--out", str(out), "--no-progress"]
        assert main(argv + (["--keep-reference"] if keep else [])) == 0
        text = capsys.readouterr().out
        assert ("reference image KEPT" if keep else "reference image left out of the ranking: 2 composed") in text
        ranks = json.loads((out / "none" / "ranks.json").read_text())
        assert sorted(r[0] for r in ranks.values()) == [rank] * len(rows)
        header = json.loads((out / "none" / "checkpoint.jsonl").read_text().splitlines()[0])["header"]
        assert header["keep_reference"] is keep


def test_a_run_without_references_keeps_its_old_checkpoint_header():
    from interactive_ir.evaluation.runner import run_header

    p = get_protocol("none")
    assert "keep_reference" not in run_header(p, RunConfig(progress=False), {}, {})
    assert run_header(p, RunConfig(progress=False), {}, {}, references=True)["keep_reference"] is False


# --- reproduce NAME --help ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, files", [
    ("plugir-table1", ("index/", "zs.json", "plugir.json", "Search_Space_val_50k.json")),
    ("chatir", ("index/", "dialogues.json", "VisDial_v1.0_queries_val.json")),
    ("imagescope-cirr", ("index/", "cap.rc2.val.json", "target_hard", "img_set", "split.rc2.val.json")),
    ("fisd", ("index/", "fisd.json", "relative_caption", "type")),
    ("zhu-msrvtt", ("index/", "queries.jsonl", "msrvtt_frames.sh", "--out-image-list")),
])
def test_reproduce_name_help_gives_that_targets_own_data_layout(name, files, capsys):
    from interactive_ir.commands.reproduce_cmd import LAYOUTS, REPRODUCTIONS

    with pytest.raises(SystemExit) as e:
        main(["reproduce", name, "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert all(f in text for f in files), [f for f in files if f not in text]
    assert f"python -m interactive_ir reproduce {name} --data DIR" in text and "--keep-reference" in text
    others = [n for n in REPRODUCTIONS if n != name]
    assert not any(f"reproduce {n} --data" in text for n in others)  # only its own layout
    for path, _ in LAYOUTS[name].files:
        assert path in text
    for _, data_file, _, _ in REPRODUCTIONS[name].runs:  # the files the run checks for are the ones described
        assert any(path == data_file for path, _ in LAYOUTS[name].files)


def test_reproduce_help_lists_every_targets_layout(capsys):
    from interactive_ir.commands.reproduce_cmd import LAYOUTS, REPRODUCTIONS

    assert set(LAYOUTS) == set(REPRODUCTIONS)
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = capsys.readouterr().out
    assert all(f"python -m interactive_ir reproduce {n} --data DIR" in text for n in REPRODUCTIONS)


def test_question_candidates_leave_the_reference_out_too(tiny):
    """The pictures a grounded question offers come from S_R: a left-out reference is never one of them."""
    from interactive_ir.engine import EngineConfig, build_engine

    _, retriever, ids, caps = tiny
    ((ref, caption, _),) = _nearest_reference_triplets(retriever, ids, caps, "none", n=1)
    engine = build_engine(retriever, config=EngineConfig(k=3))
    for exclude, present in (([ref], False), ([], True)):
        s = engine.new_session(exclude=exclude)
        turn = engine.search_text(s, caption)
        turn.kind = "answer"  # a round that did not page and fetched no candidates
        cands = engine.asker.candidates_for(s, turn, engine.asker.config, True)
        assert (retriever.index.row_of[ref] in set(np.asarray(cands.rows).tolist())) is present
