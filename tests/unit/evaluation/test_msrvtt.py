"""MSR-VTT as text-to-frame retrieval with several relevant frames per query (Zhu et al.): the released
annotation formats (videodatainfo JSON, the 1k-A CSV) on tiny fixture files, frames picked per video,
queries -> index --image-list -> eval end to end with the fake embedder, accumulated recall and the
single-turn Recall@K of the relevant frames checked against exact scores, `reproduce zhu-msrvtt`, and
bad input (a missing file, a file of another format, a video without frames) refused in one line with
nothing written."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from interactive_ir.cli import main
from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.datasets.msrvtt import make_msrvtt_queries, pick_frames, read_annotations

ROOT = Path(__file__).resolve().parents[3]
TOPICS = ["cooking pasta in a kitchen", "playing football on grass", "singing on a stage", "driving a red car",
          "swimming in a pool", "talking to a news camera", "dancing at a party", "riding a horse"]
BASE = [(200, 40, 40), (40, 180, 40), (40, 40, 200), (220, 200, 30), (30, 200, 210), (150, 60, 170),
        (240, 140, 20), (90, 90, 90)]


def frames_of(root: Path, n_videos: int = 8, n_frames: int = 7, skip: tuple[str, ...] = ()) -> Path:
    """FRAMES/videoN/000001.jpg ...: tiny JPEGs, each video a colour of its own, frames shading slightly."""
    from PIL import Image, ImageDraw

    folder = root / "frames"
    for v in range(n_videos):
        vid = f"video{v}"
        (folder / vid).mkdir(parents=True, exist_ok=True)
        if vid in skip:
            continue
        for j in range(n_frames):
            r, g, b = BASE[v % len(BASE)]
            im = Image.new("RGB", (24, 16), (max(0, r - 6 * j), g, min(255, b + 4 * j)))
            ImageDraw.Draw(im).rectangle([j, 2, j + 6, 10], fill=(255 - r, 255 - g, 255 - b))
            im.save(folder / vid / f"{j + 1:06d}.jpg", quality=90)
    return folder


def sentences_of(v: int) -> list[str]:
    t = TOPICS[v % len(TOPICS)]
    return [f"a person is {t}", f"someone {t} while people watch", f"a clip of {t}", f"people {t} together"]


def videodatainfo(n_videos: int = 8, splits=("train", "validate", "test")) -> dict:
    """A videodatainfo.json in MSR-VTT's released layout (info, videos, sentences)."""
    videos = [{"category": v % 20, "url": f"https://www.youtube.com/watch?v=clip{v}", "video_id": f"video{v}",
               "start time": 10.0 + v, "end time": 25.0 + v, "split": splits[v % len(splits)], "id": v}
              for v in range(n_videos)]
    sents, sid = [], 0
    for v in range(n_videos):
        for s in sentences_of(v):
            sents.append({"caption": s, "video_id": f"video{v}", "sen_id": sid})
            sid += 1
    return {"info": {"contributor": "Microsoft MSM group", "data_created": "2016-04-14 14:30:20", "version": "1.0",
                     "description": "This is 1.0 version of the 2016 MSR-VTT dataset.", "year": "2016"},
            "videos": videos, "sentences": sents}


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def write_1ka(path: Path, videos=(2, 5, 7)) -> Path:
    """MSRVTT_JSFUSION_test.csv: key,vid_key,video_id,sentence (one row per test video)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "vid_key", "video_id", "sentence"])
        for i, v in enumerate(videos):
            w.writerow([f"ret{i}", f"msr{v}", f"video{v}", sentences_of(v)[2]])
    return path


# --- the loader --------------------------------------------------------------------------------------------


def test_every_sentence_is_a_query_whose_relevant_images_are_its_videos_picked_frames(tmp_path):
    from interactive_ir.evaluation.knowledge import knowledge_of

    ann = read_annotations([write_json(tmp_path / "videodatainfo.json", videodatainfo())])
    assert ann.videos == [f"video{v}" for v in range(8)] and len(ann.queries) == 32
    pick = pick_frames(frames_of(tmp_path), ann.videos, per_video=5, seed=0)
    assert not pick.without and not pick.short
    for vid, frames in pick.frames.items():
        assert len(frames) == 5 and frames == sorted(frames) and all(f.startswith(f"{vid}/") for f in frames)
    # a video's pick depends on the seed and the video only
    alone = pick_frames(tmp_path / "frames", ["video3"], per_video=5, seed=0)
    assert alone.frames["video3"] == pick.frames["video3"]
    assert pick_frames(tmp_path / "frames", ["video3"], per_video=5, seed=1).frames["video3"] != alone.frames["video3"]

    queries = make_msrvtt_queries(ann, pick, seed=0)
    assert len(queries) == 32 and len({q.qid for q in queries}) == 32
    q = next(q for q in queries if q.qid == "msrvtt-13")  # sentence 13: video3's second
    frames = pick.frames["video3"]
    assert q.description == sentences_of(3)[1]
    assert q.target == frames[2] and set(q.relevant) == set(frames) - {frames[2]}
    assert list(q.captions) == [s for s in sentences_of(3) if s != q.description]
    known = knowledge_of(q)
    assert known.captions == (q.description, *q.captions)
    assert not any("video3" in c or c.endswith(".jpg") for c in known.captions)  # never the id or a frame name
    assert all(known.recognise.is_relevant(f) for f in frames) and not known.recognise.is_relevant(
        pick.frames["video4"][0])


def test_split_field_and_the_1ka_csv(tmp_path):
    info = write_json(tmp_path / "videodatainfo.json", videodatainfo())
    test = read_annotations([info], split="test")
    assert test.videos == ["video2", "video5"] and {s.video for s in test.queries} == {"video2", "video5"}
    with pytest.raises(BadInputError, match="hold no sentences in split 'nope'"):
        read_annotations([info], split="nope")

    csv_path = write_1ka(tmp_path / "MSRVTT_JSFUSION_test.csv")
    frames = frames_of(tmp_path)
    both = read_annotations([csv_path, info])
    assert both.videos == ["video2", "video5", "video7"]  # the collection is the 1k-A videos
    queries = make_msrvtt_queries(both, pick_frames(frames, both.videos, 3))
    by_id = {q.qid: q for q in queries}
    assert sorted(by_id) == ["msrvtt-ret0", "msrvtt-ret1", "msrvtt-ret2"]
    q = by_id["msrvtt-ret1"]
    assert q.description == sentences_of(5)[2] and q.target.startswith("video5/") and len(q.relevant) == 2
    assert list(q.captions) == [s for s in sentences_of(5) if s != q.description]  # the JSON's other sentences
    alone = make_msrvtt_queries(read_annotations([csv_path]), pick_frames(frames, both.videos, 3))
    assert all(not q.captions for q in alone)  # the CSV holds one sentence per video

    train_val = write_json(tmp_path / "train_val_videodatainfo.json", videodatainfo(5))
    test_only = videodatainfo(8)
    test_only["videos"], test_only["sentences"] = test_only["videos"][5:], test_only["sentences"][20:]
    two = read_annotations([train_val, write_json(tmp_path / "test_videodatainfo.json", test_only)])
    assert two.videos == [f"video{v}" for v in range(8)] and len(two.queries) == 32
    assert [s.qid for s in two.queries][18:22] == ["msrvtt-18", "msrvtt-19", "msrvtt-20", "msrvtt-21"]
    for s in test_only["sentences"]:  # a file whose sen_id starts again at 0: ids stay unique by video
        s["sen_id"] -= 20
    two = read_annotations([train_val, write_json(tmp_path / "test_videodatainfo.json", test_only)])
    qids = [s.qid for s in two.queries]
    assert len(set(qids)) == 32 and qids[0] == "msrvtt-video0-0" and qids[20] == "msrvtt-video5-0"


@pytest.mark.parametrize("content, msg", [
    ('[{"image": "a.jpg", "caption": "a dog"}]', "is not an MSR-VTT annotation file"),
    ('{"images": [], "annotations": []}', "is not an MSR-VTT annotation file"),
    ('{"videos": [], "sentences": [{"video_id": "video0"}]}', 'sentences[0] lacks "video_id" or "caption"'),
    ('{"sentences": [{"caption": "x", "video_id": "video0"}', "is not an MSR-VTT annotation file: not valid JSON"),
    ("image,caption\na.jpg,a dog\n", "is not an MSR-VTT annotation file"),
])
def test_files_of_another_format_are_refused(tmp_path, content, msg):
    path = tmp_path / "ann.json"
    path.write_text(content)
    with pytest.raises(BadInputError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        read_annotations([path])


# --- end to end through the CLI -----------------------------------------------------------------------------


def prepare(tmp_path: Path, per_video: int = 5, captioner: str | None = None) -> dict[str, Path]:
    frames = frames_of(tmp_path)
    info = write_json(tmp_path / "videodatainfo.json", videodatainfo())
    out = {"frames": frames, "queries": tmp_path / "run" / "queries.jsonl", "list": tmp_path / "run" / "frames.txt",
           "index": tmp_path / "run" / "index"}
    assert main(["queries", "--captions", str(info), "--frames", str(frames), "--out-image-list", str(out["list"]),
                 "--out-queries", str(out["queries"]), "--frames-per-video", str(per_video)]) == 0
    argv = ["index", "--images", str(frames), "--image-list", str(out["list"]), "--embedder", "fake:32",
            "--out", str(out["index"])]
    assert main(argv + (["--captioner", captioner] if captioner else [])) == 0
    return out


def test_queries_index_eval_end_to_end_scores_accumulated_recall(tmp_path, capsys):
    from interactive_ir.backends import make_embedder
    from interactive_ir.evaluation.metrics import accumulated_recall
    from interactive_ir.index import load_index

    paths = prepare(tmp_path)
    text = capsys.readouterr().out
    assert "8 videos, 40 frames" in text and "32 queries" in text and "indexed 40 images" in text
    listed = paths["list"].read_text().split()
    assert len(listed) == 40 and all(f.startswith("video") and f.endswith(".jpg") for f in listed)
    rows = [json.loads(ln) for ln in paths["queries"].read_text().splitlines()]
    assert len(rows) == 32 and all(len(r["relevant"]) == 4 and len(r["captions"]) == 3 for r in rows)

    out = tmp_path / "eval"
    assert main(["eval", "--index", str(paths["index"]), "--queries", str(paths["queries"]), "--preset", "zhu",
                 "--protocol", "none,rocchio", "-k", "4", "--rounds", "3", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "preset zhu" in printed and "rocchio: accumulated recall by round" in printed

    truth = {r["id"]: [r["target"], *r["relevant"]] for r in rows}
    for protocol in ("none", "rocchio"):
        metrics = json.loads((out / protocol / "metrics.json").read_text())
        records = [json.loads(ln) for ln in (out / protocol / "checkpoint.jsonl").read_text().splitlines()[1:]]
        assert len(records) == 32 and all(len(r["turns"]) == 4 for r in records)  # every turn played (zhu)
        shown = {r["qid"]: [t["shown"] for t in r["turns"]] for r in records}
        for rounds in shown.values():  # a shown frame is never shown again
            flat = [i for ids in rounds for i in ids]
            assert len(flat) == len(set(flat)) == 16
        expected = accumulated_recall(shown, truth)
        assert metrics["accumulated_recall"] == pytest.approx(expected)
        assert f"{protocol}: accumulated recall by round " + " ".join(f"{100 * x:.2f}" for x in expected) in printed

    # the single-turn Recall@20 of the relevant frames, against exact scores of the round-0 text query
    index = load_index(paths["index"])
    frames = np.asarray(index.image_vectors, np.float32)
    emb = make_embedder("fake:32")
    got = []
    for r in rows:
        scores = frames @ emb.embed_texts([r["description"]])[0]
        rel = [index.row_of[f] for f in truth[r["id"]]]
        got.append(np.mean([(scores > scores[i]).sum() + 1 <= 20 for i in rel]))
    metrics = json.loads((out / "none" / "metrics.json").read_text())
    assert metrics["relevant_recall@20"][0] == pytest.approx(float(np.mean(got)), abs=1e-6)
    # marking relevant frames pulls their video's other frames up: rocchio finds more than no interaction
    none = json.loads((out / "none" / "metrics.json").read_text())["accumulated_recall"]
    rocchio = json.loads((out / "rocchio" / "metrics.json").read_text())["accumulated_recall"]
    assert none[0] == rocchio[0] and rocchio[-1] > none[-1] + 0.1


def test_eval_reads_the_annotation_file_itself_every_indexed_frame_of_the_video_relevant(tmp_path, capsys):
    from interactive_ir.evaluation.metrics import accumulated_recall

    frames = frames_of(tmp_path, n_frames=6)
    info = write_json(tmp_path / "videodatainfo.json", videodatainfo())
    assert main(["index", "--images", str(tmp_path), "--embedder", "fake:32", "--out", str(tmp_path / "idx")]) == 0
    assert frames.exists()
    out = tmp_path / "eval"
    assert main(["eval", "--index", str(tmp_path / "idx"), "--queries", str(info), "--queries-format", "msrvtt",
                 "--preset", "zhu", "--protocol", "rocchio", "-k", "5", "--rounds", "2", "--out", str(out),
                 "--no-progress"]) == 0
    records = [json.loads(ln) for ln in (out / "rocchio" / "checkpoint.jsonl").read_text().splitlines()[1:]]
    assert len(records) == 32
    truth = {}
    for r in records:  # ids carry the images folder's prefix: frames/videoN/00000j.jpg
        video = r["target"].split("/")[1]
        truth[r["qid"]] = [f"frames/{video}/{j:06d}.jpg" for j in range(1, 7)]
        assert r["target"] == f"frames/{video}/000004.jpg" and all(len(x) == 6 for x in r["relevant_ranks"])
    metrics = json.loads((out / "rocchio" / "metrics.json").read_text())
    shown = {r["qid"]: [t["shown"] for t in r["turns"]] for r in records}
    assert metrics["accumulated_recall"] == pytest.approx(accumulated_recall(shown, truth))
    capsys.readouterr()
    assert main(["eval", "--index", str(tmp_path / "idx"), "--queries", str(info), "--queries-format", "msrvtt",
                 "--protocol", "none", "-k", "3", "--rounds", "1", "--out", str(tmp_path / "e1"), "--no-progress"]) == 0
    assert "note: 32 queries have several relevant images, and each stops once its target is shown" in \
        capsys.readouterr().out  # known-item stopping is the default; Zhu et al. plays every round

    cirr = write_json(tmp_path / "cap.rc2.val.json", [{"pairid": 1, "reference": "a", "target_hard": "b"}])
    assert main(["eval", "--index", str(tmp_path / "idx"), "--queries", str(cirr), "--queries-format", "msrvtt",
                 "--out", str(tmp_path / "e2"), "--no-progress"]) == 1
    assert "cap.rc2.val.json is not an MSR-VTT annotation file" in _one_line_error(capsys)
    other = {**videodatainfo(2), "videos": [], "sentences": [{"caption": "x", "video_id": "clip9", "sen_id": 0}]}
    assert main(["eval", "--index", str(tmp_path / "idx"), "--queries", str(write_json(tmp_path / "v.json", other)),
                 "--queries-format", "msrvtt", "--protocol", "none", "--out", str(tmp_path / "e2"), "--no-progress"]) == 1
    assert "no frame of the 1 MSR-VTT videos" in _one_line_error(capsys)
    assert not (tmp_path / "e2").exists()


@pytest.mark.parametrize("captioner", ["fake", None])
def test_reproduce_zhu_msrvtt_prints_table2_beside_the_run(tmp_path, capsys, captioner):
    from interactive_ir.commands.reproduce_cmd import ZHU_TABLE2

    paths = prepare(tmp_path, captioner=captioner)
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(paths["index"], data / "index")
    shutil.copy(paths["queries"], data / "queries.jsonl")
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["reproduce", "zhu-msrvtt", "--data", str(data), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "(Zhu et al.) Table 2, MSR-VTT frames: accumulated recall" in text
    lines = {tuple(c.strip() for c in ln.split("|")[1:3]): [c.strip() for c in ln.split("|")[3:9]]
             for ln in text.splitlines() if ln.startswith(("| Rocchio |", "| Captions Only |"))}
    assert lines[("Rocchio", "paper, CLIP")] == ["36.64", "57.53", "60.12", "60.71", "60.88", "60.92"]
    assert lines[("Captions Only", "paper, BLIP-2")] == ["36.87", "51.92", "58.98", "63.64", "66.65", "69.33"]
    for label, folder in (("Rocchio", "rocchio/rocchio"), ("Captions Only", "captions-only/feedback-expand")):
        m = json.loads((out / folder / "metrics.json").read_text())
        run = [100 * x for x in m["accumulated_recall"]]
        assert len(run) == 6 and m["settings"]["k"] == 20 and m["settings"]["exclude_shown"] is True
        assert lines[(label, "this run")] == [f"{x:.2f}" for x in run]
        (_, clip), (_, blip2) = ZHU_TABLE2[label]
        assert lines[(label, "minus CLIP")] == [f"{g - p:+.2f}" for g, p in zip(run, clip)]
        assert lines[(label, "minus BLIP-2")] == [f"{g - p:+.2f}" for g, p in zip(run, blip2)]
    m = json.loads((out / "rocchio" / "rocchio" / "metrics.json").read_text())
    single = [ln for ln in text.splitlines() if ln.startswith("| this run |")]
    assert single == ["| this run | " + " | ".join(f"{100 * m[f'relevant_recall@{k}'][0]:.2f}"
                                                   for k in (20, 40, 60, 80, 100, 120)) + " |"]
    assert "| paper, CLIP | 36.64 | 45.69 | 51.01 | 54.75 | 57.73 | 60.08 |" in text
    expand = json.loads((out / "captions-only" / "feedback-expand" / "metrics.json").read_text())
    if captioner is None:  # no caption to add: Captions Only falls back to Rocchio, and the run says so
        assert "holds no captions, so Captions Only has none to add and falls back to Rocchio" in text
        assert expand["accumulated_recall"] == m["accumulated_recall"]
    else:
        assert "holds no captions" not in text


def test_reproduce_zhu_msrvtt_refuses_queries_without_relevant_frames(tmp_path, capsys):
    paths = prepare(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(paths["index"], data / "index")
    rows = [json.loads(ln) for ln in paths["queries"].read_text().splitlines()]
    (data / "queries.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "relevant"}) + "\n"
                                                for r in rows))
    capsys.readouterr()
    assert main(["reproduce", "zhu-msrvtt", "--data", str(data), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no other relevant images" in err and "--frames FRAMES" in err
    assert not (tmp_path / "o").exists()


# --- bad input ----------------------------------------------------------------------------------------------


def _queries(tmp_path, captions, *extra):
    return main(["queries", "--captions", *map(str, captions), "--frames", str(tmp_path / "frames"),
                 "--out-image-list", str(tmp_path / "o" / "frames.txt"), "--out-queries",
                 str(tmp_path / "o" / "q.jsonl"), *extra])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_missing_annotation_file_names_what_to_download(tmp_path, capsys):
    frames_of(tmp_path, 2)
    assert _queries(tmp_path, [tmp_path / "videodatainfo.json"]) == 1
    err = _one_line_error(capsys)
    assert "MSR-VTT annotation file not found" in err and "videodatainfo.json" in err and "download" in err
    assert not (tmp_path / "o").exists()


def test_a_file_of_another_format_is_refused(tmp_path, capsys):
    frames_of(tmp_path, 2)
    other = write_json(tmp_path / "cap.rc2.val.json", [{"pairid": 1, "reference": "a", "target_hard": "b",
                                                        "caption": "c"}])
    assert _queries(tmp_path, [other]) == 1
    err = _one_line_error(capsys)
    assert "cap.rc2.val.json is not an MSR-VTT annotation file" in err and "MSRVTT_JSFUSION_test.csv" in err
    assert not (tmp_path / "o").exists()


def test_a_video_without_frames_is_refused_unless_skipped(tmp_path, capsys):
    info = write_json(tmp_path / "videodatainfo.json", videodatainfo())
    frames_of(tmp_path, 8, skip=("video6",))
    shutil.rmtree(tmp_path / "frames" / "video3")
    assert _queries(tmp_path, [info]) == 1
    err = _one_line_error(capsys)
    assert "2 of 8 videos have no frames" in err and "video3/" in err and "video6/" in err
    assert "scripts/msrvtt_frames.sh" in err and "--skip-videos-without-frames" in err
    assert not (tmp_path / "o").exists()
    assert _queries(tmp_path, [info], "--skip-videos-without-frames") == 0
    assert "left out 2 videos without frames" in capsys.readouterr().out
    rows = [json.loads(ln) for ln in (tmp_path / "o" / "q.jsonl").read_text().splitlines()]
    assert len(rows) == 24 and not any(r["target"].startswith(("video3/", "video6/")) for r in rows)
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["frames.txt", "q.jsonl"]  # no temporary left


def test_missing_frames_folder_and_flags_that_do_not_go_together(tmp_path, capsys):
    info = write_json(tmp_path / "videodatainfo.json", videodatainfo(2))
    assert _queries(tmp_path, [info]) == 1
    assert "frames folder not found" in _one_line_error(capsys)
    frames_of(tmp_path, 2)
    # an MSR-VTT file given without --frames: the caption hold-out would make no sense of it
    assert main(["queries", "--captions", str(info), "--out-captions", str(tmp_path / "c.jsonl"),
                 "--out-queries", str(tmp_path / "q.jsonl")]) == 1
    assert "is an MSR-VTT annotation file: add --frames FRAMES" in _one_line_error(capsys)
    assert main(["queries", "--captions", str(info), "--frames", str(tmp_path / "frames"),
                 "--out-queries", str(tmp_path / "q.jsonl")]) == 1
    assert "--out-image-list" in _one_line_error(capsys)
    with pytest.raises(SystemExit) as e:  # refused by the parser (issue 40: ranges on every numeric flag)
        _queries(tmp_path, [info], "--frames-per-video", "0")
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "--frames-per-video: 0 is out of range" in err[0], err
    assert not (tmp_path / "q.jsonl").exists() and not (tmp_path / "o").exists()


def test_a_short_video_keeps_all_its_frames(tmp_path, capsys):
    info = write_json(tmp_path / "videodatainfo.json", videodatainfo(2))
    frames_of(tmp_path, 2, n_frames=3)
    assert _queries(tmp_path, [info]) == 0
    assert "2 videos have fewer than 10 frames (all kept)" in capsys.readouterr().out
    assert len((tmp_path / "o" / "frames.txt").read_text().split()) == 6


# --- frame extraction ---------------------------------------------------------------------------------------

FAKE_FFMPEG = """#!/usr/bin/env bash
# writes 3 frames to the output pattern (the last argument); fails on a clip named bad.mp4
for a in "$@"; do out="$a"; done
case "$*" in *bad.mp4*) exit 1;; esac
for i in 1 2 3; do printf 'jpg' > "$(printf "$out" "$i")"; done
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_frame_script_writes_frames_per_video_and_resumes(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").write_text(FAKE_FFMPEG)
    (bin_dir / "ffmpeg").chmod(0o755)
    videos = tmp_path / "videos"
    videos.mkdir()
    for v in ("video0", "video1"):
        (videos / f"{v}.mp4").write_bytes(b"\0")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    script = str(ROOT / "scripts" / "msrvtt_frames.sh")
    run = subprocess.run(["bash", script, str(videos), str(tmp_path / "frames")], env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.relative_to(tmp_path / "frames").as_posix() for p in (tmp_path / "frames").rglob("*")
                  if p.is_file()) == [f"video{v}/00000{i}.jpg" for v in (0, 1) for i in (1, 2, 3)]
    again = subprocess.run(["bash", script, str(videos), str(tmp_path / "frames")], env=env, capture_output=True,
                           text=True)
    assert again.returncode == 0 and "extracted frames of 0 videos" in again.stdout and "2 already there" in again.stdout
    (videos / "bad.mp4").write_bytes(b"\0")
    bad = subprocess.run(["bash", script, str(videos), str(tmp_path / "frames")], env=env, capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "ffmpeg failed on" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == ["video0", "video1"]  # nothing half-written
    missing = subprocess.run(["bash", script, str(tmp_path / "nope"), str(tmp_path / "f2")], env=env,
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "videos folder not found" in missing.stderr
