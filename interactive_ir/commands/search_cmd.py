"""`python -m interactive_ir search --index DIR --text "..." [--where "date:2019.. tag:family"] [--image PATH]
[-k 10] [--json]`"""

from __future__ import annotations

import argparse
import json

from interactive_ir.commands.argtypes import number, plain_path, whole
from interactive_ir.config import DEFAULT_K


def add_arguments(p: argparse.ArgumentParser) -> None:
    from interactive_ir.assembly.specs import DEFAULT_LLM_HELP, NO_MODEL_HELP
    from interactive_ir.modes import registry

    p.add_argument("--index", required=True, type=plain_path, help="index folder, or hf://USER/NAME[@REVISION] (a Hub index)")
    p.add_argument("--text", help='text query in the search language: words, -NOT terms, "exact phrases", '
                   "field:value filters (date:2019..2021 folder:trips camera:canon tag:family); with --image: "
                   "the relative caption")
    p.add_argument("--where", default="", help="structured filters only, e.g. 'date:2019..2021 camera:canon "
                   "-tag:work' (fields: date, folder, camera, orientation, file, and your metadata file's)")
    p.add_argument("--image", help="query image path (alone: image->image; with --text: composed search)")
    p.add_argument("-k", type=whole(1, 10_000), default=DEFAULT_K, help=f"number of results (default {DEFAULT_K})")
    p.add_argument("--tau", type=number(0, 1), default=None, help="weight of text->caption similarity (default 0.15; 1 on a caption index)")
    p.add_argument("--method", choices=registry.method_names("composed"), default=None,
                   help="composed search method with --image and --text (default: imagescope with --llm, else compose)")
    p.add_argument("--llm", default=None, help="LLM spec for the imagescope method (given: imagescope is the "
                   f"default method; not given, --method imagescope takes the app's default: {DEFAULT_LLM_HELP}; "
                   f"{NO_MODEL_HELP}: no LLM)")
    p.add_argument("--vlm", default=None, help="VLM spec re-ranking composed results, ImageScope stages 2-3 "
                   f"(default: IIR_VLM or none; {NO_MODEL_HELP}: none), e.g. openai-vision:gpt-4o-mini")
    p.add_argument("--captioner", default=None, help="captioner spec for a reference image without a stored "
                   f"caption (default: IIR_CAPTIONER or none; {NO_MODEL_HELP}: none)")
    p.add_argument("--embedder", default=None, help="embedder spec (default: the one in the index manifest)")
    p.add_argument("--json", action="store_true", help="print a JSON list of hits (id, path, score, caption)")


def run(args: argparse.Namespace) -> int:
    from interactive_ir.errors import BadInputError

    if args.text is None and args.image is None:
        raise BadInputError("give --text, --image, or both")
    if args.k < 1:
        raise BadInputError("-k must be at least 1")
    from interactive_ir.assembly.indexes import open_retriever

    retriever = open_retriever(args.index, args.embedder, args.k, args.tau)
    if args.image and args.text is not None:
        from interactive_ir.commands import composed_search

        hits = composed_search.run_composed(retriever, args.image, args.text, args.method, args.llm, args.k,
                                            vlm_spec=args.vlm, captioner_spec=args.captioner)
    elif args.image:
        hits = retriever.search_image(args.image, args.k, where=args.where)
    else:
        hits = retriever.search_query(args.text, args.k, where=args.where, tau=args.tau)
    if args.json:
        print(json.dumps([{"id": h.id, "path": h.path, "score": round(h.score, 6), "caption": h.caption}
                          | ({"why": h.why} if h.why else {}) for h in hits], ensure_ascii=False, indent=1))
    else:
        for rank, h in enumerate(hits, 1):
            print(f"{rank:3d}  {h.score:.4f}  {h.id}  {h.caption}")
            for reason in h.why:
                print(f"       why: {reason}")
    return 0
