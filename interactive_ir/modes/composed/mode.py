"""Composed search: a reference image (a result, any indexed image, or an upload) plus a relative caption.

Two ways to build the round's query row:
- "imagescope" (needs an LLM; ImageScope's stage 1): the reasoner (Figure 10) classifies the instruction and
  writes three target descriptions; the score is the mean over them of (1 - tau) text->image + tau
  text->caption, i.e. the mean of their fused query rows. The reference's description is its stored
  caption, else the captioner's, else (uploads only) the caption of the most similar indexed image.
- "compose" (no LLM): normalise(reference vector + text_weight * text vector), fused with the same tau.
  On a caption index the reference's caption vector stands for the image.
Multi-round (as in "A Sanity Check on Composed Image Retrieval"): the ranker keeps the query rows of all relative rounds in
`session.composed_history` and ranks by their mean; with no reference given, the previous round's top-1
is the reference. With a VLM, stages 2 and 3 of ImageScope re-rank the top (`imagescope.stages`).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from interactive_ir.backends.redact import log_failure, public_clause
from interactive_ir.core.session import Session, Turn
from interactive_ir.core.text_search import OnCore, TextSearch
from interactive_ir.errors import BackendError, BadInputError, SessionError
from interactive_ir.modes.composed.config import ENV_PREFIX, MODE, ComposedConfig, composed_config
from interactive_ir.retrieval.query_updates import compose_vector, history_mean
from interactive_ir.types import Hit

log = logging.getLogger(__name__)

__all__ = ["ENV_PREFIX", "Composed", "ComposedConfig", "Reference", "composed_config", "compose_vector",
           "history_mean", "load_upload"]


# --- the math --------------------------------------------------------------------------------------------


# --- the reference ---------------------------------------------------------------------------------------


@dataclass
class Reference:
    id: str  # indexed image id ("" for an upload)
    image: object | None  # the uploaded PIL image (None for an indexed reference: opened on demand)
    source: str  # "id", "upload" or "previous top-1"
    caption: str | None = None  # the captioner's caption of an upload, once asked

    @property
    def upload(self) -> bool:
        return self.image is not None


def load_upload(image, max_bytes: int | None = None):
    """A PIL image from an upload (PIL image, path, bytes or file object), refusing non-images and huge files."""
    from interactive_ir.index.imageio import MAX_UPLOAD_BYTES, max_pixels, open_image

    limit = max_bytes or MAX_UPLOAD_BYTES
    if hasattr(image, "convert") and hasattr(image, "size"):
        w, h = image.size
        if w * h > max_pixels():
            raise BadInputError(f"the uploaded image is {w}x{h} = {w * h / 1e6:.0f} megapixels, over the "
                                f"{max_pixels() / 1e6:.0f} MP limit: downscale it first")
        return image.convert("RGB")
    if hasattr(image, "read"):
        image = image.read(limit + 1)
    if isinstance(image, (bytes, bytearray)):
        if len(image) > limit:
            raise BadInputError(f"the uploaded file is over {limit // 2**20} MB: upload a smaller image")
        if not image:
            raise BadInputError("the uploaded file is empty: upload a JPEG, PNG, WebP, GIF or BMP image")
        return open_image(bytes(image))
    if isinstance(image, (str, Path)):
        p = Path(image)
        if p.is_file() and p.stat().st_size > limit:
            raise BadInputError(f"{p.name} is {p.stat().st_size / 2**20:.0f} MB, over the {limit // 2**20} MB "
                                "upload limit: upload a smaller image")
        return open_image(p)
    raise BadInputError(f"cannot read an image from a {type(image).__name__}: upload a JPEG, PNG, WebP, GIF or BMP")


class Composed(OnCore):
    """`relative(session, caption, reference=None, image=None, method=None) -> Turn`. Receives the search
    core, the LLM (None: the compose method only), the VLM (None: no re-ranking) and its config."""

    def __init__(self, core: TextSearch, llm, vlm, config: ComposedConfig):
        self.core = core
        self.llm = llm
        self.vlm = vlm
        self.composed_config = config

    # --- validation (nothing changes before all of it passes) ----------------------------------------
    def resolve_method(self, method: str | None) -> str:
        return MODE.resolve(method or self.composed_config.method, self.llm is not None)

    def resolve_reference(self, session: Session, reference: str | None, image=None) -> Reference:
        if reference is not None and image is not None:
            raise BadInputError("give a reference image id or an uploaded image, not both")
        if image is not None:
            pil = load_upload(image)
            if self.index.caption_only and self.captioner is None:
                raise BadInputError(f"this is a caption index ({self.index.embedder_spec}): an uploaded reference "
                                    "needs a captioner (--captioner SPEC); or pick a shown result as the reference")
            return Reference("", pil, "upload")
        if reference is not None:
            ref = str(reference).strip()
            if ref not in self.index.row_of:
                raise SessionError(f"no image {ref!r} in this index: pick a shown result or upload an image")
            return Reference(ref, None, "id")
        last = session.last
        if last is None or not last.shown:
            raise BadInputError("no reference image: pick a result, upload an image, or search first "
                                "(the previous round's top result is the default reference)")
        return Reference(last.shown[0], None, "previous top-1")

    # --- the turn ------------------------------------------------------------------------------------
    def relative(self, session: Session, caption: str, reference: str | None = None, image=None,
                 method: str | None = None) -> Turn:
        """One composed-search round: the reference changed as the relative caption says."""
        self.core.check_open(session)
        caption = self.core.check_text(caption, "relative caption")
        m = self.resolve_method(method)
        ref = self.resolve_reference(session, reference, image)
        cfg = self.composed_config
        t_start = time.perf_counter()
        turn = Turn(round=len(session.turns), kind="relative", user_text=caption, reference=ref.id,
                    reference_upload=ref.upload, method=m, started_at=time.time())
        turn.extra["reference_source"] = ref.source
        errors: list[str] = []

        t = time.perf_counter()
        ref_vec = self._reference_vector(ref, errors)
        turn.timings["reference"] = round(time.perf_counter() - t, 6)
        if m == "imagescope":
            row = self._imagescope_row(turn, caption, ref, ref_vec, errors)
        else:
            t = time.perf_counter()
            c = compose_vector(ref_vec, self.retriever.encode_text(caption), cfg.text_weight)
            row = self.retriever.text_query_row(c, cfg.tau)
            turn.query = caption
            turn.timings["encode"] = round(time.perf_counter() - t, 6)

        history = [h for h in session.composed_history if len(h) == len(row)]
        if len(history) != len(session.composed_history):
            errors.append("earlier composed rounds had another vector width and were left out of the mean")
        qrow = history_mean([*history, row]) if cfg.use_history_mean and history else row
        turn.extra["history_rounds"] = len(history) + 1 if cfg.use_history_mean else 1

        t = time.perf_counter()
        want = self.config.k
        rerank = self.vlm is not None and cfg.rerank
        n = max(want, cfg.rerank_k, cfg.alpha) if rerank else want
        exclude = self.core.exclude_for(session) + ([ref.id] if ref.id else [])
        if self.core.hides_seen(session):  # earlier references were seen too
            exclude += [prev.reference for prev in session.turns if prev.reference]
        hits = self.retriever.search_row(qrow, n, exclude=exclude, **self.core.scope_for(session))
        turn.timings["retrieve"] = round(time.perf_counter() - t, 6)
        if rerank and hits:
            hits = self._rerank(turn, caption, ref, hits, m, errors)
        turn.error = "; ".join(errors)
        session.composed_history.append([float(x) for x in row])
        turn.query_row = qrow
        session.carry_row = [float(x) for x in qrow]  # later answers and skips keep this round's effect
        return self.core.record(session, turn, hits[:want], t_start)

    # --- building blocks -----------------------------------------------------------------------------
    def _reference_vector(self, ref: Reference, errors: list[str]) -> np.ndarray:
        """The reference in the index's image space (a caption vector on a caption index)."""
        if ref.id:
            return self.retriever.row_vector(self.index.row_of[ref.id], "image")
        if self.index.caption_only:
            return self.retriever.encode_text(self._upload_caption(ref, errors) or "an image")
        return self.retriever.encode_image(ref.image)

    def _upload_caption(self, ref: Reference, errors: list[str]) -> str:
        if self.captioner is None:
            return ""
        if ref.caption is None:
            try:
                ref.caption = self.captioner.caption([ref.image])[0].strip()
            except BackendError as e:
                log_failure(log, "the captioner (the upload)", e)
                errors.append(f"the captioner failed on the upload: {public_clause(e)}")
                ref.caption = ""
        return ref.caption

    def _reference_description(self, ref: Reference, ref_vec: np.ndarray, errors: list[str]) -> tuple[str, str]:
        """(description, where it came from) for the stage 1 prompt."""
        from interactive_ir.modes.composed.imagescope.prompts import BLANK_REFERENCE

        if ref.id:
            try:
                cap = self.core.caption_of(ref.id)
            except BackendError as e:
                log_failure(log, "the captioner (the reference)", e)
                errors.append(f"the captioner failed on the reference: {public_clause(e)}")
                cap = ""
            return (cap, "index" if self.index.records[self.index.row_of[ref.id]].caption else "captioner") if cap \
                else (BLANK_REFERENCE, "none")
        cap = self._upload_caption(ref, errors)
        if cap:
            return cap, "captioner"
        if self.index.has_captions or self.index.caption_only:
            near = self.retriever.search_row(self.retriever.query_row(ref_vec, None), 1)
            if near and near[0].caption:
                return near[0].caption, f"nearest indexed image {near[0].id}"
        return BLANK_REFERENCE, "none"

    def _imagescope_row(self, turn: Turn, caption: str, ref: Reference, ref_vec, errors: list[str]) -> np.ndarray:
        from interactive_ir.modes.composed.imagescope import stages
        from interactive_ir.modes.composed.imagescope.parsers import parse_stage1

        cfg = self.composed_config
        desc, source = self._reference_description(ref, ref_vec, errors)
        turn.extra["reference_caption"] = desc
        turn.extra["reference_caption_source"] = source
        try:
            s1 = stages.reason(self.llm, turn, caption, desc, max_tokens=cfg.reason_max_tokens,
                               temperature=cfg.temperature)
        except BackendError as e:
            log_failure(log, "the ImageScope reasoner", e)
            errors.append(f"the LLM failed: {public_clause(e)}; searched with the relative caption and reference description")
            s1 = parse_stage1("", caption, desc)
        turn.extra.update(atomic=[list(a) for a in s1.atomic], instruction_types=s1.types,
                          descriptions=s1.descriptions, stage1_source=s1.source)
        if s1.notes:
            turn.extra["stage1_notes"] = s1.notes
        t = time.perf_counter()
        vecs = self.retriever.encode_texts(s1.descriptions)
        rows = [self.retriever.text_query_row(v, cfg.tau) for v in vecs]
        turn.timings["encode"] = round(time.perf_counter() - t, 6)
        turn.query = s1.descriptions[-1]
        return history_mean(rows)

    def _open_hit_images(self, hits: list[Hit], cache: dict | None = None) -> list:
        """The hits' images, decoded in parallel threads (PIL releases the GIL); `cache` maps path -> image."""
        from concurrent.futures import ThreadPoolExecutor

        from interactive_ir.index.imageio import open_image

        cache = {} if cache is None else cache
        todo = list(dict.fromkeys(h.path for h in hits if h.path not in cache))
        if len(todo) > 1:
            with ThreadPoolExecutor(max_workers=min(4, len(todo), os.cpu_count() or 1)) as pool:
                cache.update(zip(todo, pool.map(open_image, todo)))
        elif todo:
            cache[todo[0]] = open_image(todo[0])
        return [cache[h.path] for h in hits]

    def _rerank(self, turn: Turn, caption: str, ref: Reference, hits: list[Hit], method: str,
                errors: list[str]) -> list[Hit]:
        """ImageScope stages 2 (imagescope method only: it needs the reasoner) and 3; failures keep the order."""
        from interactive_ir.modes.composed.imagescope import stages

        cfg = self.composed_config
        images: dict = {}  # path -> decoded image, shared by the two stages
        if method == "imagescope" and cfg.rerank_k > 0:
            try:
                props = stages.propositions(self.llm, turn, caption, [tuple(a) for a in turn.extra.get("atomic", [])],
                                            limit=cfg.max_propositions, max_tokens=cfg.reason_max_tokens,
                                            temperature=cfg.temperature)
                turn.extra["propositions"] = [[p.question, p.truth] for p in props]
                if props:
                    head = hits[:cfg.rerank_k]
                    hits, counts = stages.verify(self.vlm, turn, hits, self._open_hit_images(head, images), props,
                                                 max_tokens=cfg.verify_max_tokens)
                    turn.extra["stage2_counts"] = {h.id: c for h, c in zip(head, counts)}
                else:
                    errors.append("stage 2 skipped: the reasoner gave no yes/no propositions")
            except (BackendError, BadInputError) as e:
                log_failure(log, "ImageScope stage 2", e)
                errors.append(f"stage 2 re-ranking skipped: {public_clause(e)}")
        if cfg.alpha > 0:
            try:
                head = hits[:cfg.alpha]
                ref_hit = [] if ref.upload else [self.retriever.hit(self.index.row_of[ref.id], 0.0)]
                opened = self._open_hit_images(ref_hit + head, images)
                ref_image = ref.image if ref.upload else opened[0]
                hits, first, decisions = stages.evaluate(self.vlm, turn, caption, ref_image, hits,
                                                         opened[len(ref_hit):], max_tokens=cfg.evaluate_max_tokens)
                turn.extra["stage3"] = {"evaluated": [h.id for h in head], "decisions": decisions,
                                        "moved_to_top": head[first].id if first is not None else ""}
            except (BackendError, BadInputError) as e:
                log_failure(log, "ImageScope stage 3", e)
                errors.append(f"stage 3 evaluation skipped: {public_clause(e)}")
        return hits


__all__ = ["ComposedConfig", "Composed", "Reference", "compose_vector", "composed_config", "history_mean",
           "load_upload"]
