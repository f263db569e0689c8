"""Composed-retrieval triplet loaders on tiny files in each benchmark's released format, bad files refused,
and a CIR triplet's round 0: the reference changed as its caption says (A Sanity Check on Composed Image Retrieval)."""

from __future__ import annotations

import json

import pytest

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.datasets.triplets import load_triplets
from interactive_ir.evaluation.dialogues import resolve_targets

CIRR = [{"pairid": 12063, "reference": "test1-147-1-img1", "target_hard": "test1-83-0-img1",
         "target_soft": {"test1-83-0-img1": 1.0}, "caption": "remove all but one dog and add a woman hugging it",
         "img_set": {"id": 1, "members": ["test1-147-1-img1", "test1-83-0-img1"]}}]
FASHIONIQ = [{"target": "B008BHCT58", "candidate": "B003FGW7MK",
              "captions": ["is solid black with no sleeves", "is black with straps"]}]
CIRCO = [{"reference_img_id": 85932, "target_img_id": 9761, "relative_caption": "is on a red plate",
          "shared_concept": "a pizza", "gt_img_ids": [9761, 1234], "id": 0}]
FISD = [{"id": 3, "type": "negation", "reference": "neg_0003_ref", "target": "neg_0003_tgt",
         "relative_caption": "remove the hat from the man"}]


@pytest.mark.parametrize("kind, data, expected", [
    ("cirr", CIRR, ("cirr-12063", "test1-83-0-img1", "test1-147-1-img1",
                    "remove all but one dog and add a woman hugging it", ())),
    ("fashioniq", FASHIONIQ, ("fiq-0", "B008BHCT58", "B003FGW7MK",
                              "is solid black with no sleeves and is black with straps", ())),
    ("circo", CIRCO, ("circo-0", "9761", "85932", "is on a red plate", ("1234",))),
    ("fisd", FISD, ("fisd-3", "neg_0003_tgt", "neg_0003_ref", "remove the hat from the man", ())),
])
def test_each_benchmark_file_becomes_queries(tmp_path, kind, data, expected):
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(data))
    (q,) = load_triplets(kind, path)
    assert (q.qid, q.target, q.reference, q.description, q.relevant) == expected
    assert q.meta["benchmark"] == kind


def test_a_file_of_another_benchmark_or_broken_json_is_a_one_line_error(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(FASHIONIQ))
    with pytest.raises(BadInputError, match=r"lacks pairid, reference, target_hard, caption: this is not a CIRR file"):
        load_triplets("cirr", path)
    path.write_text("{not json")
    with pytest.raises(BadInputError, match="is not valid JSON"):
        load_triplets("circo", path)
    with pytest.raises(BadInputError, match="annotation file not found"):
        load_triplets("fisd", tmp_path / "missing.json")
    with pytest.raises(BadInputError, match="unknown triplet benchmark"):
        load_triplets("nope", path)


def test_ids_match_index_files_by_stem(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(CIRR))
    qs = load_triplets("cirr", path)
    found, missing = resolve_targets(qs, ["dev/test1-147-1-img1.png", "dev/test1-83-0-img1.png", "other.png"])
    assert not missing and (found[0].target, found[0].reference) == ("dev/test1-83-0-img1.png",
                                                                     "dev/test1-147-1-img1.png")
    found, missing = resolve_targets(qs, ["dev/test1-83-0-img1.png"])  # the reference is not indexed
    assert not found and missing == qs


def test_a_triplet_starts_from_its_reference(tmp_path):
    from iir_testutils import build_tiny

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.evaluation.protocols import get_protocol
    from interactive_ir.evaluation.queries import Query
    from interactive_ir.evaluation.runner import RunConfig, run_query
    from interactive_ir.evaluation.simulators import make_user

    retriever, ids, _ = build_tiny(tmp_path)
    q = Query(qid="t", target=ids[5], description="make it blue", reference=ids[2])
    p = get_protocol("composed:compose")
    engine = build_engine(retriever, config=EngineConfig(k=5), **p.mode_configs())
    sessions = []
    res = run_query(engine, p, q, make_user(retriever.index), RunConfig(rounds=1, k=5, progress=False),
                    sessions.append)
    first = sessions[0].turns[0]
    assert first.kind == "relative" and first.reference == ids[2] and first.user_text == "make it blue"
    assert ids[2] not in first.shown and len(res.ranks) >= 1


# --- reproduce ------------------------------------------------------------------------------------------

def _chatir(targets, caption_of):
    return [{"img": t, "dialog": [caption_of(t), *(f"is it {w}? yes" for w in ("red", "big", "near", "old"))]}
            for t in targets]


def test_reproduce_plugir_table1_prints_the_papers_figures_beside_the_run(tmp_path, capsys):
    import shutil

    from iir_testutils import build_tiny

    from interactive_ir.cli import main

    retriever, ids, caps = build_tiny(tmp_path / "build")
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(tmp_path / "build" / "index", data / "index")
    (data / "zs.json").write_text(json.dumps(_chatir(ids[:4], lambda t: caps[t][0])))
    (data / "plugir.json").write_text(json.dumps(_chatir(ids[:4], lambda t: caps[t][1])))
    out = tmp_path / "out"
    assert main(["reproduce", "plugir-table1", "--data", str(data), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "PlugIR Table 1, VisDial val, BLIP retriever" in text
    lines = [ln for ln in text.splitlines() if ln.startswith(("| ZS |", "| PlugIR |"))]
    assert len(lines) == 2 and "| 1.0006 |" in lines[0] and "| 0.7674 |" in lines[1]
    run_bri = json.loads((out / "zs" / "fixed-dialogue-concat" / "metrics.json").read_text())["bri"]
    assert f"{run_bri:.4f}" in lines[0] and f"{run_bri - 1.0006:+.4f}" in lines[0]


def test_reproduce_refuses_a_folder_missing_a_file(tmp_path, capsys):
    from interactive_ir.cli import main

    (tmp_path / "index").mkdir()
    assert main(["reproduce", "plugir-table1", "--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert "lacks index/manifest.json, zs.json, plugir.json" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit) as e:  # one sub-parser per reproduction: argparse names the choices
        main(["reproduce", "nope", "--data", str(tmp_path)])
    assert e.value.code == 2 and "invalid choice: 'nope' (choose from 'plugir-table1'" in capsys.readouterr().err


# --- caption files of the papers' datasets ----------------------------------------------------------------

KARPATHY = {"images": [
    {"filepath": "val2014", "filename": "COCO_val2014_000000391895.jpg", "split": "test",
     "sentences": [{"raw": "A man riding a bike."}, {"raw": "A person on a bicycle."}, {"raw": "Biker on a road."}]},
    {"filepath": "train2014", "filename": "COCO_train2014_000000000009.jpg", "split": "restval",
     "sentences": [{"raw": "A plate of food."}, {"raw": "Food on a table."}]},
], "dataset": "coco"}


def test_karpathy_split_files_give_caption_rows_by_split(tmp_path):
    from interactive_ir.evaluation.queries import make_queries, read_caption_rows

    path = tmp_path / "dataset_coco.json"
    path.write_text(json.dumps(KARPATHY))
    assert read_caption_rows(path, "test") == [("val2014/COCO_val2014_000000391895.jpg",
                                                ["A man riding a bike.", "A person on a bicycle.", "Biker on a road."])]
    assert [r[0] for r in read_caption_rows(path, "train")] == ["train2014/COCO_train2014_000000000009.jpg"]
    assert len(read_caption_rows(path)) == 2
    held = make_queries(read_caption_rows(path, "test"))
    (q,) = held.queries
    assert len(q.knowledge) == 2 and held.index_captions[q.target][0] not in q.knowledge
    with pytest.raises(BadInputError, match="no images in split 'val'"):
        read_caption_rows(path, "val")


def test_reproduce_chatir_prints_hits_by_round_beside_the_papers(tmp_path, capsys):
    import shutil

    from iir_testutils import build_tiny

    from interactive_ir.cli import main

    retriever, ids, caps = build_tiny(tmp_path / "build")
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(tmp_path / "build" / "index", data / "index")
    (data / "dialogues.json").write_text(json.dumps(_chatir(ids[:6], lambda t: caps[t][0])))
    out = tmp_path / "out"
    assert main(["reproduce", "chatir", "--data", str(data), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "ChatIR (Levy et al. 2023; FT in PlugIR Table 12), VisDial val, Hits@10 (%) by round" in text
    rows = {ln.split("|")[2].strip(): [c.strip() for c in ln.split("|")[3:14]]
            for ln in text.splitlines() if ln.startswith("| ChatIR |")}
    assert rows["paper"] == ["71.5", "76.2", "78.9", "80.5", "82.0", "83.3", "84.4", "84.9", "85.6", "86.1", "86.4"]
    hits = json.loads((out / "chatir" / "fixed-dialogue-concat" / "metrics.json").read_text())["hits@10"]
    assert len(hits) == 11 and rows["this run"] == [f"{100 * h:.1f}" for h in hits]
    assert rows["difference"] == [f"{100 * h - p:+.1f}" for h, p in zip(hits, map(float, rows["paper"]))]


def test_reproduce_chatir_refuses_a_folder_without_the_dialogues(tmp_path, capsys):
    from interactive_ir.cli import main

    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "manifest.json").write_text("{}")
    assert main(["reproduce", "chatir", "--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert "lacks dialogues.json" in err and len(err.splitlines()) == 1 and not (tmp_path / "o").exists()


def test_reproduce_imagescope_cirr_on_a_cirr_file(tmp_path, capsys):
    import shutil
    from pathlib import PurePosixPath

    from iir_testutils import build_tiny

    from interactive_ir.cli import main

    retriever, ids, caps = build_tiny(tmp_path / "build")
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(tmp_path / "build" / "index", data / "index")
    stem = [PurePosixPath(i).stem for i in ids]
    rows = [{"pairid": i, "reference": stem[i], "target_hard": stem[i + 1], "target_soft": {stem[i + 1]: 1.0},
             "caption": caps[ids[i + 1]][0], "img_set": {"id": i, "members": stem[i : i + 6]}} for i in range(4)]
    (data / "cap.rc2.val.json").write_text(json.dumps(rows))
    out = tmp_path / "out"
    assert main(["reproduce", "imagescope-cirr", "--data", str(data), "--out", str(out), "--llm", "fake",
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "ImageScope Tables 2 and 4, CIRR test1" in text and "difference is across splits" in text
    lines = {ln.split("|")[2].strip(): [c.strip() for c in ln.split("|")[3:10]]
             for ln in text.splitlines() if ln.startswith("| ImageScope |")}
    assert lines["paper, CLIP-ViT-L/14"] == ["39.37", "67.54", "78.05", "92.94", "76.36", "89.40", "95.21"]
    (run_label,) = [k for k in lines if k.startswith("this run")]
    assert "NOT A COMPARISON" in run_label  # the fake LLM wrote the queries
    m = json.loads((out / "imagescope" / "composed-imagescope" / "metrics.json").read_text())
    want = [f"{100 * m[c][0]:.2f}" for c in ("recall@1", "recall@5", "recall@10", "recall@50",
                                             "recall_subset@1", "recall_subset@2", "recall_subset@3")]
    assert lines[run_label] == want and m["n_subset_queries"] == 4 and m["n_rounds"] == 1
    assert lines["minus CLIP-ViT-B/32"][0] == f"{float(want[0]) - 38.43:+.2f}"


def test_reproduce_fisd_prints_recall_at_1_by_type_beside_table1(tmp_path, capsys):
    import shutil
    from pathlib import PurePosixPath

    from iir_testutils import build_tiny

    from interactive_ir.cli import main

    retriever, ids, caps = build_tiny(tmp_path / "build")
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(tmp_path / "build" / "index", data / "index")
    stem = [PurePosixPath(i).stem for i in ids]
    kinds = ["negation", "Cardinality", "addition", "mystery"]
    rows = [{"id": i, "type": kinds[i % 4], "reference": stem[i], "target": stem[i + 1],
             "relative_caption": caps[ids[i + 1]][0]} for i in range(8)]
    (data / "fisd.json").write_text(json.dumps(rows))
    out = tmp_path / "out"
    assert main(["reproduce", "fisd", "--data", str(data), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    ranks = json.loads((out / "fisd" / "composed-compose" / "ranks.json").read_text())
    r1 = {k: [100.0 * (ranks[f"fisd-{i}"][0] <= 1) for i in range(8) if i % 4 == j] for j, k in enumerate(kinds)}
    mean = {k: sum(v) / len(v) for k, v in r1.items()}
    run_line = next(ln for ln in text.splitlines() if ln.startswith("| this run"))
    cells = [c.strip() for c in run_line.split("|")[2:9]]
    assert cells == [f"{mean['Cardinality']:.2f}", f"{mean['addition']:.2f}", f"{mean['negation']:.2f}", "-", "-", "-",
                     f"{(mean['Cardinality'] + mean['addition'] + mean['negation']) / 3:.2f}"]
    sprc = next(ln for ln in text.splitlines() if ln.startswith("| SPRC (paper)"))
    assert "| 41.00 | 66.50 | 9.50 | 73.00 | 48.50 | 62.00 | 50.08 |" in sprc
    assert sprc.rstrip(" |").endswith(f"{float(cells[-1]) - 50.08:+.2f}")
    assert "other 2" in text and "negation 2" in text
