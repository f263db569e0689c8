"""The belief's row of the mode table (`MODE`: the actions it takes, each with its `eval --protocol`) and its
config. `BeliefConfig` (the user model the posterior is computed with, and the page's use of it) lives beside
the posterior math in `retrieval/belief.py`, which reads it; it is re-exported here as the mode's config."""

from __future__ import annotations

from interactive_ir.core.options import BELIEF
from interactive_ir.modes.entries import Method, Mode
from interactive_ir.retrieval.belief import BeliefConfig, belief_config

__all__ = ["BELIEF", "BeliefConfig", "MODE", "belief_config"]


def _action(name: str, label: str, description: str, protocol: str = "") -> Method:
    return Method(name, BELIEF, label, description, protocol=protocol)


MODE = Mode(
    BELIEF, "Closest", "every action is evidence for one probability over the collection; each page shows the "
    "most probable images, a seen one only when it is very probable again (the web page's default, no LLM)",
    config=BeliefConfig, takes_over=("conversation", "feedback", "composed"),
    method_noun="belief action",
    methods=(  # the page's order; a simulated round of each protocol is in `evaluation/protocols.py`
        _action("page", "Closest and a question", "a click on the shown image closest to the one in mind (or "
                "none of these), the answer to the belief's question and how the image differs, said together",
                protocol="belief"),
        _action("closest", "Closest", "a click on the shown image closest to the one in mind, or none of these",
                protocol="closest"),
        _action("references", "Like this, but", "the closest image and how the image in mind differs from it",
                protocol="belief:references"),
        _action("questions", "Its questions", "open questions where they inform, then yes/no on the word whose "
                "answer tells most about the probable images; the answer is what is said", protocol="belief:questions"),
        _action("marks", "Marks", "each shown image marked like it counts as a click on it, none as none of these",
                protocol="belief:marks"),
        _action("tell", "Tell", "what is said about the image in mind: an answer, or it also has a red kite"),
        _action("skip", "Skip", "this page is not it: the next most probable images"),
    ),
)
