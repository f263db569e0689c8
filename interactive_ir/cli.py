"""Command line: `python -m interactive_ir <command> ...`.

Each sub-command lives in its own module under `interactive_ir.commands` with two functions:
`add_arguments(parser)` and `run(args) -> int`. Modules are imported only when their command runs
(and for `--help`), so `python -m interactive_ir models` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys

from interactive_ir import __version__
from interactive_ir.errors import IIRError

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
    "index": ("interactive_ir.commands.index_cmd", "build or update an index of an image folder"),
    "search": ("interactive_ir.commands.search_cmd", "search an index by text, image, or both"),
    "chat": ("interactive_ir.commands.chat_cmd", "interactive search in the terminal"),
    "eval": ("interactive_ir.commands.eval_cmd", "run simulated users over a queries file"),
    "metrics": ("interactive_ir.commands.metrics_cmd", "compute retrieval metrics from a ranks file"),
    "study": ("interactive_ir.commands.study_cmd", "export and analyse user-study logs"),
    "models": ("interactive_ir.commands.models_cmd", "list the model backends and their spec strings"),
    "modes": ("interactive_ir.commands.modes_cmd", "list the ways of searching and their methods (the mode table)"),
    "queries": ("interactive_ir.commands.queries_cmd", "make a queries file from a captions file"),
    "reproduce": ("interactive_ir.commands.reproduce_cmd", "run a paper's evaluation on its data, beside its figures"),
    "config": ("interactive_ir.commands.config_cmd", "print every setting: environment variable, default, value"),
}


# Libraries whose INFO lines (model paths, HTTP requests) and progress bars (weight loading) surround a command's
# own output: WARNING and up only, and no bars, unless -v.
THIRD_PARTIES = ("faiss", "faiss.loader", "sentence_transformers", "transformers", "httpx", "httpcore", "urllib3",
                 "huggingface_hub", "filelock", "PIL", "matplotlib", "open_clip")
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error",
             "TOKENIZERS_PARALLELISM": "false"}  # set unless the environment sets them (no -v)


def quiet_third_parties(verbose: bool) -> None:
    """Third-party chatter off on the command line unless `verbose` (-v); faiss's loader line is off always."""
    logging.getLogger("faiss").setLevel(logging.WARNING)
    if verbose:
        return
    for name in THIRD_PARTIES:
        if name != "root":
            logging.getLogger(name).setLevel(logging.WARNING)
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


MAX_ERROR = 300  # characters of an argparse error line (a flag's value is echoed in it: never a megabyte)
UNEXPECTED = "unexpected error"  # the start of the one line an exception that is not the project's own ends in


LONG_WORD = re.compile(r"\S{161,}")  # a run of over 160 characters without a space (longer than a path): an echo


def one_line(text: str, limit: int = 1000) -> str:
    """`text` as one line for stderr: whitespace collapsed, a value it echoes cut to 80 characters, the whole to
    `limit` characters."""
    text = LONG_WORD.sub(lambda m: m.group(0)[:80] + "...", " ".join(str(text).split()))
    return text if len(text) <= limit else f"{text[:limit]}..."


class Parser(argparse.ArgumentParser):
    """argparse's parser, its error one line (no usage block: `-h` shows it), cut to `MAX_ERROR` characters (a
    value given is echoed in it); exit status 2, as argparse's."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message, MAX_ERROR)} (see {self.prog} -h)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = Parser(prog="python -m interactive_ir", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"interactive_ir {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or only == name:
            try:
                mod = importlib.import_module(module)
            except ModuleNotFoundError as e:
                if e.name != module:
                    raise
                continue
            mod.add_arguments(p)
            p.set_defaults(_module=mod)
    return parser


def _redact_log() -> None:
    """Every line of the log through `redact.redact_text` (a library's URL never shows a password)."""
    from interactive_ir.backends.redact import RedactSecrets

    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    only = next((a for a in argv if a in COMMANDS), None)
    parser = build_parser(only)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    quiet_third_parties(args.verbose)
    _redact_log()
    if not args.command:
        parser.print_help()
        return 2
    mod = getattr(args, "_module", None)
    if mod is None:
        print(f"error: the {args.command!r} command is not available in this version", file=sys.stderr)
        return 2
    try:
        return int(mod.run(args) or 0)
    except IIRError as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug, or a failure no check foresaw: one line, the traceback with -v
        if args.verbose:
            raise
        print(f"error: {UNEXPECTED} ({type(e).__name__}: {one_line(e, 200)}); run with -v for the details",
              file=sys.stderr)
        return 1
