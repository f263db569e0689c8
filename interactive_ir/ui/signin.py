"""Sign in with Hugging Face on the page (issue 27): whether it is offered, what the page says about whose
model a visitor uses, and the `LLMAccess` of each model step (`backends.visitor_llm` builds the LLM).

Gradio hands a listener the visitor's `gr.OAuthToken` (None when not signed in or expired) when the page
has a `gr.LoginButton`; off a Space, Gradio mocks the sign-in with the machine's own Hugging Face login.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from interactive_ir.backends.visitor_llm import (
    HourlyBudget,
    LLMAccess,
    SignInConfig,
    check_sign_in_possible,
    sign_in_config,
    token_keyed,
    visitor_key,
)


@dataclass(frozen=True)
class SignIn:
    """Sign-in on one page: its settings, the anonymous visitors' budget, and what the Space's LLM is."""

    config: SignInConfig
    budget: HourlyBudget  # calls per hour of the owner's LLM for anonymous visitors (anon_llm)
    has_llm: bool  # the Space has an LLM at all
    owner_keyed: bool  # that LLM is the Hugging Face router: a signed-in visitor's own token replaces the owner's


def sign_in_for(engine, config: SignInConfig | None = None, environ=None) -> SignIn | None:
    """The page's sign-in over `engine`'s LLM, or None when sign-in is off (every visitor uses the Space's LLM,
    as without this feature)."""
    cfg = config if config is not None else sign_in_config(environ=environ)
    if not cfg.enabled(environ):
        return None
    check_sign_in_possible(environ)
    llm = getattr(engine, "llm", None)
    return SignIn(cfg, HourlyBudget(cfg.anon_calls_per_visitor, cfg.anon_calls_per_hour), llm is not None,
                  token_keyed(llm))


def address(request) -> str:
    """The visitor's address: the first X-Forwarded-For hop (a Space's proxy), else the connection's."""
    headers = getattr(request, "headers", None) or {}
    forwarded = str(headers.get("x-forwarded-for", "") or "").split(",")[0].strip()
    client = getattr(request, "client", None)
    return forwarded or str(getattr(client, "host", "") or "unknown")


def access_for(sign_in: SignIn | None, token, request=None) -> LLMAccess | None:
    """Whose LLM this visitor's model step uses (None: sign-in is off, the Space's LLM as always).
    `token`: the visitor's `gr.OAuthToken` or None."""
    if sign_in is None:
        return None
    value = getattr(token, "token", "") or ""
    expires = getattr(token, "expires_at", 0) or 0
    if value and (not expires or expires > time.time()):
        return LLMAccess("own", value)
    if sign_in.config.anon_llm and sign_in.has_llm:
        return LLMAccess("owner", visitor=visitor_key(address(request)))
    return LLMAccess("none")


def note(sign_in: SignIn, user: str = "") -> str:
    """What the page says applies to this visitor (`user`: their Hugging Face name, "" when not signed in)."""
    if not sign_in.has_llm:
        return ("This Space has no language model: picture questions, marks and references work for everyone."
                + (f" Signed in as **{user}**." if user else ""))
    if user:
        whose = "your own account (your inference quota)" if sign_in.owner_keyed else "this Space's model"
        return f"Signed in as **{user}**: questions are written with {whose}."
    if sign_in.config.anon_llm:
        cfg = sign_in.config
        return (f"Not signed in: this Space's model writes questions, up to {cfg.anon_calls_per_visitor} model "
                f"calls an hour ({cfg.anon_calls_per_hour} for all visitors), then picture questions. Sign in to use "
                "your own account.")
    return "Not signed in: picture questions, no language model. Sign in to have one write questions."
