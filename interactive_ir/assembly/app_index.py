"""The app's index and its embedder at start-up (`prepare`), building the demo index on first start.

`python app.py` with no `--index` serves the demo gallery in `assets/demo/`. Its index is built on
first start. When the chosen embedder cannot be loaded (no network, no weights), the app falls back
to a caption index of the gallery with a text embedder that runs offline, and says why. Where the photo
demo is on (`photo_index.photo_setup`, handed in as `prepare`'s `gallery`), a photo index built before is served instead;
a missing one is named in `Setup.photos_to_build` (built in the background while the clipart serves).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from interactive_ir.assembly.specs import embedder_spec as default_embedder
from interactive_ir.config import DEFAULT_EMBEDDER, OFFLINE_TEXT_EMBEDDER
from interactive_ir.errors import BackendError, HubError, IIRError, IndexLoadError
from interactive_ir.index.credit import Credit

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO_IMAGES = ROOT / "assets" / "demo"
DEMO_CAPTIONS = DEMO_IMAGES / "manifest.jsonl"
DEMO_CREDIT = Credit("Drawings", "Open Clip Art Library", "public domain", url="https://openclipart.org",
                     license_url="https://creativecommons.org/publicdomain/zero/1.0/")  # assets/demo/SOURCES.md


def indices_dir() -> Path:
    """Where built indices live (IIR_INDICES_DIR, default <repo>/indices)."""
    return Path(os.environ.get("IIR_INDICES_DIR") or ROOT / "indices")


@dataclass
class Setup:
    retriever: object  # the Retriever serving searches
    notes: list[str] = field(default_factory=list)  # what runs and why, shown on the page and logged
    warned: list[str] = field(default_factory=list)  # the notes already logged as warnings (not logged again)
    photos_to_build: Path | None = None  # the photo index to build in the background (the clipart serves meanwhile)


class Served(Protocol):
    """An index another gallery serves in place of the clipart (`photo_index.ServedPhotos`)."""

    retriever: object  # its Retriever
    notes: list[str]  # what the page says about it


Gallery = Callable[[object, Path], tuple[Served | None, Path | None]]  # (embedder, indices dir) -> (served, to build)


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", spec).strip("-").lower()[:60]


# Where known embedders keep their weights on the hub (repo, files open_clip reads): with the hub unreachable, a
# look in the local cache says at once whether they can load, before torch and open_clip are imported (10-30 s).
HUB_WEIGHTS = {DEFAULT_EMBEDDER: ("laion/CLIP-ViT-B-32-laion2B-s34B-b79K",
                                  ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"))}


def _weights_cached(spec: str) -> bool | None:
    """True/False where the local Hugging Face cache does/does not hold `spec`'s weights; None when unknown."""
    if spec not in HUB_WEIGHTS:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    repo, files = HUB_WEIGHTS[spec]
    return any(isinstance(try_to_load_from_cache(repo, f), str) for f in files)


def _try_embedder(spec: str):
    """The embedder `spec`; with the hub unreachable, from the local Hugging Face cache only (weights cached on
    an earlier, online start still load), failing fast when they are not there (at once for HUB_WEIGHTS' specs)."""
    from interactive_ir.backends import hub, make_embedder

    if not hub.needs_hub(spec):
        return make_embedder(spec)
    log.info("checking that the model hub can be reached (for %s, at most 3 s) ...", spec)
    if hub.hub_reachable():
        log.info("loading the embedder %s (downloaded on a first start) ...", spec)
        return make_embedder(spec)
    hub.go_offline()
    missing = BackendError(f"{spec} needs weights from the model hub, which cannot be reached, "
                           "and they are not in the local cache")
    if _weights_cached(spec) is False:
        raise missing
    try:
        return make_embedder(spec)
    except (IIRError, OSError) as e:
        raise missing from e


def open_credited(path: Path, credit: Credit, embedder_spec: str, index=None):
    """The index at `path` (or `index`, opened from it) for `embedder_spec`, with `credit` recorded: written into
    it and opened again when it records another (built before indices recorded their credit; an owner's corrected
    credit), since the page reads the credit from the index. Raises as `load_index` and `write_credit` do
    (IIRError, OSError). The demo gallery's index and the photo demo's (`photo_index`) both open this way."""
    from interactive_ir.index import load_index
    from interactive_ir.index.credit import credit_of, write_credit

    index = index if index is not None else load_index(path, expect_embedder=embedder_spec)
    if credit_of(index.manifest) != credit:
        write_credit(path, credit)
        index = load_index(path, expect_embedder=embedder_spec)
    return index


def demo_index(embedder, progress: Callable[[int, int, str], None] | None = None) -> Path:
    """The demo gallery's index for this embedder, built (or updated) if needed."""
    from interactive_ir.index import load_index
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.index.credit import write_credit

    out = indices_dir() / f"demo-{_slug(embedder.spec)}"
    try:
        index = load_index(out, expect_embedder=embedder.spec)
    except IndexLoadError:
        pass
    else:
        try:
            index = open_credited(out, DEMO_CREDIT, embedder.spec, index)
            _calibrate(index, embedder)
        except OSError as e:  # a read-only copy: served as it is, without the credit line
            log.warning("the demo index %s could not record its credit or calibration (%s)", out.name, e)
        return out
    if not DEMO_CAPTIONS.exists():
        raise IndexLoadError(f"the demo gallery is missing ({DEMO_CAPTIONS}); pass --index DIR")
    log.info("building the demo index %s with %s (first start)", out, embedder.spec)
    build_index(BuildConfig(images=DEMO_IMAGES, out=out, captions=DEMO_CAPTIONS, skip_missing_captions=True),
                embedder, progress=progress)
    write_credit(out, DEMO_CREDIT)  # the page's credit line comes from the index
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.score_profile import store_profile

    store_profile(Retriever(load_index(out), embedder))  # the "no close match" note's measure
    return out


def _calibrate(index, embedder) -> None:
    """Fit the "no close match" calibration of an index built before it (or with an older one): a few seconds."""
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.score_profile import needs_profile, store_profile

    if needs_profile(index):
        store_profile(Retriever(index, embedder))


def _given_index(index, embedder_spec: str | None):
    """(the index `index` names, "") or, for an hf://... index the Hub cannot give (not found, private, corrupt,
    unreachable with nothing cached), (None, why): the page then comes up with the demo gallery."""
    from interactive_ir.index import load_index
    from interactive_ir.index.hub_index import hub_note, is_hub_spec, pull_index

    if not is_hub_spec(index):
        return load_index(index), ""
    try:
        return load_index(pull_index(str(index), embedder_spec)), ""
    except HubError as e:
        why = hub_note(str(index), e) + "; serving the demo gallery instead"
        log.warning(why)
        return None, why


def _shown(index) -> str:
    """An index as the page may show it: hf://USER/NAME as written (a Path folds the "//"), a local folder by its
    name only (no absolute path on the page: issue 29)."""
    from interactive_ir.index.hub_index import HF_PREFIX

    text = HF_PREFIX.sub("hf://", str(index))
    return text if text.startswith("hf://") else Path(text).resolve().name


def _index_embedder(index, spec: str):
    """(the embedder of a given index, "") or, for an hf://... index (a Space's prebuilt demo index) whose embedder
    cannot be loaded (no weights, the hub unreachable), (None, why): the page then comes up as without it."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.hub_index import is_hub_spec

    if not is_hub_spec(index):
        return make_embedder(spec), ""
    try:
        return _try_embedder(spec), ""
    except (IIRError, OSError) as e:
        why = (f"the index {_shown(index)} needs the embedder {spec}, which cannot be loaded "
               f"({str(e).splitlines()[0][:200]}); serving the demo gallery instead")
        log.warning(why)
        return None, why


def prepare(index: Path | None = None, embedder_spec: str | None = None,
            progress: Callable[[int, int, str], None] | None = None, gallery: Gallery | None = None) -> Setup:
    """Load `index` (with its own embedder unless one is given), or the demo gallery's index. `gallery`: where
    the photo demo is on, `gallery(embedder, indices_dir())` gives (a `Served` index or None, the photo index
    folder to build or None): a served one is served, else the clipart, with the folder to build named in the
    Setup."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever

    notes: list[str] = []
    if index is not None:
        idx, why = _given_index(index, embedder_spec)
        if idx is not None:
            emb, why = _index_embedder(index, embedder_spec or idx.embedder_spec)
            if emb is not None:
                log.info("index %s: %d images", Path(index).resolve(), len(idx))  # the full path for the log only
                return Setup(Retriever(idx, emb), [f"index {_shown(index)} ({len(idx)} images) with {emb.spec}"])
        notes.append(why)
    wanted = default_embedder(embedder_spec)
    try:
        emb = _try_embedder(wanted)
    except (IIRError, OSError) as e:
        if wanted == OFFLINE_TEXT_EMBEDDER:
            raise
        reason = str(e).splitlines()[0][:300]
        notes.append(f"{wanted} is unavailable ({reason}); falling back to a caption index of the demo gallery "
                     f"with {OFFLINE_TEXT_EMBEDDER}, which runs offline: search matches the images' captions")
        log.warning(notes[-1])
        log.info("loading the offline text embedder %s ...", OFFLINE_TEXT_EMBEDDER)
        emb = make_embedder(OFFLINE_TEXT_EMBEDDER)
    pending = None
    if gallery is not None:
        served, pending = gallery(emb, indices_dir())
        if served is not None:
            return Setup(served.retriever, served.notes + notes, list(notes))
    path = demo_index(emb, progress)
    idx = load_index(path, expect_embedder=emb.spec)
    warned = list(notes)
    notes.insert(0, f"demo gallery: {len(idx)} public-domain images, embedder {emb.spec}"
                    + (" (caption index)" if idx.caption_only else ""))
    return Setup(Retriever(idx, emb), notes, warned, photos_to_build=pending)
