"""`python -m interactive_ir modes [--markdown]`: the mode table, every way of searching and its methods.

Read from `interactive_ir.modes.registry`; `--markdown` prints the block the README carries between
`<!-- modes:begin -->` and `<!-- modes:end -->` (tests/unit/modes/test_modes_registry.py fails when they differ).
"""

from __future__ import annotations

import argparse

MODE_COLUMNS = ("mode", "on the page", "what it does", "settings", "auto: with an LLM / without")
METHOD_COLUMNS = ("mode", "method", "on the page", "what it does", "needs", "eval --protocol")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown (the README's block)")


def mode_rows() -> list[tuple[str, ...]]:
    from interactive_ir.modes import registry

    return [(m.name, m.label, m.description,
             (f"{m.config.__name__} ({m.section})" if m.section else m.config.__name__) if m.config is not None
             else "the engine's",
             f"{m.best} / {m.plain}" if m.best or m.plain else "-")
            for m in registry.modes()]


def method_rows() -> list[tuple[str, ...]]:
    from interactive_ir.modes import registry

    rows = []
    for mode in registry.modes():
        for kind, entries in (("", mode.methods), (" (questioner)", mode.questioners)):
            for m in entries:
                needs = ", ".join(n for n, yes in (("LLM", m.needs_llm), ("VLM", m.needs_vlm)) if yes) or "-"
                rows.append((mode.name + kind, m.name, m.label, m.description, needs, m.protocol or "-"))
    return rows


def markdown() -> str:
    """Both tables as Markdown, names in backticks."""
    def table(columns, rows, code: tuple[int, ...]) -> list[str]:
        out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for row in rows:
            cells = [f"`{c}`" if i in code and c != "-" else c.replace("|", "\\|") for i, c in enumerate(row)]
            out.append("| " + " | ".join(cells) + " |")
        return out

    return "\n".join([*table(MODE_COLUMNS, mode_rows(), (0,)), "",
                      *table(METHOD_COLUMNS, method_rows(), (1, 5))]) + "\n"


def text() -> str:
    """Both tables as aligned plain text."""
    def table(columns, rows) -> list[str]:
        widths = [max(len(str(r[i])) for r in (columns, *rows)) for i in range(len(columns))]
        return ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in (columns, *rows)]

    return "\n".join([*table(MODE_COLUMNS, mode_rows()), "", *table(METHOD_COLUMNS, method_rows())]) + "\n"


def run(args: argparse.Namespace) -> int:
    print(markdown() if args.markdown else text(), end="")
    return 0
