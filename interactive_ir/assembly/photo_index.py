"""The photo demo's index at start-up: whether this start wants photos (`photo_plan`), the photo index served at
once when it was built before (`photo_setup`, `serve_photos`), else the folder to build it in while the clipart
serves, and that build, not started (`photo_build`: `photo_build.PhotoBuild`, in a child process).

The settings and when the demo is on are in `photo_config`; the page's parts (the progress note, the credit line,
the switch to the photo page) in `ui.photos`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from interactive_ir.assembly.app_index import open_credited
from interactive_ir.assembly.photo_config import Decision, PhotoDemoConfig, decide, photo_demo_config

log = logging.getLogger(__name__)


@dataclass
class ServedPhotos:
    retriever: object  # the Retriever over the photo index
    notes: list[str] = field(default_factory=list)  # what the page's "About this app" says about it


def photo_plan(cfg: PhotoDemoConfig | None = None, *, index_given: bool,
               environ: Mapping[str, str] | None = None) -> tuple[PhotoDemoConfig, Decision] | None:
    """(config, decision) when this start serves photos (built before, or to build); None for the clipart."""
    from interactive_ir.backends.hub import endpoint_reachable

    env = os.environ if environ is None else environ
    cfg = cfg if cfg is not None else photo_demo_config(env)
    decision = decide(cfg, index_given=index_given, environ=env, reachable=endpoint_reachable)
    if not decision.use:
        log.info("photo demo: clipart gallery (%s)", decision.why)
        return None
    return cfg, decision


def open_photo_index(cfg: PhotoDemoConfig, path: Path, embedder):
    """(the photo index at `path`, opened for `embedder`, with the configured credit recorded) or None when
    it is not there or does not open. An owner's corrected credit (IIR_PHOTO_TITLE ...) is written into it:
    the page reads the credit from the index."""
    from interactive_ir.errors import IIRError

    if not Path(path).is_dir():
        return None
    try:
        return open_credited(path, cfg.credit(), embedder.spec)
    except (IIRError, OSError) as e:
        log.warning("photo demo: the photo index %s does not open (%s); it is built again", Path(path).name,
                    str(e).splitlines()[0][:200])
        return None


def photo_note(index, embedder_spec: str) -> str:
    from interactive_ir.index.credit import credit_of

    credit = credit_of(index.manifest)
    where = f" from {credit.line().partition(': ')[2]}" if credit else ""  # "from DOCCI (Onoe et al., 2024), CC BY 4.0"
    return f"photo gallery: {len(index):,} photos{where}, embedder {embedder_spec}"


def serve_photos(cfg: PhotoDemoConfig, path: Path, embedder) -> ServedPhotos | None:
    """The photo index at `path` as served (`open_photo_index`), over `embedder`, with its note; None when it is
    not there or does not open."""
    from interactive_ir.retrieval.retriever import Retriever

    index = open_photo_index(cfg, path, embedder)
    if index is None:
        return None
    return ServedPhotos(Retriever(index, embedder), [photo_note(index, embedder.spec)])


def photo_setup(cfg: PhotoDemoConfig, decision: Decision, embedder, indices: Path):
    """(ServedPhotos, None) when the photo index for `embedder` is built; else (None, the folder to build it
    in) when `decision` allows a build, or (None, None). The app's `app_index.prepare` calls it (its `gallery`)."""
    path = cfg.index_dir(indices, embedder.spec)
    served = serve_photos(cfg, path, embedder) if decision.use else None
    if served is not None:
        log.info("photo demo: serving %s photos from %s", f"{len(served.retriever.index):,}", path.name)
        return served, None
    if not decision.build:
        if decision.why:
            log.info("photo demo: clipart gallery (%s)", decision.why)
        return None, None
    return None, path


def photo_build(plan: tuple[PhotoDemoConfig, Decision] | None, setup):
    """The background build of the photo index `setup` names (`app_index.Setup.photos_to_build`), not started;
    None when photos are served already or none are wanted."""
    if plan is None or setup.photos_to_build is None:
        return None
    from interactive_ir.assembly.photo_build import PhotoBuild

    return PhotoBuild(plan[0], setup.retriever.embedder.spec, setup.photos_to_build)


def preparing_note(cfg: PhotoDemoConfig) -> str:
    """What "About this app" says while the photos are being prepared."""
    return (f"photo gallery: {cfg.count:,} photos from {cfg.title} ({cfg.license}) are being prepared in the "
            "background; the page switches to them when they are ready")
