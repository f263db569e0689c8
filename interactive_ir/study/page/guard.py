"""Limits of the study page against anonymous clients: who may sign in to /admin without being held back
by others' failures, and how many participants one address may enrol. Each field can be set by env
`IIR_STUDY_<FIELD>`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from interactive_ir.config import apply_env, apply_overrides

GUARD_ENV_PREFIX = "IIR_STUDY_"


@dataclass(frozen=True)
class StudyGuard:
    """Per-client limits of the study page; each field can be set by env `IIR_STUDY_<FIELD>`."""

    admin_from: str = "127.0.0.1,::1"  # addresses/networks that keep their free admin sign-in tries even while many sources fail
    admin_surge_sources: int = 200  # more distinct failing sources than this within 10 min: an unknown source's back-off starts at its first failure
    admin_link_h: float = 24.0  # hours the one-time admin sign-in link in the server log lives (a new one is logged after)
    joins_per_client: int = 10  # participants one address may enrol per join_window_s (raise it for a lab behind one address; 0 = no limit)
    join_window_s: float = 600.0  # the window of joins_per_client, in seconds


def study_guard(environ: Mapping[str, str] | None = None, **overrides) -> StudyGuard:
    return apply_overrides(apply_env(StudyGuard(), GUARD_ENV_PREFIX, environ), **overrides)
