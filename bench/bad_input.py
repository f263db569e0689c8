"""Bad input, counted (issue 40 item 7): the page's HTTP API endpoints, every flag of the CLI's commands and of
app.py, and the files they read, each given values of the wrong type, size or range.

    python bench/bad_input.py                 # "X clean of Y" per surface and in all (about 2 minutes)
    python bench/bad_input.py --show 20       # and the first 20 cases that are not clean, with why

A case is clean when the input is refused in one line (or, where the value is fine, accepted): no exception out
of a handler or a command, nothing logged as an unexpected error, no message over 400 characters, no value echoed
past 80 characters, and a bad value never accepted silently. Run from a project root (the code under test is the
`interactive_ir` found there; the same script counts an older checkout: `cd OLD && python NEW/bench/bad_input.py`).
The page is driven in process (`demo.fns`: each endpoint's components' `preprocess`, then its function, as
Gradio's queue calls them), over a tiny index with the fake LLM; the CLI through `cli.main(argv)`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import io
import json
import logging
import os
import socket
import sys
import tempfile
import types
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path.cwd()
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
MAX_LINE = 1000  # characters of a one-line refusal (a list of the valid choices fits)
HUGE = "x" * 1_000_000  # a megabyte: never echoed
ECHO = "x" * 161  # an echo of HUGE well past 80 characters (a path of up to 160 is not cut)


@dataclass
class Case:
    surface: str  # "page", "cli", "app"
    name: str  # what was sent
    clean: bool
    why: str = ""


class _Errors(logging.Handler):
    """Collects ERROR records (an unexpected error logged with its traceback)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record):
        self.records.append(record.getMessage()[:200])


class _Failed(logging.Handler):
    """Collects eval's "query ... failed at round" warnings (a query its input broke; eval itself exits 0)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record):
        text = record.getMessage()
        if "failed at round" in text:
            self.records.append(text[:200])


# --- the page ------------------------------------------------------------------------------------------
PAGE_VALUES = [None, float("nan"), float("inf"), -float("inf"), "", HUGE, [1, 2], {"a": 1}, -1, 10**30, True, 1.5,
               "\x00\ud800", "../../../etc/passwd", '" Teen Wolf "', "[" * 5000]


def _label(v) -> str:
    r = repr(v)
    return r if len(r) <= 24 else f"{r[:16]}...({len(r)})"


def _files(tmp: Path) -> list:
    binary = tmp / "binary.json"
    binary.write_bytes(b"\x00\xff\xfe\x80" * 64)
    deep = tmp / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    nested = tmp / "nested.json"
    nested.write_text('{"turns": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return ["/dev/zero", "/etc/passwd", str(tmp), str(binary), str(deep), str(nested), str(tmp / "gone.json"), None]


def _request(params=None):
    return types.SimpleNamespace(headers={}, client=types.SimpleNamespace(host="127.0.0.1"), session_hash="probe",
                                 query_params=params or {}, username=None, cookies={}, request=None)


def _check_page(fn, args, state, errors: _Errors) -> str:
    """Why calling `fn(*args)` was not clean ("" when it was)."""
    errors.records.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn(*args)
            if inspect.isgenerator(out):
                for _ in zip(range(50), out):
                    pass
        except Exception as e:  # what Gradio would log with a traceback
            return f"{type(e).__name__}: {str(e)[:120]}"
    if errors.records:
        return f"logged: {errors.records[0]}"
    notice = str(getattr(state, "notice", "") or "")
    if len(notice) > MAX_LINE or "\n" in notice.strip() or ECHO in notice:
        return f"notice of {len(notice)} characters"
    for w in caught:
        text = str(w.message)
        if len(text) > MAX_LINE or ECHO in text:
            return f"warning of {len(text)} characters"
    return ""


def _preprocess(comp, value) -> tuple[bool, object, str]:
    """(passed, value for the function, why not clean) of Gradio's `preprocess` of `value`."""
    import gradio as gr

    try:
        return True, comp.preprocess(value), ""
    except gr.Error as e:
        text = str(e)
        if len(text) > MAX_LINE or ECHO in text or "\n" in text.strip():
            return False, None, f"gr.Error of {len(text)} characters"
        return False, None, ""
    except Exception as e:
        return False, None, f"preprocess {type(e).__name__}: {str(e)[:100]}"


def page_cases(tmp: Path) -> list[Case]:
    import gradio as gr
    from iir_testutils import build_dated, query_modes

    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import build_demo, handlers
    from interactive_ir.ui.state import UIState

    os.environ.setdefault("IIR_CACHE_DIR", str(tmp / "cache"))
    r, _ = build_dated(tmp / "page")
    engine = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=6, fold_similarity=0), belief=query_modes())
    demo = build_demo(engine, [])
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    files = _files(tmp)
    out: list[Case] = []
    fns = demo.fns.values() if isinstance(demo.fns, dict) else demo.fns
    for bf in fns:
        if bf.fn is None or not bf.inputs or not isinstance(bf.inputs[0], gr.State):
            continue
        name = str(bf.api_name) if bf.api_name not in (None, False) else getattr(bf.fn, "__name__", "?")
        params = list(inspect.signature(bf.fn).parameters.values())[len(bf.inputs):]
        kinds = ["evt" if "EventData" in str(p.annotation) else "req" if "Request" in str(p.annotation) else "?"
                 for p in params]
        slots = [(i, c) for i, c in enumerate(bf.inputs) if i > 0]
        plans = [(i, v) for i, c in slots for v in (files if isinstance(c, (gr.File, gr.UploadButton, gr.Image))
                                                   else PAGE_VALUES)]
        if "evt" in kinds:
            plans += [("evt", v) for v in PAGE_VALUES]
            plans += [("evt", {"index": v, "action": v, "id": v, "question": v}) for v in PAGE_VALUES]
        if getattr(bf.fn, "__name__", "") == "on_shared_link":
            plans += [("req", {"q": "a red dog", "rounds": v}) for v in PAGE_VALUES if isinstance(v, str)]
            plans += [("req", {"q": v}) for v in PAGE_VALUES if isinstance(v, str) and v]
        for slot, value in plans:
            state = handlers.start(engine, UIState(), "a red dog on the beach")
            args = [state]
            why = ""
            for i, comp in slots:
                v = value if slot == i else getattr(comp, "value", None)
                if isinstance(comp, (gr.File, gr.UploadButton, gr.Image)):
                    args.append(v if slot == i else None)  # a path, as Gradio hands a file on
                    continue
                ok, pv, why = _preprocess(comp, v)
                if not ok:
                    break
                args.append(pv)
            else:
                for k in kinds:
                    if k == "evt":
                        args.append(types.SimpleNamespace(_data=value if slot == "evt" else {}, target=None))
                    elif k == "req":
                        args.append(_request(value if slot == "req" else None))
                    else:
                        args.append(None)
                why = _check_page(bf.fn, args, state, errors)
            out.append(Case("page", f"{name}[{slot}]={_label(value)}", not why, why))
    logging.getLogger().removeHandler(errors)
    return out


# --- the command line ----------------------------------------------------------------------------------
BAD_NUMBERS = ["-1", "nan", "inf", "abc", "x" * 100_000, ""]
EXTRA = {("index", "--workers"): ["1000000", "0"], ("index", "--chunk-rows"): ["0"], ("index", "--batch-size"): ["0"],
         ("index", "--fetch-workers"): ["0", "1000000"], ("search", "-k"): ["0"], ("eval", "-k"): ["0"],
         ("chat", "-k"): ["0"], ("eval", "--user-noise"): ["1.5"], ("eval", "--overlook"): ["2"],
         ("eval", "--relevance-overlap"): ["7"], ("search", "--tau"): ["5"], ("index", "--target-recall"): ["3"]}
NUMERIC = {
    "index": ["--chunk-rows", "--batch-size", "--workers", "--limit", "--fetch-workers", "--fetch-timeout",
              "--fetch-max-bytes", "--fetch-retries", "--fetch-backoff", "--fetch-max-side", "--target-recall"],
    "search": ["-k", "--tau"],
    "eval": ["--rounds", "--limit", "--seed", "-k", "--tau", "--relevant-n", "--relevance-overlap",
             "--torch-threads", "--search-threads", "--user-noise", "--overlook"],
    "chat": ["-k", "--n-candidates", "--clusters", "--questions"],
    "metrics": ["--n-images", "--rounds"],
    "queries": ["--limit", "--seed", "--frames-per-video"],
}
CHOICES = {"index": ["--kind"], "search": ["--method"], "eval": ["--protocol", "--rank-from", "--on-uncertain"],
           "chat": ["--method", "--questioner"]}


def _fixtures(tmp: Path) -> dict:
    from iir_testutils import build_tiny

    r, ids, caps = build_tiny(tmp / "cli")
    queries = tmp / "queries.jsonl"
    rows = [{"target": i, "description": caps[i][1], "captions": caps[i][:1]} for i in ids[:3]]
    rows.append({"target": ids[3], "description": 'a shirt that says " Teen Wolf " and ' + caps[ids[3]][1],
                 "captions": caps[ids[3]][:1]})
    queries.write_text("\n".join(json.dumps(x) for x in rows) + "\n")
    ranks = tmp / "ranks.json"
    ranks.write_text('{"q": [3, 1]}')
    binary = tmp / "binary.bin"
    binary.write_bytes(b"\x00\xff\xfe\x80" * 64)
    deep = tmp / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    hf = tmp / "hfds"
    hf.mkdir()
    for i in ids[:3]:
        (hf / Path(i).name).write_bytes((tmp / "cli" / "images" / i).read_bytes())
    (hf / "metadata.csv").write_text("file_name,text\n" + "".join(f"{Path(i).name},{caps[i][0]}\n" for i in ids[:3]))
    return {"index": str(tmp / "cli" / "index"), "images": str(tmp / "cli" / "images"),
            "captions": str(tmp / "cli" / "captions.jsonl"), "queries": str(queries), "ranks": str(ranks),
            "binary": str(binary), "deep": str(deep), "tmp": str(tmp), "hf": str(hf)}


def _base(cmd: str, f: dict, n: int) -> list[str]:
    out = str(Path(f["tmp"]) / f"out{n}")
    return {
        "index": ["index", "--images", f["images"], "--out", out, "--embedder", "fake:8"],
        "search": ["search", "--index", f["index"], "--text", "a red dog"],
        "eval": ["eval", "--index", f["index"], "--queries", f["queries"], "--protocol", "closest", "--out", out,
                 "--rounds", "1", "--no-progress"],
        "chat": ["chat", "--index", f["index"], "--description", "a red dog"],
        "metrics": ["metrics", f["ranks"]],
        "queries": ["queries", "--captions", f["captions"], "--out-queries", out + ".jsonl"],
    }[cmd]


def _run_cli(argv: list[str], ok_is_clean: bool) -> str:
    """Why running `argv` was not clean ("" when it was)."""
    from interactive_ir.cli import main

    err, out = io.StringIO(), io.StringIO()
    code = None
    failed = _Failed()
    logging.getLogger().addHandler(failed)
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        old_in = sys.stdin
        sys.stdin = io.StringIO("")
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except Exception as e:
            return f"{type(e).__name__}: {str(e)[:120]}"
        finally:
            sys.stdin = old_in
            logging.getLogger().removeHandler(failed)
    text = err.getvalue()
    if failed.records:  # eval went on, but a query failed on its input (a description the parser refused)
        return f"a query failed: {failed.records[0]}"
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("usage:", " ", "INFO ", "WARNING "))]
    if "Traceback" in text:
        return "a traceback"
    if "unexpected error" in text:
        return f"unexpected: {lines[-1][:150] if lines else ''}"
    if code == 0:
        return "" if ok_is_clean else "accepted silently"
    if code not in (1, 2):
        return f"exit {code}"
    if len(lines) != 1:
        return f"{len(lines)} error lines: {' | '.join(lines)[:150]}"
    if len(lines[0]) > MAX_LINE or ECHO in lines[0]:
        return f"an error line of {len(lines[0])} characters"
    return ""


def cli_cases(tmp: Path) -> list[Case]:
    f = _fixtures(tmp)
    out: list[Case] = []
    n = 0

    def case(name, argv, ok_is_clean=False):
        nonlocal n
        n += 1
        why = _run_cli(argv, ok_is_clean)
        out.append(Case("cli", name, not why, why))

    for cmd, flags in NUMERIC.items():
        for flag in flags:
            for v in BAD_NUMBERS + EXTRA.get((cmd, flag), []):
                case(f"{cmd} {flag} {_label(v)}", _base(cmd, f, n) + [flag, v])
    for cmd, flags in CHOICES.items():
        for flag in flags:
            for v in ("nope", HUGE[:100_000]):
                case(f"{cmd} {flag} {_label(v)}", _base(cmd, f, n) + [flag, v])
    files = {"/dev/zero": "/dev/zero", "a folder": f["tmp"], "binary": f["binary"], "deep JSON": f["deep"],
             "missing": f["tmp"] + "/gone", "a huge name": "y" * 5000}
    for what, path in files.items():
        case(f"metrics {what}", ["metrics", path])
        case(f"search --image {what}", ["search", "--index", f["index"], "--image", path])
        case(f"eval --queries {what}", _base("eval", f, n)[:3] + ["--queries", path, "--protocol", "closest",
                                                                  "--out", f["tmp"] + f"/q{n}", "--no-progress"])
        case(f"index --captions {what}", _base("index", f, n) + ["--captions", path])
        case(f"index --images {what}", ["index", "--images", path, "--out", f["tmp"] + f"/i{n}", "--embedder", "fake:8"],
             what == "a folder")  # a folder of images is fine
        case(f"search --index {what}", ["search", "--index", path, "--text", "x"])
        case(f"queries --captions {what}", ["queries", "--captions", path, "--out-queries", f["tmp"] + f"/qq{n}"])
    for where in ("date:2021..2019", "tag:", "colour:red", "x" * 100_000, '"unclosed', "-"):
        case(f"search --where {_label(where)}", _base("search", f, n) + ["--where", where])
    case("search --text with quotes", _base("search", f, n)[:4] + ["--text", 'a shirt that says " Teen Wolf "'], True)
    case("eval, a description with quotes", _base("eval", f, n), True)
    case("index --hf-dataset DIR --embedder text", ["index", "--hf-dataset", f["hf"], "--out", f["tmp"] + "/hfi",
                                                    "--embedder", "text:all-MiniLM-L6-v2", "--caption-column", "text"],
         True)
    case("search --text huge", _base("search", f, n)[:4] + ["--text", HUGE], True)
    case("unknown command", ["nope"])
    case("unknown flag, huge", ["search", "--" + "z" * 100_000])
    return out


# --- app.py ----------------------------------------------------------------------------------------------
APP_NUMERIC = ["-k", "--port", "--concurrency", "--search-concurrency", "--click-concurrency", "--queue-size"]
APP_CHOICES = ["--sign-in", "--anon-llm", "--photo-demo"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _app_module():
    spec = importlib.util.spec_from_file_location("iir_app_probe", ROOT / "app.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    class Loaded(Exception):
        pass

    def build_page(*a, **k):
        raise Loaded

    mod.build_page, mod.Loaded = build_page, Loaded
    return mod


def _run_app(app, argv: list[str], ok_is_clean: bool = False) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = app.main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except app.Loaded:
            return "" if ok_is_clean else "accepted silently (the page was about to load)"
        except Exception as e:
            return f"{type(e).__name__}: {str(e)[:120]}"
    lines = [ln for ln in err.getvalue().splitlines()  # argparse names the program as sys.argv[0] has it
             if ln.startswith("app.py") or (": error: " in ln and not ln.startswith((" ", "usage:")))]
    if code not in (1, 2) or len(lines) != 1 or len(lines[0]) > MAX_LINE or ECHO in lines[0]:
        return f"exit {code}, {len(lines)} lines: {' | '.join(lines)[:150]}"
    return ""


def app_cases(tmp: Path) -> list[Case]:
    app = _app_module()
    logging.disable(logging.INFO)
    index = str(tmp / "cli" / "index")
    out: list[Case] = []

    def base():
        return ["--index", index, "--llm", "none", "--host", "127.0.0.1", "--port", str(_free_port())]

    for flag in APP_NUMERIC:
        for v in BAD_NUMBERS + (["0", "70000"] if flag == "--port" else ["0"]):
            why = _run_app(app, base() + [flag, v])
            out.append(Case("app", f"app.py {flag} {_label(v)}", not why, why))
    for flag in APP_CHOICES:
        for v in ("maybe", HUGE[:100_000]):
            why = _run_app(app, base() + [flag, v])
            out.append(Case("app", f"app.py {flag} {_label(v)}", not why, why))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        why = _run_app(app, ["--index", index, "--llm", "none", "--host", "127.0.0.1", "--port", str(port)])
        out.append(Case("app", "app.py a port in use", not why, why))
    for host in ("192.0.2.123", "no-such-host.invalid", "x" * 5000):
        why = _run_app(app, ["--index", index, "--llm", "none", "--host", host, "--port", str(_free_port())])
        out.append(Case("app", f"app.py --host {_label(host)}", not why, why))
    old = {k: os.environ.get(k) for k in ("HF_TOKEN", "HF_HUB_OFFLINE", "SYSTEM")}
    os.environ.update(HF_TOKEN="hf_probe_xxxxxxxxxxxxxxxx", HF_HUB_OFFLINE="1")
    os.environ.pop("SYSTEM", None)
    try:
        why = _run_app(app, base() + ["--sign-in", "on"])
    finally:
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    out.append(Case("app", "app.py --sign-in on, the Hub unreachable", not why, why))
    for v in (str(tmp / "gone"), "/dev/zero", str(tmp), "y" * 5000):
        why = _run_app(app, ["--index", v, "--llm", "none", "--host", "127.0.0.1", "--port", str(_free_port())],
                       ok_is_clean=False)
        out.append(Case("app", f"app.py --index {_label(v)}", not why or why.startswith("accepted"), why))
    logging.disable(logging.NOTSET)
    return out


def run(surfaces=("page", "cli", "app")) -> list[Case]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cases: list[Case] = []
        if "cli" in surfaces or "app" in surfaces:
            cases += cli_cases(tmp) if "cli" in surfaces else []
        if "app" in surfaces:
            if not (tmp / "cli" / "index").exists():
                _fixtures(tmp)
            cases += app_cases(tmp)
        if "page" in surfaces:
            cases += page_cases(tmp)
        return cases


def summary(cases: list[Case]) -> str:
    rows = []
    for s in ("page", "cli", "app"):
        got = [c for c in cases if c.surface == s]
        if got:
            rows.append(f"{s}: {sum(c.clean for c in got)} clean of {len(got)}")
    rows.append(f"all: {sum(c.clean for c in cases)} clean of {len(cases)}")
    return "\n".join(rows)


def _data_bytes() -> int:
    """The process's data segment now (VmData of /proc/self/status; 0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


@contextlib.contextmanager
def bounded(data_gb: float = 4.0, file_gb: float = 1.0):
    """This process's heap (`data_gb` more than it holds now) and the files it writes bounded while inside (soft
    limits, restored after): an input that makes the code read /dev/zero to its end fails with MemoryError
    (counted as not clean) instead of taking the machine's memory or disk."""
    import resource
    import signal

    # on top of what the process holds already (a long test run's heap is gigabytes before this starts)
    limits = {resource.RLIMIT_DATA: _data_bytes() + int(data_gb * 2**30), resource.RLIMIT_FSIZE: int(file_gb * 2**30)}
    old = {k: resource.getrlimit(k) for k in limits}
    old_signal = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    try:
        for k, v in limits.items():
            hard = old[k][1]
            resource.setrlimit(k, (v if hard == resource.RLIM_INFINITY else min(v, hard), hard))
        yield
    finally:
        for k, v in old.items():
            resource.setrlimit(k, v)
        signal.signal(signal.SIGXFSZ, old_signal)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--show", type=int, default=0, help="print this many cases that are not clean")
    p.add_argument("--surfaces", default="page,cli,app", help="comma-separated: page, cli, app")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("interactive_ir").setLevel(logging.WARNING)
    with bounded():
        cases = run(tuple(args.surfaces.split(",")))
    print(summary(cases))
    for c in [c for c in cases if not c.clean][:args.show]:
        print(f"  not clean: {c.surface} {c.name}: {c.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
