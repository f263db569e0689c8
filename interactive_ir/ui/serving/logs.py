"""The app's log: one line per start-up stage, third-party noise only when it matters.

- faiss's "Loading faiss with AVX2/AVX512 support" and HTTP client request lines (httpx, urllib3): WARNING up;
- open_clip's INFO lines and its "Failed to download weights" ERROR are dropped: the app then falls back to its offline index and
  says so itself, calmly, with the reason (interactive_ir.assembly.app_index);
- Hugging Face progress bars stay off unless asked for (HF_HUB_DISABLE_PROGRESS_BARS=0); no tqdm bar goes to a
  log that is not a terminal (TQDM_DISABLE=1, and the app's own bars check the terminal).
"""

from __future__ import annotations

import logging
import os
import sys

QUIET = ("faiss", "faiss.loader", "sentence_transformers", "httpx", "httpcore", "urllib3", "huggingface_hub", "filelock", "PIL",
         "matplotlib", "asyncio", "multipart", "python_multipart", "gradio_client")  # WARNING and up only
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class DropHandledNoise(logging.Filter):
    """Drops third-party ERROR records about a failure the app handles and explains itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "open_clip" in (record.pathname or ""):  # open_clip logs through the root logger
            if record.levelno < logging.WARNING or "Failed to download weights" in record.getMessage():
                return False
        return True


def setup_logging(level: int = logging.INFO) -> None:
    """Configure the root logger for `python app.py` (call once, before anything is loaded)."""
    logging.basicConfig(level=level, format=FORMAT)
    from interactive_ir.backends.redact import RedactSecrets

    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, DropHandledNoise) for f in handler.filters):
            handler.addFilter(DropHandledNoise())
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())  # a model endpoint's password or key never reaches the log
    for name in QUIET:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # one line per stage, not hundreds
    if not (getattr(sys.stderr, "isatty", None) and sys.stderr.isatty()):
        os.environ.setdefault("TQDM_DISABLE", "1")  # a log file gets no bars (tqdm reads TQDM_* as its defaults)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def browser_url(host: str, port: int) -> str:
    """The URL a browser on this machine can open (0.0.0.0 and :: listen everywhere but are not addresses)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "", "::", "[::]") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"
