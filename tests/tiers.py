"""The suite's tiers are folders, and each folder gives its tests a marker (tests/conftest.py adds it at collection).

`unit/<folder>/` mirrors `interactive_ir/<folder>/` (a test of a root module such as engine.py or config.py sits
in `unit/` itself) and has no marker: it is the fast tier. `integration/` runs real offline models, `system/`
runs the app as processes (replicas behind nginx, soaks, the benchmark scripts' smoke runs), `browser/` drives
the page in Chromium. The tests in `tests/` itself guard the suite and the repository.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
TIER_MARKERS = {"integration": "integration", "system": "system", "browser": "browser"}  # tier folder: its marker


def tier_of(path: Path) -> str | None:
    """The marker a test file gets from its tier folder (None in unit/, in tests/ itself and outside tests/)."""
    try:
        first = Path(path).resolve().relative_to(TESTS).parts[0]
    except ValueError:
        return None
    return TIER_MARKERS.get(first)


def folders_with_tests() -> list[Path]:
    """The folders under tests/ that hold test modules (tests/ itself left out)."""
    return sorted({p.parent for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts} - {TESTS})
