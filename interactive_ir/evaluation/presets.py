"""Paper presets for `eval --preset NAME`: each paper's rounds, k, stopping rule, rank bookkeeping and
pipeline choices (and its authors' code choices where the paper is silent).

A preset only fills what the command line leaves unset: an explicit flag that conflicts with it wins,
and the run says so (`apply_preset` returns those conflicts). The preset and every value it set are
printed at the top of the run and stored in each protocol's metrics.json.

| preset | paper | protocols | rounds | k | stops when shown | shown images | rank from |
|---|---|---|---|---|---|---|---|
| plugir | PlugIR | plugir | 10 | 10 | no | excluded (shrinking pool) | whole index |

PlugIR's pipeline choices (from the authors' code where the paper is silent): 512-token reformulation,
caption->image entropy representatives, KL over candidate ranks 11..n, filtered questions rewritten up to
3 times, pure text->image scores (tau 0).
| chatir | ChatIR (Levy et al.; PlugIR's baseline) | zs | 10 | 10 | no | kept | whole index |
| zhu | query rewriting with feedback (Zhu et al.) | feedback:expand | 5 | 20 | no | excluded | whole index |
| imagescope | ImageScope | composed:imagescope | 5 | 10 | yes | kept | the re-ranked list |
| fisd | FISD multi-round CIR (A Sanity Check on Composed Image Retrieval) | composed:compose | 5 | 10 | yes | kept | whole index |
"""

from __future__ import annotations

from dataclasses import dataclass, field

from interactive_ir.errors import BadInputError


@dataclass(frozen=True)
class Preset:
    """One paper's evaluation settings."""

    name: str
    paper: str  # which paper, in words
    protocols: str  # the protocol(s) it runs when --protocol is not given
    rounds: int  # interaction rounds after the description
    k: int  # results shown per round
    stop_on_found: bool  # the simulated user stops once the target is shown
    exclude_shown: bool  # each round shows only images not shown before
    rank_from: str = "index"  # "index": rank over the whole index; "results": position in the final (re-ranked)
    #                           list when the target is in it, else at least one past the list
    metrics_k: str = "1,5,10"  # the cut-offs the paper reports
    tau: float | None = None  # the retriever's caption weight in fused scores (0: pure text->image; None: the index's)
    plugir: dict = field(default_factory=dict)  # PlugIRConfig overrides (pipeline choices)
    notes: str = ""  # what the preset cannot reproduce here

    def settings(self) -> dict:
        return {"rounds": self.rounds, "k": self.k, "stop_on_found": self.stop_on_found,
                "exclude_shown": self.exclude_shown, "rank_from": self.rank_from, "metrics_k": self.metrics_k,
                "tau": self.tau,
                "protocol": self.protocols, **{f"plugir.{k}": v for k, v in self.plugir.items()}}


PRESETS = {
    "plugir": Preset(
        "plugir", "PlugIR (Lee et al.): 10 rounds, BRI and Hits@10 over VisDial val", "plugir", 10, 10,
        stop_on_found=False, exclude_shown=True, metrics_k="1,5,10",
        tau=0.0, plugir={"reformulate_max_tokens": 512, "representative": "caption", "kl_skip_top": 10,
                         "filter_retries": 3},
        notes="the shrinking pool is --exclude-shown; pure text->image scores are --tau 0 (on a caption index the "
              "image vectors are caption vectors, so nothing changes); the authors' BLIP retriever needs a blip: "
              "embedder (not offline here)"),
    "chatir": Preset(
        "chatir", "ChatIR (Levy et al.): dialogue concatenated into one query, Hits@10 by round", "zs", 10, 10,
        stop_on_found=False, exclude_shown=False, metrics_k="1,5,10",
        notes="the released dialogues replay with --protocol fixed-dialogue --dialogues FILE"),
    "zhu": Preset(
        "zhu", "Query rewriting with LLMs and VLMs (Zhu et al.): 5 turns, Recall@20", "feedback:expand", 5,
        20, stop_on_found=False, exclude_shown=True, metrics_k="20,40,60,80,100,120",
        notes="accumulated recall needs queries with several relevant images"),
    "imagescope": Preset(
        "imagescope", "ImageScope: ranks from the final re-ranked list", "composed:imagescope", 5, 10,
        stop_on_found=True, exclude_shown=False, rank_from="results", metrics_k="1,5,10",
        notes="stages 2-3 re-rank only with --vlm"),
    "fisd": Preset(
        "fisd", "A sanity check on CIR (FISD): 5 rounds, top-1 as the next reference, history mean",
        "composed:compose", 5, 10, stop_on_found=True, exclude_shown=False, metrics_k="1,5,10",
        notes="the paper's user simulator is llava-next-8b + Llama3-8B; here the model-free one unless --answerer"),
}


def get_preset(name: str) -> Preset:
    p = PRESETS.get((name or "").strip().lower())
    if p is None:
        raise BadInputError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return p


def apply_preset(preset: Preset | None, given: dict) -> tuple[dict, list[str]]:
    """(settings, conflicts): `given` (flag -> value, None = not given) filled from the preset; each flag given
    with a value other than the preset's wins and is listed in `conflicts` as a sentence."""
    out = dict(given)
    conflicts = []
    if preset is None:
        return out, conflicts
    ps = preset.settings()
    for key, value in ps.items():
        if key.startswith("plugir."):
            continue
        if out.get(key) is None:
            out[key] = value
        elif out[key] != value:
            conflicts.append(f"--{key.replace('_', '-')} {out[key]} overrides the {preset.name} preset's {value}")
    return out, conflicts
