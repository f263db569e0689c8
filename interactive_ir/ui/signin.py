"""Sign in with Hugging Face on the page (issue 27): whether it is offered, what the page says about whose
model a visitor uses, and the `LLMAccess` of each model step (`backends.visitor_llm` builds the LLM).

Who the visitor is comes from Gradio's sign-in session (`visitor_of`). With a `gr.LoginButton` on the page,
Gradio keeps a signed-in visitor's OAuth answer in the session cookie, `request.session["oauth_info"]`
(`access_token`, `scope`, `expires_at` in seconds since 1970, `userinfo.preferred_username`); off a Space it
mocks the sign-in with the machine's own Hugging Face login, the same way. When `expires_at` has passed,
Gradio (6.x, `gradio.oauth._get_valid_oauth_info_from_session`) drops `oauth_info` from the request's
session *before* the listener runs and injects no `gr.OAuthToken` / `gr.OAuthProfile`, so a listener taking
those cannot tell an expired sign-in from none. The page's listeners therefore take only `gr.Request` and
read the session here: a valid sign-in gives the token (handed to one model step, never logged or kept),
an expired one the page's `EXPIRED` message, with picture questions (or the owner's budgeted model)
meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from interactive_ir.backends.visitor_llm import (
    HourlyBudget,
    LLMAccess,
    SignInConfig,
    check_sign_in_possible,
    sign_in_config,
    token_keyed,
    visitor_key,
)
from interactive_ir.ui.serving.limits import client_of

EXPIRED = "Your Hugging Face sign-in has expired: sign in again to use your own model quota."


@dataclass(frozen=True)
class Visitor:
    """Who is asking, from Gradio's sign-in session."""

    user: str = ""  # their Hugging Face user name ("" when not signed in)
    token: str = field(default="", repr=False)  # their OAuth token ("" when not signed in or expired); never shown
    expires_at: int = 0  # when the token expires, seconds since 1970 (0: not said)
    expired: bool = False  # they signed in, and that sign-in has expired


def _session(request) -> Mapping:
    """The request's session ({} without one): a `gr.Request` wraps the HTTP request, whose scope holds it."""
    raw = getattr(request, "request", None) or request
    scope = getattr(raw, "scope", None)
    session = scope.get("session") if isinstance(scope, dict) else None
    return session if isinstance(session, Mapping) else {}


def visitor_of(request, now: float | None = None) -> Visitor:
    """The visitor of `request` (a `gr.Request`, or None): signed in, signed in but expired, or anonymous."""
    info = _session(request).get("oauth_info")
    if not isinstance(info, Mapping):
        return Visitor()
    userinfo = info.get("userinfo")
    user = str(userinfo.get("preferred_username") or "") if isinstance(userinfo, Mapping) else ""
    expires = info.get("expires_at")
    expires = int(expires) if isinstance(expires, (int, float)) and not isinstance(expires, bool) else 0
    if expires and expires < (time.time() if now is None else now):  # as Gradio judges it: then it injects nothing
        return Visitor(user, "", expires, True)
    return Visitor(user, str(info.get("access_token") or ""), expires)


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
    """The visitor's address, as the rest of the app has it (`serving.limits.client_of`): the connection's,
    which uvicorn replaces with X-Forwarded-For only when the connection comes from a proxy named in
    `--trusted-proxies`. The header itself is never read here: a forged one would give every request a fresh
    anonymous LLM budget on the Space owner's token."""
    host = client_of(request) if request is not None else "?"
    return host if host != "?" else "unknown"


def access_for(sign_in: SignIn | None, token, request=None) -> LLMAccess | None:
    """Whose LLM this visitor's model step uses (None: sign-in is off, the Space's LLM as always).
    `token`: the visitor (`visitor_of`), or anything with `token` and `expires_at` (a `gr.OAuthToken`), or None."""
    if sign_in is None:
        return None
    value = getattr(token, "token", "") or ""
    expires = getattr(token, "expires_at", 0) or 0
    if value and (not expires or expires > time.time()):
        return LLMAccess("own", value)
    if sign_in.config.anon_llm and sign_in.has_llm:
        return LLMAccess("owner", visitor=visitor_key(address(request)))
    return LLMAccess("none")


def note(sign_in: SignIn, user: str = "", expired: bool = False) -> str:
    """What the page says applies to this visitor (`user`: their Hugging Face name, "" when not signed in;
    `expired`: their sign-in has expired, and what applies meanwhile)."""
    if expired:
        return f"{EXPIRED} {meanwhile(sign_in)}"
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


def meanwhile(sign_in: SignIn) -> str:
    """What a visitor who is not (or no longer) signed in gets."""
    if sign_in.has_llm and sign_in.config.anon_llm:
        return (f"Meanwhile this Space's model writes questions, up to {sign_in.config.anon_calls_per_visitor} "
                "model calls an hour.")
    return "Meanwhile the search goes on with picture questions."


def tell_expired(sign_in: SignIn | None, visitor: Visitor, tab) -> None:
    """Add `EXPIRED` to the tab's status line (a `UIState`) when this visitor's sign-in has expired."""
    if sign_in is None or not visitor.expired or EXPIRED in (tab.notice or ""):
        return
    with tab.lock:
        tab.notice = " ".join(x for x in (tab.notice, f"⚠ {EXPIRED} {meanwhile(sign_in)}") if x)
