"""`python -m interactive_ir index --images DIR --out indices/NAME [--captions FILE] ...`"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from interactive_ir.config import DEFAULT_EMBEDDER

log = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--images", required=True, type=Path, help="folder of images (searched recursively)")
    p.add_argument("--out", required=True, type=Path, help="index folder to create or update, e.g. indices/mine")
    p.add_argument("--captions", type=Path, help="captions file: JSONL, COCO captions JSON, or CSV/TSV image,caption")
    p.add_argument("--captioner", help="caption uncaptioned images with this captioner spec (e.g. hf:Salesforce/blip-image-captioning-base)")
    p.add_argument("--embedder", default=None, help=f"embedder spec (default: IIR_EMBEDDER or {DEFAULT_EMBEDDER})")
    p.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    p.add_argument("--workers", type=int, default=2, help="decoding threads overlapped with encoding (default 2)")
    p.add_argument("--rebuild", action="store_true", help="embed everything again, replacing an existing index")
    p.add_argument("--skip-missing-captions", action="store_true", help="ignore captions naming images not in the folder")


def run(args: argparse.Namespace) -> int:
    import os

    from interactive_ir.backends import make_captioner, make_embedder
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.builder import BuildConfig, build_index

    if args.batch_size < 1:
        raise BadInputError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.workers < 1:
        raise BadInputError(f"--workers must be at least 1 (decoding threads), got {args.workers}: "
                            "use --workers 2, or 1 on a small machine")
    embedder = make_embedder(args.embedder or os.environ.get("IIR_EMBEDDER") or DEFAULT_EMBEDDER,
                             batch_size=args.batch_size)
    captioner = make_captioner(args.captioner) if args.captioner else None
    cfg = BuildConfig(images=args.images, out=args.out, captions=args.captions, batch_size=args.batch_size,
                      workers=args.workers, rebuild=args.rebuild, skip_missing_captions=args.skip_missing_captions)
    report = build_index(cfg, embedder, captioner)
    print(f"indexed {report.count} images into {report.out} ({report.embedded} embedded, {report.reused} reused, "
          f"{len(report.skipped)} skipped) at {report.images_per_second:.1f} images/s")
    for rel, why in report.skipped[:20]:
        print(f"  skipped {rel}: {why}")
    return 0
