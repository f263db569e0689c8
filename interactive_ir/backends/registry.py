"""Backends by spec string: `KIND_NAME[:ARGS]`, e.g. `open_clip:ViT-B-32:laion2b_s34b_b79k`.

Factories are named by import path so that listing backends imports nothing heavy.
Other modules register their own kinds (llm, vlm) with `register`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from interactive_ir.errors import UnknownSpecError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackendInfo:
    kind: str  # "embedder", "captioner", "llm", "vlm"
    name: str  # the spec prefix, e.g. "open_clip"
    factory: str  # "module:function" taking (args: str, **options) and returning the backend
    usage: str  # spec syntax shown to users, e.g. "open_clip:ARCH:PRETRAINED"
    description: str  # one line: what it is, what it needs


_REGISTRY: dict[str, dict[str, BackendInfo]] = {}


def register(info: BackendInfo) -> None:
    _REGISTRY.setdefault(info.kind, {})[info.name] = info


def list_backends(kind: str | None = None) -> list[BackendInfo]:
    """All registered backends, or those of one kind."""
    _ensure_builtin()
    kinds = [kind] if kind else sorted(_REGISTRY)
    return [info for k in kinds for info in _REGISTRY.get(k, {}).values()]


def parse_spec(spec: str) -> tuple[str, str]:
    """Split `name:args` at the first colon; args may be empty."""
    spec = (spec or "").strip()
    if not spec:
        raise UnknownSpecError("empty backend spec")
    name, _, args = spec.partition(":")
    return name.strip(), args.strip()


def build(kind: str, spec: str, **options: Any) -> Any:
    """Build a backend of `kind` from its spec string (imports its module on demand)."""
    _ensure_builtin()
    name, args = parse_spec(spec)
    table = _REGISTRY.get(kind, {})
    if name not in table:
        known = ", ".join(i.usage for i in table.values()) or "none registered"
        raise UnknownSpecError(f"unknown {kind} spec {spec!r}; choose one of: {known}")
    _offline_unless_reachable(name, spec)
    module_name, _, func_name = table[name].factory.partition(":")
    factory: Callable[..., Any] = getattr(importlib.import_module(module_name), func_name)
    return factory(args, spec=spec, **options)


_NO_HUB = {"fake", "openai", "openai-vision", "hf-router", "llama-cpp"}  # backends that never download from the model hub


def _offline_unless_reachable(name: str, spec: str) -> None:
    """Before a hub download, check the hub answers; if not, load from the local cache only.

    Hugging Face loaders otherwise retry an unreachable hub for a minute and print dozens of warnings
    before they fail (or fall back to their cache).
    """
    import interactive_ir.backends.hub as hub

    if name in _NO_HUB or not hub.needs_hub(spec) or hub.hub_reachable():
        return
    log.warning("the model hub cannot be reached: %s loads from the local cache only", spec)
    hub.go_offline()


_BUILTIN_MODULES = (
    "interactive_ir.backends.embedders",
    "interactive_ir.backends.captioners",
    "interactive_ir.backends.llms",
    "interactive_ir.backends.vlms",
    "interactive_ir.backends.blip",
)


def _ensure_builtin() -> None:
    for mod in _BUILTIN_MODULES:
        try:
            importlib.import_module(mod)  # each registers its backends at import (cheap imports only)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
