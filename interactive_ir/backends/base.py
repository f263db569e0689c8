"""The interfaces every backend implements. Engines depend on these, never on a concrete model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, Union, runtime_checkable

from interactive_ir.types import Vectors

if TYPE_CHECKING:  # pragma: no cover
    from PIL.Image import Image

    from interactive_ir.backends.cancel import CancelToken

Message = dict  # {"role": "system"|"user"|"assistant", "content": str}
Prompt = Union[str, list]  # a plain user prompt, or a list of chat messages


@runtime_checkable
class Embedder(Protocol):
    """Maps texts (and, for vision models, images) into one L2-normalised float32 space."""

    spec: str  # the spec string it was built from, recorded in index manifests
    dim: int  # output dimension
    has_vision: bool  # False for caption-only (text) embedders

    def embed_texts(self, texts: Sequence[str]) -> Vectors: ...

    def embed_images(self, images: Sequence[Image]) -> Vectors: ...


@runtime_checkable
class Captioner(Protocol):
    """Writes one caption per image."""

    spec: str

    def caption(self, images: Sequence[Image]) -> list[str]: ...


@runtime_checkable
class LLM(Protocol):
    """A chat model. `generate` takes several prompts and returns one reply per prompt, in order.

    `cancel`: the token of the work the call serves (None: never cancelled); once it is set the backend
    stops as soon as it can and raises `errors.Cancelled` (see `backends.cancel`)."""

    spec: str

    def generate(
        self, prompts: Sequence[Prompt], *, temperature: float = 0.0, max_tokens: int = 256,
        cancel: CancelToken | None = None,
    ) -> list[str]: ...


@runtime_checkable
class VLM(Protocol):
    """A vision-language model that answers a free-form question about one or two images."""

    spec: str

    def ask(self, images: Sequence[Sequence[Image]], questions: Sequence[str], *, max_tokens: int = 64) -> list[str]: ...
