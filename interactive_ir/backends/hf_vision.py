"""Captioning and visual question answering with transformers' Auto classes.

transformers 5 removed the `image-to-text` and `visual-question-answering` pipelines, so the `hf:`
captioner and the `hf:` VQA model load a processor and a model themselves: `AutoProcessor` plus the
class that `AutoModelForImageTextToText` (captions: BLIP, GIT, BLIP-2, ViT-GPT2, ...) or
`AutoModelForVisualQuestionAnswering` (ViLT, BLIP-VQA) maps the config to, preferring the class the
config's `architectures` names. This works with transformers 4.4x and 5.x.

Cheap to import: torch and transformers load when a model is built.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from interactive_ir.backends._torch import load_options, pick_device, require
from interactive_ir.errors import BackendUnavailable

log = logging.getLogger(__name__)

# names of the tables in transformers.models.auto.modeling_auto (model_type -> class name), first match wins
CAPTION_MAPPINGS = ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES")
VQA_MAPPINGS = ("MODEL_FOR_VISUAL_QUESTION_ANSWERING_MAPPING_NAMES",)
OFFLINE_HINT = "offline, pass a local folder: hf:/path/to/model"
_LOAD_ERRORS = (OSError, ValueError, KeyError, ImportError)


def unavailable(what: str, repo: str, e: BaseException | str, hint: str = OFFLINE_HINT) -> BackendUnavailable:
    return BackendUnavailable(f"could not load {what} {repo!r} ({e}); {hint}")


def load_config(repo: str, what: str = "model"):
    transformers = require("transformers", "vision")
    try:
        return transformers.AutoConfig.from_pretrained(repo)
    except _LOAD_ERRORS as e:
        raise unavailable(what, repo, e) from e


def _names(value) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value or ())


def model_class(config, mappings: Sequence[str]):
    """The transformers model class for `config` among the Auto tables `mappings`, or None.

    The class the config's `architectures` names wins when a table lists it (BLIP captioning and
    BLIP-VQA share the model type `blip`); else the table's class for the model type; else any
    `architectures` class transformers has (a model family no table maps).
    """
    transformers = require("transformers", "vision")
    from transformers.models.auto import modeling_auto

    tables = [getattr(modeling_auto, name, None) or {} for name in mappings]
    listed = {cls for table in tables for value in table.values() for cls in _names(value)}
    archs = list(getattr(config, "architectures", None) or [])
    for arch in archs:
        if arch in listed and hasattr(transformers, arch):
            return getattr(transformers, arch)
    model_type = getattr(config, "model_type", None)
    for table in tables:
        for cls in _names(table.get(model_type)):
            if hasattr(transformers, cls):
                return getattr(transformers, cls)
    for arch in archs:
        if hasattr(transformers, arch):
            return getattr(transformers, arch)
    return None


def text_limit(config, tokenizer) -> int | None:
    """The longest text (in tokens) the model takes: the smaller of the tokenizer's `model_max_length`
    and the text position embeddings (ViLT: 40), or None when neither is known."""
    limits = [getattr(tokenizer, "model_max_length", None)]
    for cfg in (config, getattr(config, "text_config", None)):
        limits.append(getattr(cfg, "max_position_embeddings", None))
    known = [int(n) for n in limits if isinstance(n, int) and 0 < n < 1_000_000]
    return min(known) if known else None


def _can_generate(model_or_class) -> bool:
    can = getattr(model_or_class, "can_generate", None)
    try:
        return bool(can()) if callable(can) else False
    except TypeError:  # an instance method on a class
        return hasattr(model_or_class, "generate")


class _Loaded:
    """A model, its processor (or image processor) and tokenizer, on one device."""

    task = "model"
    needs_generate = False

    def __init__(self, model, processor, tokenizer, device: str):
        self.model = model
        self.processor = processor
        self.tokenizer = tokenizer
        self.device = device

    @classmethod
    def from_pretrained(cls, repo: str, mappings: Sequence[str], what: str, device: str | None = None):
        transformers = require("transformers", "vision")
        torch = require("torch", "vision")
        config = load_config(repo, what)
        klass = model_class(config, mappings)
        archs = ", ".join(getattr(config, "architectures", None) or []) or getattr(config, "model_type", "?")
        if klass is None or (cls.needs_generate and not _can_generate(klass)):
            raise unavailable(what, repo, f"{archs} is not {cls.task} model in transformers {transformers.__version__}",
                              hint=f"pass {cls.task} model")
        device = device or pick_device()
        try:
            processor = transformers.AutoProcessor.from_pretrained(repo)
            if getattr(processor, "image_processor", None) is None:  # e.g. ViT-GPT2: AutoProcessor gives the tokenizer
                tokenizer = processor if hasattr(processor, "batch_decode") else transformers.AutoTokenizer.from_pretrained(repo)
                processor = transformers.AutoImageProcessor.from_pretrained(repo)
            else:
                tokenizer = getattr(processor, "tokenizer", None) or processor
            model = klass.from_pretrained(repo, **load_options(torch, device))
            if not hasattr(model, "hf_device_map"):  # device_map placed it already
                model.to(device)
            model.eval()
        except _LOAD_ERRORS as e:
            raise unavailable(what, repo, e) from e
        log.info("loaded %s %s as %s on %s", what, repo, type(model).__name__, device)
        return cls(model, processor, tokenizer, device)

    def inputs(self, images: list, text: list[str] | None = None, **text_kwargs):
        if text is None:
            if hasattr(self.processor, "image_processor"):
                batch = self.processor(images=images, return_tensors="pt")
            else:
                batch = self.processor(images, return_tensors="pt")
        else:
            batch = self.processor(images=images, text=text, return_tensors="pt", **text_kwargs)
        return batch.to(self.device)

    def decode(self, ids, prompt_ids=None) -> list[str]:
        if prompt_ids is not None and ids.shape[1] >= prompt_ids.shape[1]:
            n = prompt_ids.shape[1]
            if bool((ids[:, :n] == prompt_ids.to(ids.device)).all()):  # decoder-only models echo the prompt
                ids = ids[:, n:]
        return [t.strip() for t in self.tokenizer.batch_decode(ids, skip_special_tokens=True)]


class ImageToText(_Loaded):
    """An image captioning model: `captioner(images, max_new_tokens=30) -> [caption per image]`."""

    task = "an image captioning"
    needs_generate = True

    @classmethod
    def load(cls, repo: str, what: str = "captioner", device: str | None = None) -> ImageToText:
        return cls.from_pretrained(repo, CAPTION_MAPPINGS, what, device)

    def __call__(self, images: Sequence, max_new_tokens: int = 30) -> list[str]:
        torch = require("torch", "vision")
        images = [im.convert("RGB") for im in images]
        if not images:
            return []
        batch = self.inputs(images)
        with torch.inference_mode():
            ids = self.model.generate(**batch, max_new_tokens=max_new_tokens)
        return self.decode(ids)


class VisualQA(_Loaded):
    """A VQA model: `vqa(image=PIL, question=str, max_new_tokens=16) -> answer`.

    Classifier heads (ViLT) answer with the label of the best logit (`config.id2label`); generative
    ones (BLIP-VQA) generate the answer. Questions longer than the text encoder takes are truncated.
    """

    task = "a visual question answering"

    @classmethod
    def load(cls, repo: str, what: str = "VQA model", device: str | None = None) -> VisualQA:
        return cls.from_pretrained(repo, VQA_MAPPINGS, what, device)

    @property
    def generative(self) -> bool:
        return _can_generate(self.model)

    def __call__(self, image, question: str, max_new_tokens: int = 16) -> str:
        torch = require("torch", "vision")
        limit = text_limit(self.model.config, self.tokenizer)
        kwargs = {"truncation": True, **({"max_length": limit} if limit else {})}
        batch = self.inputs([image.convert("RGB")], [question], **kwargs)
        with torch.inference_mode():
            if self.generative:
                ids = self.model.generate(**batch, max_new_tokens=max_new_tokens)
                return self.decode(ids, batch.get("input_ids"))[0]
            logits = self.model(**batch).logits
        best = int(logits[0].argmax())
        labels = getattr(self.model.config, "id2label", None) or {}
        return str(labels.get(best, labels.get(str(best), best))).strip()
