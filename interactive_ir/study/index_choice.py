"""Which index a study runs on: the one its file names, the app's `--index`, or the demo gallery.

The study file's `index:` is "demo" (the bundled demo gallery) or an index folder; a relative folder is
looked up beside the study file first, then from the current folder. `study validate`, `study plan`
and `python app.py --study FILE` all resolve it here, so the app serves the index the study was
validated against.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from interactive_ir.study.config import StudyConfig, StudyConfigError, load_study

log = logging.getLogger(__name__)

DEMO = "demo"  # the study file's name for the demo gallery


def study_index_path(study: StudyConfig) -> Path | None:
    """The index folder the study file names (None: the demo gallery).

    A relative folder is taken beside the study file when it exists there, else from the current folder.
    """
    if study.index == DEMO:
        return None
    index = Path(study.index)
    if index.is_absolute() or not study.source:
        return index
    beside = Path(study.source).parent / index
    if beside.exists() or not index.exists():
        return beside if beside.exists() else index
    return index


@dataclass(frozen=True)
class IndexChoice:
    """The index the app serves for a study, and why."""

    path: Path | None  # the index folder to serve; None = the demo gallery
    reason: str  # where the choice came from, for the log ("named by the study file", ...)

    def describe(self) -> str:
        where = "the demo gallery" if self.path is None else f"index {self.path}"
        return f"{where} ({self.reason})"


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def index_for_app(study: StudyConfig, given: Path | None) -> IndexChoice:
    """The index `python app.py --study FILE [--index DIR]` serves.

    The study file's `index:` when it names one (a different `--index` is an error: the targets and the
    sample were meant for the study's index); else `--index`; else the demo gallery.
    """
    if not study.index_named:
        if given is not None:
            return IndexChoice(given, "from --index; the study file names no index")
        return IndexChoice(None, "the study file names no index and --index is not given")
    named = study_index_path(study)
    if given is not None and (named is None or not _same(named, given)):
        what = "the demo gallery (index: demo)" if named is None else f"index {named}"
        raise StudyConfigError(f"the study file {study.source or study.study_id} runs on {what} but --index "
                               f"gives {given}: drop --index, or change `index:` in the study file")
    return IndexChoice(named, f"named by the study file {study.source}" if study.source else "named by the study")


def with_study_index(cfg):
    """The app's options `cfg` (`assembly.options.AppConfig`) with the index its study file runs on (`index_for_app`);
    unchanged without a study. Raises StudyConfigError for an invalid study file or an `--index` the study file
    contradicts."""
    if cfg.study is None:
        return cfg
    study = load_study(cfg.study)
    choice = index_for_app(study, cfg.index)
    log.info("study %s runs on %s", study.study_id, choice.describe())
    return replace(cfg, index=choice.path)


def study_index_ids(study: StudyConfig, index: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """(image ids, {id: first caption}) of the index a study runs on (`index` overrides the study's), without
    loading any model."""
    from interactive_ir.assembly.app_index import DEMO_CAPTIONS, DEMO_IMAGES

    if index is None:
        index = study_index_path(study)
    if index is not None:
        from interactive_ir.index import load_index

        idx = load_index(index, verify=False)
        return list(idx.ids), {r.id: r.caption for r in idx.records}
    from interactive_ir.index.captions_io import read_captions

    caps = read_captions(DEMO_CAPTIONS)
    ids = sorted(p.relative_to(DEMO_IMAGES).as_posix() for p in DEMO_IMAGES.rglob("*.png"))
    return ids, {i: (caps.get(i) or [""])[0] for i in ids}
