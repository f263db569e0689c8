"""Context reformulation (CR): the description and dialogue -> one caption-style query (Table 20, temperature 0).

Without a usable reply (empty, an echo, the few-shot example copied, a question) the query falls back to
the ZS concatenation of the dialogue, and the caller records that it did.
"""

from __future__ import annotations

from dataclasses import dataclass

from interactive_ir.config import MAX_TEXT_CHARS
from interactive_ir.modes.conversation.plugir.parsers import parse_caption
from interactive_ir.modes.conversation.plugir.prompts import Dialogue, concat_dialogue, reformulate_prompt


@dataclass
class Reformulation:
    query: str  # the text to search with
    reformulated: bool  # True: the LLM's new caption; False: the concatenated dialogue
    reply: str | None = None  # the raw reply (None when no call was made)


def needs_llm(dialogue: Dialogue) -> bool:
    """Round 0 has no dialogue: the description is already a caption."""
    return bool(dialogue)


def build(description: str, dialogue: Dialogue) -> list:
    return [reformulate_prompt(description, dialogue)]


def parse(reply: str | None, description: str, dialogue: Dialogue, limit: int) -> Reformulation:
    source = concat_dialogue(description, dialogue)
    caption = parse_caption(reply, source)
    if caption:
        return Reformulation(caption[:limit].strip(), True, reply)
    return Reformulation(concat_dialogue(description, dialogue)[:limit].strip(), False, reply)


def reformulate(llm, description: str, dialogue: Dialogue, *, temperature: float = 0.0, max_tokens: int = 77,
                limit: int = MAX_TEXT_CHARS) -> Reformulation:
    """Call `llm` (a `core.model_calls.MeteredLLM`; errors propagate as BackendError) and parse its reply."""
    if not needs_llm(dialogue):
        return Reformulation(description[:limit].strip(), False)
    reply = llm.generate(build(description, dialogue), stage="reformulate", temperature=temperature,
                         max_tokens=max_tokens)[0]
    return parse(reply, description, dialogue, limit)
