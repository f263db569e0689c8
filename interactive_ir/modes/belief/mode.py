"""The belief mode: rounds moved by the belief over the collection (`retrieval.belief`); every action is evidence.

- "This one is closest" (or "none of these"), optionally with what differs: "like this, but at night"
  (`closest`): a click among the shown images, and the statement's new words as text evidence.
- What the user says about the image in mind (`tell`): an answer to a question, or "it also has ...".
- Relevance marks (`marks`): each image marked "like it" counts as a click on it, none as "none of these".

The next page shows the most probable images but those of the page just looked at (a seen image is unlikely,
not ruled out: it comes back when very probable again) and a few chosen to learn from (`Turn.extra["learn"]`);
`Turn.extra["kept"]` names the images the person picked so far (Closest, Relevant), for the page to keep.
The belief's text term is the latest round's query row, so the belief follows whatever mode moved the query
before; it lives on the session (`Session.belief`, never serialised) and is rebuilt from the session's
rounds when missing (a session loaded from JSON): each belief round keeps its evidence in `Turn.extra`
("options", "clicked" / "relevant", "said", "answer": a yes or no about a word). Its questions (open ones
where they inform, then yes/no on the most informative word, worded by `phrasing.py` or an LLM:
`llm_questions.py`) are in `questions.py`; its row of the mode table in `config.py`.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from functools import partial

import numpy as np

from interactive_ir.core.session import Session, Turn
from interactive_ir.core.steps import QuestionStep
from interactive_ir.core.text_search import OnCore, TextSearch, left_out
from interactive_ir.errors import BadInputError, SessionError
from interactive_ir.modes.belief.llm_questions import written_question
from interactive_ir.modes.belief.questions import NO, YES, QuestionContext, next_question, picture_question
from interactive_ir.modes.conversation.plugir.config import resolve_questioner
from interactive_ir.retrieval.belief import Belief, BeliefConfig
from interactive_ir.retrieval.belief_device import DeviceFull, belief_device
from interactive_ir.retrieval.query_language import parse_query
from interactive_ir.retrieval.words import content_words, new_words, split_statement, stem
from interactive_ir.types import Hit, Question

CLOSEST = "closest"  # the turn kind of a click round ("this one is closest", maybe with "but ...")
TELL = "tell"  # the turn kind of a statement round (an answer, "it also has ...")
MARKS = "marks"  # the turn kind of a marks round
SKIP = "skip"  # the turn kind of a round with no evidence but the page shown (the next page)
KINDS = (CLOSEST, TELL, MARKS, SKIP)
PICTURE_OPTIONS = 4  # the pictures a picture question offers (then "none of these")
PICTURE_DEPTH = 20  # ... chosen among this many most probable images not on the page (alike enough to compare)
# a reply that starts with an answer and says more ("no, two bulldogs on grass"): the answer, then the rest
_REPLY_FIRST = re.compile(r"^\s*(yes|yeah|yep|no|nope)\s*[,;:.!-]+\s*(\S.*)$", re.I | re.S)
AUTO = object()  # BeliefMode's device: chosen from the retriever (`belief_device.belief_device`) on first use


def kept(session: Session, extra: dict) -> list[str]:
    """The images the person said are like theirs, latest first, each once: every Closest pick and every image
    marked Relevant in the session's rounds and this one (`extra`). The page keeps them in view (a pinned
    row) whatever the belief's next page holds; `Turn.extra["kept"]` of a belief round."""
    out: dict[str, None] = {}
    for e in (extra, *(t.extra for t in reversed(session.turns))):
        for i in [e.get("clicked"), *(e.get("relevant") or ())]:
            if i:
                out.setdefault(str(i), None)
    return list(out)


class BeliefMode(OnCore):
    """The belief's actions over a shared `TextSearch` core."""

    def __init__(self, core: TextSearch, config: BeliefConfig, llm=None, device=AUTO):
        self.core = core
        self.belief_config = config
        self.llm = llm  # an LLM writes its yes/no questions about the probable images (None: the realiser's)
        self._device = device  # a `belief_device.BeliefDevice`, None (the CPU), or AUTO: the retriever's, when asked

    @property
    def device(self):
        """The belief's device backend (`belief_device.BeliefDevice`: every row on the retriever's GPU matrix),
        or None: the CPU. Chosen from the retriever on first use unless one was passed in."""
        if self._device is AUTO:
            self._device = belief_device(self.retriever)
        return self._device

    # --- the session's belief ---------------------------------------------------------------------
    def _query_row(self, session: Session) -> np.ndarray:
        """The latest round's query row (re-encoded from its text after a JSON round trip)."""
        for t in reversed(session.turns):
            if t.query_row is not None:
                return np.asarray(t.query_row, np.float32)
        text = session.current_query or session.description
        if not text:
            raise SessionError("describe the image first: a click needs results to choose from")
        return self.retriever.text_query_row(self.retriever.encode_text(text))

    def belief_of(self, session: Session) -> Belief:
        """The session's belief, brought up to date with its latest query and every image it has shown (made
        again on the CPU from the session's rounds when the GPU fills up meanwhile: `_off_device`)."""
        try:
            return self._belief_of(session)
        except DeviceFull as e:
            self._off_device(session, e)
            return self._belief_of(session)

    def _off_device(self, session: Session, e: DeviceFull) -> None:
        """The GPU filled up in a belief update: the belief leaves it for good (one log line) and the session's
        belief is made again on the CPU from its rounds (`belief_of` replays them)."""
        self.device.fail(str(e))
        session.belief = None

    def _belief_of(self, session: Session) -> Belief:
        qrow = self._query_row(session)
        b = session.belief
        allow = self.retriever.filter_rows(parse_query(session.filters).filters) if session.filters else None
        if b is None:
            b = Belief.over(self.retriever, qrow, self.belief_config, allow=allow, device=self.device)
            b.said.update(content_words(session.description or session.current_query or ""))
            for t in session.turns:  # replay the evidence of a session that was loaded without its belief
                if t.kind in KINDS:
                    self._apply(b, t.extra)
            session.belief = b
        elif b.query is None or not np.array_equal(b.query, qrow):
            b.set_query(qrow)
            b.grow_near(self.retriever, [qrow])  # a pooled belief: the new query's nearest rows join it
        # shown and not found: each showing costs log(overlook) (a person may look past the target); what the
        # session never shows (a benchmark's reference image) is ruled out
        shown = Counter(i for t in session.turns for i in t.shown)
        b.set_seen(self._rows(shown, strict=False), [shown[i] for i in shown if i in self.index.row_of])
        b.rule_out(self._rows(left_out(session), strict=False))
        if allow is not None:  # the search's filters (date:, folder:, tag: ...): nothing outside them can be it
            b.keep_only(allow)
        return b

    def _rows(self, ids, strict: bool = True) -> list[int]:
        rows = []
        for i in ids:
            r = self.index.row_of.get(i)
            if r is None:
                if strict:
                    raise SessionError(f"image {i!r} is no longer in this index: start a new search")
                continue
            rows.append(int(r))
        return rows

    def _statement(self, b: Belief, text: str) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The query rows of what `text` says the target shows and does not show; with `new_words_only`, only
        words not said before count (they are then remembered as said)."""
        positive, negative = split_statement(text)
        said = b.said if self.belief_config.new_words_only else set()
        pos_words = new_words(positive, said)
        neg_words = new_words(negative, set())
        rows = []
        for words in (pos_words, neg_words):
            rows.append(self.retriever.text_query_row(self.retriever.encode_text(" ".join(words))) if words else None)
        b.said.update(content_words(" ".join(pos_words)))
        return rows[0], rows[1]

    def _apply(self, b: Belief, extra: dict) -> None:
        """One round's evidence (`Turn.extra` of a belief round) applied to `b`. A pooled belief (a collection
        above the exact limit) also takes in the nearest rows of what was picked and said (`Belief.grow_near`)
        and, when the rows outside it hold much of the probability, where they lie (`Belief.reach`)."""
        options = [i for i in extra.get("options") or () if i in self.index.row_of]
        b.include(self.retriever, self._rows(options))  # the page's rows are covered (a replayed, pruned pool)
        picked: list[str] = []
        choice = None  # (shown rows, liked positions) of the round's marks or click
        if options and "relevant" in extra:
            picked = [i for i in extra["relevant"] if i in options]
            choice = (self._rows(options), [options.index(i) for i in picked])
        elif options and "clicked" in extra:
            clicked = extra.get("clicked")
            picked = [clicked] if clicked in options else []
            choice = (self._rows(options), [options.index(clicked)] if clicked in options else [])
        answer = extra.get("answer")
        worded = isinstance(answer, dict) and answer.get("word")
        if choice is not None and worded:  # the answer's captions are read from the posterior after the click
            b.marks(*choice)
            choice = None
        near = [b.vectors[p] for p in b.positions(self._rows(picked))] if b.pool is not None else []
        by_captions = False  # a yes/no answer read by the captions that name its word (then not also a statement)
        if worded:
            word = str(answer["word"])
            has = self.has_word(b, word)
            b.answer_word(has, bool(answer.get("yes")), partial(self._names, stem(word.lower())))
            by_captions = bool(has.any())
        said = extra.get("said")
        if by_captions:  # the answer's word is evidence by the captions; only the rest is a statement
            b.said.update(content_words(str(answer["word"])))
            said = answer.get("rest", "")
        positive = negative = None
        if said:
            positive, negative = self._statement(b, said)
            near += [positive] if positive is not None and b.pool is not None else []
        if choice is not None:  # the click and the words together: on a GPU one read of the matrix (`Belief.update`)
            b.update(*choice, positive, negative)
        elif said:
            b.say(positive, negative)
        if b.pool is not None:
            b.reach(self.retriever, protect=self._rows(options), near=near)

    def has_word(self, b: Belief, word: str) -> np.ndarray:
        """Per row the belief covers: whether its stored caption names `word` (by stem; an image without a
        stored caption does not). Read over the `word_depth` most probable rows (every row of a smaller
        collection); the rest count as not naming it, so an answer costs at most `word_depth` captions."""
        target = stem(word.lower())
        depth = self.belief_config.word_depth
        at = np.arange(len(b.rows)) if len(b.rows) <= depth else b.top(b.log_posterior(), depth)[0]
        out = np.zeros(len(b.rows), bool)
        out[at] = [target in self._row_words(int(r)) for r in b.rows[at]]
        return out

    def _names(self, target: str, rows: np.ndarray) -> np.ndarray:
        """Per index row: whether its stored caption names the word stem `target` (rows joining a pool)."""
        return np.array([target in self._row_words(int(r)) for r in rows], bool)

    def _row_words(self, row: int) -> frozenset:
        """The content-word stems of index row `row`'s stored caption (cached per index)."""
        cache = getattr(self, "_words_cache", None)
        if cache is None or cache[0] is not self.index:
            cache = self._words_cache = (self.index, {})
        words = cache[1].get(row)
        if words is None:
            words = cache[1][row] = frozenset(content_words(self.index.records[row].caption or ""))
        return words

    # --- the actions --------------------------------------------------------------------------------
    def _last_shown(self, session: Session, ids) -> list[str]:
        self.core.check_open(session)
        last = session.last
        if last is None or not last.shown:
            raise SessionError("describe the image first: a click needs results to choose from")
        for image_id in ids:
            if image_id not in last.shown:
                raise SessionError(f"image {image_id!r} is not among the results on the page: pick one of them")
        return [i for i in last.shown if i in self.index.row_of]

    def closest(self, session: Session, image_id: str | None, text: str | None = None) -> Turn:
        """The user picked `image_id` among the last round's results as closest to the image in mind (None:
        none of these is close), and maybe said how the image in mind differs (`text`: "but at night") or
        answered the pending question with it."""
        options = self._last_shown(session, [image_id] if image_id is not None else [])
        typed = " ".join((text or "").split())
        said, answer = self._answer_text(session, typed) if typed else ("", {})
        label = typed or ("closest" if image_id else "none of these")
        extra = {"clicked": image_id, "options": options, **({"said": said} if said else {}), **answer}
        return self._round(session, CLOSEST, label, extra, answered=session.pending_question if typed else "")

    def _answer_text(self, session: Session, text: str) -> tuple[str, dict]:
        """(what `text` says about the image in mind, its `Turn.extra`): a "yes" or "no" to the pending yes/no
        question on a word is that word, or "no" and the word, and the answer itself ({"answer": {"word",
        "yes", "rest"}}, evidence by the captions that name the word); so is a text that starts with one ("no,
        two bulldogs on grass": the answer, then the rest said as well); anything else is itself."""
        word = session.last.extra.get("asked") if session.pending_question else None
        if not word:
            return text, {}
        whole = text.lower().strip(" .!")
        reply = _REPLY_FIRST.match(text)
        if whole in YES | NO:
            yes, rest = whole in YES, ""
        elif reply is not None:
            yes, rest = reply.group(1).lower() in YES, reply.group(2).strip(" ,;:.!-")
        else:
            return text, {}
        said = (f"{word}, {rest}" if rest else word) if yes else (f"{rest}, no {word}" if rest else f"no {word}")
        return said, {"answer": {"word": word, "yes": yes, **({"rest": rest} if rest else {})}}

    def tell(self, session: Session, text: str, answers: bool = True) -> Turn:
        """What the user says about the image in mind: an answer to the pending question ("yes" / "no" to a
        yes/no question on a word becomes that word, or "no" and the word), or "it also has a red kite".
        `answers=False`: words added to the search (the search box), never an answer to the pending question."""
        typed = " ".join(self.core.check_text(text, "what you say about the image").split())
        self._last_shown(session, [])
        said, answer = self._answer_text(session, typed) if answers else (typed, {"added": True})
        return self._round(session, TELL, typed, {"said": said, **answer},
                           answered=session.pending_question if answers else "")

    def choose(self, session: Session, index: int, question: Question | str | None = None) -> Turn | None:
        """A click on option `index` of the pending question: a yes or no to a yes/no one is what is said
        (`tell`); a picture of its picture question is a Closest click among the pictures it offered ("none of
        these": none is close). None when the pending question is neither (the conversation takes the click).
        `question`: the question the click was made on (a newer one replaced it: SessionError)."""
        pending = session.question
        pictures = pending is not None and pending.kind == "choice" and any(o.image_id for o in pending.options)
        if pending is None or (pending.kind != "yesno" and not pictures):
            return None
        text = question.text if isinstance(question, Question) else question
        if text and text != pending.text:
            raise SessionError("that question was replaced by a newer one: answer the one shown")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= int(index) < len(pending.options):
            raise BadInputError(f"not an option: {str(index)[:40]}")
        if not pictures:
            return self.tell(session, pending.options[int(index)].label)
        self._last_shown(session, [])
        options = [o.image_id for o in pending.options if o.image_id and o.image_id in self.index.row_of]
        if not options:
            raise SessionError("the pictures of that question are no longer in this index: start a new search")
        picked = pending.options[int(index)].image_id or None
        if picked is not None and picked not in options:
            raise SessionError(f"image {picked!r} is no longer in this index: pick another")
        extra = {"clicked": picked, "options": options, "picture": True}
        label = pending.options[int(index)].label if picked else "none of these"
        return self._round(session, CLOSEST, label, extra, answered=pending.text)

    def skip(self, session: Session) -> Turn:
        """Nothing to say about this page: the next most probable unseen images (the page is ruled out)."""
        self._last_shown(session, [])
        return self._round(session, SKIP, "skip", {}, answered="")

    def question(self, session: Session) -> QuestionStep:
        """The belief's next question, not yet applied to the session: a picture question when the person chose
        picture questions (Options), else `questions.next_question` (written by the LLM with "Written
        questions", or auto with a capable one)."""
        if (session.options.questioner or "").strip().lower() == "grounded":
            last = session.last
            return picture_question(last.round if last else -1, self.picture_options(session) if last else [])
        write = None
        if self.llm is not None and resolve_questioner(session.options.questioner, self.llm) == "llm":
            write = partial(written_question, self.llm)  # "Written questions", or auto with a capable LLM
        return next_question(session, self.question_context, write)

    def picture_options(self, session: Session, n: int = PICTURE_OPTIONS) -> list[tuple[str, str]]:
        """(image id, caption) of `n` images for a picture question, chosen so that a click among them tells
        most about the target (PicHunter's most informative display: `Belief.informative` under the click
        model, among the `PICTURE_DEPTH` most probable images not on the page just shown: alike enough to the
        description that "which is most like it?" reads as a question about it)."""
        b = self.belief_of(session)
        logp = b.log_posterior()
        last = session.last
        shown = self._rows(last.shown if last else (), strict=False)
        cand = b.best_unshown(logp, PICTURE_DEPTH, b.positions(shown) if shown else ())
        if len(cand) < 2:
            return []
        chosen = b.informative(cand, logp, [], min(n, len(cand)))
        ids = [self.index.ids[int(b.rows[p])] for p in chosen]
        return list(zip(ids, self.core.captions_of(ids)))

    def question_context(self, session: Session) -> QuestionContext | None:
        """The `question_depth` most probable images' captions and probabilities (what its questions are
        chosen from), and the words said so far; None when fewer than two images are left. The images on the
        page just shown are left out: the answer matters only if the target is not among them (else the person
        presses Found it), so a description that one shown image matches almost surely still gets a question."""
        b = self.belief_of(session)
        logp = b.log_posterior()
        last = session.last
        shown = self._rows(last.shown if last else (), strict=False)
        if shown:  # a question matters only if the target is not on the page the person is looking at
            pos, ok = b._find(shown)  # noqa: SLF001 - a pooled belief covers the page it showed, else it is left out
            logp = b.without(logp, pos[ok])
        if b.live(logp) < 2:
            return None
        top, p = b.top(logp, self.belief_config.question_depth)
        order = np.argsort(-p, kind="stable")
        captions = self.core.captions_of([self.index.ids[int(r)] for r in b.rows[top[order]]])
        return QuestionContext(captions, p[order], frozenset(b.said), self.belief_config)

    def marks(self, session: Session, relevant, irrelevant=()) -> Turn:
        """Relevance marks on the last round's results: "like it" (`relevant`) and "not it" (`irrelevant`)."""
        relevant, irrelevant = list(relevant), list(irrelevant)
        options = self._last_shown(session, [*relevant, *irrelevant])
        label = f"{len(relevant)} like it, {len(irrelevant)} not it"
        return self._round(session, MARKS, label, {"relevant": relevant, "irrelevant": irrelevant, "options": options})

    def _round(self, session: Session, kind: str, user_text: str, extra: dict, answered: str = "") -> Turn:
        t_start = time.perf_counter()
        last = session.last
        turn = Turn(round=len(session.turns), kind=kind, query=last.query, method="belief",
                    user_text=user_text, started_at=time.time(), answered_question=answered)
        try:
            b, rows, logp, n_best = self._update(session, extra)
        except DeviceFull as e:  # the GPU filled up: the belief moves to the CPU, made again from the rounds
            self._off_device(session, e)
            b, rows, logp, n_best = self._update(session, extra)
        turn.timings["retrieve"] = round(time.perf_counter() - t_start, 6)
        hits = [Hit(h.id, h.row, h.path, float(np.exp(lp)), h.caption)
                for h, lp in zip(self.retriever.hits(np.exp(logp).astype(np.float32), rows), logp)]
        turn.extra.update({**extra, "learn": [h.id for h in hits[n_best:]], "kept": kept(session, extra)})
        turn.query_row = np.asarray(b.query, np.float32)
        return self.core.record(session, turn, hits, t_start)

    def _update(self, session: Session, extra: dict) -> tuple[Belief, np.ndarray, np.ndarray, int]:
        """The session's belief with this round's evidence (`extra`) applied, and its next page: (belief, rows,
        log-probabilities, n_best). The page the person has just looked at is not shown again; older seen
        images only when very probable."""
        b = self.belief_of(session)
        self._apply(b, extra)
        last = session.last
        return (b, *b.page(self.config.k, self._rows(last.shown if last else (), strict=False)))

    # --- reading the posterior when asked (nothing per row is kept per round) -------------------------
    def round_posterior(self, session: Session) -> tuple[Belief, np.ndarray] | None:
        """(the belief, the log-posterior the latest round's page was drawn from): recomputed now from the
        session's belief, the images shown before that round counting as seen; None when the latest round is
        not a belief round. Evaluation reads the target's rank from it right after the round."""
        last = session.last
        if last is None or last.method != "belief" or last.kind not in KINDS:
            return None
        b = self.belief_of(session)
        shown = Counter(i for t in session.turns[:-1] for i in t.shown)
        b.set_seen(self._rows(shown, strict=False), [shown[i] for i in shown if i in self.index.row_of])
        return b, b.log_posterior()

    def target_rank(self, session: Session, row: int) -> int | None:
        """1-based rank of index row `row` under the latest belief round's posterior (ties in its favour; a row
        the belief does not cover after every one it does); None when the latest round is not a belief round."""
        got = self.round_posterior(session)
        return None if got is None else got[0].rank_of(row, got[1])

    def ranking(self, session: Session) -> np.ndarray | None:
        """A score per index row under the latest belief round's posterior (-inf outside the belief's rows),
        computed on request (tests, analysis); None when the latest round is not a belief round."""
        got = self.round_posterior(session)
        return None if got is None else got[0].ranking(len(self.index), got[1])
