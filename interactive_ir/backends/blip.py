"""BLIP image-text retrieval checkpoints as an embedder: `blip:REPO_OR_DIR` (e.g.
`blip:Salesforce/blip-itm-large-coco`, PlugIR's retriever, or a local folder written by save_pretrained).

Texts go through BLIP's text encoder and `text_proj`, images through its vision model and
`vision_proj` (the [CLS] token of each, as BLIP's ITC retrieval does), both L2-normalised. A checkpoint
whose weights do not all load (another architecture, a captioning-only checkpoint) is refused with the
missing weights named: a retriever with randomly initialised towers gives random ranks without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from interactive_ir.backends._torch import batches, pick_device, require, to_numpy
from interactive_ir.backends.registry import BackendInfo, register
from interactive_ir.errors import BackendUnavailable, BadInputError
from interactive_ir.types import Vectors

NEEDED = ("text_encoder.", "vision_model.", "text_proj.", "vision_proj.")  # what ITC retrieval uses


class BlipEmbedder:
    """BLIP ITC embeddings (see the module docstring)."""

    has_vision = True

    def __init__(self, repo: str, spec: str, batch_size: int = 32, max_length: int = 35):
        self.spec = spec
        self.batch_size = batch_size
        self.max_length = max_length  # BLIP's retrieval text length
        local = Path(repo).expanduser()
        if local.exists():
            repo = str(local)
        transformers = require("transformers", "vision")
        self._torch = require("torch", "vision")
        self.device = pick_device()
        try:
            model, info = transformers.BlipForImageTextRetrieval.from_pretrained(repo, output_loading_info=True)
            self.processor = transformers.BlipProcessor.from_pretrained(repo)
        except (OSError, ValueError, TypeError, KeyError) as e:
            raise BackendUnavailable(f"could not load {repo!r} as a BLIP retrieval checkpoint ({e}); offline, pass a "
                                     "local folder: blip:/path/to/model") from e
        missing = [k for k in info.get("missing_keys", []) if k.startswith(NEEDED)]
        mismatched = [str(k[0]) if isinstance(k, tuple) else str(k) for k in info.get("mismatched_keys", [])]
        if missing or mismatched:
            bad = sorted({".".join(k.split(".")[:2]) for k in missing + mismatched})
            raise BackendUnavailable(
                f"{repo!r} is not a complete BLIP image-text retrieval checkpoint: {len(missing) + len(mismatched)} "
                f"weights did not load ({', '.join(bad[:8])}{', ...' if len(bad) > 8 else ''}); use an ITM "
                "checkpoint such as Salesforce/blip-itm-large-coco")
        self.model = model.to(self.device).eval()
        self.dim = int(self.model.text_proj.out_features)

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        torch = self._torch
        out = []
        with torch.no_grad():
            for chunk in batches(list(texts), self.batch_size):
                enc = self.processor(text=list(chunk), padding=True, truncation=True, max_length=self.max_length,
                                     return_tensors="pt").to(self.device)
                hidden = self.model.text_encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                                 return_dict=True).last_hidden_state
                out.append(to_numpy(self.model.text_proj(hidden[:, 0, :])))
        return _stack(out, self.dim)

    def embed_images(self, images) -> Vectors:
        torch = self._torch
        out = []
        with torch.no_grad():
            for chunk in batches(list(images), self.batch_size):
                pix = self.processor(images=[im.convert("RGB") for im in chunk], return_tensors="pt")["pixel_values"]
                hidden = self.model.vision_model(pixel_values=pix.to(self.device), return_dict=True).last_hidden_state
                out.append(to_numpy(self.model.vision_proj(hidden[:, 0, :])))
        return _stack(out, self.dim)


def _stack(parts, dim: int) -> Vectors:
    import numpy as np

    return np.concatenate(parts, axis=0) if parts else np.zeros((0, dim), np.float32)


def _blip(args: str, spec: str, **options) -> BlipEmbedder:
    if not args:
        raise BadInputError("blip embedder spec is blip:REPO_OR_DIR, e.g. blip:Salesforce/blip-itm-large-coco")
    return BlipEmbedder(args, spec=spec, **{k: v for k, v in options.items() if k in ("batch_size",)})


register(BackendInfo("embedder", "blip", f"{__name__}:_blip", "blip:REPO_OR_DIR",
                     "BLIP image-text retrieval (ITC) checkpoints, e.g. PlugIR's Salesforce/blip-itm-large-coco"))
