"""The layout the README states, checked from the code: every module of `interactive_ir/` (and `app.py`) is read
with `ast`, imports inside functions counted as much as those at the top, and

- no module imports a module of a higher layer than its own (`LAYERS`, highest first);
- the README's code map (the table under `## The code`) lists the layers in the same order;
- no modules import each other in a circle;
- no function or method is over 80 lines.

Nothing is imported or run: a layer with no files yet (a folder another change is creating) is accepted."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "interactive_ir"
MAX_FUNCTION_LINES = 80

# The layers, highest first: a module may import its own layer and those below it. A layer is the paths it holds
# (a folder ends with "/"). cli.py dispatches to commands/ by name (`importlib`), so the code ties it to nothing
# above errors.py: it sits with backends/, as the README's code map has it; __main__.py only calls cli.main.
LAYERS: list[tuple[str, ...]] = [
    ("app.py", "interactive_ir/commands/"),
    ("interactive_ir/study/",),
    ("interactive_ir/ui/",),
    ("interactive_ir/evaluation/",),
    ("interactive_ir/assembly/",),
    ("interactive_ir/engine.py",),
    ("interactive_ir/modes/",),
    ("interactive_ir/core/",),
    ("interactive_ir/retrieval/",),
    ("interactive_ir/index/",),
    ("interactive_ir/backends/", "interactive_ir/cli.py", "interactive_ir/__main__.py"),
    ("interactive_ir/config.py", "interactive_ir/errors.py", "interactive_ir/types.py", "interactive_ir/__init__.py"),
]


# --- reading the code -------------------------------------------------------------------------------------------
def source_files(root: Path = ROOT) -> list[Path]:
    """app.py and every module of the package, as paths relative to `root`."""
    files = sorted(p.relative_to(root) for p in (root / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts)
    return ([Path("app.py")] if (root / "app.py").is_file() else []) + files


def module_name(path: Path) -> str:
    """interactive_ir/ui/events.py -> interactive_ir.ui.events; a package's __init__.py is the package."""
    parts = list(path.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.AST, this: str, is_package: bool) -> set[tuple[str, str | None]]:
    """(module, name) for each name an import anywhere in `tree` binds: `import a.b` gives ("a.b", None), `from a
    import b` gives ("a", "b"); relative imports are made absolute against the module `this`."""
    names: set[tuple[str, str | None]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = this.split(".") if is_package else this.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join(here + ([node.module] if node.module else []))
            names.update((base, alias.name) for alias in node.names)
    return names


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{file: the files of the package it imports}, all as paths relative to `root`. `from a import b` imports
    the module a.b where there is one, else a name of a (the nearest module that holds it: a package's name
    counts as its __init__.py)."""
    files = source_files(root)
    by_module = {module_name(f): f.as_posix() for f in files}
    graph: dict[str, set[str]] = {}
    for f in files:
        tree = ast.parse((root / f).read_text(encoding="utf-8"), filename=str(f))
        targets = set()
        for base, name in imported_names(tree, module_name(f), f.name == "__init__.py"):
            if name is not None and f"{base}.{name}" in by_module:
                targets.add(by_module[f"{base}.{name}"])
                continue
            parts = base.split(".")
            while parts and ".".join(parts) not in by_module:
                parts.pop()
            if parts:
                targets.add(by_module[".".join(parts)])
        graph[f.as_posix()] = targets - {f.as_posix()}
    return graph


def layer_of(path: str, layers: list[tuple[str, ...]] = LAYERS) -> int | None:
    """The index in `layers` of the entry that holds `path` (the longest matching entry wins)."""
    best: tuple[int, int] | None = None
    for i, entries in enumerate(layers):
        for entry in entries:
            if path == entry or (entry.endswith("/") and path.startswith(entry)):
                if best is None or len(entry) > best[1]:
                    best = (i, len(entry))
    return None if best is None else best[0]


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def long_functions(root: Path = ROOT, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """'path:line name (N lines)' for each function or method longer than `limit` lines (decorators not counted)."""
    out = []
    for f in source_files(root):
        tree = ast.parse((root / f).read_text(encoding="utf-8"), filename=str(f))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append(f"{f.as_posix()}:{node.lineno} {node.name} ({n} lines)")
    return out


def readme_layers(text: str) -> list[list[str]]:
    """The paths in backticks of the first column of each row of the first table under `## The code`, in order,
    written from the repository root (`study/` in a row is `interactive_ir/study/`). Other columns are ignored."""
    section = re.split(r"^## The code[^\n]*\n", text, maxsplit=1, flags=re.M)
    if len(section) < 2:
        return []
    body = re.split(r"^## ", section[1], maxsplit=1, flags=re.M)[0]
    rows: list[list[str]] = []
    for line in body.splitlines():
        if not line.lstrip().startswith("|"):
            if rows:
                break  # the table ended
            continue
        first = line.strip().strip("|").split("|")[0]
        paths = re.findall(r"`([^`]+)`", first)
        if paths:  # the header and the |---| line name no path
            rows.append([p if p.startswith(f"{PACKAGE}/") or p == "app.py" else f"{PACKAGE}/{p}" for p in paths])
    return rows


def exists(entry: str, root: Path = ROOT) -> bool:
    return (root / entry).is_dir() if entry.endswith("/") else (root / entry).is_file()


# --- the checks on the code ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_every_module_has_a_layer(graph):
    assert not [f for f in graph if layer_of(f) is None], "add the new folder or module to LAYERS (and the README)"


def test_no_module_imports_a_higher_layer(graph):
    upward = [f"{f} (layer {layer_of(f)}) imports {t} (layer {layer_of(t)})"
              for f, targets in sorted(graph.items()) for t in sorted(targets)
              if layer_of(f) is not None and layer_of(t) is not None and layer_of(t) < layer_of(f)]
    assert not upward, "\n".join(upward)


def test_no_import_cycle(graph):
    found = [sorted(c) for c in cycles(graph)]
    assert not found, f"modules that import each other (function-level imports counted): {found}"


def test_no_function_is_over_80_lines():
    assert not long_functions(), "\n".join(long_functions())


def test_the_readme_code_map_lists_the_layers_highest_first():
    rows = readme_layers((ROOT / "README.md").read_text(encoding="utf-8"))
    assert rows, "README.md has no table under `## The code`"
    where = [{layer_of(p) for p in row} for row in rows]
    assert all(len(w) == 1 and None not in w for w in where), \
        f"each row names paths of one layer of LAYERS: {list(zip(rows, where, strict=True))}"
    order = [w.pop() for w in where]
    assert order == sorted(set(order)), f"the README's rows are not in the layers' order (highest first): {rows}"
    present = [i for i, entries in enumerate(LAYERS) if any(exists(e) for e in entries)]
    missing = [LAYERS[i] for i in present if i not in order]
    assert not missing, f"layers with code that the README's code map leaves out: {missing}"


# --- the checker itself, on made-up code ---------------------------------------------------------------------------
def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_graph_counts_imports_inside_functions_and_relative_ones(tmp_path):
    root = _tree(tmp_path, {
        "interactive_ir/__init__.py": "",
        "interactive_ir/ui/__init__.py": "def build_demo():\n    pass\n",
        "interactive_ir/ui/events.py": "def f():\n    from interactive_ir.engine import Engine\n",
        "interactive_ir/ui/page.py": "from . import events\nfrom interactive_ir.ui import build_demo\n",
        "interactive_ir/engine.py": "import interactive_ir.errors\n",
        "interactive_ir/errors.py": "import os\n"})
    g = import_graph(root)
    assert g["interactive_ir/ui/events.py"] == {"interactive_ir/engine.py"}
    assert g["interactive_ir/ui/page.py"] == {"interactive_ir/ui/events.py", "interactive_ir/ui/__init__.py"}
    assert imported_names(ast.parse("from .. import x"), "interactive_ir.ui.page", False) == {("interactive_ir", "x")}
    assert g["interactive_ir/engine.py"] == {"interactive_ir/errors.py"} and g["interactive_ir/errors.py"] == set()


def test_the_checker_finds_a_circle_an_upward_import_and_a_long_function(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layer_of("interactive_ir/ui/events.py") < layer_of("interactive_ir/engine.py") < layer_of(
        "interactive_ir/errors.py")
    assert layer_of("interactive_ir/modes/belief/mode.py") == layer_of("interactive_ir/modes/registry.py")
    assert layer_of("interactive_ir/nowhere.py") is None
    body = "".join(f"    x = {i}\n" for i in range(MAX_FUNCTION_LINES))
    root = _tree(tmp_path, {"interactive_ir/__init__.py": "", "interactive_ir/m.py": f"def long():\n{body}"})
    assert long_functions(root) == [f"interactive_ir/m.py:1 long ({MAX_FUNCTION_LINES + 1} lines)"]
    assert long_functions(root, limit=MAX_FUNCTION_LINES + 1) == []


def test_the_readme_parser_reads_the_first_column_of_the_code_map():
    text = ("# x\n## The code\n\nSome words.\n\n| folder | what | more |\n|---|---|---|\n"
            "| `app.py`, `interactive_ir/commands/` | the entries | a |\n| `study/` | studies (`flow/`) | b |\n"
            "| `config.py`, `errors.py` | settings | c |\n\nAfter `ui/` the table.\n\n## Next\n| `ui/` | x |\n")
    assert readme_layers(text) == [["app.py", "interactive_ir/commands/"], ["interactive_ir/study/"],
                                   ["interactive_ir/config.py", "interactive_ir/errors.py"]]
    assert readme_layers("# no code map\n") == []
