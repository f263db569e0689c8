"""`python -m interactive_ir queries --captions FILE --out-captions INDEX_CAPTIONS.jsonl --out-queries QUERIES.jsonl`

Holds captions out for a caption-space benchmark: per image, one caption goes to the index
(INDEX_CAPTIONS.jsonl, for `index --captions`), one becomes the simulated user's first description,
and the rest are what the simulated user knows (QUERIES.jsonl, for `eval --queries`).

`queries --captions videodatainfo.json [MORE ...] --frames FRAMES --out-image-list FRAMES.txt --out-queries Q.jsonl`
makes MSR-VTT's text-to-frame benchmark (Zhu et al., `interactive_ir.evaluation.datasets.msrvtt`): 10 frames picked per
video (FRAMES.txt, for `index --images FRAMES --image-list`), one query per sentence whose relevant images
are its video's picked frames, the video's other sentences as what the simulated user knows.
"""

from __future__ import annotations

import argparse

from interactive_ir.commands.argtypes import plain_path, whole


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--captions", required=True, type=plain_path, nargs="+",
                   help="captions file: JSONL {image, captions[, split]}, COCO captions JSON, Karpathy split JSON, or "
                        "CSV/TSV; with --frames: MSR-VTT's videodatainfo JSON(s) and/or the 1k-A CSV")
    p.add_argument("--out-captions", type=plain_path, help="where to write the index's captions (JSONL)")
    p.add_argument("--out-queries", required=True, type=plain_path, help="where to write the queries (JSONL)")
    p.add_argument("--split", default=None, help='keep only rows whose "split" field equals this (e.g. dev)')
    p.add_argument("--limit", type=whole(1), default=None,
                   help="write at most N queries, a seeded random sample (the index keeps every image)")
    p.add_argument("--seed", type=whole(0, 2**32 - 1), default=0, help="seed of the caption hold-out and query order (default 0)")
    p.add_argument("--frames", type=plain_path, default=None,
                   help="MSR-VTT: folder of extracted frames, FRAMES/<video_id>/000001.jpg ... "
                        "(scripts/msrvtt_frames.sh); --captions then names the MSR-VTT annotation files")
    p.add_argument("--out-image-list", type=plain_path, default=None,
                   help="MSR-VTT: where to write the picked frames, one per line (for index --image-list)")
    p.add_argument("--frames-per-video", type=whole(1, 10_000), default=10,
                   help="MSR-VTT: frames picked per video, the video's relevant images (default 10, Zhu et al.)")
    p.add_argument("--skip-videos-without-frames", action="store_true",
                   help="MSR-VTT: leave out videos with no frames under --frames (default: refuse)")


def run(args: argparse.Namespace) -> int:
    from interactive_ir.errors import BadInputError
    from interactive_ir.evaluation.datasets.msrvtt import looks_like_msrvtt
    from interactive_ir.evaluation.queries import make_queries, read_caption_rows, write_index_captions, write_queries

    if args.frames is not None or args.out_image_list is not None:
        return _msrvtt(args)
    if len(args.captions) > 1:
        raise BadInputError("several --captions files go with --frames (MSR-VTT's annotation files); "
                            "give one captions file")
    (captions,) = args.captions
    if looks_like_msrvtt(captions):
        raise BadInputError(f"{captions} is an MSR-VTT annotation file: add --frames FRAMES (frames extracted per "
                            "video) and --out-image-list FILE")
    if args.out_captions is None:
        raise BadInputError("--out-captions is required: where to write the index's captions (JSONL)")
    rows = read_caption_rows(captions, args.split)
    held = make_queries(rows, limit=args.limit, seed=args.seed)
    write_index_captions(args.out_captions, held.index_captions)
    write_queries(args.out_queries, held.queries)
    print(f"{len(held.index_captions)} images -> {args.out_captions} (one caption each); "
          f"{len(held.queries)} queries -> {args.out_queries}"
          + (f"; {len(held.skipped)} images with fewer than 2 captions have no query" if held.skipped else ""))
    return 0


def _msrvtt(args: argparse.Namespace) -> int:
    from interactive_ir.errors import BadInputError
    from interactive_ir.evaluation.datasets.msrvtt import (
        EXTRACT,
        make_msrvtt_queries,
        pick_frames,
        read_annotations,
        write_outputs,
    )

    if args.frames is None or args.out_image_list is None:
        raise BadInputError("MSR-VTT needs both --frames FRAMES (frames extracted per video) and --out-image-list "
                            "FILE (where to write the picked frames)")
    if args.out_captions is not None:
        raise BadInputError("--out-captions does not apply to MSR-VTT: its index holds frames (build it with "
                            "index --images FRAMES --image-list FILE, with --captioner for caption feedback)")
    ann = read_annotations(args.captions, args.split)
    pick = pick_frames(args.frames, ann.videos, args.frames_per_video, args.seed)
    if pick.without and not args.skip_videos_without_frames:
        some = ", ".join(f"{args.frames / v}/" for v in pick.without[:3])
        raise BadInputError(f"{len(pick.without)} of {len(ann.videos)} videos have no frames ({some}"
                            f"{' and more' if len(pick.without) > 3 else ''}): {EXTRACT}, or pass "
                            "--skip-videos-without-frames")
    if not pick.frames:
        raise BadInputError(f"no video of the annotation files has frames under {args.frames}: {EXTRACT}")
    queries = make_msrvtt_queries(ann, pick, args.limit, args.seed)
    write_outputs(args.out_queries, args.out_image_list, queries, pick)
    n_frames = sum(len(v) for v in pick.frames.values())
    no_knowledge = sum(1 for q in queries if not q.captions)
    print(f"{len(pick.frames)} videos, {n_frames} frames -> {args.out_image_list}; {len(queries)} queries with "
          f"{n_frames / len(pick.frames):.1f} relevant frames each on average -> {args.out_queries}"
          + (f"; left out {len(pick.without)} videos without frames" if pick.without else "")
          + (f"; {len(pick.short)} videos have fewer than {args.frames_per_video} frames (all kept)"
             if pick.short else ""))
    if no_knowledge:
        print(f"note: {no_knowledge} queries have no other sentence of their video (give the videodatainfo JSON "
              "beside the 1k-A CSV): their simulated user knows only the query")
    print(f"next: python -m interactive_ir index --images {args.frames} --image-list {args.out_image_list} "
          "--embedder SPEC [--captioner SPEC] --out INDEX; then eval --index INDEX --queries "
          f"{args.out_queries} --preset zhu (accumulated recall, Zhu et al.)")
    return 0
