"""The photo index's build, run by the app as a child process at low priority (`photo_build.PhotoBuild`), whose
entry (`ui.photos.child`: the app's logging) calls `main` here:

    python -m interactive_ir.ui.photos.child --out DIR --embedder SPEC --dataset USER/NAME --limit N ...

It streams the dataset's first N rows into an index at DIR (`hub_index.build_from_dataset`: staged beside
DIR, renamed into place, nothing left behind on failure) and says how far it is on stdout, one line per
step, for the app to show on the page:

    iir-photos phase download          the dataset's files are being downloaded and unpacked
    iir-photos progress 1200 2880      photos embedded so far, of all
    iir-photos done 2880               the index is complete at DIR
    iir-photos error <one line>        it failed (exit status 1); nothing is at DIR

Its log goes to stderr. It never touches the index the app serves: the app renames DIR into place.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

PREFIX = "iir-photos"


def say(*words) -> None:
    print(PREFIX, *words, flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Build the photo demo's index (run by the app in the background).")
    p.add_argument("--out", type=Path, required=True, help="the index folder to create (must not exist)")
    p.add_argument("--embedder", required=True, help="the embedder spec of the app's index")
    p.add_argument("--dataset", required=True, help="Hub dataset id USER/NAME (or a local folder of Parquet files)")
    p.add_argument("--config", default="")
    p.add_argument("--split", default="train")
    p.add_argument("--revision", default="")
    p.add_argument("--image-column", default="image")
    p.add_argument("--caption-column", default="")
    p.add_argument("--id-column", default="")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--nice", type=int, default=0, help="raise this process's niceness first (0-19)")
    return p.parse_args(argv)


def checked_columns(src):
    """`src` with its id column left out when the dataset has none (content hashes name the photos then); a
    missing caption column fails here, naming the columns there are. Reads the first row only (its file stays
    in the Hub cache for the build)."""
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.hub_dataset import iter_rows

    rows = iter_rows(replace(src, caption_column="", id_column="", limit=0))
    try:
        first = next(rows, None)
    finally:
        rows.close()
    if first is None:
        raise BadInputError(f"{src.name} has no rows in its {src.split!r} split")
    names = list(first[0])
    if src.caption_column and src.caption_column not in names:
        raise BadInputError(f"{src.name} has no caption column {src.caption_column!r}: its columns are "
                            f"{', '.join(names)}; set IIR_PHOTO_CAPTION_COLUMN")
    if src.id_column and src.id_column not in names:
        logging.getLogger(__name__).warning("%s has no id column %r: photos are named by their content hash",
                                            src.name, src.id_column)
        return replace(src, id_column="")
    return src


def build(args: argparse.Namespace) -> int:
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.hub_dataset import DatasetSource
    from interactive_ir.index.hub_index import build_from_dataset

    src = DatasetSource(args.dataset, config=args.config, split=args.split, image_column=args.image_column,
                        caption_column=args.caption_column, id_column=args.id_column, limit=args.limit,
                        revision=args.revision)
    embedder = make_embedder(args.embedder, show_progress=False)
    say("phase", "download")
    src = checked_columns(src)
    last = {"said": -1}

    def progress(done: int, total: int, _msg: str = "") -> None:
        if done != last["said"]:
            last["said"] = done
            say("progress", done, total)

    report, stage = build_from_dataset(src, args.out, embedder, progress=progress)
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.score_profile import store_profile

    store_profile(Retriever(load_index(args.out), embedder))  # the page's "no close match" note, as for the clipart
    skipped = len(stage.skipped) + len(report.skipped)
    logging.getLogger(__name__).info("indexed %d photos from %d rows of %s (%d skipped)", report.count, stage.rows,
                                     src.name, skipped)
    say("done", report.count)
    return 0


def die_with_parent() -> None:
    """Linux: stop when the app stops, even when it is killed (its half-built folder is removed on its next
    start, and no orphan keeps writing into the folder a new start builds in)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the app's atexit stops it on a normal exit
        pass


def main(argv=None, setup_logging: Callable[[], None] | None = None) -> int:
    """The child process: stop with the app, lower its priority, `setup_logging` (the app's: `ui.serving.logs`),
    build; 0 when the index is complete, 1 with an `error` line when it failed."""
    from interactive_ir.errors import IIRError

    args = parse_args(argv)
    die_with_parent()
    if args.nice > 0:
        os.nice(args.nice)  # the app's searches go first; its own threads keep their priority
    if setup_logging is not None:
        setup_logging()
    try:
        return build(args)
    except (IIRError, OSError, ValueError) as e:  # one line for the app; the details stay in this log
        logging.getLogger(__name__).debug("photo build failed", exc_info=True)
        say("error", " ".join(str(e).split())[:400] or e.__class__.__name__)
        return 1
