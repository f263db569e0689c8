"""Whose LLM a visitor's model step uses (issue 27, sign in with Hugging Face).

With sign-in on (`SignInConfig.sign_in`; on a Space whose README header says `hf_oauth: true`), a
visitor signed in with Hugging Face has the LLM called with their own OAuth token when the Space's
LLM is the Hugging Face router (`hf-router:`, keyed by a HF token): their quota, their rate limit. An
anonymous visitor gets no LLM (picture questions, marks, references), unless the owner allows theirs
(`anon_llm`), within a per-visitor and a total budget of calls per hour (`HourlyBudget`).

A visitor's token lives only in the `LLMAccess` handed to one model step and in the client built for
it (closed after the step): never logged (its repr hides it), never in the session or on disk. A token
the router refuses (HTTP 401/403: expired, revoked, no `inference-api` scope) is `TokenRefused`; a
spent budget is `BudgetSpent`. Both are `BackendError`s: the step says so and the search goes on
without the LLM.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from interactive_ir.config import apply_env, apply_overrides
from interactive_ir.errors import BackendError, BadInputError

HOUR_S = 3600.0
TOKEN_KEYED = ("hf-router",)  # LLM kinds keyed by a Hugging Face token: a visitor's own token can replace it


@dataclass(frozen=True)
class SignInConfig:
    """Sign in with Hugging Face and the owner's LLM for anonymous visitors; env `IIR_<FIELD>`."""

    sign_in: str = "auto"  # "on": a Sign in with Hugging Face button; "off": none; "auto": on where the Space sets OAUTH_CLIENT_ID (hf_oauth: true)
    anon_llm: bool = False  # anonymous visitors may use the owner's LLM (within the budgets below); off: no LLM for them
    anon_calls_per_visitor: int = 30  # LLM calls per hour one anonymous visitor (one address) may make with the owner's token
    anon_calls_per_hour: int = 300  # LLM calls per hour all anonymous visitors together may make with the owner's token

    def enabled(self, environ: Mapping[str, str] | None = None) -> bool:
        """Is sign-in offered? ("auto": when Gradio can do OAuth here: a Space with `hf_oauth: true`)."""
        mode = self.sign_in.strip().lower()
        if mode in {"on", "1", "true", "yes"}:
            return True
        if mode in {"off", "0", "false", "no"}:
            return False
        env = os.environ if environ is None else environ
        if not env.get("OAUTH_CLIENT_ID", "").strip():
            return False
        if oauth_extra_missing(env):  # a Space whose requirements lack gradio[oauth]: it serves without sign-in
            logging.getLogger(__name__).warning("%s; the page is served without it", _no_oauth_extra(env))
            return False
        return True


OAUTH_EXTRA = ("authlib", "itsdangerous")  # what Gradio's sign-in imports (the `gradio[oauth]` extra)


def oauth_extra_missing(environ: Mapping[str, str] | None = None) -> list[str]:
    """The modules of Gradio's OAuth extra that sign-in needs here and that are not installed: itsdangerous (its
    session cookie) everywhere, authlib where Gradio signs in for real (OAUTH_CLIENT_ID: a Space), not mocked."""
    import importlib.util

    env = os.environ if environ is None else environ
    needed = OAUTH_EXTRA if env.get("OAUTH_CLIENT_ID", "").strip() else ("itsdangerous",)
    return [m for m in needed if importlib.util.find_spec(m) is None]


def _no_oauth_extra(environ: Mapping[str, str] | None = None) -> str:
    return (f"sign in with Hugging Face needs Gradio's OAuth extra, and {', '.join(oauth_extra_missing(environ))} is not "
            "installed: pip install 'gradio[oauth]' (requirements.txt names it), or turn sign-in off "
            "(IIR_SIGN_IN=off, --sign-in off)")


def sign_in_config(config: SignInConfig | None = None, environ: Mapping[str, str] | None = None,
                   **overrides) -> SignInConfig:
    """`config` (or the defaults with `IIR_*` env vars applied) with non-None `overrides` on top."""
    cfg = apply_overrides(config if config is not None else apply_env(SignInConfig(), "IIR_", environ), **overrides)
    if cfg.sign_in.strip().lower() not in {"auto", "on", "off", "1", "0", "true", "false", "yes", "no"}:
        raise ValueError(f"IIR_SIGN_IN={cfg.sign_in!r}: use on, off or auto")
    return cfg


class SignInUnavailable(BadInputError):
    """Sign-in was asked for off a Space, where Gradio mocks it with this machine's Hugging Face login, and
    there is none."""


def check_sign_in_possible(environ: Mapping[str, str] | None = None) -> None:
    """On a Space Gradio signs visitors in with Hugging Face; elsewhere it mocks the sign-in with this
    machine's own login (HF_TOKEN or `hf auth login`) and refuses to build the page without one: say so first."""
    if oauth_extra_missing(environ):
        raise SignInUnavailable(_no_oauth_extra(environ))
    env = os.environ if environ is None else environ
    if env.get("SYSTEM") == "spaces" and env.get("SPACE_ID"):
        return
    from interactive_ir.backends.hub import hub_token

    if not hub_token():
        raise SignInUnavailable("sign in with Hugging Face runs on a Space (hf_oauth: true); on this machine Gradio "
                                "mocks it with your own Hugging Face login, and there is none: run `hf auth login` "
                                "or set HF_TOKEN, or turn sign-in off (IIR_SIGN_IN=off, --sign-in off)")


class TokenRefused(BackendError):
    """The model server refused a visitor's own token (expired, revoked, or without the inference scope)."""


class BudgetSpent(BackendError):
    """The hourly budget of the owner's LLM for anonymous visitors is spent."""


@dataclass(frozen=True)
class LLMAccess:
    """Which LLM one visitor's model step may use: "own" (their token), "owner" (the Space's LLM, budgeted
    when `visitor` is set), or "none"."""

    kind: str  # "own", "owner" or "none"
    token: str = field(default="", repr=False)  # the visitor's OAuth token ("own" only); never shown
    visitor: str = ""  # the budget key of an anonymous visitor (a hash of their address); "" = no budget
    user: str = ""  # the signed-in visitor's Hugging Face user name ("" anonymous)


def visitor_key(address: str) -> str:
    """A budget key for an anonymous visitor's address (a hash: the address itself is not kept)."""
    return hashlib.sha256(f"iir-visitor:{address}".encode()).hexdigest()[:16]


class HourlyBudget:
    """Calls per sliding hour, per visitor and in total; thread-safe. `clock` is injectable for tests."""

    def __init__(self, per_visitor: int, total: int, clock=time.monotonic):
        self.per_visitor = max(0, int(per_visitor))
        self.total = max(0, int(total))
        self._clock = clock
        self._lock = threading.Lock()
        self._all: deque[float] = deque()
        self._by: dict[str, deque[float]] = {}

    def _trim(self, q: deque[float], now: float) -> deque[float]:
        while q and q[0] <= now - HOUR_S:
            q.popleft()
        return q

    def left(self, visitor: str) -> int:
        """Calls `visitor` may still make this hour (the smaller of their own and the total's)."""
        with self._lock:
            now = self._clock()
            mine = len(self._trim(self._by.get(visitor, deque()), now))
            return max(0, min(self.per_visitor - mine, self.total - len(self._trim(self._all, now))))

    def take(self, visitor: str, n: int = 1) -> None:
        """Count `n` calls for `visitor`, or raise BudgetSpent (nothing counted) when they would pass a budget."""
        with self._lock:
            now = self._clock()
            for key in [k for k, q in self._by.items() if not self._trim(q, now)]:
                del self._by[key]  # memory stays bounded by the visitors of the last hour
            mine = self._by.setdefault(visitor, deque())
            if len(mine) + n > self.per_visitor:
                raise BudgetSpent(f"your share of this Space's model ({self.per_visitor} calls an hour for visitors "
                                  "who are not signed in) is used up")
            if len(self._trim(self._all, now)) + n > self.total:
                raise BudgetSpent(f"this Space's model budget for visitors who are not signed in ({self.total} calls "
                                  "an hour) is used up")
            mine.extend([now] * n)
            self._all.extend([now] * n)


class _Wrapped:
    """An LLM passed through, with `generate` checked; keeps what the page reads (`spec`, the breaker)."""

    def __init__(self, llm):
        self.llm = llm
        self.refusal: BackendError | None = None  # set when this wrapper refused or saw its token refused

    @property
    def spec(self) -> str:
        return self.llm.spec

    @property
    def batch_capable(self) -> bool:
        return bool(getattr(self.llm, "batch_capable", False))


class BudgetedLLM(_Wrapped):
    """The owner's LLM for one anonymous visitor: each prompt takes one call from the hourly budget."""

    def __init__(self, llm, budget: HourlyBudget, visitor: str):
        super().__init__(llm)
        self.budget = budget
        self.visitor = visitor

    def generate(self, prompts: Sequence, **kwargs) -> list[str]:
        try:
            self.budget.take(self.visitor, max(1, len(prompts)))
        except BudgetSpent as e:
            self.refusal = e
            raise
        return self.llm.generate(prompts, **kwargs)


class OwnTokenLLM(_Wrapped):
    """A visitor's own client (`own_llm`): a refused token becomes `TokenRefused`, with a message for them."""

    def generate(self, prompts: Sequence, **kwargs) -> list[str]:
        try:
            return self.llm.generate(prompts, **kwargs)
        except BackendError as e:
            if getattr(e.__cause__, "status_code", None) not in (401, 403):
                raise
            self.refusal = TokenRefused("the model server refused your Hugging Face sign-in (it may have expired or "
                                        "been revoked): sign in again to have the model help")
            raise self.refusal from None

    def close(self) -> None:
        client = getattr(self.llm, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()


def token_keyed(llm) -> bool:
    """Is `llm` a backend keyed by a Hugging Face token (so a visitor's own token can replace the owner's)?"""
    return getattr(llm, "kind", "") in TOKEN_KEYED and hasattr(llm, "base_url")


def own_llm(owner, token: str) -> OwnTokenLLM:
    """A client like the owner's (`token_keyed`), keyed by the visitor's `token`, with a breaker of its own
    (a refused visitor never pauses the Space's LLM for everyone)."""
    from interactive_ir.backends.llm_openai import OpenAILLM

    return OwnTokenLLM(OpenAILLM(owner.model, owner.base_url, spec=owner.spec, config=owner.config, api_key=token))


def llm_for(owner, access: LLMAccess | None, budget: HourlyBudget | None):
    """The LLM a visitor's step uses: the owner's (`access` None: sign-in is off), theirs, the owner's within
    `budget`, or None."""
    if access is None or owner is None:
        return owner
    if access.kind == "own" and access.token and token_keyed(owner):
        return own_llm(owner, access.token)
    if access.kind == "own" or (access.kind == "owner" and not access.visitor):
        return owner
    if access.kind == "owner" and budget is not None:
        return BudgetedLLM(owner, budget, access.visitor)
    return None
