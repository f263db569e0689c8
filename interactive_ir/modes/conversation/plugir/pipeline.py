"""One PlugIR question step: RCE -> questioner -> filter -> KL choice (or a fallback question).

At most two LLM round trips: all questioner prompts in one `generate()` call, all filter prompts in
another. (The reformulation of the answer, the third, runs before retrieval, in the engine.) Backend
errors never escape: they become `QuestionResult.error`. A failing captioner leaves the questioner
without the candidates' captions (the Table 17 prompt); a failing questioner gives a fallback question.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from interactive_ir.backends.redact import log_failure, public_clause, redact_text
from interactive_ir.config import MAX_TEXT_CHARS
from interactive_ir.errors import BackendError
from interactive_ir.modes.conversation.plugir import filtering, rce
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig
from interactive_ir.modes.conversation.plugir.parsers import EMPTY
from interactive_ir.modes.conversation.plugir.prompts import Dialogue, render_context
from interactive_ir.modes.conversation.plugir.questioner import collect_questions, fallback_question, question_prompts
from interactive_ir.retrieval.query_updates import carry_mix
from interactive_ir.types import Candidates, Hit

FALLBACK_CAPTIONS = 50  # stored captions of this many top candidates feed the fallback question

log = logging.getLogger(__name__)


@dataclass
class QuestionState:
    """What the question step needs to know about the search."""

    description: str  # D_0
    dialogue: Dialogue  # (question, answer) pairs so far
    query: str  # the current query text c (reformulated caption, or the concatenated dialogue)
    asked: Sequence[str] = ()  # every question asked or skipped so far (never asked again)
    candidates: Candidates | Sequence[Hit] = ()  # S_R, best first (for methods without RCE: the shown results)
    carry: np.ndarray | None = None  # the session's carried feedback/relative row, mixed into KL's query rows
    carry_weight: float = 0.0  # its weight (see `carry_mix`)


@dataclass
class QuestionResult:
    question: str = ""  # the question to ask ("" only when there is nothing to ask about)
    fallback: bool = False  # True when built from the candidates' captions, not by the LLM
    error: str = ""  # a backend failure of this step, for the user
    extra: dict = field(default_factory=dict)  # JSON-able details for Turn.extra
    timings: dict = field(default_factory=dict)  # seconds per stage: rce, question, filter, kl


def candidate_matrix(retriever, rows: Sequence[int] | np.ndarray) -> np.ndarray:
    """The candidates' search rows ([image | caption] when the index has captions), as the faiss index has them."""
    index = retriever.index
    img = index.vectors(rows, "image")
    if index.has_captions:
        return np.concatenate([img, index.vectors(rows, "caption")], axis=1)
    return img


@dataclass
class CandidateVectors:
    """The candidates' float32 vectors, read from the index once per question step (RCE and KL share them)."""

    rows: np.ndarray  # n x width search rows ([image | caption] with captions), best first: `candidate_matrix`
    image: np.ndarray  # n x d image vectors (a caption index: caption vectors), contiguous
    caption: np.ndarray | None  # n x d caption vectors when the index has them separately, else None

    @classmethod
    def read(cls, retriever, rows: Sequence[int] | np.ndarray) -> CandidateVectors:
        index = retriever.index
        m = index.row_vectors(rows)  # one read, in ascending row order, cast once (a third of two reads + a copy)
        if not index.has_captions:
            return cls(m, m, None)
        d = index.dim
        return cls(m, np.ascontiguousarray(m[:, :d]), np.ascontiguousarray(m[:, d:]))

    def matrix(self, start: int = 0) -> np.ndarray:
        """`candidate_matrix` of the candidates from rank `start + 1` on, without reading the index again."""
        return self.rows[start:]


def question_kls(retriever, rows: Sequence[int], query: str, questions: Sequence[str], scale: float,
                 limit: int, carry: np.ndarray | None = None, carry_weight: float = 0.0,
                 matrix: np.ndarray | None = None) -> list[float]:
    """KL(p_c || p_{c,q}) over the candidate rows for each question (one batched text encoding); with a
    carried row, c and c + q are ranked as an answer would be (`carry_mix`). `matrix`: the rows'
    `candidate_matrix` when the caller has it already (None: read from the index)."""
    texts = [query] + [filtering.concat_query(query, q, limit) for q in questions]
    vecs = retriever.encode_texts(texts)
    qrows = carry_mix(np.stack([retriever.text_query_row(v) for v in vecs]), carry, carry_weight)
    matrix = candidate_matrix(retriever, rows) if matrix is None else matrix
    with rce.one_thread():
        scores = matrix @ qrows.T  # n x (1 + q)
    return [float(x) for x in filtering.kl_scores(scores[:, 0], scores[:, 1:].T, scale)]


def next_question(llm, retriever, captions_of: Callable[[Sequence[str]], list[str]], cfg: PlugIRConfig,
                  state: QuestionState, text_limit: int = MAX_TEXT_CHARS) -> QuestionResult:
    """The next question for `state`: RCE -> questioner -> filter -> KL choice, each a step below.

    `llm` is a `core.model_calls.MeteredLLM` (its log records every call); `captions_of` gives the captions
    of a list of image ids (one captioner call at most)."""
    res = QuestionResult()
    cands = Candidates.of(state.candidates)  # rows and scores: metadata is read only for what is used
    rep_captions: list[str] | None = None
    vectors: CandidateVectors | None = None  # read on first use, shared by RCE and KL
    t = time.perf_counter()
    if cfg.uses_candidates and len(cands):
        vectors, rep_captions = _cluster(retriever, captions_of, cfg, cands, res)
    res.timings["rce"] = time.perf_counter() - t

    def write(asked: Sequence[str]) -> list[str]:
        return _write_questions(llm, cfg, state, rep_captions, asked, res)

    questions = write(state.asked)
    res.extra["questions"] = questions
    if not questions:
        return _fallback(retriever, cands, rep_captions, state, questions, res)
    chosen = 0
    if cfg.filters:  # even a single question: it may ask what the dialogue already says
        questions, kept = _filter(llm, cfg, render_context(state.description, state.dialogue), questions, state,
                                  write, res)
        if not kept:  # the answerer says the dialogue answers every question
            res.extra["filter_kept_none"] = True
            if cfg.all_answered == "fallback":  # trust it: ask a question built from the candidates
                return _fallback(retriever, cands, rep_captions, state, questions, res)
            kept = list(range(len(questions)))  # weak answerers over-claim: let KL choose among them all
        chosen = _choose(retriever, cfg, state, cands, vectors, questions, kept, text_limit, res)
    res.extra["chosen"] = chosen
    res.question = questions[chosen]
    return res


def _cluster(retriever, captions_of, cfg: PlugIRConfig, cands: Candidates,
             res: QuestionResult) -> tuple[CandidateVectors, list[str] | None]:
    """RCE: cluster the candidates, caption the representatives (None: no captions, the Table 17 prompt)."""
    rows = cands.rows
    vectors = CandidateVectors.read(retriever, rows)
    cap_vecs = vectors.caption if cfg.representative == "caption" else None
    found = rce.cluster(vectors.image, cfg.n_clusters, cfg.kmeans_seed, cfg.sim_scale, cfg.kmeans_n_init, cap_vecs)
    rep_ids = [rec.id for rec in retriever.records_of(rows[found.representatives])]
    captions: list[str] = []
    try:
        captions = [c for c in captions_of(rep_ids) if c]
    except BackendError as e:
        log_failure(log, "the captioner (the candidates' captions)", e)
        res.error = f"the captioner failed: {public_clause(e)}; asked without the candidates' captions"
        res.extra["caption_error"] = redact_text(e)
    res.extra["rce"] = rce.summary(len(cands), found.labels, rep_ids, found.entropies[found.representatives],
                                   captions)
    return vectors, captions or None


def _write_questions(llm, cfg: PlugIRConfig, state: QuestionState, rep_captions: list[str] | None,
                     asked: Sequence[str], res: QuestionResult) -> list[str]:
    """The questioner: candidate questions not asked before (none when the model failed)."""
    t = time.perf_counter()
    prompts = question_prompts(state.description, state.dialogue, rep_captions, cfg.n_questions,
                               cfg.question_style, cfg.question_temperature)
    per_prompt = cfg.n_questions if cfg.question_style == "list" else 1
    try:
        replies = llm.generate(prompts, stage="question", temperature=cfg.question_temperature,
                               max_tokens=cfg.question_max_tokens * per_prompt)
    except BackendError as e:
        log_failure(log, "the question model", e)
        res.error = _join(res.error, f"the question model failed: {public_clause(e)}; asked a question built from the "
                                     "results instead")
        replies = []
    res.timings["question"] = res.timings.get("question", 0.0) + time.perf_counter() - t
    return collect_questions(replies, asked, cfg.n_questions)


def _fallback(retriever, cands: Candidates, rep_captions: list[str] | None, state: QuestionState,
              questions: Sequence[str], res: QuestionResult) -> QuestionResult:
    """A question built from the candidates' captions, without the LLM."""
    top = retriever.records_of(cands.rows[:FALLBACK_CAPTIONS]) if len(cands) else []
    captions = list(rep_captions or []) + [rec.caption for rec in top if rec.caption]
    known = " ".join([state.description, *(f"{q} {a}" for q, a in state.dialogue)])
    res.question = fallback_question(captions, known, [*state.asked, *questions])
    res.fallback = True
    return res


def _verdicts(llm, cfg: PlugIRConfig, context: str, questions: list[str], res: QuestionResult) -> list:
    try:
        replies = llm.generate(filtering.filter_prompts(context, questions), stage="filter",
                               temperature=cfg.filter_temperature, max_tokens=cfg.filter_max_tokens)
        return filtering.verdicts(replies, questions)
    except BackendError as e:
        log_failure(log, "the filter model", e)
        res.error = _join(res.error, f"the filter model failed: {public_clause(e)}; chose among all questions")
        return [EMPTY] * len(questions)


def _filter(llm, cfg: PlugIRConfig, context: str, questions: list[str], state: QuestionState,
            write: Callable[[Sequence[str]], list[str]], res: QuestionResult) -> tuple[list[str], list[int]]:
    """The filter: (the questions, the positions of those the dialogue does not answer yet); when it keeps
    none, new questions are written and filtered again (up to `filter_retries` times)."""
    t = time.perf_counter()
    verdicts = _verdicts(llm, cfg, context, questions, res)
    kept = filtering.kept_positions(verdicts)
    res.extra["verdicts"] = verdicts
    res.timings["filter"] = time.perf_counter() - t
    retries = 0
    while not kept and retries < cfg.filter_retries:  # the authors' code writes new questions (up to 3 times)
        retries += 1
        again = write([*state.asked, *questions])
        if not again:
            break
        verdicts = _verdicts(llm, cfg, context, again, res)
        questions, kept = again, filtering.kept_positions(verdicts)
        res.extra.update(questions=questions, verdicts=verdicts, filter_retries=retries)
    return questions, kept


def _choose(retriever, cfg: PlugIRConfig, state: QuestionState, cands: Candidates,
            vectors: CandidateVectors | None, questions: list[str], kept: list[int], text_limit: int,
            res: QuestionResult) -> int:
    """The KL choice among the kept questions (the first kept one when there is nothing to compare)."""
    t = time.perf_counter()
    if len(kept) > 1 and len(cands) > 1 and state.query:
        rows, start = cands.rows, 0
        if cfg.kl_skip_top and len(rows) > cfg.kl_skip_top + 1:  # the authors' code: KL over ranks 11..n
            start = cfg.kl_skip_top
            rows = rows[start:]
        kls = question_kls(retriever, rows, state.query, questions, cfg.sim_scale, text_limit,
                           state.carry, state.carry_weight,
                           matrix=vectors.matrix(start) if vectors is not None else None)
        res.extra["kl"] = [round(k, 8) for k in kls]
        chosen = filtering.choose_by_kl(kls, kept)
    else:
        chosen = kept[0]
    res.timings["kl"] = time.perf_counter() - t
    return chosen


def _join(*errors: str) -> str:
    return "; ".join(e for e in errors if e)
