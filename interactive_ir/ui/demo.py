"""Choosing the app's index and models at start-up, building the demo index on first start.

`python app.py` with no `--index` serves the demo gallery in `assets/demo/`. Its index is built on
first start. When the chosen embedder cannot be loaded (no network, no weights), the app falls back
to a caption index of the gallery with a text embedder that runs offline, and says why.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from interactive_ir.config import DEFAULT_EMBEDDER, OFFLINE_TEXT_EMBEDDER
from interactive_ir.errors import BackendError, IIRError, IndexLoadError

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO_IMAGES = ROOT / "assets" / "demo"
DEMO_CAPTIONS = DEMO_IMAGES / "manifest.jsonl"


def indices_dir() -> Path:
    """Where built indices live (IIR_INDICES_DIR, default <repo>/indices)."""
    return Path(os.environ.get("IIR_INDICES_DIR") or ROOT / "indices")


@dataclass
class Setup:
    retriever: object  # the Retriever serving searches
    notes: list[str] = field(default_factory=list)  # what runs and why, shown on the page and logged
    warned: list[str] = field(default_factory=list)  # the notes already logged as warnings (not logged again)


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", spec).strip("-").lower()[:60]


def _try_embedder(spec: str):
    """The embedder `spec`; with the hub unreachable, from the local Hugging Face cache only (weights cached on
    an earlier, online start still load), failing fast when they are not there."""
    from interactive_ir.backends import hub, make_embedder

    if not hub.needs_hub(spec) or hub.hub_reachable():
        return make_embedder(spec)
    hub.go_offline()
    try:
        return make_embedder(spec)
    except (IIRError, OSError) as e:
        raise BackendError(f"{spec} needs weights from the model hub, which cannot be reached, "
                           "and they are not in the local cache") from e


def demo_index(embedder, progress: Callable[[int, int, str], None] | None = None) -> Path:
    """The demo gallery's index for this embedder, built (or updated) if needed."""
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index

    out = indices_dir() / f"demo-{_slug(embedder.spec)}"
    try:
        load_index(out, expect_embedder=embedder.spec)
        return out
    except IndexLoadError:
        pass
    if not DEMO_CAPTIONS.exists():
        raise IndexLoadError(f"the demo gallery is missing ({DEMO_CAPTIONS}); pass --index DIR")
    log.info("building the demo index %s with %s (first start)", out, embedder.spec)
    build_index(BuildConfig(images=DEMO_IMAGES, out=out, captions=DEMO_CAPTIONS, skip_missing_captions=True),
                embedder, progress=progress)
    return out


def prepare(index: Path | None = None, embedder_spec: str | None = None,
            progress: Callable[[int, int, str], None] | None = None) -> Setup:
    """Load `index` (with its own embedder unless one is given), or the demo gallery's index."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    if index is not None:
        idx = load_index(index)
        emb = make_embedder(embedder_spec or idx.embedder_spec)
        log.info("index %s: %d images", Path(index).resolve(), len(idx))  # the full path for the log only
        return Setup(Retriever(idx, emb), [f"index {Path(index).resolve().name} ({len(idx)} images) with {emb.spec}"])
    wanted = embedder_spec or os.environ.get("IIR_EMBEDDER") or DEFAULT_EMBEDDER
    notes = []
    try:
        emb = _try_embedder(wanted)
    except (IIRError, OSError) as e:
        if wanted == OFFLINE_TEXT_EMBEDDER:
            raise
        reason = str(e).splitlines()[0][:300]
        notes.append(f"{wanted} is unavailable ({reason}); falling back to a caption index of the demo gallery "
                     f"with {OFFLINE_TEXT_EMBEDDER}, which runs offline: search matches the images' captions")
        log.warning(notes[-1])
        emb = make_embedder(OFFLINE_TEXT_EMBEDDER)
    path = demo_index(emb, progress)
    idx = load_index(path, expect_embedder=emb.spec)
    warned = list(notes)
    notes.insert(0, f"demo gallery: {len(idx)} public-domain images, embedder {emb.spec}"
                    + (" (caption index)" if idx.caption_only else ""))
    return Setup(Retriever(idx, emb), notes, warned)
