"""What a prompt is: a plain user string or a list of chat messages, and its two views (messages, text)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Union

from interactive_ir.errors import BadInputError

Message = dict  # {"role": "system"|"user"|"assistant", "content": str}
Prompt = Union[str, list]  # a plain user prompt, or a list of chat messages


def as_messages(prompt: Prompt) -> list[dict]:
    """A prompt as chat messages: a string becomes one user message; message lists are checked."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if isinstance(prompt, (list, tuple)) and prompt:
        for m in prompt:
            if not (isinstance(m, Mapping) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise BadInputError(f"a chat message must be a dict with str 'role' and 'content', got {m!r}")
        return [{"role": m["role"], "content": m["content"]} for m in prompt]
    raise BadInputError(f"a prompt is a string or a non-empty list of chat messages, got {prompt!r}")


def prompt_text(prompt: Prompt) -> str:
    """The prompt's text (message contents joined by newlines), for fakes and logs."""
    return prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in as_messages(prompt))
