"""Simulated users: they answer questions, pick among options, mark relevant results, and write
relative captions, knowing only what a person looking at the target would.

**Information model.** Every behaviour receives a `knowledge.TargetKnowledge`: the target's description
and held-out captions, and (VLM users only) its pixels; never its id, its rank or the caption the index
stores for it. Of a *shown* image, a user sees what anyone would: its index captions (`captions_of`),
or the image itself (VLM variants), and whether it is the target (`knowledge.recognise`).

- Answerers: `CaptionAnswerer` is model-free (the default; `answers.rule_answer`): yes/no questions by
  word presence in the held-out captions; open questions with the part of them that answers what was
  asked (a colour, a count, a place, an action, a short phrase), "not sure" when they say nothing on it,
  never a whole caption; choice questions by the option whose caption is most like the held-out captions,
  or "none of these" under `SimConfig.choice_threshold`. "Alike" is `similarity.WordSimilarity` (no
  model) or an embedder's cosine (`--user-similarity SPEC`). `LLMAnswerer` answers from the captions with
  an LLM (PlugIR's Table 19 prompt, asking for a few words; a long reply is cut to the answering
  phrase); `VLMAnswerer` asks a VLM about the target's pixels. Both choose
  among options by the model-free rule.
- `RelevanceActor` marks shown images by ground truth (Zhu et al.'s artificial actor): the target and
  the query's listed relevant images; caption-word overlap counts only when asked (`relevance_overlap`).
- Relative captioners say how the target differs from a reference: `RuleRelativeCaptioner` (model-free)
  names the target's held-out words that the reference's caption lacks (and the reference's own words
  the target lacks); it never returns a target caption verbatim. `LLMRelativeCaptioner` and
  `VLMRelativeCaptioner` use a model (A Sanity Check on Composed Image Retrieval) and fall back on the rule.

Every model stage is build prompt -> call -> parse; parsers accept any string and return None for
junk, and a None (or a backend error) falls back to the rule, recorded as `source="fallback"`.

The API other code uses (the evaluator, `study simulate`):

    user = make_user(index, answerer="rule")             # or llm=..., answerer="llm" / vlm=..., "vlm"
    k = knowledge_of(query, index, pixels=user.needs_pixels)
    user.answerer.answer(k, "Is there a dog?")           # -> SimReply(text="yes", ...)
    user.answerer.choose(k, ["a dog on grass", "a red car"])   # -> Choice(index=0 or None, ...)
    user.actor.judge(k, shown_ids, round_)               # -> Judgement(relevant, irrelevant, truth)
    user.relative.describe(k, reference_id)              # -> SimReply(text="black lake instead of grass")
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from interactive_ir.backends.fence import SHORT_RULE, data_rule, fence
from interactive_ir.backends.redact import redact_text
from interactive_ir.errors import BackendError, BadInputError
from interactive_ir.evaluation.answers import NOT_SURE, SHORT_WORDS, is_yes_no, rule_answer
from interactive_ir.evaluation.knowledge import TargetKnowledge
from interactive_ir.evaluation.similarity import WordSimilarity
from interactive_ir.evaluation.words import content_words, cut_repetition, norm, stem, surface_words

__all__ = ["stem", "content_words", "cut_repetition", "is_yes_no", "rule_answer"]  # re-exported for older callers

log = logging.getLogger(__name__)

UNCERTAIN = NOT_SURE  # what the simulated user says when what it knows does not answer the question


@dataclass(frozen=True)
class SimConfig:
    """Knobs of the simulated user (env `IIR_SIM_<FIELD>` via `config.apply_env(cfg, "IIR_SIM_")`)."""

    max_tokens: int = 48  # longest reply the simulator's model may write (tokens)
    temperature: float = 0.0  # sampling temperature of the simulator's model (0: deterministic)
    max_words: int = 30  # parsed answers and relative captions are cut to this many words
    allow_uncertain: bool = True  # the answerer may reply "uncertain"; False: the rule answers instead
    relevant_n: int = 2  # relevance actor: marks at most this many relevant shown images per round (Zhu et al.)
    relevance_overlap: float = 0.0  # opt-in: a shown image also counts as relevant when at least this share of
    # its caption's content words occur in the target's captions (0: ground truth only, the default)
    mark_irrelevant: bool = True  # relevance actor marks the shown images that are not relevant as irrelevant
    choice_threshold: float = 0.3  # choice questions: "none of these" when no option is at least this alike
    answer_threshold: float = 0.25  # open questions (embedder similarity): "uncertain" below this
    relative_words: int = 6  # relative captions name at most this many of the target's words
    noise: float = 0.0  # error rate of clicks and answers (`--user-noise`): with this probability a click is on a
    #                     random shown image and an answer a random option (`evaluation.users`); 0: none

    def __post_init__(self):
        if not 0.0 <= self.noise <= 1.0:
            raise BadInputError(f"the user's noise must be between 0 and 1, got {self.noise}")


@dataclass(frozen=True)
class SimReply:
    """What the simulated user said, and where it came from."""

    text: str  # the answer or relative caption given to the engine
    source: str  # "llm", "vlm", "rule" (model-free by choice) or "fallback" (the model's reply was unusable)
    raw: str | None = None  # the model's raw reply (None when no model was asked or it failed)
    uncertain: bool = False  # the answer is "uncertain"
    error: str = ""  # the backend error that forced a fallback
    round_trips: int = 0  # model calls the simulated user made for this reply

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", False, 0)}


@dataclass(frozen=True)
class Choice:
    """The simulated user's pick among a question's options."""

    index: int | None  # the chosen option (0-based), None = "none of these"
    scores: tuple[float, ...]  # how alike each option is to the held-out captions
    source: str = "rule"

    def to_dict(self) -> dict:
        return {"choice": self.index, "scores": [round(x, 4) for x in self.scores], "source": self.source}


def _words_cut(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words[:n]) if len(words) > n else text


_norm = norm


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
    r"\bno (?:information|mention|indication)\b|\b(?:does|do|did)(?:n't| not) (?:mention|say|specify|show)\b|\bnot enough information\b|\bn/a\b|\bnot possible\b|"
    r"\bimpossible\b", re.IGNORECASE)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019*_ \t"


def _clean_line(line: str) -> str:
    line = line.strip().strip(_QUOTES).strip()
    prev = None
    while prev != line:
        prev = line
        line = _LABEL.sub("", line).strip().strip(_QUOTES).strip()
    return re.sub(r"\s+", " ", line)


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
    first sentence, maps any way of saying "I cannot tell" to "not sure" (`UNCERTAIN`), and cuts a long
    reply to the phrase that answers `question` (`_answering_phrase`).
    """
    line = _first_usable_line(reply, [question])
    if line is None:
        return None, False
    first = re.split(r"(?<=[.!?])[\"'\u201d\u2019]?\s+", line, maxsplit=1)[0].strip(_QUOTES).rstrip(".!").strip() or line
    if _UNCERTAIN_RE.search(first):
        return UNCERTAIN, True
    first = _words_cut(cut_repetition(first), max_words).strip(_QUOTES).rstrip(".!").strip()
    if not re.search(r"[A-Za-z0-9]", first):
        return None, False
    return _answering_phrase(first, question), False


def _answering_phrase(reply: str, question: str) -> str:
    """A long reply cut to the part that answers `question`: "Yes, there is a dog in the picture" -> "Yes";
    "The dog is black and white" -> "black and white" (the model-free rule run on the reply). A reply of
    `SHORT_WORDS` words or fewer, or one the rule finds no answer in, is kept."""
    if len(reply.split()) <= SHORT_WORDS or not question:
        return reply
    if is_yes_no(question):
        m = re.match(r"^(yes|no)\b", reply, re.IGNORECASE)
        return m.group(1) if m else reply
    short, unsure = rule_answer([reply], question)
    return reply if unsure else short


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

SHORT_ANSWER = ("Answer in a few words (a colour, a number, a place or a short phrase; yes or no for a yes/no "
                "question), never a whole sentence.")
ANSWER_SYSTEM = (  # PlugIR Appendix A, Table 19 (its answerer for the question filter), verbatim, then SHORT_ANSWER
    "Answer the question only according to the given context. If you cannot determine the answer or there are no "
    "objects that are asked by the question in the context , answer \"Uncertain\". " + SHORT_ANSWER
)
ANSWER_SYSTEM_CERTAIN = (
    "Answer the question only according to the given context. If the context does not say, give your best guess "
    "from it. " + SHORT_ANSWER
)


def build_answer_prompt(context: Sequence[str], question: str, allow_uncertain: bool = True) -> list[dict]:
    """Chat messages asking for an answer to `question` (the engine's, maybe an LLM's) from the target's captions,
    both in data blocks (`backends.fence`)."""
    ctx = " ".join(c.strip().rstrip(".") + "." for c in context if c.strip())
    system = ANSWER_SYSTEM if allow_uncertain else ANSWER_SYSTEM_CERTAIN
    return [{"role": "system", "content": f"{system} {data_rule('context', 'question')}"},
            {"role": "user", "content": f"[Context] {fence('context', ctx, cap=3000)} "
                                        f"[Question] {fence('question', question)} [Answer]"}]


# --- the model-free rules --------------------------------------------------------------------------------
# Answers: `evaluation.answers.rule_answer` (what was asked, in a few words, or "not sure").


def rule_choice(context: Sequence[str], options: Sequence[str], similarity=None, threshold: float = 0.3) -> Choice:
    """The option most alike any of the target's captions; None ("none of these") when none reaches `threshold`."""
    sim = similarity or WordSimilarity()
    if not options:
        return Choice(None, ())
    m = sim.matrix(list(options), list(context)) if context else None
    scores = tuple(float(m[i].max()) if m is not None and m.shape[1] else 0.0 for i in range(len(options)))
    best = max(range(len(options)), key=lambda i: (scores[i], -i))
    return Choice(best if scores[best] >= threshold else None, scores)


class _Chooser:
    """`choose` by the model-free rule (shared by every answerer)."""

    config: SimConfig
    similarity = None

    def choose(self, knowledge: TargetKnowledge, options: Sequence[str]) -> Choice:
        return rule_choice(knowledge.captions, options, self.similarity, self.config.choice_threshold)


class CaptionAnswerer(_Chooser):
    """Answers and chooses from the target's held-out captions by `rule_answer` / `rule_choice` (no LLM)."""

    source = "rule"

    def __init__(self, config: SimConfig = SimConfig(), similarity=None):
        self.config = config
        self.similarity = similarity

    def answer(self, knowledge: TargetKnowledge, question: str) -> SimReply:
        text, unc = rule_answer(knowledge.captions, question, self.config.allow_uncertain, self.similarity,
                                self.config.answer_threshold)
        return SimReply(_words_cut(text, self.config.max_words), self.source, uncertain=unc)


class LLMAnswerer(_Chooser):
    """Answers from the target's captions with an LLM (PlugIR Table 19 prompt)."""

    def __init__(self, llm, config: SimConfig = SimConfig(), similarity=None):
        self.llm = llm
        self.config = config
        self.similarity = similarity

    def answer(self, knowledge: TargetKnowledge, question: str) -> SimReply:
        cfg = self.config
        prompt = build_answer_prompt(knowledge.captions, question, cfg.allow_uncertain)
        try:
            raw = self.llm.generate([prompt], temperature=cfg.temperature, max_tokens=cfg.max_tokens)[0]
        except BackendError as e:
            log.warning("answerer LLM failed (%s); answering from the captions", e)
            text, unc = rule_answer(knowledge.captions, question, cfg.allow_uncertain)
            return SimReply(text, "fallback", uncertain=unc, error=str(e), round_trips=1)
        return _settle(raw, knowledge, question, cfg, "llm")


def _settle(raw: str, knowledge: TargetKnowledge, question: str, cfg: SimConfig, source: str) -> SimReply:
    """The parsed model answer, or the caption rule's answer when the reply is junk or a forbidden "uncertain"."""
    text, unc = parse_answer(raw, question, cfg.max_words)
    if text is None or (unc and not cfg.allow_uncertain):
        text, unc = rule_answer(knowledge.captions, question, cfg.allow_uncertain)
        return SimReply(text, "fallback", raw=raw, uncertain=unc, round_trips=1)
    return SimReply(text, source, raw=raw, uncertain=unc, round_trips=1)


def _open(index, image_id: str):
    from interactive_ir.index.imageio import open_image

    row = index.row_of.get(image_id)
    if row is None:
        raise BadInputError(f"no image {image_id!r} in the index")
    return open_image(index.image_path(row))


VLM_ANSWER_PROMPT = ("Answer the question about the image in a few words. If the image does not show what the "
                     "question asks about, answer \"Uncertain\". " + SHORT_RULE + " Question: {question}")


def vlm_answer_prompt(question: str) -> str:
    """`VLM_ANSWER_PROMPT` with the question (the engine's, maybe an LLM's) in a data block."""
    return VLM_ANSWER_PROMPT.format(question=fence("question", question))


class VLMAnswerer(_Chooser):
    """Answers by asking a VLM about the target's pixels (`knowledge.pixels`)."""

    needs_pixels = True

    def __init__(self, vlm, config: SimConfig = SimConfig(), similarity=None):
        self.vlm = vlm
        self.config = config
        self.similarity = similarity

    def answer(self, knowledge: TargetKnowledge, question: str) -> SimReply:
        cfg = self.config
        try:
            if knowledge.pixels is None:
                raise BadInputError("the target image could not be opened")
            raw = self.vlm.ask([[knowledge.pixels]], [vlm_answer_prompt(question)],
                               max_tokens=cfg.max_tokens)[0]
        except (BackendError, BadInputError) as e:
            log.warning("answerer VLM failed (%s); answering from the captions", e)
            text, unc = rule_answer(knowledge.captions, question, cfg.allow_uncertain)
            return SimReply(text, "fallback", uncertain=unc, error=str(e))
        return _settle(raw, knowledge, question, cfg, "vlm")


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
    """Marks shown images by ground truth (Zhu et al., section 3.2's artificial actor).

    Relevant by ground truth: the target and the query's listed `relevant` ids (`knowledge.recognise`),
    and only when `relevance_overlap` > 0 (opt-in) any shown image whose index caption shares that share
    of its content words with the target's captions. Each round a random subset of at most `relevant_n`
    of them is marked relevant; a shown target is always among them. The generator is seeded by (seed,
    `knowledge.key`, round), so marks do not depend on the order queries run in. (In known-item runs the
    evaluator stops once the target is shown, so a protocol is never rewarded for marking it.)
    """

    source = "rule"

    def __init__(self, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig(), seed: int = 0):
        if config.relevant_n < 1:
            raise BadInputError(f"relevant_n must be at least 1, got {config.relevant_n}")
        self.captions_of = captions_of
        self.config = config
        self.seed = seed

    def is_relevant(self, knowledge: TargetKnowledge, image_id: str) -> bool:
        if knowledge.recognise.is_relevant(image_id):
            return True
        thr = self.config.relevance_overlap
        return thr > 0 and overlap(self.captions_of(image_id), knowledge.captions) >= thr

    def judge(self, knowledge: TargetKnowledge, shown: Sequence[str], round_: int) -> Judgement:
        truth = [i for i in shown if self.is_relevant(knowledge, i)]
        rng = random.Random(f"{self.seed}:{knowledge.key}:{round_}")
        n = self.config.relevant_n
        if len(truth) <= n:
            chosen = list(truth)
        else:
            must = [i for i in truth if knowledge.recognise.is_target(i)]
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
RELATIVE_EXAMPLE = (("a brown dog runs on the grass", "a black dog jumps into a lake to catch a stick"),
                    "make the dog black and have it jump into a lake after a stick")


def _relative_user(cand: str, tgt: str) -> str:
    return f"[Candidate image] {fence('candidate', cand, cap=2000)}\n[Target image] {fence('target', tgt, cap=2000)}\n[Instruction]"


def build_relative_prompt(candidate: Sequence[str], target: Sequence[str]) -> list[dict]:
    """Chat messages asking how the target differs from the candidate (one-shot); both images' captions in data
    blocks, the example's alike."""
    cand = "; ".join(c.strip().rstrip(".") for c in candidate if c.strip()) or "(no description)"
    tgt = "; ".join(c.strip().rstrip(".") for c in target if c.strip())
    return [{"role": "system", "content": f"{RELATIVE_SYSTEM} {data_rule('candidate', 'target')}"},
            {"role": "user", "content": _relative_user(*RELATIVE_EXAMPLE[0])},
            {"role": "assistant", "content": RELATIVE_EXAMPLE[1]},
            {"role": "user", "content": _relative_user(cand, tgt)}]


def _ranked_words(texts: Sequence[str]) -> list[tuple[str, str]]:
    """(stem, surface form) of the content words of `texts`, most captions mentioning it first, then first seen."""
    count: dict[str, int] = {}
    surface: dict[str, str] = {}
    for t in texts:
        for w, form in surface_words(t).items():
            count[w] = count.get(w, 0) + 1
            surface.setdefault(w, form)
    order = list(surface)
    return sorted(((w, surface[w]) for w in order), key=lambda ws: (-count[ws[0]], order.index(ws[0])))


def rule_relative(reference: Sequence[str], target: Sequence[str], max_words: int = 6) -> str:
    """Model-free relative caption: how the target differs from the reference, from words only.

    Names up to `max_words` content words of the target's captions that the reference's captions lack
    (words most of the target's captions use first), then "instead of" up to half as many words of the
    reference that none of the target's captions use: "black lake stick instead of brown grass". With
    nothing new to say: "like this one". Never a target caption verbatim.
    """
    ref = {w for c in reference for w in content_words(c)}
    tgt = {w for c in target for w in content_words(c)}
    new = [form for w, form in _ranked_words(target) if w not in ref][:max(1, max_words)]
    gone = [form for w, form in _ranked_words(reference) if w not in tgt][:max(1, max_words // 2)]
    if not new:
        return "like this one" + (f" but without {' '.join(gone)}" if gone else "")
    text = " ".join(new) + (f" instead of {' '.join(gone)}" if gone else "")
    if norm(text) in {norm(c) for c in target}:  # a short caption made only of new words: not verbatim
        text = "with " + text
    return text


class RuleRelativeCaptioner:
    """Relative captions by the word-difference rule (no model)."""

    source = "rule"

    def __init__(self, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig()):
        self.captions_of = captions_of
        self.config = config

    def rule(self, reference: Sequence[str], knowledge: TargetKnowledge) -> str:
        return rule_relative(reference, knowledge.captions, self.config.relative_words)

    def describe(self, knowledge: TargetKnowledge, reference_id: str) -> SimReply:
        return SimReply(self.rule(self.captions_of(reference_id), knowledge), self.source)


class LLMRelativeCaptioner(RuleRelativeCaptioner):
    """How the target differs from a candidate, from their captions, with an LLM (the CIR sanity check's simulator)."""

    def __init__(self, llm, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig()):
        super().__init__(captions_of, config)
        self.llm = llm

    def describe(self, knowledge: TargetKnowledge, reference_id: str) -> SimReply:
        cfg = self.config
        cand = list(self.captions_of(reference_id))
        try:
            raw = self.llm.generate([build_relative_prompt(cand, knowledge.captions)], temperature=cfg.temperature,
                                    max_tokens=cfg.max_tokens)[0]
        except BackendError as e:
            log.warning("relative-caption LLM failed (%s); using the word-difference rule", e)
            return SimReply(self.rule(cand, knowledge), "fallback", error=str(e), round_trips=1)
        text = parse_relative(raw, cand + list(knowledge.captions) + [RELATIVE_EXAMPLE[1]], cfg.max_words)
        if text is None:
            return SimReply(self.rule(cand, knowledge), "fallback", raw=raw, round_trips=1)
        return SimReply(text, "llm", raw=raw, round_trips=1)


VLM_RELATIVE_PROMPT = ("The first image is a search result; the second image is the one the user wants. In one short "
                       "sentence, say how to change the first image to get the second. Reply with the instruction only.")


class VLMRelativeCaptioner(RuleRelativeCaptioner):
    """How the target differs from a candidate, from the two images, with a VLM (A Sanity Check on Composed Image Retrieval, Table 4)."""

    needs_pixels = True

    def __init__(self, vlm, index, captions_of: Callable[[str], Sequence[str]], config: SimConfig = SimConfig()):
        super().__init__(captions_of, config)
        self.vlm = vlm
        self.index = index  # to open the *reference* (a shown image); the target comes as knowledge.pixels

    def describe(self, knowledge: TargetKnowledge, reference_id: str) -> SimReply:
        cfg = self.config
        cand = list(self.captions_of(reference_id))
        try:
            if knowledge.pixels is None:
                raise BadInputError("the target image could not be opened")
            images = [_open(self.index, reference_id), knowledge.pixels]
            raw = self.vlm.ask([images], [VLM_RELATIVE_PROMPT], max_tokens=cfg.max_tokens)[0]
        except (BackendError, BadInputError) as e:
            log.warning("relative-caption VLM failed (%s); using the word-difference rule", e)
            return SimReply(self.rule(cand, knowledge), "fallback", error=str(e))
        text = parse_relative(raw, cand + list(knowledge.captions), cfg.max_words)
        if text is None:
            return SimReply(self.rule(cand, knowledge), "fallback", raw=raw)
        return SimReply(text, "vlm", raw=raw, round_trips=1)


# --- the whole simulated user --------------------------------------------------------------------------


@dataclass
class SimulatedUser:
    """The behaviours a protocol may call on; each takes a `TargetKnowledge`."""

    answerer: object  # .answer(knowledge, question) -> SimReply; .choose(knowledge, options) -> Choice
    actor: RelevanceActor  # .judge(knowledge, shown, round) -> Judgement
    relative: object  # .describe(knowledge, reference_id) -> SimReply
    kind: str = "rule"  # "rule" (model-free), "llm" or "vlm"
    model: str = ""  # the simulator's model spec, when it has one (a "fake" one makes a run a loop test only)
    similarity: str = "words"  # how the model-free rules judge "alike"
    noise: float = 0.0  # the share of clicks and answers made at random (`SimConfig.noise`, `evaluation.users`)
    seed: int = 0  # seeds those random errors, with the target's key and the round

    @property
    def needs_pixels(self) -> bool:
        """Whether `knowledge_of` must open the target image for this user."""
        return any(getattr(b, "needs_pixels", False) for b in (self.answerer, self.relative))

    @property
    def is_fake(self) -> bool:
        """Played by the fake LLM/VLM: good for testing the loop, never for comparing strategies."""
        return self.kind != "rule" and self.model.split(":", 1)[0].strip().lower() == "fake"

    def describe_self(self) -> str:
        noisy = f", {100 * self.noise:g}% of clicks and answers at random" if self.noise else ""
        if self.kind == "rule":
            return f"model-free (held-out captions; similarity: {self.similarity}{noisy})"
        return f"{self.kind} {self.model}".strip() + (" - FAKE: tests the loop only, no comparison" if self.is_fake
                                                      else "")


def index_captions(index) -> Callable[[str], list[str]]:
    """id -> the captions the index stores for it (what a simulated user 'sees' of a shown image)."""

    def captions_of(image_id: str) -> list[str]:
        row = index.row_of.get(image_id)
        return list(index.records[row].captions) if row is not None else []

    return captions_of


def make_user(index, llm=None, answerer: str | None = None, vlm=None, config: SimConfig = SimConfig(),
              seed: int = 0, similarity=None) -> SimulatedUser:
    """A simulated user over `index`.

    `answerer` chooses who answers questions and writes relative captions: "rule" (model-free; the
    default), "llm" (the given `llm`) or "vlm" (the given `vlm`, from the images). `similarity` (a
    `similarity.WordSimilarity` or `EmbedderSimilarity`; default words) is how the model-free rules judge
    "alike" (choices, open answers).
    """
    kind = answerer or "rule"
    sim = similarity or WordSimilarity()
    sim_name = getattr(sim, "name", "words")
    captions_of = index_captions(index)
    actor = RelevanceActor(captions_of, config, seed)
    if kind == "llm":
        if llm is None:
            raise BadInputError("the LLM answerer needs an LLM: pass --llm or --answerer SPEC")
        return SimulatedUser(LLMAnswerer(llm, config, sim), actor, LLMRelativeCaptioner(llm, captions_of, config),
                             "llm", redact_text(getattr(llm, "spec", "")), sim_name, config.noise, seed)
    if kind == "vlm":
        if vlm is None:
            raise BadInputError("the VLM answerer needs a VLM: pass --answerer vlm:SPEC")
        return SimulatedUser(VLMAnswerer(vlm, config, sim), actor, VLMRelativeCaptioner(vlm, index, captions_of, config),
                             "vlm", redact_text(getattr(vlm, "spec", "")), sim_name, config.noise, seed)
    if kind == "rule":
        return SimulatedUser(CaptionAnswerer(config, sim), actor, RuleRelativeCaptioner(captions_of, config), "rule",
                             "", sim_name, config.noise, seed)
    raise BadInputError(f"unknown answerer {kind!r}: use llm, rule or vlm")
