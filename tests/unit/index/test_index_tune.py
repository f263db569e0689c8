"""Choosing an ivf-pq index's nprobe and re-rank depth from its data (interactive_ir/index/tune.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from interactive_ir.backends import make_embedder
from interactive_ir.errors import BadInputError
from interactive_ir.index import kinds as K
from interactive_ir.index import load_index
from interactive_ir.index.folder_rows import FolderRows
from interactive_ir.index.metadata import IndexRecord
from interactive_ir.index.tune import TuneConfig, exact_topk, nprobe_ladder, reranked_recall, sample_queries, tune
from interactive_ir.index.writer import IndexWriter
from interactive_ir.retrieval.retriever import Retriever

DIM = 32


def mixture(n: int, centers: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, DIM)).astype(np.float32)
    x = c[rng.integers(0, centers, n)] + noise * rng.standard_normal((n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)


def write(folder, vecs: np.ndarray, kind: str = "ivf-pq") -> dict:
    w = IndexWriter(folder, DIM, caption_vectors=False)
    for a in range(0, len(vecs), 1000):
        w.add([IndexRecord(f"img{i:05d}.png", []) for i in range(a, min(len(vecs), a + 1000))], vecs[a : a + 1000])
    return w.finish(kind, {"embedder": f"fake:{DIM}", "has_vision": True, "image_root": "."})


def test_exact_topk_streams_to_the_brute_force_answer():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 16)).astype(np.float32)
    x[500] = x[10]  # a tie: the lower row comes first
    q = rng.standard_normal((7, 16)).astype(np.float32)
    q[0] = x[10]
    want = np.argsort(-(q @ x.T), axis=1, kind="stable")[:, :25]
    for chunk in (64, 999, 5000):
        np.testing.assert_array_equal(exact_topk(lambda a, b: x[a:b], 1000, q, 25, chunk_rows=chunk), want)
    assert exact_topk(lambda a, b: x[a:b], 1000, q, 5000, chunk_rows=128).shape == (7, 1000)  # k > n: every row


def test_nprobe_ladder():
    assert nprobe_ladder(8192, 1024) == [4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert nprobe_ladder(32, 1024) == [4, 8, 16, 32]
    assert nprobe_ladder(48, 1024) == [4, 8, 16, 32, 48]
    assert nprobe_ladder(2, 1024) == [2]


def test_tight_clusters_get_a_small_nprobe_and_diffuse_data_a_large_one(tmp_path):
    """The size-based guess probes 32 of 64 lists on both; the data says otherwise, and the choice holds
    on queries the tuning never saw."""
    tight = write(tmp_path / "tight", mixture(4000, 16, 0.05, 1))
    diffuse = write(tmp_path / "diffuse", mixture(4000, 4, 3.0, 2))
    assert tight["index_params"]["nlist"] == diffuse["index_params"]["nlist"] == 64
    t, d = tight["index_params"]["nprobe"], diffuse["index_params"]["nprobe"]
    assert t <= 16 and d >= 4 * t, (tight["tuning"]["table"], diffuse["tuning"]["table"])
    for name in ("tight", "diffuse"):
        m = json.loads((tmp_path / name / "manifest.json").read_text())
        assert m["tuning"]["nprobe"] == m["index_params"]["nprobe"] and m["tuning"]["queries"] == 64
        table = m["tuning"]["table"]
        best = max(row["recall"] for row in table)
        assert m["tuning"]["recall"] >= best - 0.01
        # a smaller nprobe than the one chosen would have lost recall
        smaller = [row["recall"] for row in table if row["nprobe"] < m["tuning"]["nprobe"]]
        assert all(r < best - 0.01 for r in smaller)
        # fresh queries through the retriever (which reads the tuned nprobe from the manifest)
        index = load_index(tmp_path / name)
        r = Retriever(index, make_embedder(f"fake:{DIM}"))
        src = FolderRows(tmp_path / name)
        qs = sample_queries(src, 40, seed=99)
        truth = exact_topk(src.chunk, src.n, qs, 100)
        got = [r.search_rows(q, 100)[1] for q in qs]
        recall = np.mean([len(np.intersect1d(g, t)) / 100 for g, t in zip(got, truth)])
        assert recall >= 0.95, (name, recall)


def test_the_rerank_depth_doubles_when_the_codes_are_the_limit(tmp_path):
    """With 2 coarse sub-quantizers no nprobe reaches the target at 8x k: the tuning re-ranks deeper."""
    vecs = mixture(6000, 30, 0.8, 3)
    write(tmp_path / "src", vecs, kind="exact")  # only for its vectors file
    src = FolderRows(tmp_path / "src")
    params = K.IndexParams("ivf-pq", nlist=16, pq_m=2, pq_bits=4, nprobe=16, rerank_factor=2, rerank_min=100)
    index = K.create(params, DIM)
    x = src.chunk(0, src.n)
    index.train(x)
    index.add(x)
    new, rep = tune(index, params, src, TuneConfig(queries=32, target=0.97, max_rerank_factor=32))
    depths = sorted({row["rerank_factor"] for row in rep.table})
    assert depths[0] == 2 and new.rerank_factor == depths[-1] > 2
    best_at = {f: max(row["recall"] for row in rep.table if row["rerank_factor"] == f) for f in depths}
    assert all(best_at[f] < 0.97 for f in depths[:-1])  # it went deeper only while the target was missed
    assert best_at[depths[-1]] > best_at[2]
    assert rep.recall == pytest.approx(reranked_recall(index, params, src, sample_queries(src, 32, 0),
                                                       exact_topk(src.chunk, src.n, sample_queries(src, 32, 0), 100),
                                                       100, new.nprobe, new.rerank_factor), abs=1e-4)


def test_tune_refuses_other_kinds_and_bad_queries(tmp_path):
    write(tmp_path / "idx", mixture(2000, 20, 0.5, 4))
    index = load_index(tmp_path / "idx")
    src = FolderRows(tmp_path / "idx")
    with pytest.raises(BadInputError, match="32 wide"):
        tune(index.faiss_index, index.params, src, queries=np.ones((5, 7), np.float32))
    with pytest.raises(BadInputError, match="NaN"):
        tune(index.faiss_index, index.params, src, queries=np.full((5, DIM), np.nan, np.float32))
    with pytest.raises(BadInputError, match="only an ivf-pq"):
        tune(index.faiss_index, K.IndexParams("exact"), src)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "interactive_ir", "index", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_index_tune_command_retunes_on_given_queries_and_fails_cleanly(tmp_path):
    write(tmp_path / "idx", mixture(3000, 40, 0.3, 5))
    write(tmp_path / "ex", mixture(1000, 10, 0.3, 6), kind="exact")
    before = (tmp_path / "idx" / "manifest.json").read_text()
    rng = np.random.default_rng(0)
    np.save(tmp_path / "q.npy", rng.standard_normal((25, DIM)).astype(np.float32))
    np.save(tmp_path / "narrow.npy", rng.standard_normal((25, 5)).astype(np.float32))
    for args, why in [(("--queries", tmp_path / "narrow.npy"), "32 wide"), (("--queries", tmp_path / "no.npy"), "not a readable"),
                      (("--target-recall", "1.5"), "target-recall")]:
        p = run_cli("tune", tmp_path / "idx", *args)
        assert p.returncode != 0 and why in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert (tmp_path / "idx" / "manifest.json").read_text() == before  # nothing written
    p = run_cli("tune", tmp_path / "ex")
    assert p.returncode != 0 and "only ivf-pq" in p.stderr
    p = run_cli("tune", tmp_path / "idx", "--queries", tmp_path / "q.npy")
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert m["tuning"]["queries"] == 25 and m["tuning"]["source"].endswith("q.npy")
    assert f"-> {m['index_params']['nprobe']}," in p.stdout
    assert run_cli("verify", tmp_path / "idx").returncode == 0  # the files are untouched, checksums match
