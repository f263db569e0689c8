"""Composed search from the command line: `search --index DIR --image REF --text "make it red"`.

REF is an indexed image id, a path to an indexed image, or any other image file (an upload). The method
is imagescope when an LLM is given (`--llm`), else compose; a VLM from `IIR_VLM` (e.g.
`openai-vision:gpt-4o-mini`) turns on ImageScope's re-ranking stages, a captioner from `IIR_CAPTIONER`
describes uploads.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from interactive_ir.config import DEFAULT_K
from interactive_ir.types import Hit

log = logging.getLogger(__name__)


def reference_id(index, image: str) -> str | None:
    """The index id `image` names (an id, or a path inside the indexed folder), else None."""
    if image in index.row_of:
        return image
    path = Path(image).expanduser()
    roots = {Path(os.path.abspath(index.image_root)), index.image_root.resolve()}
    for p in (Path(os.path.abspath(path)), path.resolve()):  # as given (symlinked files), then resolved
        for root in roots:
            try:
                rel = p.relative_to(root).as_posix()
            except (ValueError, OSError):
                continue
            if rel in index.row_of:
                return rel
    return None


def run_composed(retriever, image_path: str, text: str, method: str | None = None, llm_spec: str | None = None,
                 k: int = DEFAULT_K, *, vlm_spec: str | None = None, captioner_spec: str | None = None) -> list[Hit]:
    """One composed-search round; hits carry the re-ranker's reasons in `why` when a VLM ran."""
    from dataclasses import replace

    from interactive_ir.backends import make_captioner, make_vlm
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.modes import registry

    composed = registry.mode("composed")
    method = method or composed.auto(bool(llm_spec))
    llm = None
    if composed.method(method).needs_llm:
        from interactive_ir.backends.llms import build_llm

        llm = build_llm(llm_spec)  # the default LLM (IIR_LLM, OpenAI key, offline SmolLM2) when none is given
    vlm_spec = vlm_spec or os.environ.get("IIR_VLM", "").strip() or None
    captioner_spec = captioner_spec or os.environ.get("IIR_CAPTIONER", "").strip() or None
    engine = build_engine(retriever, llm=llm, vlm=make_vlm(vlm_spec) if vlm_spec else None,
                          captioner=make_captioner(captioner_spec) if captioner_spec else None,
                          config=EngineConfig(k=k))
    session = engine.new_session(ask_questions=False, source="cli")
    ref = reference_id(retriever.index, image_path)
    if ref is not None:
        turn = engine.relative(session, text, reference=ref, method=method)
    else:
        turn = engine.relative(session, text, image=image_path, method=method)
    if turn.error:
        log.warning("%s", turn.error)
    return [replace(h, why=turn.why.get(h.id, [])) for h in engine.hits_of(turn)]
