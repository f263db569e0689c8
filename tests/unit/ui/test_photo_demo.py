"""Issue 25 D4: the photo demo. Where the Hub is reachable (a Space), the default gallery is a few thousand
captioned photos of a Hub dataset (DOCCI's Parquet mirror), indexed in the background while the clipart
serves, then switched to; credited on the page from the index. Against tests/hub_standin.py serving a tiny
dataset in the mirror's layout (tests/photo_standin.py), with the fake embedder."""

from __future__ import annotations

import json
import logging
import socket
import sys
import urllib.request
from pathlib import Path

import pytest
from hub_standin import StandInHub
from photo_standin import REPO, sample_rows, serve_docci

from interactive_ir.assembly import app_index as demo
from interactive_ir.assembly.photo_config import Decision, PhotoDemoConfig, decide, photo_demo_config

ROOT = Path(__file__).resolve().parents[3]
N = 8  # photos in the stand-in dataset


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The stand-in Hub with the DOCCI mirror's layout under its default name; a small clipart gallery; the
    fake:16 embedder; fresh indices."""
    from iir_testutils import make_images, write_captions

    standin = StandInHub()
    serve_docci(standin, N)
    url = standin.start()
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    for name in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN", "IIR_INDEX", "SPACE_ID"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in __import__("os").environ if n.startswith("IIR_PHOTO_")]:
        monkeypatch.delenv(name)
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # an earlier go_offline()
    caps = make_images(tmp_path / "gallery", 6)
    write_captions(tmp_path / "gallery" / "manifest.jsonl", caps)
    monkeypatch.setattr(demo, "DEMO_IMAGES", tmp_path / "gallery")
    monkeypatch.setattr(demo, "DEMO_CAPTIONS", tmp_path / "gallery" / "manifest.jsonl")
    monkeypatch.setenv("IIR_INDICES_DIR", str(tmp_path / "indices"))
    monkeypatch.setenv("IIR_EMBEDDER", "fake:16")
    yield standin
    standin.stop()


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def on(**fields) -> PhotoDemoConfig:
    return PhotoDemoConfig(demo="on", **fields)


def build_now(cfg: PhotoDemoConfig, spec: str = "fake:16"):
    """The photo index built as the app builds it (the child process), waited for."""
    from interactive_ir.assembly.photo_build import PhotoBuild

    build = PhotoBuild(cfg, spec, cfg.index_dir(demo.indices_dir(), spec))
    build.start()
    assert build.finished.wait(120), build.status()
    return build


def app_parts(photos: PhotoDemoConfig | None = None, **env):
    from interactive_ir.ui.startup import app_config, load_app

    return load_app(app_config(environ={"IIR_LLM": "none", **env}), photos=photos)


# --- when the photo demo is on ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode, env, given, reachable, want", [
    ("auto", {}, False, True, (False, False)),  # not a Space: the clipart, as today
    ("auto", {"SPACE_ID": "alice/iir"}, False, True, (True, True)),  # a Space with the Hub: photos
    ("auto", {"SPACE_ID": "alice/iir"}, False, False, (True, False)),  # Hub down: only photos built before
    ("auto", {"SPACE_ID": "alice/iir"}, True, True, (False, False)),  # IIR_INDEX given: that index
    ("on", {}, False, True, (True, True)),
    ("on", {}, True, True, (False, False)),
    ("off", {"SPACE_ID": "alice/iir"}, False, True, (False, False)),
])
def test_auto_is_on_only_on_a_space_with_the_hub_reachable(mode, env, given, reachable, want):
    asked = []

    def hub_answers():
        asked.append(1)
        return reachable

    d = decide(PhotoDemoConfig(demo=mode), index_given=given, environ=env, reachable=hub_answers)
    assert isinstance(d, Decision) and (d.use, d.build) == want
    assert not asked or mode != "off"  # "off" never touches the network


def test_the_space_decision_asks_the_real_hub_address(hub, monkeypatch):
    from interactive_ir.assembly.photo_index import photo_plan

    assert photo_plan(index_given=False, environ={}) is None  # not a Space
    assert photo_plan(index_given=False, environ={"SPACE_ID": "alice/iir"})[1].build  # the stand-in answers
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    plan = photo_plan(index_given=False, environ={"SPACE_ID": "alice/iir"})
    assert plan is not None and not plan[1].build  # nothing is built while the Hub is down


def test_settings_name_the_mirror_columns_count_and_credit(monkeypatch):
    cfg = photo_demo_config({"IIR_PHOTO_DATASET": "bob/photos", "IIR_PHOTO_CAPTION_COLUMN": "text",
                             "IIR_PHOTO_COUNT": "500", "IIR_PHOTO_TITLE": "Bob's photos", "IIR_PHOTO_DEMO": "on"})
    assert (cfg.dataset, cfg.caption_column, cfg.count, cfg.demo) == ("bob/photos", "text", 500, "on")
    assert cfg.credit().line() == "Photos: Bob's photos (Onoe et al., 2024), CC BY 4.0"
    assert photo_demo_config({}, demo="off").demo == "off"  # the app's --photo-demo flag
    assert cfg.index_dir(Path("/x"), "fake:16") != photo_demo_config({}).index_dir(Path("/x"), "fake:16")
    for bad, says in (({"IIR_PHOTO_DEMO": "maybe"}, "use auto, on or off"), ({"IIR_PHOTO_COUNT": "0"}, "at least 1"),
                      ({"IIR_PHOTO_DATASET": "docci"}, "USER/NAME")):
        with pytest.raises(ValueError, match=says):
            photo_demo_config(bad)


# --- start-up ----------------------------------------------------------------------------------------------
def test_offline_serves_the_clipart_as_today(hub, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    monkeypatch.setenv("SPACE_ID", "alice/iir")
    hub.requests.clear()
    parts = app_parts()
    assert len(parts.engine.index) == 6 and parts.photos is None
    assert parts.notes[0].startswith("demo gallery: 6 public-domain images")
    assert not any("photo" in n for n in parts.notes)


def test_a_photo_index_built_before_is_served_at_once(hub):
    build_now(on())
    hub.requests.clear()
    parts = app_parts(on())
    index = parts.engine.index
    assert len(index) == N and parts.photos is None  # the photos, and nothing to build
    assert Path(index.path).name.startswith("photos-not-lain-docci-")
    assert parts.notes[0] == "photo gallery: 8 photos from DOCCI (Onoe et al., 2024), CC BY 4.0, embedder fake:16"
    assert hub.requests == []  # nothing asked of the Hub: no download, no build
    ids = set(index.ids)
    assert ids == {f"train_{i:05d}.jpg" for i in range(N)}  # named by the mirror's example_id
    rows = sample_rows(N)
    assert index.records[0].caption == rows[0]["description"]  # search reads the whole description


def test_without_a_photo_index_the_clipart_serves_and_the_build_waits_for_the_page(hub):
    parts = app_parts(on())
    assert len(parts.engine.index) == 6  # the clipart, at once
    assert parts.photos is not None and parts.photos.status().state == "building"
    assert parts.photos._proc is None  # not started: the page comes first (app.serve starts it)
    assert any("are being prepared in the background" in n for n in parts.notes)


# --- the background build and the switch --------------------------------------------------------------------
def _page(tmp_path, monkeypatch, photos: PhotoDemoConfig):
    """app.build_page as `python app.py` calls it."""
    monkeypatch.syspath_prepend(str(ROOT))
    import app
    from interactive_ir.ui.startup import app_config

    cfg = app_config(environ={"IIR_LLM": "fake"}, host="127.0.0.1", port=_free_port())
    demo_page, engine, switch = app.build_page(cfg, None, photos)
    return app, cfg, demo_page, engine, switch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(cfg, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{cfg.port}/{path}", timeout=10) as r:
        return r.read().decode()


def test_the_build_runs_in_the_background_then_the_same_port_serves_the_photos(hub, tmp_path, monkeypatch):
    from interactive_ir.ui.photos.note import gallery_html

    app, cfg, clipart, engine, switch = _page(tmp_path, monkeypatch, on())
    assert switch is not None and len(engine.index) == 6
    note = switch.note()
    said = gallery_html(engine.index, note)
    assert "Preparing 2,880 photos (DOCCI, CC BY 4.0): downloading them" in said  # before the build starts
    assert "Drawings: " in said and "public domain" in said
    switch.grace_s = 1.0
    app.launch(clipart, engine, cfg)
    served_before = _get(cfg, "iir/served")
    launched = []

    def relaunch(page, eng):
        assert not clipart.is_running  # the clipart page was closed first: the same port
        launched.append(eng)
        app.launch(page, eng, cfg)

    try:
        page = switch.run(clipart, relaunch)
    finally:
        clipart.close()
        switch.build.stop()
    try:
        assert page is not clipart and page.is_running and len(launched) == 1
        # the clipart page's tabs were told: their poll says the photos are ready (then page.js reloads them)
        told = gallery_html(engine.index, note)
        assert 'data-photos="ready"' in told and "Photos are ready: this page reloads with them" in told
        assert f'data-index="{served_before}"' in told
        served_after = _get(cfg, "iir/served")  # the same port, now the photo page
        assert served_after != served_before and served_after.startswith("photos-not-lain-docci-")
        photos = launched[0]
        assert len(photos.index) == N and Path(photos.index.path).name == served_after
        assert photos.llm is engine.llm and photos.retriever.embedder is engine.retriever.embedder  # models shared
        line = gallery_html(photos.index)
        assert "Photos: " in line and "DOCCI</a> (Onoe et al., 2024)" in line and "Drawings" not in line
    finally:
        page.close()


def test_a_failed_build_keeps_the_clipart_with_a_note_and_is_not_retried(hub, tmp_path, monkeypatch, caplog):
    from interactive_ir.ui.photos.note import gallery_html

    app, cfg, clipart, engine, switch = _page(tmp_path, monkeypatch, on(caption_column="caption"))  # no such column
    app.launch(clipart, engine, cfg)
    try:
        with caplog.at_level(logging.WARNING, logger="interactive_ir.assembly"):
            page = switch.run(clipart, lambda p, e: pytest.fail("a failed build must not switch"))
        assert page is clipart and clipart.is_running
        st = switch.build.status()
        assert st.state == "failed" and "no caption column 'caption'" in st.why and "description" in st.why
        said = gallery_html(engine.index, switch.note())
        assert "could not be prepared (the photo collection could not be read)" in said
        assert "tries again when it restarts" in said and "Drawings: " in said
        lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(lines) == 1 and "tried again on the next start" in lines[0].getMessage()
        assert _get(cfg, "iir/served") == Path(engine.index.path).name  # the clipart still serves
        assert switch.build._proc.poll() is not None  # one child, finished; nothing is started again
        indices = Path(demo.indices_dir())
        assert not [p.name for p in indices.iterdir() if p.name.startswith(("photos-", ".photos-")) and
                    not p.name.endswith(".lock")]  # nothing half-built left behind
    finally:
        clipart.close()


def test_a_missing_mirror_fails_the_same_way(hub, tmp_path, monkeypatch):
    app, cfg, clipart, engine, switch = _page(tmp_path, monkeypatch, on(dataset="nobody/gone"))
    app.launch(clipart, engine, cfg)
    try:
        assert switch.run(clipart, lambda p, e: pytest.fail("no switch")) is clipart
        assert switch.build.status().state == "failed"
    finally:
        clipart.close()


def test_a_mirror_without_the_id_column_names_photos_by_content(hub):
    hub.add_repo("dataset", "bob/docci-noid", __import__("photo_standin").docci_files(N, drop=("example_id",)))
    build = build_now(on(dataset="bob/docci-noid"))
    assert build.ready
    from interactive_ir.index import load_index

    ids = load_index(build.out).ids
    assert len(ids) == N and all(len(i) == len("0123456789abcdef0123.jpg") for i in ids)


# --- the credit ---------------------------------------------------------------------------------------------
def test_the_credit_line_comes_from_the_index(hub):
    from interactive_ir.index import load_index
    from interactive_ir.index.credit import Credit, credit_of, write_credit
    from interactive_ir.ui.layout import notes_markdown
    from interactive_ir.ui.photos.note import gallery_html

    build = build_now(on(title="Test Scenes", citation="", license="CC0", url="https://example.org/scenes",
                         license_url=""))
    index = load_index(build.out)
    assert credit_of(index.manifest).line() == "Photos: Test Scenes, CC0"  # recorded at build time
    line = gallery_html(index)
    assert 'Photos: <a href="https://example.org/scenes"' in line and ">Test Scenes</a>, CC0" in line
    write_credit(build.out, Credit("Pictures", "Another name", "CC BY-SA 4.0", "Someone, 2020"))
    again = gallery_html(load_index(build.out))  # the same page code: the words follow the index
    assert "Pictures: Another name (Someone, 2020), CC BY-SA 4.0" in again and "Test Scenes" not in again
    assert notes_markdown(["x"], credit_of(load_index(build.out).manifest)).endswith(
        "**Credit:** Pictures: Another name (Someone, 2020), CC BY-SA 4.0")
    manifest = json.loads((build.out / "manifest.json").read_text())
    assert manifest["source"]["hf_dataset"] == REPO and manifest["source"]["limit"] == 2880


def test_the_clipart_keeps_its_public_domain_line_and_an_own_index_has_none(hub, tiny_index):
    from interactive_ir.index import load_index
    from interactive_ir.ui.photos.note import gallery_html

    s = demo.prepare(embedder_spec="fake:16")
    line = gallery_html(s.retriever.index)
    assert 'Drawings: <a href="https://openclipart.org"' in line and "public domain</a>" in line
    own = gallery_html(tiny_index[0].index)
    assert "iir-credit" not in own  # a user's folder: no credit line is made up
    assert load_index(Path(s.retriever.index.path)).manifest["credit"]["license"] == "public domain"


def test_the_photo_page_shows_the_credit_and_about_says_it(hub):
    from interactive_ir.ui import build_demo

    build_now(on())
    parts = app_parts(on())
    page = build_demo(parts.engine, parts.notes)
    html = [b.value for b in page.blocks.values() if getattr(b, "elem_id", None) in ("iir-gallery", "iir-notes")]
    assert any('class="iir-credit">Photos: <a href="https://google.github.io/docci/"' in v for v in html)
    assert any("**Credit:** Photos: [DOCCI](https://google.github.io/docci/) (Onoe et al., 2024), "
               "[CC BY 4.0](https://creativecommons.org/licenses/by/4.0/)" in v for v in html)
    page.close()


def test_the_child_says_its_progress_in_lines(hub, tmp_path):
    import subprocess

    out = tmp_path / "built"
    done = subprocess.run([sys.executable, "-m", "interactive_ir.ui.photos.child", "--out", str(out), "--embedder",
                           "fake:16", "--dataset", REPO, "--caption-column", "description", "--id-column",
                           "example_id", "--limit", "5"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("iir-photos ")]
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[0] == "iir-photos phase download" and lines[-1] == "iir-photos done 5"
    assert "iir-photos progress 5 5" in lines
    bad = subprocess.run([sys.executable, "-m", "interactive_ir.ui.photos.child", "--out", str(tmp_path / "no"),
                          "--embedder", "fake:16", "--dataset", "nobody/gone"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert bad.returncode == 1 and bad.stdout.splitlines()[-1].startswith("iir-photos error ")
    assert "Traceback" not in bad.stdout + bad.stderr and not (tmp_path / "no").exists()


def test_a_second_process_waits_for_the_first_ones_build(hub, monkeypatch):
    """Two app processes behind nginx share IIR_INDICES_DIR: one builds, the other waits for its index (the
    lock is per open file, so two builds in one process stand in for two processes)."""
    from interactive_ir.assembly import photo_build as build_mod
    from interactive_ir.assembly.photo_build import PhotoBuild

    monkeypatch.setattr(build_mod, "WAIT_POLL_S", 0.2)
    cfg = on()
    out = cfg.index_dir(demo.indices_dir(), "fake:16")
    first, second = PhotoBuild(cfg, "fake:16", out), PhotoBuild(cfg, "fake:16", out)
    hub.repos[("dataset", REPO)].slow_s = 1.0  # the first is still downloading when the second starts
    first.start()
    second.start()
    assert second.status().phase == "elsewhere" and second._proc is None  # no second child
    assert first.finished.wait(120) and second.finished.wait(30)
    assert first.ready and second.ready


def test_the_build_stops_when_the_app_is_killed(hub, tmp_path):
    """No orphan keeps building after the app is gone (killed, so no atexit runs): the child asks Linux to
    stop it with its parent."""
    import os
    import signal
    import subprocess
    import time

    hub.repos[("dataset", REPO)].slow_s = 60.0  # the child is still downloading when its parent dies
    parent = ("import subprocess, sys, time\n"
              f"c = subprocess.Popen([sys.executable, '-m', 'interactive_ir.ui.photos.child', '--out', "
              f"{str(tmp_path / 'out')!r}, '--embedder', 'fake:16', '--dataset', {REPO!r}])\n"
              "print(c.pid, flush=True)\ntime.sleep(120)\n")
    app = subprocess.Popen([sys.executable, "-c", parent], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = int(app.stdout.readline())
    deadline = time.time() + 60
    while time.time() < deadline and not any(m == "GET" for m, _ in hub.requests):
        time.sleep(0.2)  # wait-ok: polling the stand-in until the child is downloading
    app.send_signal(signal.SIGKILL)
    app.wait(10)
    app.stdout.close()

    def alive() -> bool:
        try:
            state = Path(f"/proc/{child}/status").read_text()
        except OSError:
            return False
        return "\nState:\tZ" not in state  # a zombie has stopped; only its exit status is left

    deadline = time.time() + 30
    while alive() and time.time() < deadline:
        time.sleep(0.2)  # wait-ok: polling the process table
    stopped = not alive()
    if not stopped:
        os.kill(child, signal.SIGKILL)
    assert stopped, "the build went on after the app was killed"
