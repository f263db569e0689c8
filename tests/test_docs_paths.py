"""Every repository path named in the docs, the README, the benchmarks' pages and the docstrings exists.

What counts as a path: a Markdown link's target (relative to the page, its `#anchor` checked against the
target page's headings), and, in inline code spans and in plain text, a word with a `/` that starts at one of
the repository's own top-level entries (`interactive_ir/`, `tests/`, `bench/`, `docs/`, `app.py`, ...) or, in
the package's docstrings and the docs, at one of the package's folders (`ui/serving/files.py` is
`interactive_ir/ui/serving/files.py`). Not paths: URLs, globs, placeholders (`DIR`, `USER/NAME`, `<id>`),
commands' example outputs (`indices/mine`, `runs/...`), and anything inside fenced code blocks (examples).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "interactive_ir"

# the repository's own top-level entries that a path may start at (`indices/` holds built indices: an
# example's output, not a file of the repository)
ROOTS = ("interactive_ir", "tests", "bench", "docs", "scripts", "assets", "deploy", ".ci", "app.py",
         "README.md", "requirements.txt", "requirements-test.txt", "pyproject.toml")
SUFFIXES = (".py", ".md", ".json", ".jsonl", ".yaml", ".yml", ".txt", ".sh", ".conf", ".png", ".toml",
            ".csv", ".html", ".cfg", ".ini", ".js", ".css")
WORD = re.compile(r"(?<![\w./~$<-])((?:\.ci|[A-Za-z_][\w-]*)(?:/[\w.-]+)+/?)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def package_folders() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.M)}


def is_placeholder(path: str) -> bool:
    return (any(c in path for c in "*?[]{}<>$") or "..." in path
            or any(re.fullmatch(r"[A-Z][A-Z0-9_]*|[\d.]+", seg) for seg in path.split("/")))  # DIR, USER/NAME, x/0.1


def candidates(text: str, package_relative: bool) -> list[str]:
    """Repository paths named in `text` (inline code and plain words; fenced blocks and links left out)."""
    text = LINK.sub(" ", FENCE.sub("", text))
    roots = ROOTS + (package_folders() if package_relative else ())
    found = []
    for chunk in [*CODE_SPAN.findall(text), CODE_SPAN.sub(" ", text)]:
        for m in WORD.finditer(chunk):
            if chunk[m.end():m.end() + 1] in tuple("*?<>{[$"):  # a glob or a placeholder goes on
                continue
            word = m.group(1).rstrip(".")
            head, last = word.split("/", 1)[0], word.rstrip("/").rsplit("/", 1)[-1]
            if head not in roots or is_placeholder(word):
                continue
            if "." in last and not last.endswith(SUFFIXES):  # a module's attribute: ui/step_threads.StepThreads
                word = word[: len(word) - len(last)] + last.split(".", 1)[0] + ".py"
            if word.endswith("/") or word.endswith(SUFFIXES) or "/" in word.rstrip("/"):
                found.append(word)
    return found


def resolve(word: str) -> Path:
    """A named path at the repository root, else in the package (`ui/render.py`)."""
    at_root = ROOT / word
    return at_root if at_root.exists() or word.split("/", 1)[0] in ROOTS else PACKAGE / word


def missing_paths(text: str, package_relative: bool) -> list[str]:
    out = []
    for word in candidates(text, package_relative):
        path = resolve(word)
        if not path.exists():
            out.append(word)
    return out


def broken_links(page: Path) -> list[str]:
    """Links of a Markdown page whose file (relative to the page) or `#anchor` does not exist."""
    out = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target) or is_placeholder(target):
            continue
        file, _, frag = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            out.append(target)
        elif frag and dest.suffix == ".md" and frag not in anchors(dest):
            out.append(target)
    return out


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def docstrings(source: str) -> list[str]:
    tree = ast.parse(source)
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef))]
    return [d for d in (ast.get_docstring(n, clean=False) for n in nodes) if d]


# --- the checker itself ----------------------------------------------------------------------------------
def test_a_missing_path_is_found_and_examples_are_not():
    text = ("See `interactive_ir/engine.py`, `ui/render.py` and interactive_ir/no_such_module.py; also\n"
            "`docs/nowhere.md`, bench/README.md. Not paths: `indices/mine`, `USER/NAME`, `runs/f8k/index`,\n"
            "`tests/test_*.py`, https://example.org/interactive_ir/x.py, `~/Pictures`, ../shared/data,\n"
            "interactive_ir/0.1 (a version), `ui/render.Renderer` (an attribute of ui/render.py).\n"
            "```bash\npython -m interactive_ir index --images scripts/nothing_here.py\n```\n")
    assert sorted(missing_paths(text, package_relative=True)) == ["docs/nowhere.md", "interactive_ir/no_such_module.py"]
    assert "ui/render.py" in candidates(text, package_relative=True)
    assert "ui/render.py" not in candidates(text, package_relative=False)


def test_being_created_paths_are_allowed_and_nothing_else():
    assert missing_paths("`interactive_ir/assembly/` and `modes/belief/`", package_relative=True) == []
    assert missing_paths("`interactive_ir/assembled/`", package_relative=True) == ["interactive_ir/assembled/"]


def test_a_link_to_a_missing_page_or_heading_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# A page\n\n## Some heading\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#some-heading) [bad](a.md#other) [gone](c.md) [web](https://x.org/c.md) [self](#b)\n\n# B\n")
    assert broken_links(page) == ["a.md#other", "c.md"]


# --- the repository --------------------------------------------------------------------------------------
def test_every_path_named_in_the_docs_exists():
    missing = {f"{p.relative_to(ROOT)}: {w}" for p in doc_pages() for w in missing_paths(p.read_text(encoding="utf-8"), True)}
    assert not missing, "named in the docs, but not in the repository:\n" + "\n".join(sorted(missing))


def test_every_link_of_the_docs_resolves():
    broken = {f"{p.relative_to(ROOT)}: {t}" for p in doc_pages() for t in broken_links(p)}
    assert not broken, "links that lead nowhere:\n" + "\n".join(sorted(broken))


def test_every_path_named_in_a_docstring_exists():
    """The package's docstrings, and those of `app.py`, the benchmarks and the scripts."""
    missing = set()
    for py in [*sorted(PACKAGE.rglob("*.py")), ROOT / "app.py", *sorted((ROOT / "bench").glob("*.py")),
               *sorted((ROOT / "scripts").glob("*.py"))]:
        for doc in docstrings(py.read_text(encoding="utf-8")):
            missing |= {f"{py.relative_to(ROOT)}: {w}" for w in missing_paths(doc, package_relative=True)}
    assert not missing, "named in a docstring, but not in the repository:\n" + "\n".join(sorted(missing))


def test_the_docs_are_read():
    """The checks above read something: the pages exist and name paths."""
    pages = doc_pages()
    assert all(p.exists() for p in pages) and len(pages) > 10
    assert len([w for p in pages for w in candidates(p.read_text(encoding="utf-8"), True)]) > 100
