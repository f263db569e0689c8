"""MSR-VTT as text-to-frame retrieval with several relevant images per query (Zhu et al. 2024).

Paper 001 (section 4.1) turns MSR-VTT into an image retrieval benchmark: one keyframe per second of each
clip, 10 of them picked at random as the clip's ground truth; each of the clip's ~20 sentences is a query
whose relevant images are those 10 frames; the collection is every clip's picked frames (the whole clip
set: 10,000 clips, 200,000 queries, 100,000 images). It scores accumulated recall over turns 0-5 of 20
images each, images seen before not shown again (`eval --preset zhu`).

Files read, as released:

| file | form | fields read |
|---|---|---|
| `videodatainfo.json` (2016, 10,000 clips), `train_val_videodatainfo.json` and `test_videodatainfo.json` (2017), CLIP4Clip's `MSRVTT_data.json` | JSON object | `videos[].video_id`, `videos[].split`, `sentences[].video_id`, `sentences[].caption`, `sentences[].sen_id` |
| `MSRVTT_JSFUSION_test.csv` (the "1k-A" test split) | CSV | `key`, `video_id`, `sentence` |

Several files may be given (train_val + test gives the whole clip set). With the 1k-A CSV the queries are
its 1,000 (video, sentence) rows and the collection its 1,000 videos' frames; the JSON files, when given
too, supply each video's other sentences as what the simulated user knows.

Frames are extracted by the user into ``FRAMES/<video_id>/<name>.jpg`` (jpg, jpeg, png or webp; names
sorting in time order, as ffmpeg's ``%06d.jpg``), e.g. by ``scripts/msrvtt_frames.sh VIDEOS FRAMES`` (one
frame per second). Of each video's frames, `per_video` are picked by a generator seeded with (seed, video),
so a video's pick depends on nothing else.

A query's `target` is the middle one of its video's picked frames (what a VLM user sees, and the frame of
the known-item metrics), `relevant` the other picked frames, `captions` the video's other sentences (never
its id, which only names the frames), so every picked frame counts for accumulated recall and mAP@K.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.query_records import Query

log = logging.getLogger(__name__)

FRAME_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
FETCH = ("download MSR-VTT's annotations (videodatainfo.json, or train_val_videodatainfo.json and "
         "test_videodatainfo.json; MSRVTT_JSFUSION_test.csv for the 1k-A split)")
EXTRACT = "extract them with scripts/msrvtt_frames.sh VIDEOS FRAMES (ffmpeg, one frame per second)"


@dataclass(frozen=True)
class Sentence:
    """One MSR-VTT sentence, as a query."""

    qid: str  # "msrvtt-<sen_id>" (JSON) or "msrvtt-<key>" (1k-A CSV)
    video: str  # e.g. "video7010"
    text: str  # the sentence


@dataclass(frozen=True)
class Annotations:
    """What the annotation files hold."""

    videos: list[str]  # the collection's videos, in file order
    queries: list[Sentence]  # one per sentence (JSON) or per 1k-A row (CSV)
    sentences: dict[str, list[str]] = field(default_factory=dict)  # video -> all its JSON sentences


@dataclass(frozen=True)
class FramePick:
    """Which frames stand for each video."""

    frames: dict[str, list[str]]  # video -> picked frames, paths relative to the frames folder, in time order
    without: list[str]  # videos with no frame under the folder (left out)
    short: list[str]  # videos with fewer frames than asked for (all of theirs kept)


def _sniff(path: Path) -> str:
    """'json' or 'csv' by content (a JSON object or a header naming video_id and sentence), '' otherwise."""
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        head = f.read(4096)
    text = head.lstrip()
    if text.startswith("{"):
        return "json"
    first = head.splitlines()[0] if head else ""
    cols = {c.strip().strip('"').lower() for c in first.split(",")}
    return "csv" if {"video_id", "sentence"} <= cols else ""


def looks_like_msrvtt(path: Path) -> bool:
    """True for a 1k-A CSV or a JSON whose opening names MSR-VTT's video_id (for a helpful error elsewhere)."""
    path = Path(path)
    if not path.is_file():
        return False
    kind = _sniff(path)
    if kind == "csv":
        return True
    if kind == "json":
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            head = f.read(1 << 16)
        return '"video_id"' in head and ('"sentences"' in head or '"videos"' in head)
    return False


def _read_json(path: Path, split: str | None) -> tuple[list[str], list[Sentence], bool]:
    """(videos, sentences, whether a split field was seen) of a videodatainfo-style JSON."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise BadInputError(f"{path} is not an MSR-VTT annotation file: not valid JSON ({e.msg} at line {e.lineno}); "
                            f"{FETCH}") from e
    sents = data.get("sentences") if isinstance(data, dict) else None
    if not isinstance(sents, list) or not sents:
        raise BadInputError(f'{path} is not an MSR-VTT annotation file: expected {{"videos": [...], "sentences": '
                            f'[{{"video_id", "caption", "sen_id"}}, ...]}}; {FETCH}')
    videos_raw = data.get("videos") or []
    if not isinstance(videos_raw, list):
        raise BadInputError(f'{path}: "videos" must be a list of {{"video_id", "split"}} objects (MSR-VTT)')
    split_of: dict[str, str] = {}
    videos: list[str] = []
    for i, v in enumerate(videos_raw):
        if not isinstance(v, dict) or not isinstance(v.get("video_id"), str) or not v["video_id"].strip():
            raise BadInputError(f'{path}: videos[{i}] lacks "video_id": this is not an MSR-VTT annotation file')
        vid = v["video_id"].strip()
        videos.append(vid)
        if "split" in v:
            split_of[vid] = str(v["split"])
    out: list[Sentence] = []
    for i, s in enumerate(sents):
        if not isinstance(s, dict) or not isinstance(s.get("video_id"), str) or not isinstance(s.get("caption"), str):
            raise BadInputError(f'{path}: sentences[{i}] lacks "video_id" or "caption": this is not an MSR-VTT '
                                f"annotation file; {FETCH}")
        vid, text = s["video_id"].strip(), s["caption"].strip()
        if not text:
            continue
        sid = s.get("sen_id", f"{vid}-{i}")
        out.append(Sentence(f"msrvtt-{sid}", vid, text))
    known = set(videos)
    videos += list(dict.fromkeys(s.video for s in out if s.video not in known))  # a file with sentences only
    if split is not None:
        videos = [v for v in videos if split_of.get(v) == split]
        keep = set(videos)
        out = [s for s in out if s.video in keep]
    return videos, out, bool(split_of)


def _read_csv(path: Path) -> list[Sentence]:
    """The 1k-A rows (key, video_id, sentence) of MSRVTT_JSFUSION_test.csv."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    out = []
    for n, r in enumerate(rows, 2):
        vid, text = (r.get("video_id") or "").strip(), (r.get("sentence") or "").strip()
        if not vid or not text:
            raise BadInputError(f"{path}:{n}: needs video_id and sentence (the 1k-A CSV: key,vid_key,video_id,sentence)")
        out.append(Sentence(f"msrvtt-{(r.get('key') or '').strip() or f'row{n - 1}'}", vid, text))
    if not out:
        raise BadInputError(f"{path} holds no rows: expected the 1k-A CSV (key,vid_key,video_id,sentence)")
    return out


def read_annotations(paths: Sequence[Path], split: str | None = None) -> Annotations:
    """Read MSR-VTT annotation files (see the module docstring); `split` keeps the videos of one JSON split
    ("train", "validate", "test")."""
    json_videos: list[str] = []
    json_sents: list[Sentence] = []
    csv_rows: list[Sentence] = []
    seen_split = False
    for path in map(Path, paths):
        if not path.is_file():
            raise BadInputError(f"MSR-VTT annotation file not found: {path} ({FETCH})")
        kind = _sniff(path)
        if kind == "json":
            videos, sents, has_split = _read_json(path, split)
            json_videos += videos
            json_sents += sents
            seen_split = seen_split or has_split
        elif kind == "csv":
            csv_rows += _read_csv(path)
        else:
            raise BadInputError(f"{path} is not an MSR-VTT annotation file (neither a videodatainfo JSON nor the "
                                f"1k-A CSV key,vid_key,video_id,sentence): {FETCH}")
    if split is not None and json_videos == [] and not seen_split:
        raise BadInputError(f"--split {split} needs a videodatainfo JSON whose videos carry a \"split\" field; "
                            "the files given have none")
    if len({s.qid for s in json_sents}) < len(json_sents):  # sen_id counted per file (train_val + test): add the video
        json_sents = [Sentence(f"msrvtt-{s.video}-{s.qid.removeprefix('msrvtt-')}", s.video, s.text) for s in json_sents]
    sentences: dict[str, list[str]] = {}
    for s in json_sents:
        sentences.setdefault(s.video, []).append(s.text)
    if csv_rows:
        videos = list(dict.fromkeys(s.video for s in csv_rows))
        return Annotations(videos, csv_rows, sentences)
    videos = list(dict.fromkeys(json_videos))
    if not json_sents:
        raise BadInputError(f"{', '.join(map(str, paths))} hold no sentences"
                            + (f" in split {split!r}" if split else ""))
    return Annotations(videos, json_sents, sentences)


def pick_frames(folder: Path, videos: Sequence[str], per_video: int = 10, seed: int = 0) -> FramePick:
    """Up to `per_video` frames of each video under `folder/<video>/`, a seeded random pick in time order."""
    folder = Path(folder)
    if per_video < 1:
        raise BadInputError(f"--frames-per-video must be at least 1, got {per_video}")
    if not folder.is_dir():
        raise BadInputError(f"frames folder not found: {folder}; {EXTRACT}")
    frames: dict[str, list[str]] = {}
    without, short = [], []
    for vid in videos:
        sub = folder / vid
        try:
            names = sorted(e.name for e in os.scandir(sub)
                           if e.is_file() and e.name.lower().endswith(FRAME_SUFFIXES) and not e.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        if not names:
            without.append(vid)
            continue
        if len(names) < per_video:
            short.append(vid)
            picked = names
        else:
            picked = sorted(random.Random(f"{seed}:{vid}").sample(names, per_video))
        frames[vid] = [f"{vid}/{n}" for n in picked]
    return FramePick(frames, without, short)


def frames_in_index(ids: Sequence[str], videos: Sequence[str]) -> FramePick:
    """Every indexed frame of each video (an id's parent folder names its video), in time order."""
    wanted = set(videos)
    found: dict[str, list[str]] = {}
    for i in ids:
        video = PurePosixPath(i).parent.name
        if video in wanted:
            found.setdefault(video, []).append(i)
    frames = {v: sorted(found[v]) for v in videos if v in found}
    return FramePick(frames, [v for v in videos if v not in found], [])


def queries_from_index(ann: Annotations, ids: Sequence[str], source: Path, index: Path, seed: int = 0) -> list[Query]:
    """`eval --queries-format msrvtt`: each sentence a query whose relevant images are all its video's frames in
    the index (those picked by `queries --frames`, or every frame indexed)."""
    pick = frames_in_index(ids, ann.videos)
    if not pick.frames:
        raise BadInputError(f"no frame of the {len(ann.videos)} MSR-VTT videos of {source} is in the index {index} "
                            "(ids <video_id>/<frame>.jpg): index the frames with index --images FRAMES [--image-list "
                            f"FILE]; {EXTRACT}")
    if pick.without:
        log.warning("%d of %d MSR-VTT videos have no frame in %s (e.g. %s): their sentences are left out",
                    len(pick.without), len(ann.videos), index, pick.without[0])
    return make_msrvtt_queries(ann, pick, seed=seed)


def make_msrvtt_queries(ann: Annotations, pick: FramePick, limit: int | None = None, seed: int = 0) -> list[Query]:
    """One query per sentence of a video with frames, in an order shuffled by `seed` (`limit` keeps the first N)."""
    if limit is not None and limit < 1:
        raise BadInputError(f"--limit must be at least 1, got {limit}")
    out = []
    for s in ann.queries:
        frames = pick.frames.get(s.video)
        if not frames:
            continue
        target = frames[len(frames) // 2]
        others = tuple(t for t in dict.fromkeys(ann.sentences.get(s.video, ())) if t != s.text)
        out.append(Query(qid=s.qid, target=target, description=s.text, captions=others,
                         relevant=tuple(f for f in frames if f != target),
                         meta={"benchmark": "msrvtt", "video": s.video}))
    random.Random(seed).shuffle(out)
    return out[:limit] if limit is not None else out


def _write_atomic(pairs: Sequence[tuple[Path, str]]) -> None:
    """Write every file to a temporary name first, then move them all into place (nothing half-written)."""
    tmps = []
    try:
        for path, text in pairs:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmps.append(tmp)
    except OSError:
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
        raise
    for (path, _), tmp in zip(pairs, tmps):
        tmp.replace(path)


def write_outputs(queries_path: Path, list_path: Path, queries: Sequence[Query], pick: FramePick) -> None:
    """The queries JSONL (`eval --queries`) and the frame list (`index --image-list`), written together."""
    q_lines = [json.dumps({**q.to_dict(), "video": q.meta.get("video", "")}, ensure_ascii=False) for q in queries]
    frames = [f for v in pick.frames.values() for f in v]
    _write_atomic([(Path(queries_path), "\n".join(q_lines) + "\n"), (Path(list_path), "\n".join(frames) + "\n")])
