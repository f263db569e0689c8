"""The suite's own layout (tests/conftest.py): every test sits in a tier folder, `unit/` mirrors the package,
test module names are unique (each folder is on sys.path), the folder gives the marker so the fast command
selects no browser, system or integration test, and the app is started as a process in one place only."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tiers import TESTS, TIER_MARKERS, tier_of

ROOT = TESTS.parent
FAST = "not integration and not browser and not system"  # the README's and CI's fast command
# The tests in tests/ itself guard the suite and the repository, not one part of the package.
GUARDS = frozenset({
    "test_architecture.py",  # the package's layers, circles and function lengths
    "test_suite_layout.py",  # this file
    "test_browser_waits.py",  # browser tests wait for states
    "test_skip_policy.py",  # CI fails on an unexpected skip
    "test_photo_sample.py",  # the generated photo sample the end-to-end tests use
    "test_mutations_table.py",  # bench/mutations.py names code and tests that exist
    "test_docs_paths.py",  # paths named in the docs exist (issue 37 D3 adds it)
})


def suite_files() -> list[Path]:
    """Every test module, relative to tests/."""
    return sorted(p.relative_to(TESTS) for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def test_every_test_is_in_a_tier_folder_or_guards_the_suite():
    misplaced = [str(p) for p in suite_files()
                 if not (len(p.parts) == 1 and p.name in GUARDS) and p.parts[0] not in {"unit", *TIER_MARKERS}]
    assert not misplaced, ("put these in tests/unit/<folder of interactive_ir>/, tests/integration/, tests/system/ "
                           f"or tests/browser/ (see tests/conftest.py): {misplaced}")


def test_unit_folders_mirror_the_package():
    folders = {p.parts[1] for p in suite_files() if p.parts[0] == "unit" and len(p.parts) > 2}
    package = {p.name for p in (ROOT / "interactive_ir").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders and not folders - package, f"tests/unit/ folders that name no package folder: {folders - package}"
    assert all(len(p.parts) <= 3 for p in suite_files() if p.parts[0] == "unit"), "tests/unit/<folder>/test_x.py"


def test_test_module_names_are_unique():
    twice = [name for name, n in Counter(p.name for p in suite_files()).items() if n > 1]
    assert not twice, f"test modules import each other by name: these names are taken twice: {twice}"


def test_the_folder_gives_the_marker():
    assert tier_of(TESTS / "browser" / "test_x_browser.py") == "browser"
    assert tier_of(TESTS / "system" / "test_replicas.py") == "system"
    assert tier_of(TESTS / "integration" / "test_x.py") == "integration"
    assert tier_of(TESTS / "unit" / "ui" / "test_x.py") is None and tier_of(TESTS / "test_x.py") is None
    assert tier_of(ROOT / "bench" / "soak.py") is None


def test_the_fast_command_selects_no_browser_system_or_integration_test():
    tiers = [str(TESTS / t) for t in TIER_MARKERS]
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", FAST,
                        *tiers], cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 5, out[-3000:]  # pytest's "no tests collected": every one deselected
    deselected = re.search(r"(\d+) deselected", out)
    assert deselected and int(deselected.group(1)) > 0, out[-3000:]


def test_the_app_process_is_started_in_one_place():
    starts = [str(p) for p in suite_files() + [Path("browser/conftest.py")]
              if re.search(r"Popen\(\s*\[sys\.executable,\s*str\([^)]*\"app\.py\"", (TESTS / p).read_text())]
    assert not starts, f"start the app with tests/app_server.py (app_process, start_app): {starts}"
