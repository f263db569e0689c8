"""The app's options (`AppConfig`): what `app.py` and the study's dry run assemble (index, models, results per
round) and how the app serves it; `app_config` reads them: defaults, then env, then flags."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.config import PAGE_K, apply_env, apply_overrides


@dataclass(frozen=True)
class AppConfig:
    """Options of `python app.py`; each can be set by env `IIR_<FIELD>` and overridden by its flag."""

    index: Path | None = None  # a built index folder, or hf://USER/NAME[@REVISION] (a pushed index, from the Hub cache); None serves the demo gallery (built on first start)
    embedder: str = ""  # embedder spec (flag only); "" = the index's own (demo: IIR_EMBEDDER or the default CLIP)
    llm: str = ""  # LLM spec for questions and query rewriting; "" = a capable default (assembly.llm_choice: default_llm_spec(), not the tiny SmolLM2: none then); none/off = no LLM
    captioner: str = ""  # captioner spec for uncaptioned references; ""/none/off = none
    vlm: str = ""  # VLM spec re-ranking composed results; ""/none/off = none
    k: int = PAGE_K  # results per round on the page (app.py -k, the study's dry run); the commands take their own -k
    host: str = "0.0.0.0"  # interface to listen on
    port: int = 7860  # port (also from PORT or GRADIO_SERVER_PORT)
    concurrency: int = 2  # model steps running at once across all users (queue concurrency limit)
    search_concurrency: int = 4  # actions' retrievals running at once across all users (never behind model steps)
    click_concurrency: int = 8  # marks (their own group) and other clicks (New search, upload, options) at once
    queue_size: int = 1024  # most waiting events, all groups together, before new ones get HTTP 503 (~2 per busy tab)
    study: Path | None = None  # a user-study file: serve the study page instead (interactive_ir.study.ui)
    trusted_proxies: str = ""  # reverse proxies (addresses/networks) whose X-Forwarded-For names the client; "" = none: the connecting address is the client


def app_config(environ=None, **flags) -> AppConfig:
    """Defaults, then env (`IIR_*`, plus PORT / GRADIO_SERVER_PORT / GRADIO_SERVER_NAME), then flags."""
    env = os.environ if environ is None else environ
    cfg = AppConfig()
    port = env.get("PORT") or env.get("GRADIO_SERVER_PORT")
    if port:
        try:
            cfg = apply_overrides(cfg, port=int(port))
        except ValueError as e:
            raise ValueError(f"PORT / GRADIO_SERVER_PORT must be a number, got {port!r}") from e
    if env.get("GRADIO_SERVER_NAME"):
        cfg = apply_overrides(cfg, host=env["GRADIO_SERVER_NAME"])
    # IIR_EMBEDDER is read by the demo set-up itself: a given --index keeps its own embedder
    cfg = apply_env(cfg, environ={k: v for k, v in env.items() if k != "IIR_EMBEDDER"})
    cfg = apply_overrides(cfg, **flags)
    if cfg.k < 1:
        raise ValueError(f"k must be at least 1, got {cfg.k}")
    for name in ("concurrency", "search_concurrency", "click_concurrency", "queue_size"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(cfg, name)}")
    if not 0 < cfg.port < 65536:
        raise ValueError(f"port must be between 1 and 65535, got {cfg.port}")
    return cfg
