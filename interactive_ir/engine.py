"""The search engine: one object, shared read-only by every user, that moves a `Session` forward.

`Engine` owns plain mode objects, each given its dependencies:
- `core` (`core.TextSearch`): retrieval, captions, recording a round, text search, "found";
- `asker` (`asking.Asker`): the ASK step, PlugIR's LLM questioner or grounded questions without an LLM;
- `conversation_mode` (`conversation.Conversation`): describe, answer, skip, clicked answers, REFINE;
- `feedback_mode` (`feedback.Feedback`): relevance feedback;
- `composed_mode` (`composed.Composed`): reference image + relative caption;
- `belief_mode` (`belief.BeliefMode`): the belief over the collection, the web page's default.
The user's generic actions (`describe`, `reply`, `choose`, `skip`, `mark`, `reference`, `more_like`) go to
the mode the session is on (`Session.options.mode`): on the belief every one is evidence for it (`closest`,
`tell`, `marks`, its own skip and questions); otherwise each reaches its own mode (`start`, `answer`,
`answer_choice`, `feedback`, `relative`). The specific actions stay callable by name (eval, the CLI).
A round is named steps with typed results: RETRIEVE (every action method: the `Turn` with its results,
no LLM except where a method's own rewrite needs one), REFINE (`refine`: an answer's LLM rewrite,
`steps.Refinement`) and ASK (`ask`: the next `types.Question`). By default an action method runs them
all, as one call (`ask=True`, `refine=True`); the web page passes False and runs the model steps
afterwards, dropping their result when a newer action superseded them (the session is left as is).
The engine receives its backends; it never builds them.
"""

from __future__ import annotations

from collections.abc import Callable

from interactive_ir.core.options import SessionOptions
from interactive_ir.core.session import Session, Turn
from interactive_ir.core.steps import QuestionStep, Refinement
from interactive_ir.core.text_search import (
    PAGING_KINDS,
    QUERY_ROW_ATTR,
    EngineConfig,
    OnCore,
    TextSearch,
    engine_config,
)
from interactive_ir.modes import registry
from interactive_ir.modes.belief.config import BeliefConfig, belief_config
from interactive_ir.modes.belief.mode import BeliefMode
from interactive_ir.modes.belief.questions import asked_word
from interactive_ir.modes.composed.mode import Composed, ComposedConfig, composed_config
from interactive_ir.modes.conversation.asking import Asker
from interactive_ir.modes.conversation.mode import Conversation
from interactive_ir.modes.conversation.plugir.config import PlugIRConfig, plugir_config
from interactive_ir.modes.feedback.mode import Feedback, FeedbackConfig, feedback_config
from interactive_ir.retrieval.retriever import Retriever
from interactive_ir.types import Question

__all__ = ["Engine", "EngineConfig", "PAGING_KINDS", "QUERY_ROW_ATTR", "build_engine", "engine_config"]


class Engine(OnCore):
    """Every mode over one index, with the given backends (None where a backend is absent)."""

    mode_names: tuple[str, ...] = registry.mode_names()  # every mode of the mode table (`registry.offered`)

    def __init__(self, retriever: Retriever, llm=None, captioner=None, vlm=None, config: EngineConfig = EngineConfig(),
                 *, plugir: PlugIRConfig | None = None, feedback: FeedbackConfig | None = None,
                 composed: ComposedConfig | None = None, belief: BeliefConfig | None = None):
        self._assemble(TextSearch(retriever, captioner, config), llm, vlm,
                       plugir if plugir is not None else plugir_config(), feedback_config(feedback),
                       composed_config(composed), belief_config(belief))

    def _assemble(self, core: TextSearch, llm, vlm, plugir: PlugIRConfig, feedback: FeedbackConfig,
                  composed: ComposedConfig, belief: BeliefConfig) -> None:
        self.llm = llm  # an LLM backend or None (grounded questions; feedback and compose still work)
        self.vlm = vlm  # a VLM or None (no re-ranking)
        self.core = core
        self.asker = Asker(core, llm, plugir)
        self.conversation_mode = Conversation(core, llm, self.asker)
        self.feedback_mode = Feedback(core, llm, feedback)
        self.composed_mode = Composed(core, llm, vlm, composed)
        self.belief_mode = BeliefMode(core, belief, llm)  # "this one is closest" / "none of these" (any mode)

    def with_llm(self, llm) -> Engine:
        """This engine with `llm` as its LLM, sharing everything else (the core with its index, captioner,
        caption cache and record hooks; the VLM; the mode configs). Cheap: made for one piece of model work,
        e.g. with an LLM whose calls a newer action can cancel (`backends.cancel.CancellableLLM`)."""
        other = object.__new__(type(self))
        other._assemble(self.core, llm, self.vlm, self.plugir_config, self.feedback_config, self.composed_config,
                        self.belief_config)
        return other

    # --- what the engine is made of ------------------------------------------------------------------
    @property
    def plugir_config(self) -> PlugIRConfig:
        return self.asker.config

    @property
    def feedback_config(self) -> FeedbackConfig:
        return self.feedback_mode.feedback_config

    @property
    def composed_config(self) -> ComposedConfig:
        return self.composed_mode.composed_config

    @property
    def belief_config(self) -> BeliefConfig:
        return self.belief_mode.belief_config

    @property
    def mode_configs(self) -> dict:
        """The mode configs by name, as `build_engine` takes them (a copy)."""
        return {"plugir": self.plugir_config, "feedback": self.feedback_config, "composed": self.composed_config}

    @property
    def questions_enabled(self) -> bool:
        return self.asker.questions_enabled

    def questioner_for(self, session: Session) -> str:
        return self.asker.questioner_for(session)

    def add_record_hook(self, hook: Callable[[Session, Turn], None]) -> None:
        """Call `hook(session, turn)` whenever a round is recorded (before its question is asked)."""
        self.core.record_hooks.append(hook)

    # --- plain building blocks -----------------------------------------------------------------------
    def new_session(self, options: SessionOptions | None = None, **meta) -> Session:
        """A new search on this engine: `options` how it behaves (its mode: `SessionOptions.mode`), `meta` its data."""
        return self.core.new_session(options, **meta)

    def check_text(self, text: str, what: str = "text") -> str:
        return self.core.check_text(text, what)

    def caption_of(self, image_id: str) -> str:
        return self.core.caption_of(image_id)

    def captions_of(self, image_ids) -> list[str]:
        return self.core.captions_of(image_ids)

    def hits_of(self, turn: Turn):
        return self.core.hits_of(turn)

    def found(self, session: Session, image_id: str) -> dict:
        return self.core.found(session, image_id)

    def duplicate_groups(self, turn: Turn) -> list[list[str]]:
        """The turn's results as groups of near-duplicates (best ranked first; `EngineConfig.fold_similarity`)."""
        return self.core.duplicate_groups(turn)

    def close_match(self, session: Session, turn: Turn | None = None):
        """"No close match": the round's best score against the index's score profile (None: no judgement)."""
        return self.core.close_match(session, turn)

    def facets(self) -> dict[str, list[tuple[str, int]]]:
        """The collection's folders, cameras, years and user-field values with counts (the page's filter row)."""
        return self.core.facets()

    def date_histogram(self, session: Session) -> tuple[str, list[tuple[str, int]]]:
        """Images per year (or month) among those the session's filters keep."""
        return self.core.date_histogram(session)

    def dates_of(self, image_ids) -> dict[str, float]:
        """id -> date taken (or file time) of those images that have one (sort by date)."""
        return self.core.dates_of(image_ids)

    def resolve_feedback_method(self, method: str | None) -> str:
        return self.feedback_mode.resolve_feedback_method(method)

    def resolve_method(self, method: str | None) -> str:
        """The composed-search method that `relative(method=...)` would use."""
        return self.composed_mode.resolve_method(method)

    # --- the user's actions, on the session's mode: RETRIEVE, then (ask=True) ASK ------------------------
    def describe(self, session: Session, text: str, *, ask: bool = True) -> Turn:
        """The first description: on the belief a text search (its own questions follow); otherwise the
        conversation's `start` (a question about the results follows)."""
        if session.on_belief:
            return self.search_text(session, text, ask=ask)
        return self.start(session, text, ask=ask)

    def reply(self, session: Session, text: str, *, refine: bool = True, ask: bool = True,
              answers: bool = True) -> Turn:
        """What the user says (an answer to the pending question, or anything): on the belief it is evidence
        (`tell`: a yes or no to its yes/no question is the word asked; `answers=False`: words added to the
        search, not an answer to the pending question); otherwise the conversation's `answer`."""
        if session.on_belief:
            return self.tell(session, text, ask=ask, answers=answers)
        return self.answer(session, text, refine=refine, ask=ask)

    def choose(self, session: Session, option: int, question: Question | str | None = None, *,
               ask: bool = True) -> Turn:
        """A click on option `option` (0-based) of the pending question: on the belief, a yes or no to its
        yes/no question is what is said (`BeliefMode.choose`); otherwise (and for any other question) the
        conversation's `answer_choice`."""
        if session.on_belief:
            turn = self.belief_mode.choose(session, option, question)
            if turn is not None:
                return self._then_ask(session, turn, ask)
        return self.answer_choice(session, option, question, ask=ask)

    def skip(self, session: Session, *, ask: bool = True) -> Turn:
        """Nothing to say: on the belief the next page of its most probable unseen images (this page is not
        it); otherwise the conversation's skip of the pending question."""
        if session.on_belief:
            return self.skip_belief(session, ask=ask)
        return self._then_ask(session, self.conversation_mode.skip(session), ask)

    def mark(self, session: Session, relevant, irrelevant=(), method: str | None = None, *,
             ask: bool = True) -> Turn:
        """Marks on the shown images: on the belief evidence (`marks`); otherwise relevance `feedback`."""
        if session.on_belief:
            return self.marks(session, relevant, irrelevant, ask=ask)
        return self.feedback(session, relevant, irrelevant, method=method, ask=ask)

    def reference(self, session: Session, caption: str, reference: str | None = None, image=None,
                  method: str | None = None, *, ask: bool = True) -> Turn:
        """A relative caption about a reference: on the belief, about a shown image (`reference`, else the
        top result; not an upload) it is "like this, but ...": a `closest` click with what differs;
        otherwise the composed search's `relative`."""
        last = session.last
        if session.on_belief and image is None and last is not None and last.shown:
            return self.closest(session, reference if reference in last.shown else last.shown[0], caption, ask=ask)
        return self.relative(session, caption, reference=reference, image=image, method=method, ask=ask)

    def more_like(self, session: Session, image_id: str, *, ask: bool = True) -> Turn:
        """"More like this": on the belief a click on it as the closest (every earlier action still counts);
        otherwise a new round ranked by the image itself (image->image on an image index, its caption's vector
        on a caption index), keeping the session's filters and NOT terms."""
        if session.on_belief:
            return self.closest(session, image_id, ask=ask)
        return self._then_ask(session, self.core.more_like(session, image_id), ask)

    # --- the modes' own actions, by name -------------------------------------------------------------------
    def search_text(self, session: Session, text: str, kind: str = "search", *, ask: bool = True) -> Turn:
        return self._then_ask(session, self.core.search_text(session, text, kind), ask)

    def start(self, session: Session, description: str, *, ask: bool = True) -> Turn:
        return self._then_ask(session, self.conversation_mode.start(session, description), ask)

    def answer(self, session: Session, answer: str, *, refine: bool = True, ask: bool = True) -> Turn:
        """An answer to the pending question. `refine=False`: results of the dialogue as typed at once
        (`refine` rewrites them later); `ask=False`: no question yet (`ask`)."""
        return self._then_ask(session, self.conversation_mode.answer(session, answer, refine=refine), ask)

    def answer_choice(self, session: Session, option: int, question: Question | str | None = None, *,
                      ask: bool = True) -> Turn:
        """A click on option `option` (0-based) of the pending question (see `Conversation.answer_choice`)."""
        return self._then_ask(session, self.conversation_mode.answer_choice(session, option, question), ask)

    def feedback(self, session: Session, relevant, irrelevant=(), method: str | None = None, *,
                 ask: bool = True) -> Turn:
        return self._then_ask(session, self.feedback_mode.feedback(session, relevant, irrelevant, method), ask)

    def relative(self, session: Session, caption: str, reference: str | None = None, image=None,
                 method: str | None = None, *, ask: bool = True) -> Turn:
        turn = self.composed_mode.relative(session, caption, reference=reference, image=image, method=method)
        return self._then_ask(session, turn, ask)

    def closest(self, session: Session, image_id: str | None, text: str | None = None, *, ask: bool = True) -> Turn:
        """A click on the shown image closest to the one in mind (None: none of these is close), maybe with
        how the one in mind differs (`text`: "but at night"): evidence for the belief over the collection,
        whose next page shows the most probable unseen images and a few to learn from (`modes/belief`)."""
        return self._then_ask(session, self.belief_mode.closest(session, image_id, text), ask)

    def tell(self, session: Session, text: str, *, ask: bool = True, answers: bool = True) -> Turn:
        """What the user says about the image in mind (an answer, "it also has a red kite"), as evidence for
        the belief; the page comes from the belief. `answers=False`: not an answer to the pending question
        (words typed into the search box during a search)."""
        return self._then_ask(session, self.belief_mode.tell(session, text, answers), ask)

    def marks(self, session: Session, relevant, irrelevant=(), *, ask: bool = True) -> Turn:
        """Relevance marks as evidence for the belief: each image marked "like it" counts as a click on it."""
        return self._then_ask(session, self.belief_mode.marks(session, relevant, irrelevant), ask)

    def skip_belief(self, session: Session, *, ask: bool = True) -> Turn:
        """The next page of the belief's most probable unseen images (this page is not it; nothing else said)."""
        return self._then_ask(session, self.belief_mode.skip(session), ask)

    def ask_belief(self, session: Session) -> Question | None:
        """The belief's next question, with no LLM (`modes/belief/questions.py`: open ones, then yes/no on the
        word that best splits the probable images), made the pending one; answer it with `tell`. None: none."""
        self.core.check_open(session)
        return self.apply_question(session, self.belief_mode.question(session))

    def _then_ask(self, session: Session, turn: Turn, ask: bool) -> Turn:
        if ask and session.on_belief and session.options.ask_questions is not False:
            self.ask_belief(session)  # a search on the belief asks the belief's own questions (no LLM)
        elif ask and self.asker.asks(session):
            self.asker.ask(session)
        return turn

    # --- model steps ---------------------------------------------------------------------------------
    def refine(self, session: Session) -> Refinement | None:
        """REFINE the last round (an answer made with `refine=False`): the LLM's rewrite of the dialogue
        replaces its query and results, and the round is marked refined. None: nothing to refine."""
        r = self.conversation_mode.prepare_refine(session)
        if r is not None:
            self.conversation_mode.apply_refine(session, r)
        return r

    def prepare_refine(self, session: Session) -> Refinement | None:
        """`refine` without changing the session (apply it with `apply_refine`, or drop it)."""
        return self.conversation_mode.prepare_refine(session)

    def apply_refine(self, session: Session, r: Refinement) -> Turn:
        """Apply a prepared refinement; SessionError when the session moved past its round."""
        return self.conversation_mode.apply_refine(session, r)

    def ask(self, session: Session) -> Question | None:
        """ASK: the next question about the last round's results, made the pending one (None: nothing
        to ask, or this session asks no questions)."""
        self.core.check_open(session)
        if session.on_belief:
            return self.apply_question(session, self.belief_mode.question(session))
        return self.asker.ask(session)

    def prepare_question(self, session: Session) -> QuestionStep:
        """`ask` without changing the session (apply it with `apply_question`, or drop it)."""
        if session.on_belief:
            return self.belief_mode.question(session)
        return self.asker.prepare(session)

    def apply_question(self, session: Session, step: QuestionStep) -> Question | None:
        """Apply a prepared question; SessionError when the session moved past its round."""
        word = asked_word(step)
        if word is None:
            return self.asker.apply(session, step)
        question = self.asker.apply(session, QuestionStep(step.round, step.question, timings=step.timings))
        session.last.extra["asked"] = word  # `tell` reads a yes or no to it as the word, or "no" and the word
        return question


def build_engine(retriever: Retriever, llm=None, captioner=None, vlm=None, config: EngineConfig = EngineConfig(),
                 belief: BeliefConfig | None = None, **mode_configs) -> Engine:
    """An `Engine` with every mode; `mode_configs` by name: plugir=, feedback=, composed=; `belief`: the
    belief's user model (default: `IIR_BELIEF_*` over the fitted defaults)."""
    unknown = set(mode_configs) - set(registry.sections())
    if unknown:
        raise TypeError(f"unknown mode config {sorted(unknown)[0]!r}: use "
                        f"{', '.join(f'{s}=' for s in registry.sections())}")
    return Engine(retriever, llm=llm, captioner=captioner, vlm=vlm, config=config, belief=belief, **mode_configs)
