"""The Milvus store through Milvus Lite (skipped when milvus-lite cannot start here)."""

from __future__ import annotations

import numpy as np
import pytest

from interactive_ir.errors import BadInputError, IndexLoadError
from interactive_ir.index import load_index
from interactive_ir.index.vector_store import parse_store

pytest.importorskip("pymilvus")


@pytest.fixture(scope="module")
def lite(tmp_path_factory):
    """A tiny index exported into Milvus Lite, or a skip when Milvus Lite will not start."""
    from iir_testutils import build_tiny

    from interactive_ir.index.vector_store import export_index

    base = tmp_path_factory.mktemp("milvus")
    try:  # only the embedded server failing to start is a reason to skip; an export that fails is a failure
        from pymilvus import MilvusClient

        MilvusClient(str(base / "probe.db")).close()
    except Exception as e:  # noqa: BLE001 - any failure to start the embedded server
        pytest.skip(f"milvus-lite cannot start here: {e}")
    r, ids, caps = build_tiny(base, n=16)
    spec = f"milvus-lite:{base / 'store.db'}"
    export_index(r.index, spec, chunk=5)
    return r, ids, spec


def test_search_feedback_and_exclusions_match_the_local_index(lite):
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.retrieval.retriever import Retriever

    r, ids, spec = lite
    m = Retriever(load_index(r.index.path, store=spec), r.embedder)
    assert m.device == "milvus" and r.device == "faiss"
    for tau in (0.0, 0.15, 1.0):
        qrow = r.text_query_row(r.encode_text("a red dog on the beach"), tau)
        ex = [h.id for h in r.search_row(qrow, 3)]
        local, remote = r.search_row(qrow, 6, exclude=ex), m.search_row(qrow, 6, exclude=ex)
        assert [h.id for h in remote] == [h.id for h in local] and not {h.id for h in remote} & set(ex)
        np.testing.assert_allclose([h.score for h in remote], [h.score for h in local], atol=2e-3)
    np.testing.assert_allclose(m.index.vectors([3, 1], "caption"), r.index.vectors([3, 1], "caption"), atol=1e-6)
    eng = build_engine(m, config=EngineConfig(k=4))
    s = eng.new_session()
    t0 = eng.search_text(s, "a red dog on the beach")
    t1 = eng.feedback(s, [t0.shown[0]], [t0.shown[1]], method="rocchio")
    want = build_engine(r, config=EngineConfig(k=4))
    s2 = want.new_session()
    want.search_text(s2, "a red dog on the beach")
    assert t1.shown == want.feedback(s2, [t0.shown[0]], [t0.shown[1]], method="rocchio").shown


def test_cli_export_and_search_through_iir_store(lite, tmp_path, monkeypatch, capsys):
    from interactive_ir.cli import main

    r, ids, spec = lite
    other = f"milvus-lite:{tmp_path / 'cli.db'}#mine"
    assert main(["index", "export", str(r.index.path), "--store", other]) == 0
    assert "exported 16 rows" in capsys.readouterr().out
    monkeypatch.setenv("IIR_STORE", other)
    assert main(["search", "--index", str(r.index.path), "--text", "a red dog", "-k", "3", "--embedder", "fake:32"]) == 0


def test_collection_of_another_dimension_is_one_line(lite, tmp_path):
    from iir_testutils import build_tiny

    r, ids, spec = lite
    r8, _, _ = build_tiny(tmp_path, n=4, dim=8)
    with pytest.raises(IndexLoadError, match=r"holds 64-d vectors but the index rows are 16-d: export") as e:
        load_index(r8.index.path, store=spec)
    assert "\n" not in str(e.value)


def test_unreachable_milvus_and_bad_specs_are_one_line(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    from iir_testutils import build_tiny

    import interactive_ir.index.vector_store as vs

    r, _, _ = build_tiny(tmp_path, n=4)
    vs_timeout = vs.TIMEOUT_S
    vs.TIMEOUT_S = 2.0
    try:
        with pytest.raises(IndexLoadError, match=rf"cannot reach Milvus at http://127.0.0.1:{port}") as e:
            load_index(r.index.path, store=f"milvus://127.0.0.1:{port}/images")
    finally:
        vs.TIMEOUT_S = vs_timeout
    assert "\n" not in str(e.value)
    for bad in ("milvus://nohost/images", "milvus-lite:store.sqlite", "redis://x"):
        with pytest.raises(BadInputError):
            parse_store(bad)
    assert str(parse_store("milvus://h:19530/c")) == "milvus://h:19530/c"
