"""Captioners: write a caption per image at index time (as ImageScope does for uncaptioned sets)."""

from __future__ import annotations

import base64
import io

import numpy as np

from interactive_ir.backends.registry import BackendInfo, register
from interactive_ir.errors import BackendError, BadInputError

_COLOURS = {
    "red": (200, 40, 40), "green": (40, 160, 60), "blue": (40, 70, 200), "yellow": (220, 210, 40),
    "white": (240, 240, 240), "black": (15, 15, 15), "grey": (128, 128, 128), "orange": (240, 140, 30),
    "purple": (130, 50, 160), "brown": (120, 80, 40),
}


class FakeCaptioner:
    """Deterministic: names the image's dominant colour and its shape, e.g. "a mostly red wide image"."""

    def __init__(self, spec: str = "fake"):
        self.spec = spec

    def caption(self, images) -> list[str]:
        out = []
        names = list(_COLOURS)
        ref = np.array([_COLOURS[n] for n in names], np.float32)
        for im in images:
            mean = np.asarray(im.convert("RGB").resize((16, 16)), np.float32).reshape(-1, 3).mean(0)
            colour = names[int(np.argmin(((ref - mean) ** 2).sum(1)))]
            w, h = im.size
            shape = "wide" if w > 1.2 * h else "tall" if h > 1.2 * w else "square"
            out.append(f"a mostly {colour} {shape} image")
        return out


class HFCaptioner:
    """transformers image captioning model (e.g. Salesforce/blip-image-captioning-base), hub id or local folder.

    Loaded with the Auto classes (`hf_vision.ImageToText`): transformers 5 has no `image-to-text` pipeline.
    `pipeline` injects a callable `(images, max_new_tokens=...) -> [caption per image]` (tests).
    """

    def __init__(self, repo: str, spec: str, max_new_tokens: int = 30, batch_size: int = 8, pipeline=None, **_):
        self.spec = spec
        self.max_new_tokens = max_new_tokens
        self.batch_size = max(1, int(batch_size))
        if pipeline is None:
            from interactive_ir.backends.hf_vision import ImageToText

            pipeline = ImageToText.load(repo, what="captioner")
        self.pipe = pipeline

    def caption(self, images) -> list[str]:
        images = [im.convert("RGB") for im in images]
        out: list[str] = []
        try:
            for start in range(0, len(images), self.batch_size):
                out.extend(self.pipe(images[start:start + self.batch_size], max_new_tokens=self.max_new_tokens))
        except BackendError:
            raise
        except Exception as e:  # noqa: BLE001 - model code raises many kinds
            raise BackendError(f"captioner {self.spec} failed: {e}") from e
        if len(out) != len(images):
            raise BackendError(f"captioner {self.spec} returned {len(out)} captions for {len(images)} images")
        return [str(c or "").strip() for c in out]


def image_data_url(im, max_side: int = 512) -> str:
    im = im.convert("RGB")
    im.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def openai_chat_client(args: str, spec: str, config=None, **options):
    """The `openai` LLM backend for an `openai-vision:MODEL[@BASE_URL]` spec.

    The spec is read as `openai:` reads it (a bare host URL gets `/v1`; IIR_LLM_BASE_URL /
    OPENAI_BASE_URL when none is given) and the client shares its key handling and its timeouts,
    retries and backoff (`LLMConfig`, env `IIR_LLM_*`; option names such as `timeout_s` override).
    """
    from interactive_ir.backends.llm_openai import OpenAILLM
    from interactive_ir.backends.llms import llm_config, parse_openai_args

    model, url = parse_openai_args(args, kind="openai-vision")
    return OpenAILLM(model, url, spec=spec, config=llm_config(config, **options))


def first_line(text: str | None) -> str:
    """The first non-empty line of a reply, stripped ("" for an empty reply)."""
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


class OpenAIVisionCaptioner:
    """Any OpenAI-compatible chat endpoint that accepts images: `openai-vision:MODEL[@BASE_URL]`.

    `llm` is an `OpenAILLM` (see `openai_chat_client`): a batch of images is captioned concurrently,
    and an empty reply gives an empty caption (the image then has none).
    """

    PROMPT = "Describe this image in one short sentence (at most 25 words). Reply with the sentence only."

    def __init__(self, llm, spec: str, max_side: int = 512, max_tokens: int = 60):
        self.spec = spec
        self.llm = llm
        self.max_side = max_side
        self.max_tokens = max_tokens

    @property
    def client(self):
        return self.llm.client

    @property
    def model(self) -> str:
        return self.llm.model

    def caption(self, images) -> list[str]:
        chats = [[{"role": "user", "content": [
            {"type": "text", "text": self.PROMPT},
            {"type": "image_url", "image_url": {"url": image_data_url(im, self.max_side)}}]}] for im in images]
        replies = self.llm.chat(chats, temperature=0.0, max_tokens=self.max_tokens) if chats else []
        return [first_line(r) for r in replies]


def _fake(args: str, spec: str, **_) -> FakeCaptioner:
    return FakeCaptioner(spec)


def _hf(args: str, spec: str, **options) -> HFCaptioner:
    if not args:
        raise BadInputError("hf captioner spec is hf:REPO_OR_DIR, e.g. hf:Salesforce/blip-image-captioning-base")
    return HFCaptioner(args, spec=spec, **options)


def _openai_vision(args: str, spec: str, max_side: int = 512, **options) -> OpenAIVisionCaptioner:
    return OpenAIVisionCaptioner(openai_chat_client(args, spec, **options), spec=spec, max_side=max_side)


register(BackendInfo("captioner", "hf", f"{__name__}:_hf", "hf:REPO_OR_DIR",
                     "transformers captioning model (BLIP, GIT, ViT-GPT2, ...), hub id or local folder, e.g. "
                     "hf:Salesforce/blip-image-captioning-base (~990 MB)"))
register(BackendInfo("captioner", "openai-vision", f"{__name__}:_openai_vision", "openai-vision:MODEL[@BASE_URL]",
                     "any OpenAI-compatible chat endpoint that accepts images"))
register(BackendInfo("captioner", "fake", f"{__name__}:_fake", "fake", "names the dominant colour; for tests"))
