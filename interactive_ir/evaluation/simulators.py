"""Simulated users: they answer questions, mark relevant results, and write relative captions.

What a simulated user knows about its target is `Query.knowledge` (the description and the held-out
captions); the caption the index stores for the target is never shown to it. What it sees of a shown
result is that image's index captions (or the image itself, for the VLM variants).

- `LLMAnswerer` answers a question from the target's captions with an LLM, and may say "uncertain"
  (PlugIR's Table 19 prompt); `VLMAnswerer` asks a VLM about the target image; `CaptionAnswerer` is the
  model-free rule both fall back on.
- `RelevanceActor` marks shown images by ground truth (paper 001's artificial actor): of the shown
  images that are relevant, a seeded random subset of at most n is marked relevant.
- `LLMRelativeCaptioner` says how the target differs from a shown candidate, from both captions
  (paper 004's LLM user simulator); `VLMRelativeCaptioner` from the two images; `RuleRelativeCaptioner`
  is the model-free fallback.

Every model stage is build prompt -> call -> parse; parsers accept any string and return None for
junk, and a None (or a backend error) falls back to the rule, recorded as `source="fallback"`.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from interactive_ir.errors import BackendError, BadInputError

log = logging.getLogger(__name__)

UNCERTAIN = "uncertain"


@dataclass(frozen=True)
class SimConfig:
    """Knobs of the simulated user (env `IIR_SIM_<FIELD>` via `config.apply_env(cfg, "IIR_SIM_")`)."""

    max_tokens: int = 48  # longest reply the simulator's model may write (tokens)
    temperature: float = 0.0  # sampling temperature of the simulator's model (0: deterministic)
    max_words: int = 30  # parsed answers and relative captions are cut to this many words
    allow_uncertain: bool = True  # the answerer may reply "uncertain"; False: the rule answers instead
    relevant_n: int = 2  # relevance actor: marks at most this many relevant shown images per round (paper 001)
    relevance_overlap: float = 0.5  # a shown image counts as relevant when at least this share of its caption's
    # content words occur in the target's captions (0: only the target and the query's "relevant" ids)
    mark_irrelevant: bool = True  # relevance actor marks the shown images that are not relevant as irrelevant


@dataclass(frozen=True)
class SimReply:
    """What the simulated user said, and where it came from."""

    text: str  # the answer or relative caption given to the engine
    source: str  # "llm", "vlm", "rule" (model-free by choice) or "fallback" (the model's reply was unusable)
    raw: str | None = None  # the model's raw reply (None when no model was asked or it failed)
    uncertain: bool = False  # the answer is "uncertain"
    error: str = ""  # the backend error that forced a fallback

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", False)}


# --- words ---------------------------------------------------------------------------------------------

_STOP = frozenset(
    "a an the and or of to in on at for with by from into onto over under near next up down out off as is are was "
    "were be been being it its this that these those there here he she they them his her their him who whom whose "
    "what which where when why how do does did can could should would will shall may might must have has had not "
    "through no yes any some each other another than then very just also too while image picture photo "
    "shows showing seen see".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """A crude singular: 'dogs' -> 'dog', 'glasses' -> 'glass', 'grass' stays."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """Lower-case stemmed words that carry content, in order, without repeats."""
    seen: dict[str, None] = {}
    for w in _WORD.findall((text or "").lower()):
        if w not in _STOP and len(w) > 1:
            seen.setdefault(stem(w), None)
    return list(seen)


def _words_cut(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words[:n]) if len(words) > n else text


def cut_repetition(text: str, n: int = 4) -> str:
    """Cut a small model's loop: everything from the first repeat of an n-word sequence on."""
    words = text.split()
    seen: set[tuple[str, ...]] = set()
    for i in range(len(words) - n + 1):
        gram = tuple(_norm(w) for w in words[i:i + n])
        if gram in seen:
            return " ".join(words[:i]).rstrip(" ,;:-")
        seen.add(gram)
    return text


# --- parsing replies -------------------------------------------------------------------------------------

_ECHO = re.compile(r"\[(?:context|question|candidate|target)[^\]]*\]|answer the question only|you are given|"
                   r"write one short", re.IGNORECASE)
_LABELS = r"(?:the |my )?answer(?: is)?|assistant|output|response|reply|instruction|relative caption|modification"
_LABEL = re.compile(rf"^\s*(?:\[(?:{_LABELS})\]\s*[:\-]?\s*|(?:{_LABELS}|a)\s*[:\-]\s*|(?:the |my )?answer is\s+)+",
                    re.IGNORECASE)
_UNCERTAIN_RE = re.compile(
    r"\buncertain\b|\bunsure\b|\bunknown\b|\bunclear\b|\bcannot (?:be )?(?:determine|tell|say|know|answer|see)|"
    r"\bcan't (?:determine|tell|say|know|answer|see)|\bunable to\b|\bdon't know\b|\bdo not know\b|"
    r"\bnot (?:sure|certain|mentioned|specified|stated|known|clear|given|provided|visible)\b|"
    r"\bno (?:information|mention|indication)\b|\bnot enough information\b|\bn/a\b|\bnot possible\b|"
    r"\bimpossible\b", re.IGNORECASE)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019*_ \t"


def _clean_line(line: str) -> str:
    line = line.strip().strip(_QUOTES).strip()
    prev = None
    while prev != line:
        prev = line
        line = _LABEL.sub("", line).strip().strip(_QUOTES).strip()
    return re.sub(r"\s+", " ", line)


def _norm(text: str) -> str:
    return " ".join(_WORD.findall((text or "").lower()))


def _first_usable_line(reply: str, drop: Sequence[str] = ()) -> str | None:
    """The first line with letters that is not a label, an echo of the prompt, or one of `drop`."""
    if not isinstance(reply, str):
        return None
    reply = re.sub(r"```[a-z]*", "\n", reply)
    dropped = {_norm(d) for d in drop if d}
    for raw in reply.splitlines():
        if _ECHO.search(raw):
            continue
        line = _clean_line(raw)
        for d in drop:  # an echoed question in front of the answer: "What colour is it? red" -> "red"
            d = (d or "").strip()
            if d and len(line) > len(d) and line.lower().startswith(d.lower()):
                line = _clean_line(line[len(d):])
        if not re.search(r"[A-Za-z0-9]", line) or _norm(line) in dropped:
            continue
        return line
    return None


def parse_answer(reply: str, question: str = "", max_words: int = 30) -> tuple[str | None, bool]:
    """(answer, is_uncertain) from a model's reply to an answer prompt; (None, False) for junk.

    Takes the first usable line (labels like "Answer:" and an echoed question removed), keeps its
    first sentence, and maps any way of saying "I cannot tell" to "uncertain".
    """
    line = _first_usable_line(reply, [question])
    if line is None:
        return None, False
    first = re.split(r"(?<=[.!?])[\"'\u201d\u2019]?\s+", line, maxsplit=1)[0].strip(_QUOTES).rstrip(".!").strip() or line
    if _UNCERTAIN_RE.search(first):
        return UNCERTAIN, True
    first = _words_cut(cut_repetition(first), max_words).strip(_QUOTES).rstrip(".!").strip()
    return (first, False) if re.search(r"[A-Za-z0-9]", first) else (None, False)


def parse_relative(reply: str, candidate: Sequence[str] = (), max_words: int = 30) -> str | None:
    """A relative caption from a model's reply; None for junk (empty, an echo, or the candidate's caption)."""
    line = _first_usable_line(reply, list(candidate))
    if line is None:
        return None
    line = _words_cut(cut_repetition(line.rstrip(".").strip()), max_words).rstrip(" ,;:-")
    words = set(content_words(line))
    if not words or words <= _PROMPT_WORDS:
        return None
    return line


_PROMPT_WORDS = frozenset({"instruction", "candidate", "target", "description", "change", "differ", "difference"})


# --- answerers -----------------------------------------------------------------------------------------

ANSWER_SYSTEM = (  # PlugIR Appendix A, Table 19 (its answerer for the question filter), verbatim
    "Answer the question only according to the given context. If you cannot determine the answer or there are no "
    "objects that are asked by the question in the context , answer \"Uncertain\"."
)
ANSWER_SYSTEM_CERTAIN = (
    "Answer the question only according to the given context, in a few words. If the context does not say, give "
    "your best guess from it."
)


def build_answer_prompt(context: Sequence[str], question: str, allow_uncertain: bool = True) -> list[dict]:
    """Chat messages asking for an answer to `question` from the target's captions."""
    ctx = " ".join(c.strip().rstrip(".") + "." for c in context if c.strip())
    system = ANSWER_SYSTEM if allow_uncertain else ANSWER_SYSTEM_CERTAIN
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"[Context] {ctx} [Question] {question.strip()} [Answer]"}]


def rule_answer(context: Sequence[str], question: str, allow_uncertain: bool = True) -> tuple[str, bool]:
    """Model-free answer: the caption sharing most content words with the question; 'uncertain' if none does."""
    q = set(content_words(question))
    best, best_score = "", 0
    for c in context:
        score = len(q & set(content_words(c)))
        if score > best_score:
            best, best_score = c, score
    if best_score == 0:
        if allow_uncertain or not context:
            return UNCERTAIN, True
        best = context[0]
    return best.strip().rstrip("."), False


class CaptionAnswerer:
    """Answers from the target's captions by word overlap (no model)."""

    source = "rule"

    def __init__(self, config: SimConfig = SimConfig()):
        self.config = config

    def answer(self, query, question: str) -> SimReply:
        text, unc = rule_answer(query.knowledge, question, self.config.allow_uncertain)
        return SimReply(text, self.source, uncertain=unc)


class LLMAnswerer:
    """Answers from the target's captions with an LLM (PlugIR Table 19 prompt)."""

    def __init__(self, llm, config: SimConfig = SimConfig()):
        self.llm = llm
        self.config = config

    def answer(self, query, question: str) -> SimReply:
        cfg = self.config
        prompt = build_answer_prompt(query.knowledge, question, cfg.allow_uncertain)
        try:
            raw = self.llm.generate([prompt], temperature=cfg.temperature, max_tokens=cfg.max_tokens)[0]
        except BackendError as e:
            log.warning("answerer LLM failed (%s); answering from the captions", e)
            text, unc = rule_answer(query.knowledge, question, cfg.allow_uncertain)
            return SimReply(text, "fallback", uncertain=unc, error=str(e))
        return _settle(raw, query, question, cfg, "llm")


def _settle(raw: str, query, question: str, cfg: SimConfig, source: str) -> SimReply:
    """The parsed model answer, or the caption rule's answer when the reply is junk or a forbidden "uncertain"."""
    text, unc = parse_answer(raw, question, cfg.max_words)
    if text is None or (unc and not cfg.allow_uncertain):
        text, unc = rule_answer(query.knowledge, question, cfg.allow_uncertain)
        return SimReply(text, "fallback", raw=raw, uncertain=unc)
    return SimReply(text, source, raw=raw, uncertain=unc)


def _open(index, image_id: str):
    from interactive_ir.imageio import open_image

    row = index.row_of.get(image_id)
    if row is None:
        raise BadInputError(f"no image {image_id!r} in the index")
    return open_image(index.image_path(row))


VLM_ANSWER_PROMPT = ("Answer the question about the image in a few words. If the image does not show what the "
                     "question asks about, answer \"Uncertain\". Question: {question}")


class VLMAnswerer:
    """Answers by asking a VLM about the target image itself."""

    def __init__(self, vlm, index, config: SimConfig = SimConfig()):
        self.vlm = vlm
        self.index = index
        self.config = config

    def answer(self, query, question: str) -> SimReply:
        cfg = self.config
        try:
            image = _open(self.index, query.target)
            raw = self.vlm.ask([[image]], [VLM_ANSWER_PROMPT.format(question=question.strip())],
                               max_tokens=cfg.max_tokens)[0]
        except (BackendError, BadInputError) as e:
            log.warning("answerer VLM failed (%s); answering from the captions", e)
            text, unc = rule_answer(query.knowledge, question, cfg.allow_uncertain)
            return SimReply(text, "fallback", uncertain=unc, error=str(e))
        return _settle(raw, query, question, cfg, "vlm")


# --- relevance actor -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """The relevance actor's marks for one round."""

    relevant: list[str]  # marked relevant (a random subset of `truth`, at most n)
    irrelevant: list[str]  # marked not relevant
    truth: list[str] = field(default_factory=list)  # every shown image that is relevant by ground truth


def overlap(candidate_captions: Sequence[str], target_captions: Sequence[str]) -> float:
    """Share of the candidate's caption content words that occur in the target's captions (0 to 1)."""
    cand = set(w for c in candidate_captions for w in content_words(c))
    if not cand:
        return 0.0
    target = set(w for c in target_captions for w in content_words(c))
    return len(cand & target) / len(cand)


class RelevanceActor:
    """Marks shown images by ground truth (paper 001, section 3.2's artificial actor).

    Relevant by ground truth: the target, the query's listed `relevant` ids, and (when
    `relevance_overlap` > 0) any shown image whose index caption shares that share of its content words
    with the target's captions (a stand-in for "looks like what I want" on single-target data). Each
    round a random subset of at most `relevant_n` of them is marked relevant; when the target is
    shown it is always among them (a user who sees the target marks it). The generator is seeded by
    (seed, query id, round), so marks do not depend on the order queries run in.
    """

    source = "rule"

    def __init__(self, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig(), seed: int = 0):
        if config.relevant_n < 1:
            raise BadInputError(f"relevant_n must be at least 1, got {config.relevant_n}")
        self.captions_of = captions_of
        self.config = config
        self.seed = seed

    def is_relevant(self, query, image_id: str) -> bool:
        if image_id == query.target or image_id in query.relevant:
            return True
        thr = self.config.relevance_overlap
        return thr > 0 and overlap(self.captions_of(image_id), query.knowledge) >= thr

    def judge(self, query, shown: Sequence[str], round_: int) -> Judgement:
        truth = [i for i in shown if self.is_relevant(query, i)]
        rng = random.Random(f"{self.seed}:{query.qid}:{round_}")
        n = self.config.relevant_n
        if len(truth) <= n:
            chosen = list(truth)
        else:
            must = [query.target] if query.target in truth else []
            rest = [i for i in truth if i not in must]
            picked = set(must) | set(rng.sample(rest, n - len(must)))
            chosen = [i for i in truth if i in picked]
        truth_set = set(truth)
        irrelevant = [i for i in shown if i not in truth_set] if self.config.mark_irrelevant else []
        return Judgement(chosen, irrelevant, truth)


# --- relative captioners -------------------------------------------------------------------------------

RELATIVE_SYSTEM = (
    "You help a user find a target image in a collection. The system showed the user a candidate image. Given a "
    "description of the candidate image and a description of the target image, write one short instruction that "
    "says how to change the candidate image to get the target image. Mention only what differs. Reply with the "
    "instruction only."
)
RELATIVE_EXAMPLE = (
    "[Candidate image] a brown dog runs on the grass\n[Target image] a black dog jumps into a lake to catch a "
    "stick\n[Instruction]", "make the dog black and have it jump into a lake after a stick")


def build_relative_prompt(candidate: Sequence[str], target: Sequence[str]) -> list[dict]:
    """Chat messages asking how the target differs from the candidate (one-shot)."""
    cand = "; ".join(c.strip().rstrip(".") for c in candidate if c.strip()) or "(no description)"
    tgt = "; ".join(c.strip().rstrip(".") for c in target if c.strip())
    return [{"role": "system", "content": RELATIVE_SYSTEM},
            {"role": "user", "content": RELATIVE_EXAMPLE[0]},
            {"role": "assistant", "content": RELATIVE_EXAMPLE[1]},
            {"role": "user", "content": f"[Candidate image] {cand}\n[Target image] {tgt}\n[Instruction]"}]


def rule_relative(candidate: Sequence[str], target: Sequence[str], max_words: int = 30) -> str:
    """Model-free relative caption: the target caption with the most content words the candidate lacks."""
    cand = set(w for c in candidate for w in content_words(c))
    best = max(target, key=lambda t: (len(set(content_words(t)) - cand), -target.index(t)), default="")
    return _words_cut(best.strip().rstrip("."), max_words) or "something else"


class RuleRelativeCaptioner:
    """Relative captions by the word-difference rule (no model)."""

    source = "rule"

    def __init__(self, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig()):
        self.captions_of = captions_of
        self.config = config

    def describe(self, query, candidate_id: str) -> SimReply:
        return SimReply(rule_relative(self.captions_of(candidate_id), query.knowledge, self.config.max_words),
                        self.source)


class LLMRelativeCaptioner(RuleRelativeCaptioner):
    """How the target differs from a candidate, from their captions, with an LLM (paper 004's simulator)."""

    def __init__(self, llm, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig()):
        super().__init__(captions_of, config)
        self.llm = llm

    def describe(self, query, candidate_id: str) -> SimReply:
        cfg = self.config
        cand = list(self.captions_of(candidate_id))
        try:
            raw = self.llm.generate([build_relative_prompt(cand, query.knowledge)], temperature=cfg.temperature,
                                    max_tokens=cfg.max_tokens)[0]
        except BackendError as e:
            log.warning("relative-caption LLM failed (%s); using the word-difference rule", e)
            return SimReply(rule_relative(cand, query.knowledge, cfg.max_words), "fallback", error=str(e))
        text = parse_relative(raw, cand + [RELATIVE_EXAMPLE[1]], cfg.max_words)
        if text is None:
            return SimReply(rule_relative(cand, query.knowledge, cfg.max_words), "fallback", raw=raw)
        return SimReply(text, "llm", raw=raw)


VLM_RELATIVE_PROMPT = ("The first image is a search result; the second image is the one the user wants. In one short "
                       "sentence, say how to change the first image to get the second. Reply with the instruction only.")


class VLMRelativeCaptioner(RuleRelativeCaptioner):
    """How the target differs from a candidate, from the two images, with a VLM (paper 004, Table 4)."""

    def __init__(self, vlm, index, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig()):
        super().__init__(captions_of, config)
        self.vlm = vlm
        self.index = index

    def describe(self, query, candidate_id: str) -> SimReply:
        cfg = self.config
        cand = list(self.captions_of(candidate_id))
        try:
            images = [_open(self.index, candidate_id), _open(self.index, query.target)]
            raw = self.vlm.ask([images], [VLM_RELATIVE_PROMPT], max_tokens=cfg.max_tokens)[0]
        except (BackendError, BadInputError) as e:
            log.warning("relative-caption VLM failed (%s); using the word-difference rule", e)
            return SimReply(rule_relative(cand, query.knowledge, cfg.max_words), "fallback", error=str(e))
        text = parse_relative(raw, cand, cfg.max_words)
        if text is None:
            return SimReply(rule_relative(cand, query.knowledge, cfg.max_words), "fallback", raw=raw)
        return SimReply(text, "vlm", raw=raw)


# --- the whole simulated user --------------------------------------------------------------------------


@dataclass
class SimulatedUser:
    """The three behaviours a protocol may call on."""

    answerer: object  # .answer(query, question) -> SimReply
    actor: RelevanceActor  # .judge(query, shown, round) -> Judgement
    relative: object  # .describe(query, candidate_id) -> SimReply


def index_captions(index) -> Callable[[str], list[str]]:
    """id -> the captions the index stores for it (what a simulated user 'sees' of a shown image)."""

    def captions_of(image_id: str) -> list[str]:
        row = index.row_of.get(image_id)
        return list(index.records[row].captions) if row is not None else []

    return captions_of


def make_user(index, llm=None, answerer: str | None = None, vlm=None, config: SimConfig = SimConfig(),
              seed: int = 0) -> SimulatedUser:
    """A simulated user over `index`.

    `answerer` chooses who answers questions and writes relative captions: "llm" (the given `llm`;
    the default when one is given), "rule" (model-free; the default without an LLM) or "vlm" (the
    given `vlm`, from the images).
    """
    kind = answerer or ("llm" if llm is not None else "rule")
    captions_of = index_captions(index)
    actor = RelevanceActor(captions_of, config, seed)
    if kind == "llm":
        if llm is None:
            raise BadInputError("the LLM answerer needs an LLM: pass --llm or --answerer SPEC")
        return SimulatedUser(LLMAnswerer(llm, config), actor, LLMRelativeCaptioner(llm, captions_of, config))
    if kind == "vlm":
        if vlm is None:
            raise BadInputError("the VLM answerer needs a VLM: pass --answerer vlm:SPEC")
        return SimulatedUser(VLMAnswerer(vlm, index, config), actor, VLMRelativeCaptioner(vlm, index, captions_of,
                                                                                          config))
    if kind == "rule":
        return SimulatedUser(CaptionAnswerer(config), actor, RuleRelativeCaptioner(captions_of, config))
    raise BadInputError(f"unknown answerer {kind!r}: use llm, rule or vlm")
