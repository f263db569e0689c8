"""Issue 29 deliverable 3: property-based tests (hypothesis) of the parsers a user or a file reaches:
captions files, index manifests and metadata rows, query files, study files and the page's text inputs.
Each either accepts its input or raises the project's own error with a one-line message, never another
exception (a traceback)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from interactive_ir.errors import IIRError  # noqa: E402

FAST = settings(max_examples=60, deadline=None, derandomize=True, database=None,  # the same examples every run
               suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12)
caption_keys = st.sampled_from(["image", "caption", "captions", "id", "images", "annotations", "file_name",
                                "image_id", "query", "target", "dialog", "description", "text"])
json_objects = st.dictionaries(caption_keys | st.text(max_size=6), json_values, max_size=5)


def _one_line(e: BaseException) -> None:
    assert isinstance(e, IIRError), f"{type(e).__name__}: {e}"
    text = str(e).strip()
    assert text and "\n" not in text and "Traceback" not in text, text


def _write(folder: Path, name: str, content) -> Path:
    p = folder / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8", errors="surrogatepass")
    return p


def _check(fn, *args):
    try:
        fn(*args)
    except IIRError as e:
        _one_line(e)


@FAST
@given(rows=st.lists(json_objects, max_size=5), raw=st.text(max_size=60), suffix=st.sampled_from(
    [".jsonl", ".json", ".csv", ".tsv", ".txt"]), as_text=st.booleans())
def test_captions_files(rows, raw, suffix, as_text):
    from interactive_ir.index.captions_io import read_captions

    body = raw if as_text else "\n".join(json.dumps(r) for r in rows)
    if suffix == ".json" and not as_text:
        body = json.dumps(rows[0] if len(rows) == 1 else rows)
    with tempfile.TemporaryDirectory() as d:
        _check(read_captions, _write(Path(d), "caps" + suffix, body))


@FAST
@given(line=st.one_of(st.text(max_size=40), json_objects.map(json.dumps),
                      st.fixed_dictionaries({"id": st.text(max_size=12), "captions": json_values}).map(json.dumps)))
def test_metadata_rows(line):
    from interactive_ir.index.metadata import _parse_line

    _check(_parse_line, line, Path("metadata.jsonl"), 1, "python -m interactive_ir index ...")


@FAST
@given(changes=st.dictionaries(st.sampled_from(["count", "dim", "embedder", "format_version", "files", "kind",
                                                "index_params", "image_root", "caption_vectors", "link_roots"]),
                               json_values, max_size=4), raw=st.one_of(st.none(), st.text(max_size=30)))
def test_index_manifests(tiny_folder, changes, raw):
    from interactive_ir.index import load_index

    folder = tiny_folder
    good = json.loads((folder / "manifest.json.orig").read_text())
    text = raw if raw is not None else json.dumps({**good, **changes})
    (folder / "manifest.json").write_text(text, encoding="utf-8", errors="surrogatepass")
    _check(load_index, folder)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from iir_testutils import build_tiny

    d = tmp_path_factory.mktemp("fuzz")
    build_tiny(d, n=4)
    folder = d / "index"
    (folder / "manifest.json.orig").write_text((folder / "manifest.json").read_text())
    return folder


@FAST
@given(rows=st.lists(json_objects, max_size=4), raw=st.text(max_size=60), as_text=st.booleans(),
       suffix=st.sampled_from([".jsonl", ".json"]))
def test_query_files(rows, raw, as_text, suffix):
    from interactive_ir.evaluation.queries import read_queries

    body = raw if as_text else "\n".join(json.dumps(r) for r in rows)
    with tempfile.TemporaryDirectory() as d:
        _check(read_queries, _write(Path(d), "q" + suffix, body))


study_keys = st.sampled_from(["study_id", "conditions", "tasks", "rounds", "k", "title", "recruitment",
                              "questionnaires", "practice", "time_limit_s", "consent", "index", "order"])


@FAST
@example(data={}, raw="\x1f", as_text=True, suffix=".yaml")  # found by this test: yaml's message spanned two lines
@given(data=st.dictionaries(study_keys, json_values, max_size=6), raw=st.text(max_size=80), as_text=st.booleans(),
       suffix=st.sampled_from([".yaml", ".json"]))
def test_study_files(data, raw, as_text, suffix):
    from interactive_ir.study.config import load_study

    base = {"study_id": "s", "conditions": {"A": "text"}, "tasks": ["a.png"]}
    body = raw if as_text else json.dumps({**base, **data})  # JSON is YAML too
    with tempfile.TemporaryDirectory() as d:
        _check(load_study, _write(Path(d), "study" + suffix, body))


@FAST
@given(text=st.text(max_size=300) | st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)))
def test_the_pages_text_inputs(text):
    from interactive_ir.retrieval.retriever import check_query_text

    try:
        out = check_query_text(text, 200)
    except IIRError as e:
        _one_line(e)
    else:
        out.encode("utf-8")  # what is accepted can be logged and sent on
        assert 0 < len(out) <= 200
