"""Loading the LLM, VLM and captioner from spec strings.

Two ways, one vocabulary (`specs.is_no_model`): the app's (`load_optional`, `load_llm`, `load_vision`) leaves
a model that cannot be loaded out, with a note saying why, so the page always comes up; the commands'
(`open_model`, `open_llm`) raise, so a wrong spec stops the command with the backend's own message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from interactive_ir.assembly.llm_choice import choose_llm
from interactive_ir.assembly.model_notes import llm_note
from interactive_ir.assembly.specs import is_no_model
from interactive_ir.errors import BackendUnavailable, IIRError

log = logging.getLogger(__name__)


def make(kind: str, spec: str, **options):
    """The `kind` ("llm", "vlm", "captioner" or "embedder") backend `spec` names (`backends.registry`, looked up
    when called), built with the backend's `options` (e.g. an embedder's `batch_size`); raises when it cannot
    be built."""
    from interactive_ir import backends

    return {"llm": backends.make_llm, "vlm": backends.make_vlm, "captioner": backends.make_captioner,
            "embedder": backends.make_embedder}[kind](spec, **options)


def open_model(kind: str, spec: str | None, **options):
    """The `kind` model `spec` names (built with `options`), or None for a "no model" word; a spec that cannot
    load raises."""
    return None if is_no_model(spec) else make(kind, spec.strip(), **options)


def open_llm(given: str | None = None, *, default: bool = True, environ: Mapping[str, str] | None = None):
    """The LLM `given` names, or with `default` (and nothing given) the one rule's (`choose_llm`); None for a
    "no model" word, without `default`, or when the rule gives none."""
    if not default and (given is None or not given.strip()):
        return None
    choice = choose_llm(given, environ)
    return make("llm", choice.spec) if choice.spec else None


def require_llm(given: str | None, what: str, environ: Mapping[str, str] | None = None):
    """`open_llm(given)`, raising when it gives none: `what` (e.g. "the imagescope method") needs one."""
    llm = open_llm(given, environ=environ)
    if llm is None:
        why = f"--llm {given.strip()} asks for none" if given and given.strip() else choose_llm(given, environ).why
        raise BackendUnavailable(f"{what} needs an LLM and none is chosen ({why}): give --llm SPEC, e.g. "
                                 "openai:gpt-4o-mini or transformers:smollm2")
    return llm


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [e.__class__.__name__])[0][:300]


def load_optional(kind: str, spec: str, make_it: Callable[[str], object]) -> tuple[object | None, str]:
    """(backend or None, note). A failure is a note, logged as a warning, not a crash: the app runs without
    this model."""
    if is_no_model(spec):
        return None, ""
    try:
        backend = make_it(spec)
    except (IIRError, OSError, ImportError, RuntimeError, ValueError) as e:
        from interactive_ir.backends.redact import public_spec, public_text, redact_text

        log.warning("%s %s could not be loaded (%s)", kind, redact_text(spec), redact_text(_first_line(e)))
        return None, f"{kind} {public_spec(spec)} could not be loaded ({public_text(_first_line(e))})"
    return backend, ""


@dataclass
class LoadedLLM:
    """The app's LLM, with what the page says about it."""

    llm: object | None  # the LLM, or None
    says: str = ""  # what it does and where it runs (the page's "About this app"); "" without one
    why: str = ""  # why there is none ("" with one)
    warned: list[str] = field(default_factory=list)  # notes already logged as warnings


def load_llm(given: str = "") -> LoadedLLM:
    """The app's LLM: `given` (flag or IIR_LLM), else the one default rule; a failure leaves it out."""
    from interactive_ir import backends
    from interactive_ir.backends.guard import probe

    choice = choose_llm(given)
    if not choice.spec:  # nothing to load: no "loading" line (the page's note says why, once)
        return LoadedLLM(None, "", choice.why)
    from interactive_ir.backends.redact import redact_text

    log.info("loading the LLM %s ...", redact_text(choice.spec))
    t = time.perf_counter()
    llm, failed = load_optional("LLM", choice.spec, lambda spec: backends.make_llm(spec))
    if llm is not None:
        log.info("LLM %s loaded in %.1f s", redact_text(choice.spec), time.perf_counter() - t)
        reach = probe(llm)  # an HTTP server is checked once: the page says whether it answers
        return LoadedLLM(llm, reach[1] if reach and not reach[0] else llm_note(choice.spec)
                         + (" Its server answers." if reach else ""))
    return LoadedLLM(None, "", failed or choice.why, [failed] if failed else [])


@dataclass
class Vision:
    """The app's captioner and VLM, with the notes on both."""

    captioner: object | None  # describes uploaded references, or None
    vlm: object | None  # re-ranks reference + caption results, or None
    notes: list[str] = field(default_factory=list)  # failures first, then what each loaded one does
    warned: list[str] = field(default_factory=list)  # notes already logged as warnings


def load_vision(captioner_spec: str, vlm_spec: str) -> Vision:
    """The app's captioner and VLM; a failure leaves one out with a note."""
    from interactive_ir import backends
    from interactive_ir.backends.guard import probe
    from interactive_ir.backends.redact import public_spec

    t = time.perf_counter()
    captioner, cap_note = load_optional("captioner", captioner_spec, lambda s: backends.make_captioner(s))
    vlm, vlm_note = load_optional("VLM", vlm_spec, lambda s: backends.make_vlm(s))
    if captioner is not None or vlm is not None:
        log.info("captioner/VLM loaded in %.1f s", time.perf_counter() - t)
    failed = [n for n in (cap_note, vlm_note) if n]
    notes = list(failed)
    if captioner is not None:
        reach = probe(captioner)
        notes.append(reach[1] if reach and not reach[0]
                     else f"Captioner {public_spec(captioner_spec)}: describes uploaded reference images.")
    if vlm is not None:
        reach = probe(vlm)
        notes.append(reach[1] if reach and not reach[0]
                     else f"VLM {public_spec(vlm_spec)}: re-ranks reference + caption results and says why.")
    return Vision(captioner, vlm, notes, failed)
