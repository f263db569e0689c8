"""Config helpers: dataclass fields overridable by environment variables (prefix IIR_).

Each config dataclass lives next to the code that uses it and documents every field with a
comment; `apply_env` fills fields from `IIR_<FIELD_NAME_UPPER>` and `apply_overrides` from CLI
flags, both with `dataclasses.replace`.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ENV_PREFIX = "IIR_"

DEFAULT_EMBEDDER = "open_clip:ViT-B-32:laion2b_s34b_b79k"
OFFLINE_TEXT_EMBEDDER = "text:all-MiniLM-L6-v2"


def _convert(value: str, annotation: Any) -> Any:
    ann = str(annotation)
    if "bool" in ann:
        return value.strip().lower() in {"1", "true", "yes", "on"}
    if "int" in ann and "float" not in ann:
        return int(value)
    if "float" in ann:
        return float(value)
    if "Path" in ann:
        return Path(value)
    return value


def apply_env(cfg: T, prefix: str = ENV_PREFIX, environ: typing.Mapping[str, str] | None = None) -> T:
    """Return a copy of `cfg` with fields overridden by `IIR_<NAME>` environment variables."""
    env = os.environ if environ is None else environ
    changes = {}
    for f in dataclasses.fields(cfg):  # type: ignore[arg-type]
        key = prefix + f.name.upper()
        if key in env and env[key] != "":
            try:
                changes[f.name] = _convert(env[key], f.type)
            except ValueError as e:
                raise ValueError(f"{key}={env[key]!r} is not a valid {f.type}") from e
    return dataclasses.replace(cfg, **changes) if changes else cfg  # type: ignore[type-var]


def apply_overrides(cfg: T, **overrides: Any) -> T:
    """Return a copy of `cfg` with the given non-None overrides (e.g. from CLI flags)."""
    names = {f.name for f in dataclasses.fields(cfg)}  # type: ignore[arg-type]
    changes = {k: v for k, v in overrides.items() if v is not None and k in names}
    return dataclasses.replace(cfg, **changes) if changes else cfg  # type: ignore[type-var]


def cache_dir() -> Path:
    """Folder for the web app's thumbnails (IIR_CACHE_DIR, default ~/.cache/interactive_ir); weights use the HF cache."""
    return Path(os.environ.get("IIR_CACHE_DIR") or Path.home() / ".cache" / "interactive_ir")
