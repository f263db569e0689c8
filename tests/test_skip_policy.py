"""CI fails on an unexpected skip (issue 31, item 2): a run with `CI_FAIL_ON_SKIP=1` exits 1 when a test skips
for a reason outside `skip_policy.ALLOWED`, and 0 when every skip is allowed (or the variable is unset)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from skip_policy import ALLOWED, ENV, unexpected

TESTS = Path(__file__).resolve().parent


def test_only_reasons_on_the_allow_list_pass():
    skips = [("a::t1", "glibc only"), ("a::t2", "Flickr8k data not found at /x"),
             ("a::t3", "could not import 'statsmodels': No module named 'statsmodels'"),
             ("a::t4", "Debian Chromium not found at /usr/bin/chromium (apt-get install chromium)"),
             ("a::t5", "milvus-lite cannot start here: no build"), ("a::t6", "needs bash please")]
    assert unexpected(skips) == [skips[1], skips[2], skips[3], skips[5]]  # Flickr8k's tests use tests/data when it is absent
    assert all(why for _, why in ALLOWED)  # each allowed reason says why


def _run(tmp_path, reason: str, strict: bool) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from skip_policy import pytest_sessionfinish, pytest_terminal_summary  # noqa\n")
    (tmp_path / "test_it.py").write_text(
        "import pytest\n\ndef test_ok():\n    pass\n\n"
        f"def test_skipped():\n    pytest.skip({reason!r})\n")
    env = {k: v for k, v in os.environ.items() if k != ENV} | ({ENV: "1"} if strict else {})
    return subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(("reason", "strict", "code"), [
    ("could not import 'statsmodels'", True, 1),
    ("could not import 'statsmodels'", False, 0),
    ("glibc only", True, 0),
])
def test_a_run_fails_on_an_unexpected_skip_only_where_asked(tmp_path, reason, strict, code):
    r = _run(tmp_path, reason, strict)
    assert r.returncode == code, r.stdout[-2000:] + r.stderr[-2000:]
    assert ("1 unexpected skip(s) fail this run" in r.stdout) == (code == 1)
    if code:
        assert "test_it.py::test_skipped: could not import 'statsmodels'" in r.stdout
