"""Uploads through the served app (Gradio + uvicorn + the guard, as `app.py` serves them) sent with
`Transfer-Encoding: chunked`, which declares no size (issue 40, item 1): over the limit is cut with 413 and
leaves no file, one address's flood stays within its quota, the temp folder within its cap, and another
visitor's pending upload survives (bench/upload_flood.py at a small size)."""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "upload_flood.py"
MB = 2**20
LIMITS = {"IIR_UPLOAD_MAX_BYTES": str(3 * MB), "IIR_UPLOAD_PER_CLIENT_BYTES": str(10 * MB),
          "IIR_UPLOAD_TOTAL_BYTES": str(24 * MB)}


def _flood_module():
    spec = importlib.util.spec_from_file_location("upload_flood", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_chunked_upload_over_the_limit_is_cut_and_leaves_nothing(tmp_path):
    flood = _flood_module()
    folder, port = tmp_path / "gradio", flood.free_port()
    env = {**os.environ, **LIMITS, "GRADIO_TEMP_DIR": str(folder), "PYTHONPATH": str(ROOT),
           "GRADIO_ANALYTICS_ENABLED": "False"}
    child = subprocess.Popen([sys.executable, str(SCRIPT), "--serve", str(port)], env=env, cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "serving" in child.stdout.readline()
        status, answer = flood.upload(port, "127.0.0.1", 2 * MB)
        assert status == 200, answer
        stored = json.loads(answer)
        assert len(stored) == 1 and Path(stored[0]).stat().st_size == 2 * MB
        status, answer = flood.upload(port, "127.0.0.2", 8 * MB)
        assert status == 413 and "over the 3 MB upload limit" in answer, (status, answer)
        time.sleep(0.5)
        assert flood.folder_bytes(folder) == 2 * MB  # the part of the refused upload Gradio wrote is gone
        assert flood.upload(port, "127.0.0.2", 1 * MB)[0] == 200  # the connection was closed, the server serves on
    finally:
        child.terminate()
        child.wait(10)


def test_a_chunked_flood_from_one_address_stays_within_its_quota_and_the_cap(tmp_path):
    out = tmp_path / "flood.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--size-mb", "2.5", "--parallel", "8", "--flood-s", "3",
                           "--other-mb", "0.5", "--json", str(out)], env={**os.environ, **LIMITS}, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    f = json.loads(out.read_text())
    assert f["burst"]["accepted_mb"] <= 10 and f["flood"]["accepted_mb"] <= 10  # without the guard: 20 and 500+
    assert f["folder_peak_mb"] <= 24
    assert f["pending_upload"] == "kept"
    assert set(f["others"]) == {"200"}  # the other visitors were never refused


def test_the_app_cuts_chunked_uploads_and_names_an_untrusted_proxy_once(tmp_path):
    """`python app.py` itself (fake models): the guard and the proxy check are in its middleware."""
    sys.path.insert(0, str(ROOT / "tests"))
    from app_server import app_process

    flood = _flood_module()
    folder = tmp_path / "gradio"
    env = {**os.environ, **LIMITS, "GRADIO_TEMP_DIR": str(folder), "IIR_EMBEDDER": "fake:32", "IIR_LLM": "fake",
           "IIR_INDICES_DIR": str(tmp_path / "indices"), "IIR_CACHE_DIR": str(tmp_path / "cache"),
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    for k in ("PORT", "GRADIO_SERVER_PORT", "GRADIO_SERVER_NAME", "SPACE_ID", "FORWARDED_ALLOW_IPS",
              "IIR_TRUSTED_PROXIES"):
        env.pop(k, None)
    log = tmp_path / "app.log"
    with app_process([], env, log, timeout=240) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        assert flood.upload(port, "127.0.0.1", 2 * MB)[0] == 200
        status, answer = flood.upload(port, "127.0.0.3", 8 * MB)
        assert status == 413 and "upload limit" in answer
        statuses = [flood.upload(port, "127.0.0.4", int(2.4 * MB))[0] for _ in range(6)]
        assert statuses == [200] * 4 + [429] * 2  # 10 MB per address, multipart framing counted too
        for _ in range(3):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/", headers={"X-Forwarded-For": "6.6.6.6"})
            conn.getresponse().read()
            conn.close()
        time.sleep(0.5)
        assert flood.folder_bytes(folder) <= 24 * MB
    text = log.read_text()
    assert text.count("carries X-Forwarded-For, so it came through a proxy") == 1, text[-3000:]
    assert "--trusted-proxies 127.0.0.1" in text
