"""A skip outside a short allow-list fails the run (issue 31, item 2), where `CI_FAIL_ON_SKIP=1` (set by .ci/run).

The requirements make every package the tests import mandatory, so on CI a skipped test is a broken install
(an `importorskip` that fires, Chromium missing) or a hidden failure, unless its reason is one of `ALLOWED`.
The hooks are imported by tests/conftest.py; `unexpected` is the rule, unit-tested in test_skip_policy.py.
"""

from __future__ import annotations

import os
import re

ENV = "CI_FAIL_ON_SKIP"
# (pattern of the skip's reason, why such a skip is allowed on CI)
ALLOWED: tuple[tuple[str, str], ...] = (
    (r"^glibc only$", "malloc arenas exist only in glibc: a musl or macOS runner has nothing to test"),
    (r"^needs bash$", "the shell script's test needs bash, absent on a Windows runner"),
    (r"^milvus-lite cannot start here", "milvus-lite's embedded server has no build for some platforms (see "
                                        "requirements.txt's marker); the export itself fails, never skips"),
)


def reason_of(report) -> str:
    """The reason a skipped test report gives ("Skipped: " taken off)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
    return re.sub(r"^Skipped:\s*", "", text).strip()


def unexpected(skips: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (test id, reason) pairs whose reason matches no pattern of `ALLOWED`."""
    return [(nodeid, why) for nodeid, why in skips if not any(re.search(p, why) for p, _ in ALLOWED)]


def _skips(session) -> list[tuple[str, str]]:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    reports = reporter.stats.get("skipped", []) if reporter is not None else []
    return [(r.nodeid, reason_of(r)) for r in reports if not hasattr(r, "wasxfail")]


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get(ENV) != "1":
        return
    bad = unexpected(_skips(session))
    session.config._iir_unexpected_skips = bad
    if bad and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    bad = getattr(config, "_iir_unexpected_skips", [])
    if not bad:
        return
    terminalreporter.section(f"{ENV}: {len(bad)} unexpected skip(s) fail this run", red=True, bold=True)
    for nodeid, why in bad:
        terminalreporter.line(f"{nodeid}: {why}")
    terminalreporter.line("Fix the install, or (for a skip that cannot be avoided) add its reason to ALLOWED in "
                          "tests/skip_policy.py with a comment saying why.")
