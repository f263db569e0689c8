"""Which index a study runs on: the study file's `index:`, the app's `--index`, or the demo gallery."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from interactive_ir.study.config import StudyConfigError, load_study
from interactive_ir.study.index_choice import index_for_app, study_index_ids, study_index_path, with_study_index
from interactive_ir.ui.startup import app_config


def write_study(folder: Path, **fields) -> Path:
    d = {"study_id": "s1", "conditions": {"A": "text"}, "tasks": ["img000.png"], **fields}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(d))
    return path


def test_relative_index_is_found_beside_the_study_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "studies" / "idx").mkdir(parents=True)
    study = load_study(write_study(tmp_path / "studies", index="idx"))
    assert study.index_named and study_index_path(study) == tmp_path / "studies" / "idx"
    choice = index_for_app(study, None)
    assert choice.path == tmp_path / "studies" / "idx" and "named by the study file" in choice.describe()
    # the same folder given as --index (another spelling) is no conflict
    assert index_for_app(study, tmp_path / "studies" / ".." / "studies" / "idx").path == choice.path


def test_relative_index_falls_back_to_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "indices" / "mine").mkdir(parents=True)
    study = load_study(write_study(tmp_path / "studies", index="indices/mine"))
    assert study_index_path(study) == Path("indices/mine")


def test_no_index_named_takes_the_flag_or_the_demo(tmp_path):
    study = load_study(write_study(tmp_path))
    assert not study.index_named and study.index == "demo"
    assert index_for_app(study, tmp_path / "x").path == tmp_path / "x"
    assert index_for_app(study, None).path is None


def test_a_contradicting_flag_is_an_error_naming_both(tmp_path):
    (tmp_path / "idx").mkdir()
    study = load_study(write_study(tmp_path, index="idx"))
    with pytest.raises(StudyConfigError, match=r"runs on index .*idx but --index gives .*other"):
        index_for_app(study, tmp_path / "other")
    demo = load_study(write_study(tmp_path / "d", index="demo"))
    assert demo.index_named
    with pytest.raises(StudyConfigError, match="demo gallery"):
        index_for_app(demo, tmp_path / "idx")


def test_app_config_serves_the_study_index(tmp_path, tiny_index):
    r, ids, caps = tiny_index  # built at tmp_path / "index"
    path = write_study(tmp_path / "s", index=str(tmp_path / "index"), tasks=ids[:2])
    cfg = with_study_index(app_config(environ={}, study=path))
    assert cfg.index == tmp_path / "index"
    got_ids, got_caps = study_index_ids(load_study(path))
    assert got_ids == list(r.index.ids) and got_caps[ids[0]] == r.index.records[r.index.row_of[ids[0]]].caption
    assert with_study_index(app_config(environ={})).index is None  # no study: unchanged
