"""`python -m interactive_ir metrics RANKS.json|BUNDLE_DIR`: every retrieval metric, as one JSON object on stdout.

Given a run bundle's folder (`eval --bundle`, `study export --bundle`), each of its runs is re-scored from its
records (see interactive_ir.evaluation.bundle), with the headline metrics eval reports.

RANKS.json maps each query id to its target image's 1-based rank at each round, round 0 first
(null = not retrieved), e.g. ``{"q1": [20, 3, 1], "q2": [null, 8]}``. Queries that stopped early keep
their last rank for the remaining rounds. See interactive_ir.evaluation.metrics for the definitions.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from interactive_ir.commands.argtypes import plain_path, whole
from interactive_ir.errors import BadInputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ranks_file", metavar="RANKS.json", type=plain_path,
                   help="JSON object: query id -> list of target ranks by round; or a run bundle folder "
                        "(eval --bundle, study export --bundle): each of its runs re-scored from its records")
    p.add_argument("--k", default="1,5,10", help="comma-separated cut-offs for Hits/Recall/MRR/NDCG (default 1,5,10)")
    p.add_argument(
        "--n-images",
        type=whole(1),
        default=None,
        help="index size: enables the rank percentile and counts a null rank as N+1 instead of infinity",
    )
    p.add_argument(
        "--rounds",
        type=whole(0, 100_000),
        default=None,
        help="the round budget T: queries that stopped early are scored over rounds 0..T (default: the longest query)",
    )


def parse_ks(text: str) -> tuple[int, ...]:
    """'1,5,10' -> (1, 5, 10); anything else raises BadInputError."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        ks = tuple(int(p) for p in parts)
    except ValueError as e:
        raise BadInputError(f"--k must be comma-separated positive integers like 1,5,10, got {text!r}") from e
    if not ks or min(ks) < 1:
        raise BadInputError(f"--k must be comma-separated positive integers like 1,5,10, got {text!r}")
    return ks


def load_ranks(path: Path) -> dict:
    """Read RANKS.json; file and JSON problems become BadInputError (ranks are checked by the metrics)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise BadInputError(f"ranks file not found: {path}") from e
    except UnicodeDecodeError as e:
        raise BadInputError(f"{path} is not a results file (not UTF-8 text): give a RANKS.json or a run bundle's "
                            "folder") from e
    except OSError as e:
        raise BadInputError(f"cannot read ranks file {path}: {e.strerror or type(e).__name__}") from e
    try:
        data = json.loads(text)
    except RecursionError as e:
        raise BadInputError(f"{path} is not a results file (nested too deeply)") from e
    except json.JSONDecodeError as e:
        raise BadInputError(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from e
    if not isinstance(data, dict):
        raise BadInputError(
            f"{path} must hold a JSON object mapping query id -> list of ranks by round, got a {type(data).__name__}"
        )
    return data


def run(args: argparse.Namespace) -> int:
    from interactive_ir.evaluation.metrics import compute_all

    ks = parse_ks(args.k)
    path = Path(args.ranks_file)
    if path.is_dir():  # a run bundle: every run re-scored from its records
        from interactive_ir.evaluation.bundle import rescore

        print(json.dumps(rescore(path, ks), indent=2, default=str))
        return 0
    ranks = load_ranks(path)
    try:
        result = compute_all(ranks, ks=ks, n_images=args.n_images, rounds=args.rounds)
    except BadInputError as e:
        raise BadInputError(f"{path}: {e}") from e
    print(json.dumps(result, indent=2))
    return 0
