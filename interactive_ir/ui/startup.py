"""Start-up of the web app's page: the app's options (`assembly.options`), then index, models and engine
(`assembly.app.assemble`), with what only the page adds: the photo gallery (`assembly.photo_index`), the ZeroGPU
slots around local model calls, and a progress line while the demo index is built (`load_app`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from interactive_ir.assembly.options import AppConfig, app_config

__all__ = ["AppConfig", "AppParts", "app_config", "load_app"]

log = logging.getLogger(__name__)


@dataclass
class AppParts:
    engine: object  # the shared engine
    notes: list[str] = field(default_factory=list)  # what runs and why (shown on the page)
    questions_off_reason: str = ""  # why the question mode is off ("" when it is on)
    photos: object = None  # the background build of the photo index (`assembly.photo_build.PhotoBuild`), or None
    engine_over: Callable | None = None  # an engine over another Retriever with the same models (the photo switch)


def _progress_logger() -> Callable[[int, int, str], None]:
    """Index-building progress: one line rewritten in place on a terminal, a log line per quarter otherwise."""
    import sys

    tty = sys.stderr.isatty()
    last = {"pct": -25}

    def progress(done: int, total: int, msg: str = "") -> None:
        pct = int(100 * done / total) if total else 100
        if tty:
            sys.stderr.write(f"\rbuilding the index: {done}/{total} images ({pct}%)" + ("\n" if done >= total else ""))
            sys.stderr.flush()
        elif pct >= last["pct"] + 25 or done == total:
            last["pct"] = pct
            log.info("building the index: %d/%d images (%d%%)", done, total, pct)

    return progress


def load_app(cfg: AppConfig, photos=None) -> AppParts:
    """Index, models and engine for `cfg` (slow: run once at start-up; `assembly.app.assemble`). `photos`: the
    photo demo's `PhotoDemoConfig` (None: from IIR_PHOTO_*), on where `assembly.photo_config.decide` says so."""
    import functools

    from interactive_ir.assembly.app import assemble
    from interactive_ir.assembly.photo_index import photo_build, photo_plan, photo_setup, preparing_note
    from interactive_ir.ui.serving.gpu import gpu_slots

    plan = photo_plan(photos, index_given=cfg.index is not None)
    gallery = functools.partial(photo_setup, *plan) if plan is not None else None

    def preparing(setup) -> list[str]:
        return [preparing_note(plan[0])] if plan is not None and setup.photos_to_build is not None else []

    # ZeroGPU: each generate call in a GPU slot sized from its work, and each caption / ask call of a local model
    parts = assemble(cfg, progress=_progress_logger(), gallery=gallery, after_index=preparing, wrap=gpu_slots)
    return AppParts(parts.engine, parts.notes, parts.questions_off_reason, photos=photo_build(plan, parts.setup),
                    engine_over=parts.engine_over)
