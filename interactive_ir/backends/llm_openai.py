"""`openai:MODEL[@BASE_URL]`: any OpenAI-compatible chat-completions endpoint.

Several prompts are sent concurrently (a bounded thread pool), so one `generate` call costs one
round trip of wall time. Timeouts, connection errors, 5xx and 429 are retried with exponential backoff.
`chat` sends ready-made message lists (content with images included): the `openai-vision` captioner
and VLM use it, so they share this client's key handling, timeouts and retries.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from interactive_ir.backends._torch import require
from interactive_ir.backends.base import Prompt
from interactive_ir.backends.llms import LLMConfig, as_messages
from interactive_ir.errors import BackendError, BackendUnavailable

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"


class OpenAILLM:
    batch_capable = True

    def __init__(self, model: str, base_url: str | None, spec: str, config: LLMConfig = LLMConfig(),
                 api_key: str | None = None):
        self._openai = openai = require("openai", "llm")
        key = (api_key or os.environ.get("IIR_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or "").strip()
        self.kind = spec.partition(":")[0] if ":" in spec else "openai"  # the spec prefix, for messages
        if not key and not base_url:
            raise BackendUnavailable(
                f"{spec} needs an API key: set OPENAI_API_KEY (or IIR_LLM_API_KEY), or point at a local "
                f"OpenAI-compatible server, e.g. {self.kind}:{model}@http://localhost:8000/v1"
            )
        self.spec = spec
        self.model = model
        self.base_url = base_url or OPENAI_URL
        self.config = config
        # a local server (vLLM, Ollama, ...) usually ignores the key, but the client insists on one
        self.client = openai.OpenAI(api_key=key or "not-needed", base_url=self.base_url,
                                    timeout=config.timeout_s, max_retries=0)

    def generate(self, prompts: Sequence[Prompt], *, temperature: float = 0.0, max_tokens: int = 256) -> list[str]:
        return self.chat([as_messages(p) for p in prompts], temperature=temperature, max_tokens=max_tokens)

    def chat(self, messages: Sequence[list[dict]], *, temperature: float = 0.0, max_tokens: int = 256) -> list[str]:
        """One reply per chat (a list of messages, sent as given), in order; sent concurrently."""
        messages = list(messages)
        if len(messages) <= 1:
            return [self._complete(m, temperature, max_tokens) for m in messages]
        workers = max(1, min(self.config.concurrency, len(messages)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="iir-llm") as pool:
            return list(pool.map(lambda m: self._complete(m, temperature, max_tokens), messages))

    def _complete(self, messages: list[dict], temperature: float, max_tokens: int) -> str:
        openai = self._openai
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            try:
                r = self.client.chat.completions.create(
                    model=self.model, messages=messages, temperature=temperature, max_tokens=max_tokens)
            except openai.APIStatusError as e:
                if e.status_code != 429 and e.status_code < 500:
                    raise BackendError(self._status_message(e)) from e
                error: Exception = e
            except openai.APIConnectionError as e:  # includes APITimeoutError
                error = e
            else:
                return ((r.choices[0].message.content if r.choices else None) or "").strip()
            if attempt + 1 < attempts:
                delay = self.config.backoff_s * 2**attempt
                log.info("%s: %s; retry %d/%d in %.2f s", self.spec, type(error).__name__,
                         attempt + 1, attempts - 1, delay)
                time.sleep(delay)
        raise BackendError(self._final_message(error, attempts)) from error

    def _status_message(self, e) -> str:
        hint = {401: "check OPENAI_API_KEY / IIR_LLM_API_KEY",
                403: "the key may not have access to this model",
                404: f"check that the model {self.model!r} is served at {self.base_url}"}.get(e.status_code, "")
        return f"{self.spec}: the server answered HTTP {e.status_code}: {e.message}" + (f" ({hint})" if hint else "")

    def _final_message(self, e: Exception, attempts: int) -> str:
        tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
        if isinstance(e, self._openai.APITimeoutError):
            return (f"{self.spec}: no reply from {self.base_url} within {self.config.timeout_s:g} s ({tries}). "
                    "Is the server up and the model loaded? Raise the limit with IIR_LLM_TIMEOUT_S")
        if isinstance(e, self._openai.APIStatusError):
            return f"{self.spec}: the server answered HTTP {e.status_code} ({tries}): {e.message}"
        return (f"{self.spec}: cannot reach {self.base_url} ({tries}): {e}. "
                f"Start the server or fix the URL ({self.kind}:MODEL@URL or IIR_LLM_BASE_URL)")
