"""bench/mutations.py stays runnable: every mutation's text is still in its file exactly once (a refactor
that moves the code must move the mutation too), and each names tests that exist."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from mutations import MUTATIONS  # noqa: E402


def test_every_mutation_applies_once_and_names_existing_tests():
    assert len(MUTATIONS) >= 25 and len({m.name for m in MUTATIONS}) == len(MUTATIONS)
    for m in MUTATIONS:
        text = (ROOT / m.path).read_text(encoding="utf-8")
        assert text.count(m.old) == 1, (m.name, m.path)
        assert m.old != m.new
        files = [t for t in m.tests if t.startswith("tests/")]
        assert files and all((ROOT / f).is_file() for f in files), m.name
