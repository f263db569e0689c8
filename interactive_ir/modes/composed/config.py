"""`ComposedConfig`: the composed-search settings, and the mode's row of the mode table (`MODE`: its
methods, see `modes.registry`)."""

from __future__ import annotations

from dataclasses import dataclass

from interactive_ir.config import apply_env
from interactive_ir.modes.entries import Method, Mode

ENV_PREFIX = "IIR_COMPOSED_"


@dataclass(frozen=True)
class ComposedConfig:
    """Composed-search settings; each field can be set by env `IIR_COMPOSED_<FIELD>`."""

    method: str = "auto"  # "imagescope" (needs an LLM), "compose", or "auto": imagescope with an LLM, else compose
    tau: float | None = None  # weight of text->caption similarity; None: the retriever's (0.15 with captions, 1 on a caption index)
    text_weight: float = 1.0  # compose: weight of the relative caption's embedding added to the reference's
    use_history_mean: bool = True  # rank by the mean query row of all relative rounds (A Sanity Check on Composed Image Retrieval); False: this round only
    rerank: bool = True  # run ImageScope stages 2 and 3 when a VLM is configured
    rerank_k: int = 20  # stage 2: how many top candidates the verifier checks (paper: 20)
    alpha: int = 3  # stage 3: how many top candidates the evaluator compares with the reference (paper: 3)
    max_propositions: int = 6  # stage 2: most propositions checked per candidate
    reason_max_tokens: int = 512  # reply length of the stage 1 and stage 2 reasoner
    temperature: float = 0.0  # reasoner sampling temperature (the paper uses 0)
    verify_max_tokens: int = 8  # verifier reply length (a yes or a no)
    evaluate_max_tokens: int = 128  # evaluator reply length (ANSWER line and a short reason)


def composed_config(cfg: ComposedConfig | None = None) -> ComposedConfig:
    return cfg if cfg is not None else apply_env(ComposedConfig(), ENV_PREFIX)


MODE = Mode(
    "composed", "Reference + caption", "a reference image and how yours differs from it (\"the same, but at night\")",
    config=ComposedConfig, section="composed", plain="compose", best="imagescope",
    method_noun="composed-search method",
    methods=(
        Method("imagescope", "composed", "LLM rewrite",
               "the LLM describes the reference as changed by your caption (ImageScope)", needs_llm=True,
               protocol="composed:imagescope"),
        Method("compose", "composed", "Add the caption to the picture",
               "the reference's vector plus your caption's (no LLM)", protocol="composed:compose"),
    ),
)
