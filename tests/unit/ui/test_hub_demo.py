"""Issue 27 D4: a Space that starts fast. The demo gallery's index is built once and pushed to the Hub (the
README's documented command); a Space with IIR_INDEX=hf://... and no local index loads the pushed one at
start, without indexing. Against tests/hub_standin.py (HF_ENDPOINT), as in test_hub_index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hub_index import hub  # noqa: F401  (the stand-in Hub fixture)

from interactive_ir.cli import main

ROOT = Path(__file__).resolve().parents[3]
REPO = "alice/iir-demo-index"


def readme_command() -> list[list[str]]:
    """The README's command that builds the demo index and pushes it, split into its two CLI calls."""
    text = (ROOT / "README.md").read_text()
    line = next(ln for ln in text.splitlines() if "index --images assets/demo" in ln and "index push" in ln)
    line = line.strip().strip("`")
    calls = [part.strip().split() for part in line.split("&&")]
    assert all(c[:3] == ["python", "-m", "interactive_ir"] for c in calls), line
    return [c[3:] for c in calls]


@pytest.fixture
def pushed_demo(hub, tmp_path, monkeypatch):  # noqa: F811
    """The demo index, built and pushed with the README's command (the fake:16 embedder instead of CLIP)."""
    monkeypatch.chdir(ROOT)  # the command names assets/demo, relative to the repository
    build, push = readme_command()
    out = tmp_path / "demo-index"
    build = [str(out) if a == "indices/demo-hub" else a for a in build] + ["--embedder", "fake:16"]
    push = [str(out) if a == "indices/demo-hub" else a.replace("USER/", "alice/") for a in push]
    assert main(build) == 0 and main(push) == 0
    assert ("dataset", REPO) in hub.repos
    return out


def test_a_space_with_iir_index_loads_the_pushed_demo_index_without_indexing(pushed_demo, hub, tmp_path,  # noqa: F811
                                                                             monkeypatch):
    from interactive_ir.ui.startup import app_config, load_app

    indices = tmp_path / "fresh-space-indices"  # a new Space: no local index at all
    monkeypatch.setenv("IIR_INDICES_DIR", str(indices))
    parts = load_app(app_config(environ={"IIR_INDEX": f"hf://{REPO}", "IIR_LLM": "none"}))
    index = parts.engine.core.index
    assert len(index) == 320 and index.embedder_spec == "fake:16"
    assert any(f"hf://{REPO}" in n and "320 images" in n for n in parts.notes)
    assert not indices.exists() or not any(indices.iterdir())  # nothing was indexed here
    assert Path(index.image_file(0)).is_file()  # the images came with it, from the Hub cache
    hub.requests.clear()
    load_app(app_config(environ={"IIR_INDEX": f"hf://{REPO}", "IIR_LLM": "none"}))  # a restart
    assert not [r for r in hub.requests if "/images/" in r[1] or ".npy" in r[1]]  # downloads nothing again


def test_when_the_indexs_embedder_cannot_be_loaded_the_space_says_so_and_falls_back(pushed_demo, hub,  # noqa: F811
                                                                                   tmp_path, monkeypatch):
    from iir_testutils import make_images, write_captions

    from interactive_ir.assembly import app_index as demo

    repo = hub.repos[("dataset", REPO)]
    manifest = json.loads(repo.files["manifest.json"])
    repo.files["manifest.json"] = json.dumps({**manifest, "embedder": "no-such-backend:clip"}).encode()
    caps = make_images(tmp_path / "gallery", 6)
    write_captions(tmp_path / "gallery" / "manifest.jsonl", caps)
    monkeypatch.setattr(demo, "DEMO_IMAGES", tmp_path / "gallery")
    monkeypatch.setattr(demo, "DEMO_CAPTIONS", tmp_path / "gallery" / "manifest.jsonl")
    monkeypatch.setenv("IIR_INDICES_DIR", str(tmp_path / "indices"))
    monkeypatch.setenv("IIR_EMBEDDER", "fake:16")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored at teardown: the fallback may set it (hub.go_offline)
    s = demo.prepare(index=Path(f"hf://{REPO}"))
    assert len(s.retriever.index) == 6  # the gallery, indexed here as before
    assert any("no-such-backend:clip" in n and "cannot be loaded" in n and "demo gallery" in n for n in s.notes)


def test_the_space_header_signs_in_and_preloads():
    header = (ROOT / "README.md").read_text().split("---")[1]
    assert "hf_oauth: true" in header and "inference-api" in header
    assert "preload_from_hub:" in header
