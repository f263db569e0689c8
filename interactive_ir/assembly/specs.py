"""Spec strings as every entry point reads them: one "no model" vocabulary, a spec from a flag or its
environment variable, and the words each command's --help uses for them."""

from __future__ import annotations

import os
from collections.abc import Mapping

NO_MODEL = frozenset({"", "none", "off", "no", "false", "0"})  # each means "load no model", for every kind
NO_MODEL_HELP = "none or off"  # how each command's --help names them
DEFAULT_LLM_HELP = ("IIR_LLM, else an OpenAI endpoint or the Hugging Face router when configured, else a small "
                    "instruct model on a GPU, else none: picture questions")  # the one rule (llm_choice), in words


def is_no_model(spec: str | None) -> bool:
    """True when `spec` asks for no model (None, "", "none", "off", "no", "false", "0", any case)."""
    return spec is None or spec.strip().lower() in NO_MODEL


def given_spec(flag: str | None, env_var: str = "", environ: Mapping[str, str] | None = None) -> str:
    """The spec a command was given: `flag` when given (None: not given), else `env_var` from `environ`
    (default: the process environment, read now); "" for no model."""
    env = os.environ if environ is None else environ
    spec = flag if flag is not None else (env.get(env_var, "") if env_var else "")
    return "" if is_no_model(spec) else spec.strip()


def embedder_spec(given: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The embedder to build an index with: `given`, else IIR_EMBEDDER, else `config.DEFAULT_EMBEDDER` (an index
    once built keeps its own: `indexes.open_retriever`)."""
    from interactive_ir.config import DEFAULT_EMBEDDER

    env = os.environ if environ is None else environ
    return (given or "").strip() or env.get("IIR_EMBEDDER", "").strip() or DEFAULT_EMBEDDER
