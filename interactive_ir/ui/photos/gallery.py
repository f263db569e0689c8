"""The photo index at start-up: served at once when it was built before (`photo_setup`), else named for the
background build while the clipart serves."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from interactive_ir.ui.photos.config import Decision, PhotoDemoConfig

log = logging.getLogger(__name__)


@dataclass
class ServedPhotos:
    retriever: object  # the Retriever over the photo index
    notes: list[str] = field(default_factory=list)  # what the page's "About this app" says about it


def open_photo_index(cfg: PhotoDemoConfig, path: Path, embedder):
    """(the photo index at `path`, opened for `embedder`, with the configured credit recorded) or None when
    it is not there or does not open. An owner's corrected credit (IIR_PHOTO_TITLE ...) is written into it:
    the page reads the credit from the index."""
    from interactive_ir.errors import IIRError
    from interactive_ir.index import load_index
    from interactive_ir.index.credit import credit_of, write_credit

    if not Path(path).is_dir():
        return None
    try:
        index = load_index(path, expect_embedder=embedder.spec)
        if credit_of(index.manifest) != cfg.credit():
            write_credit(path, cfg.credit())
            index = load_index(path, expect_embedder=embedder.spec)
    except (IIRError, OSError) as e:
        log.warning("photo demo: the photo index %s does not open (%s); it is built again", Path(path).name,
                    str(e).splitlines()[0][:200])
        return None
    return index


def photo_note(index, embedder_spec: str) -> str:
    from interactive_ir.index.credit import credit_of

    credit = credit_of(index.manifest)
    where = f" from {credit.line().partition(': ')[2]}" if credit else ""  # "from DOCCI (Onoe et al., 2024), CC BY 4.0"
    return f"photo gallery: {len(index):,} photos{where}, embedder {embedder_spec}"


def photo_setup(cfg: PhotoDemoConfig, decision: Decision, embedder, indices: Path):
    """(ServedPhotos, None) when the photo index for `embedder` is built; else (None, the folder to build it
    in) when `decision` allows a build, or (None, None)."""
    from interactive_ir.retrieval.retriever import Retriever

    path = cfg.index_dir(indices, embedder.spec)
    index = open_photo_index(cfg, path, embedder) if decision.use else None
    if index is not None:
        log.info("photo demo: serving %s photos from %s", f"{len(index):,}", path.name)
        return ServedPhotos(Retriever(index, embedder), [photo_note(index, embedder.spec)]), None
    if not decision.build:
        if decision.why:
            log.info("photo demo: clipart gallery (%s)", decision.why)
        return None, None
    return None, path
