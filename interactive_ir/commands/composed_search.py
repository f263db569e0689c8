"""Composed search from the command line: `search --index DIR --image REF --text "make it red"`.

REF is an indexed image id, a path to an indexed image, or any other image file (an upload). The method
is imagescope when an LLM is given (`--llm`), else compose; a VLM from `IIR_VLM` (e.g.
`openai-vision:gpt-4o-mini`) turns on ImageScope's re-ranking stages, a captioner from `IIR_CAPTIONER`
describes uploads. Models are loaded by `interactive_ir.assembly` (one "no model" vocabulary, one default LLM).
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

    from interactive_ir.assembly.models import open_model, require_llm
    from interactive_ir.assembly.specs import given_spec, is_no_model
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.modes import registry

    composed = registry.mode("composed")
    method = method or composed.auto(not is_no_model(llm_spec))
    # the one default LLM rule (as the app's) when the method needs an LLM and none is given
    llm = require_llm(llm_spec, f"the {method} method") if composed.method(method).needs_llm else None
    engine = build_engine(retriever, llm=llm, vlm=open_model("vlm", given_spec(vlm_spec, "IIR_VLM")),
                          captioner=open_model("captioner", given_spec(captioner_spec, "IIR_CAPTIONER")),
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
