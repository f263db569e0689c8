"""Index, models and engine for the app's options (`assemble`), in that order, each loaded once: the page's
start-up (`ui.startup.load_app`, which hands in the photo gallery and the ZeroGPU wrapping) and the study's
dry run use it. Every model is loaded here, none on a user's first turn; each stage logs one line with its
time. Optional models (LLM, captioner, VLM) that cannot be loaded are left out with a note saying why, so
the page always comes up; notes are shown on the page and logged.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from interactive_ir.assembly.app_index import Gallery, Setup, prepare
from interactive_ir.assembly.models import load_llm, load_vision
from interactive_ir.assembly.options import AppConfig
from interactive_ir.config import apply_env, apply_overrides

log = logging.getLogger(__name__)

PICTURE_QUESTIONS = ("Questions: picture questions built from the results (click the closest image, or yes/no). "
                     "No LLM writes or rewrites text: {why}.")
QUESTIONS_OFF = ("Questions are off: {why}. Marking results as relevant and searching with a reference image and "
                 "a caption still work.")


@dataclass
class Assembled:
    """What `assemble` made."""

    engine: object  # the shared engine
    setup: Setup  # the index as opened (its retriever, notes, the photo index to build)
    notes: list[str] = field(default_factory=list)  # what runs and why, in the page's order (shown and logged)
    questions_off_reason: str = ""  # why the question mode is off ("" when it is on)
    engine_over: Callable | None = None  # an engine over another Retriever with the same models (the photo switch)


def _same(backend):
    return backend


def assemble(cfg: AppConfig, *, progress: Callable[[int, int, str], None] | None = None,
             gallery: Gallery | None = None, after_index: Callable[[Setup], list[str]] | None = None,
             wrap: Callable = _same) -> Assembled:
    """Index, models and engine for `cfg` (slow: run once at start-up). `gallery`: the photo demo where it is
    on (`app_index.prepare`); `after_index(setup)`: notes the page puts after the index's; `wrap`: each model
    as the engine gets it (ZeroGPU: `ui.serving.gpu.gpu_slots`)."""
    from interactive_ir.engine import EngineConfig, build_engine

    t0 = time.perf_counter()
    log.info("loading the index and the embedder ...")  # each stage is announced before it starts
    setup = prepare(index=cfg.index, embedder_spec=cfg.embedder or None, progress=progress, gallery=gallery)
    notes = list(setup.notes) + (after_index(setup) if after_index is not None else [])
    log.info("index and embedder ready in %.1f s", time.perf_counter() - t0)
    loaded = load_llm(cfg.llm)
    notes += [loaded.says] if loaded.llm is not None else []
    off = "" if loaded.llm is not None else QUESTIONS_OFF.format(why=loaded.why)
    if cfg.captioner or cfg.vlm:
        log.info("loading the captioner and VLM ...")
    vision = load_vision(cfg.captioner, cfg.vlm)
    notes += vision.notes
    llm, captioner, vlm = wrap(loaded.llm), wrap(vision.captioner), wrap(vision.vlm)
    setup.retriever.warm()  # the GPU's copy of the index is made now, not on a user's first search
    config = apply_overrides(apply_env(EngineConfig()), k=cfg.k)  # k: AppConfig's (IIR_K), never EngineConfig's
    engine_over = functools.partial(build_engine, llm=llm, captioner=captioner, vlm=vlm, config=config)
    engine = engine_over(setup.retriever)
    if llm is None and getattr(engine, "questions_enabled", False):  # grounded questions need no LLM
        notes.append(PICTURE_QUESTIONS.format(why=loaded.why))
        off = ""
    elif off:
        notes.append(off)
    warned = set(setup.warned) | set(loaded.warned) | set(vision.warned)
    for n in notes:
        if n not in warned:  # each warning once
            log.info("%s", n)
    log.info("start-up done in %.1f s", time.perf_counter() - t0)
    return Assembled(engine, setup, notes, off, engine_over)
