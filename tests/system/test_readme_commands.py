"""Every command on the README's first screen runs (issue 39), as a dry run where the real one takes minutes or
serves forever: `pip install X` as `pip install --dry-run X` (the requirement files resolve against the installed
packages: one missing from the environment makes pip want to install it, and the test says which),
`python scripts/install.py` as its `--dry-run`, each pip command it prints then as `pip install --dry-run`, `python app.py`
as `python app.py --help`, `python -m pytest ...` as `--collect-only`, a script as `--help`, and `apt-get install
PKG` as "PKG is installed" (.ci/run installs it). A command of another shape fails the test until it is mapped
here. CI runs the README's test command itself, from the README's text (`.ci/run`, scripts/readme_commands.py)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import readme_commands  # noqa: E402

COMMANDS = readme_commands.commands((ROOT / "README.md").read_text(encoding="utf-8"))
PARTS = sorted({p.strip() for c in COMMANDS for p in c.split("&&")})


def test_the_first_screen_names_its_commands():
    assert any(c.endswith("python app.py") for c in COMMANDS), COMMANDS
    assert any(c.endswith("python -m pytest") for c in COMMANDS), COMMANDS
    fast = [c for c in COMMANDS if c.startswith("python -m pytest -m ")]
    assert fast and all("not browser" in c and "not system" in c and "not integration" in c for c in fast), fast


def _run(argv: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _pip_would_install_nothing(args: list[str], part: str) -> None:
    r = _run([sys.executable, "-m", "pip", "install", "--dry-run", "--disable-pip-version-check", *args])
    assert r.returncode == 0, r.stderr[-2000:]
    wanted = re.findall(r"Would install (.*)", r.stdout)
    assert not wanted, f"`{part}` would install what this environment lacks: {wanted}"


@pytest.mark.parametrize("part", PARTS)
def test_each_command_of_the_first_screen_runs(part):
    argv = shlex.split(part)
    if argv[:2] == ["pip", "install"]:
        _pip_would_install_nothing(argv[2:], part)
    elif argv[:2] == ["python", "scripts/install.py"]:
        r = _run([sys.executable, *argv[1:], "--dry-run"], timeout=60)
        pips = [shlex.split(line.strip()[2:]) for line in r.stdout.splitlines() if line.strip().startswith("$ ")]
        assert r.returncode == 0 and pips, r.stdout[-2000:] + r.stderr[-2000:]
        for pip in pips:
            assert pip[:4] == [sys.executable, "-m", "pip", "install"], pip
            _pip_would_install_nothing(pip[4:], f"{part} ({shlex.join(pip[4:])})")
    elif argv[:2] == ["apt-get", "install"]:
        missing = [p for p in argv[2:] if not p.startswith("-") and shutil.which(p) is None]
        assert not missing, f"`{part}`: {missing} not installed (apt-get install -y {' '.join(missing)})"
    elif argv == ["python", "app.py"]:
        r = _run([sys.executable, "app.py", "--help"], timeout=300)
        assert r.returncode == 0 and "--index" in r.stdout, r.stderr[-2000:]
    elif argv[:3] == ["python", "-m", "pytest"]:
        r = _run([sys.executable, "-m", "pytest", *argv[3:], "--collect-only", "-q", "-p", "no:cacheprovider"])
        assert r.returncode == 0 and re.search(r"\d+ tests? collected|\d+/\d+ tests collected", r.stdout), \
            r.stdout[-2000:] + r.stderr[-2000:]
    elif argv[0] == "python" and argv[1].endswith(".py"):
        r = _run([sys.executable, argv[1], "--help"], timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
    else:
        pytest.fail(f"no dry run for `{part}`: map its shape in {Path(__file__).name}")
