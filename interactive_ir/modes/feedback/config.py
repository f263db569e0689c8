"""`FeedbackConfig`: the relevance-feedback settings, and the mode's row of the mode table (`MODE`: its
methods, see `modes.registry`)."""

from __future__ import annotations

from dataclasses import dataclass

from interactive_ir.config import apply_env
from interactive_ir.modes.entries import Method, Mode

ENV_PREFIX = "IIR_FEEDBACK_"


@dataclass(frozen=True)
class FeedbackConfig:
    """Relevance-feedback settings; each field can be set by env `IIR_FEEDBACK_<FIELD>`."""

    method: str = "auto"  # summary | keywords | cot | expand | rocchio; "auto": cot with an LLM, expand without
    max_relevant_captions: int = 2  # captions of at most this many relevant images expand the query (paper: 2)
    rocchio_alpha: float = 1.0  # Rocchio weight of the current query vector
    rocchio_beta: float = 0.75  # Rocchio weight of the mean relevant image vector
    rocchio_gamma: float = 0.15  # Rocchio weight of the mean not-relevant image vector (subtracted)
    tau: float | None = None  # weight of text->caption similarity; None: the retriever's default
    keywords_prefix: str = "image of"  # prefix of the keywords query (the paper: "video or image of")
    max_tokens: int = 160  # longest LLM rewrite (tokens)
    rewrite_from: int = 1  # the LLM rewrites from this feedback round of a session on; earlier ones only expand
    #                        with captions. 1: every round; 2: Zhu et al.'s procedure (turn 1 expands, LLM editing
    #                        "only after turn 1")
    temperature: float = 0.0  # LLM sampling temperature


def feedback_config(cfg: FeedbackConfig | None = None) -> FeedbackConfig:
    return cfg if cfg is not None else apply_env(FeedbackConfig(), ENV_PREFIX)


MODE = Mode(
    "feedback", "More like my marks", "mark shown results relevant or not; the next page moves towards them",
    config=FeedbackConfig, section="feedback", plain="expand", best="cot",
    methods=(  # Zhu et al.'s query editing first (the page's order), then the methods without an LLM
        Method("summary", "feedback", "LLM summary",
               "the LLM merges the captions of your relevant images into one description", needs_llm=True,
               protocol="feedback:summary"),
        Method("keywords", "feedback", "LLM keywords", "the LLM lists the keywords your relevant images share",
               needs_llm=True, protocol="feedback:keywords"),
        Method("cot", "feedback", "LLM reasoning",
               "the LLM reasons about what your marks share, then describes it (slower)", needs_llm=True,
               protocol="feedback:cot"),
        Method("expand", "feedback", "Add captions",
               "the captions of your relevant images are added to your description (no LLM)",
               protocol="feedback:expand"),
        Method("rocchio", "feedback", "Move the query",
               "towards the images you marked relevant, away from the others (no LLM)", protocol="rocchio"),
    ),
)
