"""The commands on the README's first screen, as written there: CI runs the test command from here (`.ci/run`),
so what the README tells a new user to type is what CI types, and tests/system/test_readme_commands.py runs a dry
run of each of them.

    python scripts/readme_commands.py tests   # the "Set up and run the tests" command (one line)
    python scripts/readme_commands.py app     # the "Set up and run the app" command
    python scripts/readme_commands.py all     # every command of the first screen, one per line

The first screen is the README up to its first `## ` heading after the title; its commands are the ```bash blocks
and the inline `python ...`, `pip ...` and `apt-get ...` commands of its text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = {"app": "**Set up and run the app**", "tests": "**Set up and run the tests:**"}  # name: the text above
INLINE = re.compile(r"`((?:python|pip|apt-get) [^`]+)`")  # a command in the text, e.g. `python -m pytest -m "..."`


def first_screen(text: str) -> str:
    """The README from its title to its second `## ` heading (the front matter and title included)."""
    start = text.find("\n# ")
    end = text.find("\n## ", start + 1)
    return text[start: end if end > 0 else len(text)]


def block_after(text: str, heading: str) -> str:
    """The command of the first ```bash block after `heading` (its lines joined); ValueError when there is none."""
    at = text.find(heading)
    match = re.compile(r"```bash\n(.*?)```", re.S).search(text, at) if at >= 0 else None
    if match is None:
        raise ValueError(f"README.md has no ```bash block after {heading!r}")
    return " ".join(line.strip() for line in match.group(1).strip().splitlines())


def commands(text: str) -> list[str]:
    """Every command of the first screen: the blocks' (in BLOCKS' order), then the inline ones, each once."""
    screen = first_screen(text)
    found = [block_after(screen, h) for h in BLOCKS.values()]
    prose = re.sub(r"```bash\n.*?```", "", screen, flags=re.S)
    for m in INLINE.finditer(prose.replace("\n", " ")):
        cmd = re.sub(r"\s+", " ", m.group(1)).strip()
        if cmd not in found:
            found.append(cmd)
    return found


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "tests"
    text = README.read_text(encoding="utf-8")
    if which == "all":
        print("\n".join(commands(text)))
    elif which in BLOCKS:
        print(block_after(first_screen(text), BLOCKS[which]))
    else:
        print(f"usage: readme_commands.py [{' | '.join(BLOCKS)} | all]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
