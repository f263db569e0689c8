"""The benchmark scripts run at a tiny size, exit 0 and print their tables (figures are not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def run(script: str, *args: str, timeout: int = 180) -> str:
    out = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, f"{script} exited {out.returncode}:\n{out.stderr[-3000:]}"
    return out.stdout


def table_rows(stdout: str, header: str) -> list[list[str]]:
    """The data rows of the markdown table printed under the line starting with `header`."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 3 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_bench_search_tiny():
    stdout = run("bench_search.py", "--sizes", "2000", "--queries", "5", "--threads", "1")
    assert "## Search latency (ms, p50 / p95), k=100" in stdout
    assert "## Memory and disk (bytes per image)" in stdout
    latency = table_rows(stdout, "## Search latency")
    assert [r[:3] for r in latency] == [["2,000", "512", "1"], ["2,000", "1024", "1"]]
    # exact fp16 search against numpy exact kNN on the same fp16 vectors: the same top-100 sets
    assert all(r[9] == "1.0000" and r[10] == "1.0000" for r in latency), latency
    memory = table_rows(stdout, "## Memory and disk")
    # fp16 vectors are 512 * 2 bytes per image in image_emb.npy, twice that with caption_emb.npy
    assert [(r[1], r[5]) for r in memory] == [("512", "1,024"), ("1024", "2,048")]


def test_bench_build_tiny_fake():
    stdout = run("bench_build.py", "--n", "24", "--batch-size", "8", "--embedders", "fake:64", "--image-size", "64")
    assert "## Build throughput (images/s), 24 generated JPEGs 64x64" in stdout
    rows = table_rows(stdout, "## Build throughput")
    assert len(rows) == 1 and rows[0][:3] == ["fake:64", "64", "24"]


@pytest.mark.integration
def test_bench_build_tiny_open_clip():
    pytest.importorskip("open_clip")
    stdout = run("bench_build.py", "--n", "16", "--batch-size", "8", "--embedders", "open_clip:ViT-S-32:none",
                 timeout=600)
    rows = table_rows(stdout, "## Build throughput")
    assert len(rows) == 1 and rows[0][0] == "open_clip:ViT-S-32:none"


def test_bench_tune_noise_check_tiny(tmp_path):
    """bench_tune.py on a tiny ivf-pq index: the tuned nprobe and a recall row per noise level, recall in [0, 1]."""
    import numpy as np

    from interactive_ir.index.metadata import IndexRecord
    from interactive_ir.index.writer import IndexWriter

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = IndexWriter(tmp_path / "idx", 16, caption_vectors=False)
    w.add([IndexRecord(f"i{i}.png", []) for i in range(2000)], x.astype(np.float16))
    w.finish("ivf-pq", {"embedder": "fake:16", "has_vision": True, "image_root": "."})
    stdout = run("bench_tune.py", "--index", str(tmp_path / "idx"), "--noise", "1,3")
    assert "tuned nprobe" in stdout
    rows = [line for line in stdout.splitlines() if line.startswith("| noise")]
    assert len(rows) == 2
    recalls = [float(c.split(": ")[1]) for line in rows for c in line.strip("|").split("|")[1:-1]]
    assert recalls and all(0.0 <= r <= 1.0 for r in recalls)


def test_gpu_check_dry_run_starts_and_passes_on_the_cpu():
    """bench/gpu_check.py --dry-run: the fakes stand in for the GPU; every search check runs and passes."""
    stdout = run("gpu_check.py", "--dry-run", "--skip-models")
    for name in ("exact 3,000", "fp32 ranks 3,000", "ivf-pq 3,000", "concurrency 3,000", "out-of-memory fallback",
                 "out-of-memory in search"):
        line = next(ln for ln in stdout.splitlines() if ln.startswith(name))
        assert " yes " in line, line
    assert "device torch" in stdout and "device faiss-gpu" in stdout


def test_bench_rerank_tiny(tmp_path):
    """bench_rerank.py at 2,000 rows: a warm and a cold table with every way, recall in [0, 1], faiss's ratio 1."""
    stdout = run("bench_rerank.py", "--n", "2000", "--queries", "6", "--cold-queries", "2", "--recall-queries", "3",
                 "--work", str(tmp_path / "w"), timeout=300)
    assert stdout.count("| way |") == 2  # the warm table and the cold one
    lines = stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("| way |")))
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[start + 2 : start + 7]]
    assert len(rows) == 5 and rows[0][0].startswith("faiss IndexRefine") and rows[0][4].startswith("1.00 /")
    assert all(0.0 <= float(r[5]) <= 1.0 for r in rows)


def test_bench_filtered_tiny(tmp_path):
    """bench_filtered.py at 3,000 rows: the unfiltered baselines and five ways per selectivity, faiss's ratio 1,
    recall in [0, 1], and the exact pool's recall 1 (it scores every allowed row)."""
    stdout = run("bench_filtered.py", "--n", "3000", "--queries", "4", "--recall-queries", "4", "--selectivities",
                 "0.5,0.1,0.01", "--work", str(tmp_path / "w"), timeout=300)
    rows = table_rows(stdout, "## Filtered ivf-pq top-100")
    assert [r[0] for r in rows] == ["none"] * 2 + ["50%"] * 5 + ["10%"] * 5 + ["1%"] * 5
    assert all(r[5] == "1.00 / 1.00" for r in rows if r[2] in ("faiss, no filter", "faiss, same selector"))
    assert all(0.0 <= float(r[6]) <= 1.0 for r in rows)
    assert all(r[6] == "1.000" for r in rows if r[2] == "project, exact pool")
    assert sum(r[2].startswith("project, ID selector (") for r in rows) == 3
    assert "load average at end" in stdout


def test_first_questions_tiny(tmp_path):
    """Each description is counted once, under its first question or under none (the figures are not checked)."""
    import json

    from iir_testutils import build_tiny

    _, ids, caps = build_tiny(tmp_path)
    queries = tmp_path / "queries.jsonl"
    texts = [caps[i][0] for i in ids[:5]]  # each one stored caption word for word
    queries.write_text("".join(json.dumps({"description": t}) + "\n" for t in texts))
    stdout = run("first_questions.py", "--index", str(tmp_path / "index"), "--queries", str(queries), "--n", "5")
    rows = table_rows(stdout, "## First question after a description")
    assert rows[0][0] == "(none: the page asks nothing)" and sum(int(r[1]) for r in rows) == 5
