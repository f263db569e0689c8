"""Vision-language models that answer a question about one or two images (ImageScope's verifier and
evaluator): `openai-vision:MODEL[@BASE_URL]`, `hf:REPO_OR_DIR[#TASK]` (transformers: VQA models through
`hf_vision`, chat VLMs through the `image-text-to-text` pipeline) and `fake`.

Interface (`backends.base.VLM`): `ask(images, questions, *, max_tokens) -> list[str]`, where
`images[i]` is the list of PIL images question `i` is about (a reference on the left, then a candidate).
This module is cheap to import; heavy libraries load when a backend is built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from interactive_ir.backends._torch import pick_device, require
from interactive_ir.backends.captioners import _COLOURS, FakeCaptioner, image_data_url, openai_chat_client
from interactive_ir.backends.registry import BackendInfo, register
from interactive_ir.errors import BackendError, BackendUnavailable, BadInputError

log = logging.getLogger(__name__)

HF_TASKS = {"vqa": "visual-question-answering", "visual-question-answering": "visual-question-answering",
            "image-text-to-text": "image-text-to-text", "chat": "image-text-to-text"}


def _check(images, questions) -> tuple[list[list], list[str]]:
    images = [list(group) for group in images]
    questions = list(questions)
    if len(images) != len(questions):
        raise BadInputError(f"a VLM needs one image list per question: got {len(images)} lists for "
                            f"{len(questions)} questions")
    for group in images:
        if not group:
            raise BadInputError("every VLM question needs at least one image")
    return images, questions


def side_by_side(images: Sequence, height: int = 384):
    """One RGB image with `images` placed left to right at a common height (for one-image models)."""
    from PIL import Image

    if len(images) == 1:
        return images[0].convert("RGB")
    scaled = [im.convert("RGB").resize((max(1, round(im.width * height / max(1, im.height))), height))
              for im in images]
    gap = 8
    canvas = Image.new("RGB", (sum(im.width for im in scaled) + gap * (len(scaled) - 1), height), (255, 255, 255))
    x = 0
    for im in scaled:
        canvas.paste(im, (x, 0))
        x += im.width + gap
    return canvas


# --- fake -------------------------------------------------------------------------------------------


def fake_answer(images: Sequence, question: str) -> str:
    """The default rule of `FakeVLM`: "Yes" when the question names the last image's dominant colour
    (as `FakeCaptioner` sees it) or names no colour at all, else "No". Evaluator-style prompts (that ask
    for an "ANSWER:" line) get "ANSWER: Yes|No" and a one-line reason."""
    caption = FakeCaptioner().caption([images[-1]])[0]
    colour = next(c for c in _COLOURS if f" {c} " in f" {caption} ")
    low = question.lower()
    named = [c for c in _COLOURS if f" {c}" in f" {low}"]
    yes = not named or colour in named
    word = "Yes" if yes else "No"
    if "answer:" in low:
        return f"ANSWER: {word}\nThe candidate looks {colour}."
    return word


class FakeVLM:
    """Deterministic VLM for tests: `responder(images, question) -> str` (default `fake_answer`), or a
    `script` of replies in order (an Exception item is raised). Calls are recorded in `calls`."""

    def __init__(self, responder: Callable[[list, str], str] | None = None,
                 script: Sequence[str | BaseException] | None = None, spec: str = "fake"):
        if responder is not None and script is not None:
            raise BadInputError("FakeVLM takes a responder or a script, not both")
        self.spec = spec
        self.responder = responder or fake_answer
        self.script = list(script) if script is not None else None
        self.calls: list[dict] = []

    def ask(self, images, questions, *, max_tokens: int = 64) -> list[str]:
        images, questions = _check(images, questions)
        self.calls.append({"images": images, "questions": questions, "max_tokens": max_tokens})
        out = []
        for group, q in zip(images, questions):
            if self.script is not None:
                if not self.script:
                    raise BackendError(f"FakeVLM script exhausted at question {q[:60]!r}")
                item = self.script.pop(0)
                if isinstance(item, BaseException):
                    raise item
                out.append(item)
            else:
                out.append(self.responder(group, q))
        return out


# --- OpenAI-compatible ------------------------------------------------------------------------------


class OpenAIVisionVLM:
    """Any OpenAI-compatible chat endpoint that accepts images: `openai-vision:MODEL[@BASE_URL]`.

    `llm` is an `OpenAILLM` (see `captioners.openai_chat_client`): it brings the key handling, the
    timeouts, retries with backoff and the concurrency of the `openai` LLM backend (`IIR_LLM_*`).
    """

    def __init__(self, llm, spec: str, max_side: int = 512):
        self.spec = spec
        self.llm = llm
        self.max_side = max_side

    @property
    def client(self):
        return self.llm.client

    def ask(self, images, questions, *, max_tokens: int = 64) -> list[str]:
        images, questions = _check(images, questions)
        chats = []
        for group, question in zip(images, questions):
            content = [{"type": "image_url", "image_url": {"url": image_data_url(im, self.max_side)}} for im in group]
            content.append({"type": "text", "text": question})
            chats.append([{"role": "user", "content": content}])
        return self.llm.chat(chats, temperature=0.0, max_tokens=max_tokens)


# --- transformers -----------------------------------------------------------------------------------


def _infer_task(repo: str) -> str:
    """'visual-question-answering' for VQA heads (ViLT, BLIP-VQA), else 'image-text-to-text'."""
    from interactive_ir.backends.hf_vision import load_config

    cfg = load_config(repo, "VLM")
    archs = " ".join(getattr(cfg, "architectures", None) or []).lower()
    vqa = "questionanswering" in archs or getattr(cfg, "model_type", "") == "vilt"
    return "visual-question-answering" if vqa else "image-text-to-text"


class HFVLM:
    """transformers VQA model (ViLT, BLIP-VQA) or chat VLM (`image-text-to-text` pipeline).

    VQA models are loaded with `AutoModelForVisualQuestionAnswering` (`hf_vision.VisualQA`; transformers 5
    has no `visual-question-answering` pipeline) and see one image: several images of a question are
    pasted side by side (left to right), which is what ImageScope's evaluator prompt describes.

    `pipeline` injects the model (tests): for VQA a callable `(image=, question=, max_new_tokens=) -> str`
    (or a pipeline-style `[{"answer": ...}]`), for chat one called like the `image-text-to-text` pipeline.
    """

    def __init__(self, repo: str, task: str | None, spec: str, pipeline=None, batch_size: int = 4, **_):
        self.spec = spec
        self.batch_size = batch_size
        if pipeline is not None:  # injected (tests)
            self.pipe, self.task = pipeline, HF_TASKS[task] if task else "visual-question-answering"
            return
        transformers = require("transformers", "vision")
        self.task = HF_TASKS[task] if task else _infer_task(repo)
        if self.task == "visual-question-answering":
            from interactive_ir.backends.hf_vision import VisualQA

            self.pipe = VisualQA.load(repo, what="VLM")
            return
        try:
            self.pipe = transformers.pipeline(self.task, model=repo, device=pick_device())
        except (OSError, ValueError, KeyError, ImportError) as e:
            raise BackendUnavailable(f"could not load VLM {repo!r} as {self.task} ({e}); offline, pass a local "
                                     "folder: hf:/path/to/model") from e

    def ask(self, images, questions, *, max_tokens: int = 64) -> list[str]:
        images, questions = _check(images, questions)
        try:
            if self.task == "visual-question-answering":
                return [self._vqa(g, q, max_tokens) for g, q in zip(images, questions)]
            return [self._chat(g, q, max_tokens) for g, q in zip(images, questions)]
        except BackendError:
            raise
        except Exception as e:  # noqa: BLE001 - model code raises many kinds
            raise BackendError(f"VLM {self.spec} failed: {e}") from e

    def _vqa(self, group, question: str, max_tokens: int) -> str:
        out = self.pipe(image=side_by_side(group), question=question, max_new_tokens=max_tokens)
        first = out[0] if isinstance(out, list) and out else out
        return str(first.get("answer", "")).strip() if isinstance(first, dict) else str(first or "").strip()

    def _chat(self, group, question: str, max_tokens: int) -> str:
        content = [{"type": "image", "image": im.convert("RGB")} for im in group]
        content.append({"type": "text", "text": question})
        out = self.pipe(text=[{"role": "user", "content": content}], max_new_tokens=max_tokens,
                        return_full_text=False)
        first = out[0] if isinstance(out, list) and out else out
        text = first.get("generated_text", "") if isinstance(first, dict) else first
        if isinstance(text, list):  # chat output: the assistant's message
            text = text[-1].get("content", "") if text and isinstance(text[-1], dict) else ""
        return str(text or "").strip()


# --- factories ----------------------------------------------------------------------------------------


def _fake(args: str, spec: str, **options) -> FakeVLM:
    return FakeVLM(spec=spec, **{k: v for k, v in options.items() if k in ("responder", "script")})


def _openai_vision(args: str, spec: str, max_side: int = 512, **options) -> OpenAIVisionVLM:
    return OpenAIVisionVLM(openai_chat_client(args, spec, **options), spec=spec, max_side=max_side)


def _hf(args: str, spec: str, **options) -> HFVLM:
    repo, _, task = args.partition("#")
    if not repo.strip():
        raise BadInputError("hf VLM spec is hf:REPO_OR_DIR[#vqa|#image-text-to-text], e.g. "
                            "hf:dandelin/vilt-b32-finetuned-vqa")
    task = task.strip().lower() or None
    if task and task not in HF_TASKS:
        raise BadInputError(f"unknown hf VLM task {task!r}: use one of {', '.join(sorted(HF_TASKS))}")
    return HFVLM(repo.strip(), task, spec=spec, **options)


register(BackendInfo("vlm", "openai-vision", f"{__name__}:_openai_vision", "openai-vision:MODEL[@BASE_URL]",
                     "any OpenAI-compatible chat endpoint that accepts images (key from OPENAI_API_KEY or "
                     "IIR_LLM_API_KEY); verifies and evaluates re-ranking candidates"))
register(BackendInfo("vlm", "hf", f"{__name__}:_hf", "hf:REPO_OR_DIR[#vqa|#image-text-to-text]",
                     "transformers VQA model (e.g. ViLT, BLIP-VQA) or chat VLM, hub id or local folder"))
register(BackendInfo("vlm", "fake", f"{__name__}:_fake", "fake",
                     "deterministic colour-matching answers, for tests"))
