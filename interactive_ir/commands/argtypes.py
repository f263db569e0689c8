"""Argument types with ranges for the sub-commands' flags: a value out of range is refused by argparse in one
line (exit 2) that names the range and echoes at most `MAX_ECHO` characters of what was given.

    p.add_argument("--workers", type=whole(1, 256), ...)   # 1..256
    p.add_argument("--limit", type=whole(0), ...)          # 0 or more
    p.add_argument("--timeout", type=number(0.1, 3600))    # a finite number in range
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

MAX_ECHO = 40  # characters of a refused value shown back (a megabyte given is never printed)


def shown(value, limit: int = MAX_ECHO) -> str:
    """`value` as it may be echoed in a message: its repr, cut to `limit` characters (with its full length)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(str(value)):,} characters)"


def _range_text(lo, hi) -> str:
    if hi is None:
        return f"{lo} or more"
    return f"from {lo} to {hi}"


def whole(lo: int, hi: int | None = None):
    """An argparse type: a whole number in [lo, hi] (hi None: no upper bound)."""

    def parse(text: str) -> int:
        try:
            value = int(str(text).strip().replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a whole number ({_range_text(lo, hi)})") from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"{shown(value)} is out of range: give a whole number {_range_text(lo, hi)}")
        return value

    parse.__name__ = "whole number"
    return parse


def number(lo: float, hi: float | None = None):
    """An argparse type: a finite number in [lo, hi] (hi None: no upper bound); NaN and infinity refused."""

    def parse(text: str) -> float:
        try:
            value = float(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a number ({_range_text(lo, hi)})") from None
        if not math.isfinite(value) or value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"{shown(text)} is out of range: give a number {_range_text(lo, hi)}")
        return value

    parse.__name__ = "number"
    return parse


def plain_path(text: str) -> Path:
    """An argparse type for a file or folder flag: the path, refused when it names something that is neither (a
    device such as /dev/zero, a pipe, a socket: reading one never ends) or cannot be a path at all (too long, a NUL
    character). A path that does not exist passes: the command says what it wanted there."""
    if "\x00" in str(text):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a path (it holds a NUL character)")
    path = Path(text)
    try:
        special = path.exists() and not (path.is_file() or path.is_dir())
    except OSError as e:  # a name too long, a loop of links
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a usable path ({e.strerror or e})") from None
    if special:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a regular file or folder (a device, pipe or socket)")
    return path
