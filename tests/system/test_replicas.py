"""Two app processes behind nginx with deploy/nginx.conf (issue 29 deliverable 4): each browser stays on
one process, browsers spread over both, both memory-map the same index files, no tab sees another's words.

Starts real `python app.py` processes (fake LLM, a generated index) and nginx on free ports of 127.0.0.1
in a temporary prefix; marked integration (about 20-40 s); skipped where nginx is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import bench_replicas  # noqa: E402
from gradio_tabs import run_tabs  # noqa: E402

needs_nginx = pytest.mark.skipif(bench_replicas.NGINX is None, reason="nginx not installed (apt-get install -y nginx)")


def shared_maps(pid: int, folder: Path) -> set[str]:
    """Files of `folder` that process `pid` maps shared (so the page cache holds them once for all)."""
    out = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1].endswith("s") and parts[5].startswith(str(folder)):
            out.add(Path(parts[5]).name)
    return out


@pytest.mark.integration
@needs_nginx
def test_the_pair_behind_nginx_is_sticky_shares_the_index_and_keeps_tabs_apart(tmp_path):
    with bench_replicas.Replicas(tmp_path, n=2) as r:
        res = run_tabs(r.base, tabs=12, seconds=0, events_per_tab=6)
        assert res["errors"] == [] and res["events"] == 72
        assert res["crosstalk"] == 0
        browsers = r.served_by()
        assert len(browsers) >= 12
        assert all(len(ups) == 1 for ups in browsers.values()), browsers  # sticky: one process per browser
        used = set().union(*browsers.values())
        assert used == {f"127.0.0.1:{p}" for p in r.ports}  # both processes serve browsers
        index = (tmp_path / "index").resolve()
        maps = [shared_maps(p.pid, index) for p in r.apps]
        assert {"image_emb.npy", "faiss.index"} <= maps[0] and maps[0] == maps[1]
        apps = list(r.apps)
    assert all(p.poll() is not None for p in apps) and r.nginx.poll() is not None  # cleaned up


def test_the_config_keeps_everything_but_ports():
    text = bench_replicas.nginx_conf(18080, [18081, 18082, 18083])
    assert "listen 127.0.0.1:18080;" in text and text.count("server 127.0.0.1:1808") == 3
    assert "hash $iir_affinity consistent;" in text and "proxy_buffering off;" in text
    assert "/var/" not in text and "/etc/" not in text  # every path relative to the prefix
