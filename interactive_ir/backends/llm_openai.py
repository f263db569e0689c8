"""`openai:MODEL[@BASE_URL]`: any OpenAI-compatible chat-completions endpoint.

Several prompts are sent concurrently (a bounded thread pool), so one `generate` call costs one
round trip of wall time. Timeouts, connection errors, 5xx and 429 are retried with exponential backoff,
all within the stage's deadline (`deadline_s`); repeated failures open a circuit breaker (see `guard`).
A malformed reply (not JSON, no `choices`, empty content) is a plain error and a logged warning.
No message names the endpoint's secrets: the spec and URL are shown through `redact.redact_text` (the owner's
log and errors), and every failure carries a visitor sentence without the host (`redact.public_reason`).
`chat` sends ready-made message lists (content with images included): the `openai-vision` captioner
and VLM use it, so they share this client's key handling, timeouts and retries.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor

from interactive_ir.backends._torch import require
from interactive_ir.backends.cancel import POLL_S, CancelToken, check
from interactive_ir.backends.guard import BackendPaused, CircuitBreaker, Deadline, MalformedReply
from interactive_ir.backends.llm_config import LLMConfig
from interactive_ir.backends.prompts import Prompt, as_messages
from interactive_ir.backends.redact import redact_client_logs, redact_text, redact_url, with_public
from interactive_ir.errors import BackendError, BackendUnavailable, Cancelled

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"
ENDPOINT_KINDS = {"hf-router": "the Hugging Face inference router", "openai-vision": "an OpenAI-compatible endpoint"}


def endpoint_kind(kind: str) -> str:
    """What a visitor is told the model runs on (never its address)."""
    return ENDPOINT_KINDS.get(kind, "an OpenAI-compatible endpoint")


class OpenAILLM:
    batch_capable = True

    def __init__(self, model: str, base_url: str | None, spec: str, config: LLMConfig = LLMConfig(),
                 api_key: str | None = None):
        self._openai = openai = require("openai", "llm")
        key = (api_key or os.environ.get("IIR_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or "").strip()
        self.kind = spec.partition(":")[0] if ":" in spec else "openai"  # the spec prefix, for messages
        shown = redact_text(spec)
        redact_client_logs()  # the HTTP client logs each request's URL: never with its password or key
        if not key and not base_url:
            raise BackendUnavailable(
                f"{shown} needs an API key: set OPENAI_API_KEY (or IIR_LLM_API_KEY), or point at a local "
                f"OpenAI-compatible server, e.g. {self.kind}:{model}@http://localhost:8000/v1"
            )
        self.spec = spec
        self.shown = shown  # the spec without secrets, for messages and the log
        self.model = model
        self.base_url = base_url or OPENAI_URL
        self.where = redact_url(self.base_url)  # the URL without secrets, for messages and the log
        self.public = f"the language model ({endpoint_kind(self.kind)})"  # what a visitor is told it is
        self.config = config
        # a local server (vLLM, Ollama, ...) usually ignores the key, but the client insists on one
        self.client = openai.OpenAI(api_key=key or "not-needed", base_url=self.base_url,
                                    timeout=min(config.timeout_s, config.deadline_s), max_retries=0)
        self.breaker = CircuitBreaker(f"the LLM {shown}", config.breaker_failures, config.breaker_pause_s)

    def generate(self, prompts: Sequence[Prompt], *, temperature: float = 0.0, max_tokens: int = 256,
                 cancel: CancelToken | None = None) -> list[str]:
        return self.chat([as_messages(p) for p in prompts], temperature=temperature, max_tokens=max_tokens,
                         cancel=cancel)

    def chat(self, messages: Sequence[list[dict]], *, temperature: float = 0.0, max_tokens: int = 256,
             cancel: CancelToken | None = None) -> list[str]:
        """One reply per chat (a list of messages, sent as given), in order; sent concurrently.

        The whole call (one model stage) has `config.deadline_s`, across retries. While the circuit breaker
        is open it fails at once with BackendPaused; a failed stage counts against the breaker. Once `cancel`
        is set the call stops waiting and raises `Cancelled` (not a failure): no retry starts, and requests
        in flight are abandoned (they end with their timeout; their replies are dropped)."""
        messages = list(messages)
        if not messages:
            return []
        check(cancel, self.shown)
        self.breaker.before_call()
        deadline = Deadline(self.config.deadline_s)
        try:
            out = self._replies(messages, temperature, max_tokens, deadline, cancel)
        except Cancelled:
            self.breaker.cancelled()
            raise
        except BackendError as e:
            if not isinstance(e, BackendPaused):
                self.breaker.failure(str(e))
            raise
        self.breaker.success()
        return out

    def _replies(self, messages: list[list[dict]], temperature: float, max_tokens: int, deadline: Deadline,
                 cancel: CancelToken | None) -> list[str]:
        """Every chat's reply, in order: one chat without a token in this thread, else in a pool of threads
        that this thread watches, leaving at once when `cancel` is set."""
        def one(m: list[dict]) -> str:
            return self._complete(m, temperature, max_tokens, deadline, cancel)

        if cancel is None and len(messages) == 1:
            return [one(messages[0])]
        workers = max(1, min(self.config.concurrency, len(messages)))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="iir-llm")
        try:
            jobs = [pool.submit(one, m) for m in messages]
            pending = set(jobs)
            while pending:
                done, pending = futures.wait(pending, timeout=None if cancel is None else POLL_S,
                                             return_when=futures.FIRST_EXCEPTION)
                check(cancel, self.shown)
                if any(f.exception() is not None for f in done):
                    break
            return [f.result() for f in jobs]  # the first failure, in prompt order
        finally:
            pool.shutdown(wait=cancel is None or not cancel.cancelled, cancel_futures=True)

    def _complete(self, messages: list[dict], temperature: float, max_tokens: int, deadline: Deadline,
                  cancel: CancelToken | None = None) -> str:
        openai = self._openai
        attempts = self.config.max_retries + 1
        error: Exception | None = None
        tried = 0
        for attempt in range(attempts):
            left = deadline.left
            if left <= 0.05:
                break
            check(cancel, self.shown)
            tried += 1
            try:
                r = self._client(min(self.config.timeout_s, left)).chat.completions.create(
                    model=self.model, messages=messages, temperature=temperature, max_tokens=max_tokens)
            except openai.APIStatusError as e:
                if e.status_code != 429 and e.status_code < 500:
                    raise with_public(BackendError(self._status_message(e)),
                                      f"{self.public} refused the request (HTTP {e.status_code}).") from e
                error = e
            except openai.APIConnectionError as e:  # includes APITimeoutError
                error = e
            except Exception as e:  # noqa: BLE001 - bytes, HTML or broken JSON where a chat reply should be
                raise self._malformed(f"{type(e).__name__}: {e}") from e
            else:
                return self._content(r)
            delay = self.config.backoff_s * 2**attempt
            if attempt + 1 < attempts and deadline.left > delay + 0.05:
                log.info("%s: %s; retry %d/%d in %.2f s", self.shown, type(error).__name__,
                         attempt + 1, attempts - 1, delay)
                if cancel is None:
                    time.sleep(delay)
                elif cancel.wait(delay):
                    check(cancel, self.shown)
            elif attempt + 1 < attempts:
                break  # no time left for another try
        raise with_public(BackendError(self._final_message(error, tried, deadline)), self._public_failure(error))

    def _client(self, timeout: float):
        """The client with this attempt's timeout (what the stage's deadline leaves)."""
        with_options = getattr(self.client, "with_options", None)  # test doubles may lack it
        return with_options(timeout=timeout) if with_options else self.client

    def _content(self, r) -> str:
        """The reply's text; MalformedReply (logged as a warning) for anything that is not a usable chat reply."""
        choices = getattr(r, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise self._malformed(f"no choices in the reply ({str(r)[:120]!r})")
        content = getattr(getattr(choices[0], "message", None), "content", None)
        if not isinstance(content, str):
            raise self._malformed(f"no text content in the reply ({str(choices[0])[:120]!r})")
        if not content.strip():
            raise self._malformed("the reply's content is empty")
        return content.strip()

    def _malformed(self, detail: str) -> MalformedReply:
        log.warning("%s at %s gave a malformed reply: %s", self.shown, self.where, redact_text(detail))
        return MalformedReply("the LLM gave an unusable reply this time, so it could not help with this step")

    def probe(self) -> tuple[bool, str]:
        """(reachable, a sentence for the page, which names no address): one GET of the server's model list,
        `probe_timeout_s` at most. The owner's log gets the (redacted) URL."""
        name = f"{self.model} ({endpoint_kind(self.kind)})"
        try:
            self._client(self.config.probe_timeout_s).models.list()
        except self._openai.APIStatusError as e:  # it answered: reachable (a 404 for /models is fine)
            if e.status_code in (401, 403):
                log.warning("%s: %s refuses the key (HTTP %d)", self.shown, self.where, e.status_code)
                return True, f"{name} answers but refuses the key (HTTP {e.status_code})."
            return True, f"{name} is reachable."
        except self._openai.APIConnectionError as e:
            why = "no answer" if isinstance(e, self._openai.APITimeoutError) else "cannot connect"
            log.warning("%s: %s is not reachable (%s within %g s)", self.shown, self.where, why,
                        self.config.probe_timeout_s)
            return False, (f"{name} is not reachable ({why} within {self.config.probe_timeout_s:g} s): "
                           "questions pause until it answers.")
        except Exception as e:  # noqa: BLE001 - a server that answers junk is still up
            return True, f"{name} is reachable (its model list is unreadable: {type(e).__name__})."
        return True, f"{name} is reachable."

    def _status_message(self, e) -> str:
        hint = {401: "check OPENAI_API_KEY / IIR_LLM_API_KEY",
                403: "the key may not have access to this model",
                404: f"check that the model {self.model!r} is served at {self.where}"}.get(e.status_code, "")
        return (f"{self.shown}: the server answered HTTP {e.status_code}: {redact_text(e.message)}"
                + (f" ({hint})" if hint else ""))

    def _public_failure(self, e: Exception | None) -> str:
        """The failure as a visitor is told it: what the model is, and why, without its address."""
        if e is None or isinstance(e, self._openai.APITimeoutError):
            return f"{self.public} did not answer: it timed out."
        if isinstance(e, self._openai.APIStatusError):
            return f"{self.public} did not answer: its server had an error (HTTP {e.status_code})."
        return f"{self.public} did not answer: it could not be reached."

    def _final_message(self, e: Exception | None, attempts: int, deadline: Deadline) -> str:
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        if e is None or isinstance(e, self._openai.APITimeoutError):
            waited = min(deadline.seconds, time.monotonic() - deadline.start)
            return (f"{self.shown}: no reply from {self.where} ({tries} in {waited:.1f} s; each waits at most "
                    f"{min(self.config.timeout_s, deadline.seconds):g} s, the whole step {deadline.seconds:g} s). "
                    "Is the server up and the model loaded? Raise the limits with IIR_LLM_TIMEOUT_S and "
                    "IIR_LLM_DEADLINE_S")
        if isinstance(e, self._openai.APIStatusError):
            return f"{self.shown}: the server answered HTTP {e.status_code} ({tries}): {redact_text(e.message)}"
        return (f"{self.shown}: cannot reach {self.where} ({tries}): {redact_text(e)}. "
                f"Start the server or fix the URL ({self.kind}:MODEL@URL or IIR_LLM_BASE_URL)")
