"""Knobs shared by the LLM backends (timeouts, retries, the circuit breaker, batching), set by `IIR_LLM_*`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from interactive_ir.config import apply_env, apply_overrides

LLM_ENV_PREFIX = "IIR_LLM_"


@dataclass(frozen=True)
class LLMConfig:
    """Knobs shared by the LLM backends; each field can be set by env `IIR_LLM_<FIELD>`."""

    timeout_s: float = 60.0  # per-request timeout of HTTP backends (seconds); never more than what the deadline leaves
    deadline_s: float = 15.0  # wall-time budget of one model stage (a generate call), across retries (HTTP backends)
    max_retries: int = 3  # HTTP retries on timeouts, connection errors, 5xx and 429 (within the deadline)
    breaker_failures: int = 3  # failed stages in a row after which the backend is not called for breaker_pause_s
    breaker_pause_s: float = 60.0  # how long calls are refused at once after breaker_failures (then one trial)
    probe_timeout_s: float = 3.0  # the start-up reachability check of HTTP backends (seconds)
    backoff_s: float = 0.5  # delay before the first retry; doubles on each further retry
    concurrency: int = 8  # most requests in flight at once for one generate() call (HTTP backends)
    batch_size: int = 8  # most prompts per forward pass (transformers backend)
    n_ctx: int = 4096  # context window of llama-cpp models (tokens)


def llm_config(config: LLMConfig | None = None, environ: Mapping[str, str] | None = None, **overrides) -> LLMConfig:
    """`config` (or the defaults with `IIR_LLM_*` env vars applied) with non-None `overrides` on top."""
    cfg = config if config is not None else apply_env(LLMConfig(), LLM_ENV_PREFIX, environ)
    return apply_overrides(cfg, **overrides)
