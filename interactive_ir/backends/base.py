"""The interfaces every backend implements. Engines depend on these, never on a concrete model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from interactive_ir.backends.prompts import Message, Prompt  # noqa: F401 - re-exported

if TYPE_CHECKING:  # pragma: no cover
    from PIL.Image import Image

    from interactive_ir.backends.cancel import CancelToken


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
