"""Browser tests wait for states (issue 31, items 6 and 8): no count read once in an assert (it passes or fails
by timing: `examples.count() == 3` read 0 in one of two runs), and no fixed sleep that stands in for waiting for
a state. A sleep that is the point (a click held, a span in which nothing may happen, polling a server) says so
with `# wait-ok: <why>` on its line."""

from __future__ import annotations

import re
from pathlib import Path

BROWSER = Path(__file__).resolve().parent / "browser"
COUNT_READ = re.compile(r"^\s*assert\b.*\.count\(\)")  # a locator's count (str.count("x") takes an argument)
SLEEP = re.compile(r"\b(?:wait_for_timeout|time\.sleep)\(")


def offences(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each assert on a count read once, and each sleep without `# wait-ok:`."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if COUNT_READ.match(code) or (SLEEP.search(code) and "# wait-ok:" not in line):
            out.append((n, line.strip()))
    return out


def test_the_rule_catches_what_the_suite_had():
    old = ('    examples = page.locator("#iir-results .iir-example")\n    assert examples.count() == 3\n'
           '    page.wait_for_timeout(500)  # let the layout settle\n'
           '    assert app.dialogue().count("You:") == 2\n    time.sleep(0.3)  # wait-ok: polling\n')
    assert [n for n, _ in offences(old)] == [2, 3]


def test_browser_tests_wait_for_states():
    found = {f.name: offences(f.read_text()) for f in sorted(BROWSER.glob("*.py"))}
    found = {k: v for k, v in found.items() if v}
    assert not found, "use expect(...).to_have_count / to_be_visible, or say why with # wait-ok:\n" + "\n".join(
        f"{name}:{n}: {line}" for name, v in found.items() for n, line in v)
