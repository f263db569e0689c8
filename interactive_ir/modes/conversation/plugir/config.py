"""`PlugIRConfig`: every knob of the conversation mode (re-exported by `interactive_ir.modes.conversation.mode`),
and the mode's row of the mode table (`MODE`: its methods and questioners, see `modes.registry`)."""

from __future__ import annotations

from dataclasses import dataclass

from interactive_ir.config import apply_env, apply_overrides
from interactive_ir.errors import BadInputError
from interactive_ir.modes.entries import Method, Mode

PLUGIR_ENV_PREFIX = "IIR_PLUGIR_"
QUESTION_STYLES = ("sample", "list")
ALL_ANSWERED = ("kl", "fallback")
AUTO_QUESTIONER = "auto"  # the config's choice of questioner by the LLM (see resolve_questioner)
GROUNDED_STYLES = ("choice", "yesno", "alternate")
SMALL_LLMS = ("smollm2",)  # LLM specs containing one of these count as the offline fallback (questioner auto)


@dataclass(frozen=True)
class PlugIRConfig:
    """Conversation mode (PlugIR). Each field can be set by env `IIR_PLUGIR_<FIELD>` or a CLI flag."""

    method: str = "plugir"  # "plugir" (CR+RCE+F), "cr+rce", "cr" (CR + Table 17 questioner), "zs" (no LLM rewriting)
    ask_questions: bool = True  # False: never ask (answers are then impossible; other modes still work)
    n_candidates: int = 0  # n, the retrieval candidates S_R for RCE and the KL filter; 0 = auto (below)
    candidate_fraction: float = 0.01  # auto n: this share of the index (the paper uses about 1%) ...
    min_candidates: int = 20  # ... but at least this many
    max_candidates: int = 1000  # ... and at most this many (0: no cap). RCE's entropies cost n^2 and its KMeans n:
    #                             1% of 10M images would be 100,000 candidates (seconds a turn); the paper's n was
    #                             200-500 at pools of 20k-50k. Up to 100,000 images the cap changes nothing
    n_clusters: int = 10  # m, KMeans clusters = candidate captions shown to the questioner (paper: 10)
    n_questions: int = 5  # q_n, candidate questions generated per turn before filtering
    question_style: str = "sample"  # "sample": q_n copies of the paper's one-question prompt in one batched call;
    #                                 "list": one prompt asking for q_n numbered questions (fewest tokens in)
    question_temperature: float = 0.7  # sampling temperature of the questioner (paper: 0.7)
    question_max_tokens: int = 32  # reply budget per question prompt (paper: 32; the question comes first)
    filter_temperature: float = 0.0  # Table 19 answerer (paper: 0)
    filter_max_tokens: int = 10  # Table 19 answerer (paper: 10)
    all_answered: str = "kl"  # when the filter says the dialogue answers every question: "kl" lets KL choose
    #                           among them all (a weak answerer such as SmolLM2-135M claims answers it does not
    #                           have); "fallback" asks a question built from the candidates' captions instead
    reformulate_temperature: float = 0.0  # Table 20 context reformulation (paper: 0)
    reformulate_max_tokens: int = 77  # paper: 512; CLIP reads at most 77 tokens anyway, and this bounds the
    #                                   time a rambling small model can take
    sim_scale: float = 1.0  # similarities are multiplied by this inside the softmaxes of RCE and KL (paper: 1)
    kmeans_seed: int = 0  # KMeans seed (faiss; the same candidates give the same clusters)
    kmeans_n_init: int = 1  # KMeans restarts (1 keeps a turn fast at 100k images)
    questioner: str = "auto"  # who writes the questions: "llm" (PlugIR's questioner), "grounded" (no LLM: clickable
    #                           options from the candidate clusters, or yes/no on a splitting word), "auto": grounded
    #                           when there is no LLM or only the offline SmolLM2 fallback, llm otherwise.
    #                           A session may choose its own with session.options.questioner
    grounded_style: str = "choice"  # grounded questions: "choice" (which cluster is closest), "yesno" (a splitting
    #                                 word), "alternate" (choice, then yes/no, in turn)
    grounded_options: int = 4  # clusters offered by a choice question (plus "none of these")
    grounded_pull: float = 0.6  # how far a chosen option pulls the query row (times its length; see query_updates.reshape)
    grounded_push: float = 0.2  # how far the options not chosen push it away
    grounded_temperature: float = 0.1  # the pull goes to the chosen members weighted by softmax(score / this);
    #                                    0: their plain mean (see query_updates.pull_target)
    representative: str = "image"  # RCE representative by the entropy of "image"->image similarities (the paper's
    #                                text) or "caption"->image (the authors' code; needs a caption index)
    kl_skip_top: int = 0  # KL is computed over candidate ranks kl_skip_top+1..n (the authors' code: 10)
    filter_retries: int = 0  # when the filter drops every question, write new ones up to this many times (code: 3)
    carry_weight: float = 0.5  # weight of the latest feedback/relative round's query row in the query rows of
    #                            later answers and skips (0: they search the dialogue alone; see conversation.py)

    def __post_init__(self):
        MODE.method(self.method)  # UnknownMethodError naming the methods
        if self.all_answered not in ALL_ANSWERED:
            raise BadInputError(f"all_answered must be one of {', '.join(ALL_ANSWERED)}, got {self.all_answered!r}")
        if self.questioner not in questioner_values():
            raise BadInputError(f"questioner must be one of {', '.join(questioner_values())}, got {self.questioner!r}")
        if self.grounded_style not in GROUNDED_STYLES:
            raise BadInputError(f"grounded_style must be one of {', '.join(GROUNDED_STYLES)}, got {self.grounded_style!r}")
        if self.grounded_options < 2:
            raise BadInputError(f"grounded_options must be at least 2, got {self.grounded_options}")
        if self.grounded_temperature < 0:
            raise BadInputError(f"grounded_temperature must be 0 or more, got {self.grounded_temperature}")
        for name in ("grounded_pull", "grounded_push"):
            if not 0.0 <= getattr(self, name) <= 5.0:
                raise BadInputError(f"{name} must be between 0 and 5, got {getattr(self, name)}")
        if self.question_style not in QUESTION_STYLES:
            raise BadInputError(f"question_style must be one of {', '.join(QUESTION_STYLES)}, got {self.question_style!r}")
        for name in ("n_clusters", "n_questions", "min_candidates", "question_max_tokens", "filter_max_tokens",
                     "reformulate_max_tokens", "kmeans_n_init"):
            if getattr(self, name) < 1:
                raise BadInputError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0.0 <= self.carry_weight <= 1.0:
            raise BadInputError(f"carry_weight must be between 0 and 1, got {self.carry_weight}")
        if self.representative not in ("image", "caption"):
            raise BadInputError(f"representative must be 'image' or 'caption', got {self.representative!r}")
        if self.kl_skip_top < 0 or self.filter_retries < 0:
            raise BadInputError("kl_skip_top and filter_retries must be 0 or more")
        if self.n_candidates < 0:
            raise BadInputError(f"n_candidates must be 0 (auto) or positive, got {self.n_candidates}")
        if self.max_candidates and self.max_candidates < self.min_candidates:
            raise BadInputError(f"max_candidates must be 0 (no cap) or at least min_candidates "
                                f"({self.min_candidates}), got {self.max_candidates}")

    # --- what the method uses ---------------------------------------------------------------------
    @property
    def reformulates(self) -> bool:
        """CR: the dialogue is rewritten into one caption (Table 20); else it is concatenated."""
        return self.method != "zs"

    @property
    def uses_candidates(self) -> bool:
        """RCE: the questioner sees captions of the retrieval candidates (Table 18, else Table 17)."""
        return self.method in ("plugir", "cr+rce")

    @property
    def filters(self) -> bool:
        """F: Algorithm 2 chooses among the q_n questions (else the first valid one is asked)."""
        return self.method == "plugir"

    def with_method(self, method: str | None) -> PlugIRConfig:
        return apply_overrides(self, method=method) if method else self


MODE = Mode(
    "conversation", "Questions", "describe the image, answer the system's questions about the results",
    config=PlugIRConfig, section="plugir",
    methods=(  # PlugIR's ablation ladder, strongest first
        Method("plugir", "conversation", "PlugIR", "context reformulation, questions from the retrieval "
               "context, filtered by KL (CR+RCE+F)", needs_llm=True, protocol="plugir"),
        Method("cr+rce", "conversation", "PlugIR without filtering", "context reformulation and questions "
               "from the retrieval context (CR+RCE)", needs_llm=True, protocol="cr+rce"),
        Method("cr", "conversation", "Reformulation only", "the dialogue rewritten into one caption, "
               "questions without the candidates (CR)", needs_llm=True, protocol="cr"),
        Method("zs", "conversation", "Concatenated dialogue", "the dialogue joined as the query, no rewriting "
               "(ChatIR's zero-shot baseline)", needs_llm=True, protocol="zs"),
    ),
    questioners=(  # in the order the page offers them
        Method("grounded", "conversation", "Picture questions",
               "pick the closest image or answer yes/no (no LLM, instant)", protocol="grounded"),
        Method("llm", "conversation", "Written questions",
               "the LLM asks about the results, you type the answer", needs_llm=True),
    ),
)


def questioner_values() -> tuple[str, ...]:
    """What `PlugIRConfig.questioner` (and `session.options.questioner`) accepts: "auto" and the questioners."""
    return (AUTO_QUESTIONER, *MODE.questioner_names)


def resolve_questioner(choice: str | None, llm) -> str:
    """"llm", "grounded", or "" (no questions: "llm" chosen and no LLM) for a questioner choice and an LLM."""
    q = (choice or AUTO_QUESTIONER).strip().lower()
    if q not in questioner_values():
        raise BadInputError(f"unknown questioner {choice!r}; choose one of {', '.join(questioner_values())}")
    if q == AUTO_QUESTIONER:
        spec = str(getattr(llm, "spec", "") or "").lower()
        return "grounded" if llm is None or any(s in spec for s in SMALL_LLMS) else "llm"
    if q == "llm" and llm is None:
        return ""
    return q


def plugir_config(environ=None, **overrides) -> PlugIRConfig:
    """The defaults, then `IIR_PLUGIR_*` env vars, then non-None `overrides` (CLI flags)."""
    return apply_overrides(apply_env(PlugIRConfig(), PLUGIR_ENV_PREFIX, environ), **overrides)
