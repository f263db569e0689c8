"""Issue 40 item 7: a fuzz suite (hypothesis) over every input a visitor or a user reaches: each of the page's
endpoints (Gradio's `demo.fns`, named in the HTTP API or not: each input component's `preprocess`, then the
function, as the queue calls them) given values of any type and size, and every flag of the CLI's commands and of
app.py given any text. Each is refused in one line (or accepted where the value is fine): no exception, nothing
logged as unexpected, no message over 1,000 characters, no value echoed past 80 characters. And the fixed table
of bad inputs (`bench/bad_input.py`, the issue's count) is clean throughout.

Bounded: a few hundred examples in all, the same ones every run (derandomized); under a minute on a busy 2-core
machine. Each test runs with the process's heap and file writes bounded (`bad_input.bounded`, 4 GB and 1 GB, soft
limits restored after): a regression that reads /dev/zero to its end fails the test instead of taking the machine."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import itertools
import os
import sys
import types
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
gr = pytest.importorskip("gradio")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bad_input", ROOT / "bench" / "bad_input.py")
bad_input = importlib.util.module_from_spec(spec)
sys.modules["bad_input"] = bad_input
spec.loader.exec_module(bad_input)

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=200), st.sampled_from([bad_input.HUGE, "[" * 5000, "\x00", "../../etc/passwd", '" a "']),
    st.lists(st.integers() | st.text(max_size=10), max_size=5),
    st.dictionaries(st.sampled_from(["index", "action", "id", "question", "a"]),
                    st.integers() | st.text(max_size=30) | st.floats(allow_nan=True) | st.none(), max_size=4))


@pytest.fixture(autouse=True)
def _bounded():
    saved = dict(os.environ)  # app.main sets process settings there (TQDM_DISABLE, ...)
    with bad_input.bounded():
        yield
    os.environ.clear()
    os.environ.update(saved)


# --- the page ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """(engine, [(name, BlockFunction)]) of the page over a tiny dated index with the fake LLM (IIR_CACHE_DIR in a
    temporary folder meanwhile)."""
    from iir_testutils import build_dated, query_modes

    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import build_demo

    tmp = tmp_path_factory.mktemp("fuzz_page")
    before = os.environ.get("IIR_CACHE_DIR")
    os.environ["IIR_CACHE_DIR"] = str(tmp / "cache")  # uploads and saved searches kept here
    r, _ = build_dated(tmp / "idx")
    engine = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=6, fold_similarity=0), belief=query_modes())
    demo = build_demo(engine, [])
    fns = demo.fns.values() if isinstance(demo.fns, dict) else demo.fns
    endpoints = [(str(bf.api_name), bf) for bf in fns
                 if bf.fn is not None and bf.inputs and isinstance(bf.inputs[0], gr.State)]
    yield engine, endpoints
    if before is None:
        os.environ.pop("IIR_CACHE_DIR", None)
    else:
        os.environ["IIR_CACHE_DIR"] = before


def _call(engine, bf, value, slot) -> str:
    """Why sending `value` to input `slot` (or the event data, slot -1) of `bf` was not clean."""
    from interactive_ir.ui import handlers
    from interactive_ir.ui.state import UIState

    state = handlers.start(engine, UIState(), "a red dog on the beach")
    args = [state]
    for i, comp in enumerate(bf.inputs[1:], 1):
        v = value if i == slot else getattr(comp, "value", None)
        if isinstance(comp, (gr.File, gr.UploadButton, gr.Image)):
            args.append(v if i == slot and isinstance(v, str) else None)
            continue
        ok, pv, why = bad_input._preprocess(comp, v)
        if not ok:
            return why
        args.append(pv)
    for p in list(inspect.signature(bf.fn).parameters.values())[len(bf.inputs):]:
        if "EventData" in str(p.annotation):
            args.append(types.SimpleNamespace(_data=value if slot == -1 else {}, target=None))
        elif "Request" in str(p.annotation):
            args.append(bad_input._request())
        else:
            args.append(None)
    errors = bad_input._Errors()
    import logging

    logging.getLogger().addHandler(errors)
    try:
        return bad_input._check_page(bf.fn, args, state, errors)
    finally:
        logging.getLogger().removeHandler(errors)


@FUZZ
@given(data=st.data(), value=values)
def test_every_page_endpoint_takes_any_value(page, data, value):
    engine, endpoints = page
    name, bf = data.draw(st.sampled_from(endpoints), label="endpoint")
    slots = list(range(1, len(bf.inputs)))
    if any("EventData" in str(p.annotation) for p in inspect.signature(bf.fn).parameters.values()):
        slots.append(-1)
    if not slots:
        return
    slot = data.draw(st.sampled_from(slots), label="slot")
    why = _call(engine, bf, value, slot)
    assert not why, f"{name}[{slot}] = {bad_input._label(value)}: {why}"


def _flag_args(data, flag: str, dest: str, nargs) -> list[str]:
    """The flag alone (a switch), with a drawn file name (an output), or with a drawn value."""
    if nargs == 0:
        return [flag]
    if any(w in dest for w in OUTPUTS):
        return [flag, data.draw(relative_names, label="name")]
    return [flag, data.draw(flag_values, label="value")]

def test_the_page_has_its_named_endpoints(page):
    """The fuzz reaches the HTTP API's names (a renamed endpoint would leave the fuzz blind to it)."""
    names = {n for n, _ in page[1]}
    assert {"start", "answer", "choose", "on_choose", "card", "on_card", "on_questioner", "on_upload"} <= names


# --- the command line ------------------------------------------------------------------------------------
SKIP_DESTS = {"help", "version", "verbose", "llm", "vlm", "captioner", "embedder", "answerer", "store", "hf_dataset",
              "repo", "preset", "user_similarity", "dialogues", "queries_format", "revision", "config"}
OUTPUTS = ("out", "db", "save", "bundle", "cache", "image_list", "frames", "readme", "data", "sim", "compare_sim",
           "study_file", "target", "queries", "captions", "index")  # a dest naming a path: a relative name only


def _flags(cmd: str) -> list[tuple[str, str, int]]:
    """(flag, dest, nargs 0 or 1) of every optional flag of `cmd`, from its parser."""
    from interactive_ir.cli import build_parser

    parser = build_parser(cmd)
    sub = next(a for a in parser._actions if a.dest == "command").choices[cmd]
    out = []
    for a in sub._actions:
        if not a.option_strings or a.dest in SKIP_DESTS:
            continue
        out.append((a.option_strings[-1], a.dest, 0 if a.nargs == 0 else 1))
    return out


@pytest.fixture(scope="module")
def cli_fixtures(tmp_path_factory):
    return bad_input._fixtures(tmp_path_factory.mktemp("fuzz_cli"))


relative_names = st.text(st.characters(whitelist_categories=("Ll", "Nd")), min_size=1, max_size=12)
flag_values = st.one_of(st.text(max_size=60), st.sampled_from(["-1", "0", "nan", "inf", "1e400", "", "x" * 100_000,
                                                                "/dev/zero", "99999999999999999999", "1.5"]))


@pytest.mark.parametrize("cmd", ["index", "search", "eval", "chat", "metrics", "queries"])
def test_every_flag_of_the_cli_takes_any_text(cmd, cli_fixtures, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # any relative output lands here
    flags = _flags(cmd)
    assert flags, cmd
    failures, runs = [], itertools.count(1000)

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(data=st.data())
    def one(data):
        flag, dest, nargs = data.draw(st.sampled_from(flags), label="flag")
        extra = _flag_args(data, flag, dest, nargs)
        argv = bad_input._base(cmd, cli_fixtures, next(runs)) + extra  # each run its own output
        why = bad_input._run_cli(argv, ok_is_clean=True)
        if why:
            failures.append(f"{cmd} {flag} {bad_input._label(extra[-1])}: {why}")

    one()
    assert not failures, failures[:5]


def _parsers(cmd: str) -> list[tuple[list[str], object]]:
    """([cmd, sub], parser) of `cmd` and of each of its sub-commands (study's, reproduce's)."""
    from interactive_ir.cli import build_parser

    top = next(a for a in build_parser(cmd)._actions if a.dest == "command").choices[cmd]
    subs = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [([cmd], top)]
    return [([cmd, name], parser) for name, parser in subs[0].choices.items()]


def _minimal(prefix: list[str], parser) -> list[str]:
    """`prefix` and the parser's required arguments, each a relative name (or its first choice)."""
    argv = list(prefix)
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction) or a.dest in ("help",):
            continue
        value = str(next(iter(a.choices))) if a.choices else f"fuzz_{a.dest}"
        if not a.option_strings and a.nargs not in ("?", "*"):
            argv.append(value)
        elif a.option_strings and a.required:
            argv += [a.option_strings[-1], value]
    return argv


@pytest.mark.parametrize("cmd", ["study", "reproduce", "config", "models", "modes"])
def test_every_flag_of_the_other_commands_takes_any_text(cmd, tmp_path, monkeypatch):
    """Their inputs (study files, databases, a paper's data) do not exist here: what is fuzzed is each flag's
    parsing and the command's first check, which must be one line whatever the value."""
    monkeypatch.chdir(tmp_path)
    cases = []
    for prefix, parser in _parsers(cmd):
        base = _minimal(prefix, parser)
        for a in parser._actions:
            if a.option_strings and a.dest not in SKIP_DESTS and not isinstance(a, argparse._SubParsersAction):
                cases.append((base, a.option_strings[-1], a.dest, 0 if a.nargs == 0 else 1))
    assert cases, cmd
    failures = []

    @settings(max_examples=40, deadline=None, derandomize=True, database=None)
    @given(data=st.data())
    def one(data):
        base, flag, dest, nargs = data.draw(st.sampled_from(cases), label="flag")
        extra = _flag_args(data, flag, dest, nargs)
        why = bad_input._run_cli(base + extra, ok_is_clean=True)
        if why:
            failures.append(f"{' '.join(base[:2])} {flag} {bad_input._label(extra[-1])}: {why}")

    one()
    assert not failures, failures[:5]


APP_SKIP = {"help", "version", "llm", "vlm", "captioner", "embedder", "study", "index"}


def test_every_flag_of_app_py_takes_any_text(cli_fixtures):
    app = bad_input._app_module()
    parser_flags = []
    real = argparse.ArgumentParser.parse_args
    seen = {}

    def capture(self, args=None, namespace=None):
        seen["parser"] = self
        return real(self, ["--llm", "none"], namespace)

    argparse.ArgumentParser.parse_args = capture
    try:
        app.parse_args([])
    finally:
        argparse.ArgumentParser.parse_args = real
    for a in seen["parser"]._actions:
        if a.option_strings and a.dest not in APP_SKIP:
            parser_flags.append((a.option_strings[-1], 0 if a.nargs == 0 else 1))
    assert len(parser_flags) >= 10
    failures = []

    @settings(max_examples=60, deadline=None, derandomize=True, database=None)
    @given(data=st.data())
    def one(data):
        flag, nargs = data.draw(st.sampled_from(parser_flags), label="flag")
        extra = [flag] if nargs == 0 else [flag, data.draw(flag_values, label="value")]
        base = ["--index", cli_fixtures["index"], "--llm", "none", "--host", "127.0.0.1",
                "--port", str(bad_input._free_port())]
        if flag in ("--host", "--port"):
            base = base[:4]
        why = bad_input._run_app(app, base + extra, ok_is_clean=True)
        if why:
            failures.append(f"app.py {flag} {bad_input._label(extra[-1])}: {why}")

    one()
    assert not failures, failures[:5]


# --- the table of bad inputs (the count) ---------------------------------------------------------
def test_the_table_of_bad_inputs_is_clean():
    cases = bad_input.run()
    bad = [f"{c.surface} {c.name}: {c.why}" for c in cases if not c.clean]
    assert len(cases) >= 339, len(cases)  # at least the scale
    assert not bad, f"{len(bad)} of {len(cases)} not clean: {bad[:8]}"


# --- over HTTP, once: the server's own JSON parsing and preprocess in the loop ---------------------------------
def _call_http(url: str, api: str, body: str) -> str:
    """POST `body` (raw JSON: NaN and 1e400 as Python's json reads them) to Gradio's `/call/<api>`; the event
    stream of its answer."""
    import httpx

    r = httpx.post(f"{url}gradio_api/call/{api}", content='{"data": ' + body + "}",
                   headers={"Content-Type": "application/json"},
                   timeout=60)
    assert r.status_code == 200, r.text[:300]
    event = r.json()["event_id"]
    return httpx.get(f"{url}gradio_api/call/{api}/{event}", timeout=120).text


def test_bad_values_over_http_are_refused_in_one_short_line(tmp_path):
    from app_server import app_process
    from iir_testutils import build_tiny

    build_tiny(tmp_path / "g")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IIR_", "OAUTH_", "SPACE_"))}
    env.update(IIR_CACHE_DIR=str(tmp_path / "cache"), GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    log = tmp_path / "app.log"
    huge = '"' + "x" * 1_000_000 + '"'
    sends = [("on_questioner", f"[{huge}]"), ("choose", '[NaN, ""]'), ("choose", '[1e400, ""]'),
             ("choose", '["abc", ""]'), ("choose", '[[1, 2], ""]'), ("card", f'["relevant", {huge}]'),
             ("card", f'[{huge}, "a"]'), ("feedback", f"[{huge}]"), ("start", '["a shirt that says \\" Teen Wolf \\""]')]
    with app_process(["--index", str(tmp_path / "g" / "index"), "--llm", "none"], env, log) as url:
        for api, body in sends:
            stream = _call_http(url, api, body)
            assert "event: complete" in stream or "event: error" in stream, (api, stream[:300])
            assert "x" * 161 not in stream and len(stream) < 200_000, (api, len(stream))
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
