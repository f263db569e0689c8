"""The photo demo at start-up: whether this start wants photos (`photo_plan`) and, when their index is
missing, the background build to start once the page serves (`photo_build`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from interactive_ir.ui.photos.config import Decision, PhotoDemoConfig, decide, photo_demo_config

log = logging.getLogger(__name__)


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


def photo_build(plan: tuple[PhotoDemoConfig, Decision] | None, setup):
    """The background build of the photo index `setup` names (`demo.Setup.photos_to_build`), not started; None
    when photos are served already or none are wanted."""
    if plan is None or setup.photos_to_build is None:
        return None
    from interactive_ir.ui.photos.build import PhotoBuild

    return PhotoBuild(plan[0], setup.retriever.embedder.spec, setup.photos_to_build)


def preparing_note(cfg: PhotoDemoConfig) -> str:
    """What "About this app" says while the photos are being prepared."""
    return (f"photo gallery: {cfg.count:,} photos from {cfg.title} ({cfg.license}) are being prepared in the "
            "background; the page switches to them when they are ready")
