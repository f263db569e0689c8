"""Evaluation protocols: how a simulated user moves a search forward, round by round, through the engine.

Round 0 is always the query's description. Each later round is one call of an engine mode method:

| protocol | round 0 | rounds 1.. | needs |
|---|---|---|---|
| `plugir`, `cr+rce`, `cr`, `zs` | `start` | `answer` the pending question (`skip` when there is none) | LLM |
| `feedback:expand`, `rocchio` | `search_text` | `feedback` with the relevance actor's marks on the last page | - |
| `feedback:summary`, `feedback:keywords`, `feedback:cot` | same | same, with that LLM rewrite | LLM |
| `composed:compose` | `search_text` (`relative` on the query's reference, for CIR triplets) | `relative` on the last round's top-1 with the simulated relative caption | - |
| `composed:imagescope` | same | same, ImageScope stage 1 (stages 2-3 with `--vlm`) | LLM |
| `mixed` | `start` | the engine's modes in turn: answer, feedback, relative, answer, ... (grounded questions without an LLM) | - |
| `none` | `search_text` | the same description again (no interaction: the next page of results) | - |
| `oracle` | `search_text` | the description and one more held-out caption each round (an upper reference) | - |
| `random-questions` | `search_text` | an unrelated yes/no question, answered; the dialogue concatenated (a known-bad) | - |
| `wrong-marks` | `search_text` | `feedback` with the relevance actor's marks inverted: what it would mark relevant is marked not relevant and vice versa (a known-bad) | - |
| `inverted-pull` | `start` | the engine's grounded question answered backwards: the option the user judges LEAST like its target, the opposite yes/no (a known-bad: an honest engine fed adversarial clicks) | - |
| `shuffled-page` | `search_text` | the description again, but the page shows k random images not shown before (a known-bad) | - |
| `attribute` | `search_text` | a yes/no question on the word that best splits the candidates; "yes" adds it | - |
| `grounded` | `start` | the engine's grounded question (`engine.ask`): options chosen, or yes/no answered | - |
| `belief` | `search_text` | the web app's default without an LLM, in one round: a click on the shown image most like the target (or "none of these"), the answer to the belief's pending question and how the target differs from the most alike image, in the relative captioner's words, said together (`engine.closest(id, text)`: the belief over the collection) | - |
| `belief:references` | `search_text` | "like this, but ...": the click and how the target differs from the most alike image (`engine.closest(id, text)`) | - |
| `closest` | `search_text` | only the click (`engine.closest`) | - |
| `belief:questions` | `search_text` | the page's questions answered: "which is closest?" (the click) and the belief's own question (open ones first, then yes/no on a word that splits the probable images; `engine.closest(id, answer)`) | - |
| `belief:marks` | `search_text` | every shown image the user judges alike marked "like it", the rest "not it" (`engine.marks`) | - |
| `user:click` | `search_text` | the click-only user: only the Closest click (or none of these), `--user-noise` of them on a random shown image (`evaluation.users`) | - |
| `user:question` | `search_text` | the question-only user: only the page's question answered (`engine.ask_belief`; an option clicked with `engine.choose`, an open one answered with `engine.reply`), `--user-noise` of the answers a random option; no question: `engine.skip` | - |
| `user:picture` | `search_text` | the question-only user with Picture questions chosen in Options: the belief's picture question ("which of these is most like it?", pictures chosen to tell most) answered by a click, `--user-noise` of them on a random option | - |
| `user:typing` | `search_text` | the typing user: the `belief` round (click, answer and how the target differs) with `--user-noise` errors | - |
| `fixed-dialogue` (= `:concat`) | `search_text` | ChatIR's query: the caption and the first t entries joined by ", " | dialogues |
| `fixed-dialogue:split` | `search_text` | the dialogue file's round-t entry as the query (PlugIR's released files) | dialogues |
| `fixed-dialogue:cr` | `start` | `answer` with the dialogue's question and answer (PlugIR context reformulation) | dialogues, LLM |

`none`, `oracle`, `attribute` and the known-bad `random-questions`, `wrong-marks`, `inverted-pull` and
`shuffled-page` are the reference strategies of `evaluation.questioners`, never offered in the web app. They
check the metrics (tests/unit/evaluation/test_eval_ranking.py): every known-bad one must score worse than paging (`none`) on
the headline metrics (targets found within the budget, the log-ratio of the final rank to round 0) and the
`oracle` better than everything; a metric that ranks a known-bad above paging rewards random movement.

The simulated user receives only a `TargetKnowledge` (held-out captions, pixels, a recogniser of the
target): these functions never hand it the query, its target id or rank.

`plugir` is CR + RCE + F; `cr+rce`, `cr` and `zs` are the paper's ablations (`PlugIRConfig.method`).
Aliases: `feedback` = the five feedback protocols, `composed` = `composed:compose` and (with an LLM)
`composed:imagescope`, `conversation` = the four PlugIR methods, `all` = every protocol the backends allow.
Protocols other than the conversation ones and `mixed` turn questions off (`SessionOptions.ask_questions`),
so no LLM time is spent on questions nobody answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interactive_ir.core.options import BELIEF as BELIEF_MODE
from interactive_ir.core.options import SessionOptions
from interactive_ir.core.session import Session, Turn
from interactive_ir.errors import BadInputError
from interactive_ir.evaluation import users
from interactive_ir.evaluation.dialogues import chatir_query, concat_query
from interactive_ir.evaluation.knowledge import TargetKnowledge, knowledge_of
from interactive_ir.evaluation.queries import Query
from interactive_ir.evaluation.simulators import SimulatedUser
from interactive_ir.modes import registry
from interactive_ir.types import NONE_OF_THESE


def _protocols(entries, plain: str = "") -> tuple[str, ...]:
    """The `--protocol` names of mode-table entries, the mode's plain method (the baseline) first."""
    ordered = sorted(entries, key=lambda m: m.name != plain)  # stable: the table's order otherwise
    return tuple(m.protocol for m in ordered if m.protocol)


CONVERSATION = _protocols(registry.methods("conversation"))
FEEDBACK = _protocols(registry.methods("feedback"), registry.mode("feedback").plain)
COMPOSED = _protocols(registry.methods("composed"), registry.mode("composed").plain)
FIXED = ("fixed-dialogue:concat", "fixed-dialogue:split", "fixed-dialogue:cr")
KNOWN_BAD = ("random-questions", "wrong-marks", "inverted-pull", "shuffled-page")  # must score below paging
REFERENCE = ("none", "oracle", "attribute", *KNOWN_BAD)
ENGINE_QUESTIONS = ("inverted-pull",)  # reference strategies that answer the engine's own (grounded) questions
GROUNDED = _protocols(registry.questioners())  # the engine's questioner without an LLM
BELIEF = _protocols(registry.methods("belief"))  # rounds moved by the belief (`modes/belief`), the page's default
USERS = ("user:click", "user:question", "user:typing", "user:picture")  # the default page's simulated users (issue 38)
_METHOD_OF = {m.protocol: m for name in ("conversation", "feedback", "composed", "belief")
              for m in registry.methods(name) if m.protocol}
ALL = (*CONVERSATION, *FEEDBACK, *COMPOSED, "mixed", *REFERENCE, *GROUNDED, *BELIEF, *USERS, *FIXED)
ATTRIBUTE_CANDIDATES = 20  # the attribute questioner splits the captions of this many top images
ALIASES = {
    "fixed-dialogue": ("fixed-dialogue:concat",),
    "feedback:rocchio": ("rocchio",),
    "composed:auto": ("composed:compose",),
    "no-interaction": ("none",),
    "random": ("random-questions",),
}
MIXED_CYCLE = ("answer", "feedback", "relative")  # the modes `mixed` takes in turn from round 1


class StopQuery(Exception):
    """The simulated user cannot go on (nothing shown, dialogue exhausted): the query ends early."""


@dataclass(frozen=True)
class Protocol:
    """One way of running simulated searches."""

    name: str  # canonical name, e.g. "plugir", "feedback:cot", "composed:compose", "fixed-dialogue:concat"
    family: str  # "conversation", "feedback", "composed", "belief", "user" (the page's users, on the belief),
    #              "mixed", "reference", "grounded" or "fixed-dialogue"
    variant: str  # the method within the family: PlugIR method, feedback method, composed method, replay kind
    needs_llm: bool  # the engine needs an LLM for it
    needs_dialogues: bool = False  # every query needs a fixed dialogue

    @property
    def asks_questions(self) -> bool:
        """The engine asks questions (its LLM questioner, or the grounded one); the reference strategies ask
        their own."""
        return self.family in ("conversation", "mixed", "grounded") or self.name in ENGINE_QUESTIONS

    def mode_configs(self) -> dict:
        """Keyword mode configs for `build_engine` (env `IIR_PLUGIR_*` etc. still apply underneath)."""
        from interactive_ir.modes.conversation.mode import plugir_config

        # questioner="llm": these protocols are PlugIR's (the engine's "auto" would ask grounded questions with SmolLM2)
        if self.family == "conversation":
            return {"plugir": plugir_config(method=self.variant, questioner="llm")}
        if self.family == "fixed-dialogue":
            return {"plugir": plugir_config(method="plugir")}  # CR on; questions are off (see session_meta)
        if self.family == "mixed":
            return {"plugir": plugir_config(questioner="llm")}
        return {}

    def session_meta(self) -> dict:
        """What a simulated session records about its protocol (data; its behaviour: `session_options`)."""
        return {"protocol": self.name}

    def session_options(self) -> SessionOptions:
        """How a simulated session behaves: its questions (the belief protocols call the belief's actions
        by name, so their sessions keep no mode: eval's records stay as they were)."""
        if self.family == "user":  # the default page: generic actions reach the belief; its rounds ask themselves
            return SessionOptions(mode=BELIEF_MODE, ask_questions=False,  # user:picture: Options, Picture questions
                                  questioner="grounded" if self.variant == "picture" else "")
        options = SessionOptions(ask_questions=self.asks_questions)
        if self.family == "grounded" or self.name in ENGINE_QUESTIONS:
            options.questioner = "grounded"
        elif self.family == "conversation":
            options.questioner = "llm"  # PlugIR's questioner, whatever the engine's default
        elif self.family == "mixed":
            options.questioner = "auto"  # the LLM's questions, or grounded ones without an LLM (or with SmolLM2)
        return options


def get_protocol(name: str) -> Protocol:
    n = name.strip().lower()
    n = ALIASES.get(n, (n,))[0]
    method = _METHOD_OF.get(n)  # a conversation, feedback or composed method of the mode table
    if method is not None:
        return Protocol(n, method.mode, method.name, method.needs_llm)
    if n == "mixed":  # answers LLM questions when an LLM runs, grounded ones otherwise (the engine's "auto")
        return Protocol(n, "mixed", "alternate", False)
    if n in REFERENCE:
        return Protocol(n, "reference", n, False)
    if n in GROUNDED:
        return Protocol(n, "grounded", n, False)
    if n in USERS:
        return Protocol(n, "user", n.split(":", 1)[1], False)
    if n in FIXED:
        m = n.split(":", 1)[1]
        return Protocol(n, "fixed-dialogue", m, m == "cr", needs_dialogues=True)
    raise BadInputError(f"unknown protocol {name!r}; choose from {', '.join(ALL)} or the aliases "
                        "conversation, feedback, composed, reference, fixed-dialogue, all")


def expand_protocols(spec: str | Sequence[str], has_llm: bool, has_dialogues: bool = False) -> list[Protocol]:
    """'plugir,feedback' -> [Protocol...]; aliases expand; LLM-only protocols are refused without an LLM
    (and left out of aliases); `all` has the fixed-dialogue ones only with dialogues. Order is kept,
    repeats dropped."""
    names = [s for s in (spec.split(",") if isinstance(spec, str) else spec)]
    out: list[str] = []
    for raw in names:
        n = raw.strip().lower()
        if not n:
            continue
        if n == "all":
            group = [p for p in ALL if (has_llm or not get_protocol(p).needs_llm)
                     and (has_dialogues or not get_protocol(p).needs_dialogues)]
        elif n == "conversation":
            group = list(CONVERSATION)
        elif n == "reference":
            group = list(REFERENCE)
        elif n == "feedback":
            group = [p for p in FEEDBACK if has_llm or not get_protocol(p).needs_llm]
        elif n == "composed":
            group = [p for p in COMPOSED if has_llm or not get_protocol(p).needs_llm]
        else:
            group = [get_protocol(n).name]
        out += [g for g in group if g not in out]
    if not out:
        raise BadInputError("no protocol given: pass --protocol plugir (or several, comma-separated)")
    protocols = [get_protocol(n) for n in out]
    missing = [p.name for p in protocols if p.needs_llm and not has_llm]
    if missing:
        raise BadInputError(f"protocol(s) {', '.join(missing)} need an LLM: pass --llm SPEC (e.g. --llm fake or "
                            "--llm transformers:smollm2)")
    return protocols


# --- the rounds --------------------------------------------------------------------------------------------


def first_round(p: Protocol, engine, session: Session, query: Query) -> Turn:
    """Round 0."""
    if p.family in ("conversation", "mixed", "grounded") or p.name in ENGINE_QUESTIONS:
        return engine.start(session, query.description)
    if p.family == "fixed-dialogue":
        if p.variant == "cr":
            return engine.start(session, query.description)
        text = query.rounds_text[0] if query.rounds_text else query.description
        return engine.search_text(session, text)
    if p.family == "composed" and query.reference:  # a CIR triplet: the reference changed as the caption says
        session.description = query.description
        return engine.relative(session, query.description, reference=query.reference, method=p.variant)
    return engine.search_text(session, query.description)


def next_round(p: Protocol, engine, session: Session, query: Query, user: SimulatedUser, t: int,
               on_uncertain: str = "answer", knowledge: TargetKnowledge | None = None) -> tuple[Turn, dict]:
    """Round t >= 1: (the turn, what the simulated user did). The user is handed `knowledge` only."""
    k = knowledge if knowledge is not None else knowledge_of(query)
    if p.family == "conversation":
        return _answer(engine, session, k, user, on_uncertain)
    if p.family == "feedback":
        return _feedback(engine, session, k, user, t, p.variant)
    if p.family == "composed":
        return _relative(engine, session, k, user, p.variant)
    if p.family == "mixed":
        mode = MIXED_CYCLE[(t - 1) % len(MIXED_CYCLE)]
        if mode == "answer":
            q = getattr(session, "question", None)
            if q is not None and q.options:
                return _grounded(engine, session, k, user)
            return _answer(engine, session, k, user, on_uncertain)
        if mode == "feedback":
            return _feedback(engine, session, k, user, t, None)
        return _relative(engine, session, k, user, None)
    if p.family == "reference":
        return _reference(p.variant, engine, session, k, user, t)
    if p.family == "grounded":
        return _grounded(engine, session, k, user)
    if p.family == "fixed-dialogue":
        return _replay(p, engine, session, query, t)
    if p.family == "belief":
        return _BELIEF_ROUNDS[p.variant](engine, session, k, user)
    if p.family == "user":
        return _USER_ROUNDS[p.variant](engine, session, k, user)
    raise BadInputError(f"protocol family {p.family!r} has no rounds")  # pragma: no cover


def _answer(engine, session: Session, k: TargetKnowledge, user: SimulatedUser, on_uncertain: str) -> tuple[Turn, dict]:
    question = session.pending_question
    if not question:
        return engine.skip(session), {"action": "skip", "why": "no question pending"}
    reply = user.answerer.answer(k, question)
    act = {"action": "answer", "question": question, **reply.to_dict()}
    if reply.uncertain and on_uncertain == "skip":
        act["action"] = "skip"
        return engine.skip(session), act
    return engine.answer(session, reply.text), act


def _feedback(engine, session: Session, k: TargetKnowledge, user: SimulatedUser, t: int,
              method: str | None, inverted: bool = False) -> tuple[Turn, dict]:
    """The relevance actor's marks on the last page (`inverted`: relevant and not relevant swapped, `wrong-marks`)."""
    shown = session.last.shown if session.last else []
    j = user.actor.judge(k, shown, t)
    relevant, irrelevant = (j.irrelevant, j.relevant) if inverted else (j.relevant, j.irrelevant)
    if not relevant and not irrelevant:
        raise StopQuery("nothing was shown to mark")
    act = {"action": "feedback", "relevant": len(relevant), "irrelevant": len(irrelevant), "truth": len(j.truth)}
    if inverted:
        act["inverted"] = True
    return engine.feedback(session, relevant, irrelevant, method=method), act


def _relative(engine, session: Session, k: TargetKnowledge, user: SimulatedUser, method: str | None) -> tuple[Turn, dict]:
    shown = session.last.shown if session.last else []
    if not shown:
        raise StopQuery("nothing was shown to compare with")
    # the top result, as in A Sanity Check on Composed Image Retrieval; but never the target itself (a user who sees it would not describe how
    # it differs from itself): when the target is on top the next best result is the reference
    reference = next((i for i in shown if not k.recognise.is_target(i)), shown[0])
    reply = user.relative.describe(k, reference)
    act = {"action": "relative", "reference_rank": shown.index(reference) + 1, **reply.to_dict()}
    return engine.relative(session, reply.text, reference=reference, method=method), act


def _reference(variant: str, engine, session: Session, k: TargetKnowledge, user: SimulatedUser,
               t: int) -> tuple[Turn, dict]:
    """Rounds of the reference strategies (`evaluation.questioners`); state lives in `session.meta["ref"]`."""
    from interactive_ir.evaluation import questioners as qs

    state = session.meta.setdefault("ref", {"dialog": [], "yes": [], "asked_words": []})
    description = session.description
    if variant == "none":
        return engine.search_text(session, description, kind="search"), {"action": "none"}
    if variant == "oracle":
        text = qs.oracle_query(k.captions, t)
        return engine.search_text(session, text, kind="search"), {"action": "reveal", "captions": min(t, len(k.held_out))}
    if variant == "random-questions":
        question = qs.random_question(k.key, t, [q for q, _ in state["dialog"]])
        reply = user.answerer.answer(k, question)
        state["dialog"].append((question, reply.text))
        text = concat_query(description, state["dialog"], len(state["dialog"]))
        turn = engine.search_text(session, text, kind="search")
        return turn, {"action": "answer", "question": question, **reply.to_dict()}
    if variant == "attribute":
        current = qs.attribute_query(description, state["yes"])
        caps = qs.candidate_captions(engine, current, ATTRIBUTE_CANDIDATES, engine.captions_of)
        asked = qs.attribute_question(caps, current, state["asked_words"])
        if asked is None:
            return engine.search_text(session, current, kind="search"), {"action": "skip", "why": "nothing to ask"}
        question, word = asked
        reply = user.answerer.answer(k, question)
        state["asked_words"].append(word)
        if reply.text.lower().startswith("yes"):
            state["yes"].append(question[len("Is there "):-1])
        turn = engine.search_text(session, qs.attribute_query(description, state["yes"]), kind="search")
        return turn, {"action": "answer", "question": question, **reply.to_dict()}
    if variant == "wrong-marks":
        return _feedback(engine, session, k, user, t, None, inverted=True)
    if variant == "inverted-pull":
        return _grounded(engine, session, k, user, inverted=True)
    if variant == "shuffled-page":
        return _shuffled_page(engine, session, k, t), {"action": "none", "page": "random unseen"}
    raise BadInputError(f"unknown reference strategy {variant!r}")  # pragma: no cover


def _shuffled_page(engine, session: Session, k: TargetKnowledge, t: int) -> Turn:
    """The description searched again, its page replaced by as many random images not shown before (seeded by
    the target's key and the round); the turn keeps the description's query row, so ranks are the paging ones."""
    import random

    seen = set(session.shown_ids())
    turn = engine.search_text(session, session.description, kind="search")
    index = engine.retriever.index
    n_page = len(turn.shown)  # the engine's page size (fewer when few unseen images are left)
    rng = random.Random(f"shuffled:{k.key}:{t}")
    unseen = [r for r in rng.sample(range(len(index)), min(len(index), n_page + len(seen)))
              if index.ids[r] not in seen][:n_page]
    turn.shown = [index.ids[r] for r in unseen]
    if turn.query_row is not None:
        scores = engine.retriever.all_scores(turn.query_row)
        turn.scores = [float(scores[r]) for r in unseen]
    else:
        turn.scores = []
    turn.seen = []
    return turn


def _grounded(engine, session: Session, k: TargetKnowledge, user: SimulatedUser,
              inverted: bool = False) -> tuple[Turn, dict]:
    """The engine's grounded question (issue 13), answered from `k`: a choice among the candidate clusters
    (the option whose representative looks most like the held-out captions, or "none of these"), or
    yes/no on a word (by word presence). `inverted` (`inverted-pull`): the option judged LEAST like the
    target (never "none of these") and the opposite yes/no, so every click pushes the query away; an open
    question is answered honestly."""
    if "conversation" not in registry.offered(engine):
        raise BadInputError("this engine has no conversation mode, so no grounded questions")
    question = getattr(session, "question", None) or engine.ask(session)
    if question is None:
        return engine.skip(session), {"action": "skip", "why": "no question pending"}
    options = list(question.options)
    if not options:
        reply = user.answerer.answer(k, question.text)
        return engine.answer(session, reply.text), {"action": "answer", "question": question.text, **reply.to_dict()}
    labels = [o.label.strip().lower() for o in options]
    if question.kind == "yesno" or set(labels) == {"yes", "no"}:
        reply = user.answerer.answer(k, question.text)
        said = "yes" if reply.text.lower().startswith("yes") else "no"
        if inverted:
            said = "no" if said == "yes" else "yes"
        index = labels.index(said) if said in labels else 0
        act = {"action": "choose", "question": question.text, "choice": index, **reply.to_dict()}
        if inverted:
            act["inverted"] = True
        return engine.answer_choice(session, index), act
    real = [i for i, o in enumerate(options) if o.image_id]
    none = next((i for i, lab in enumerate(labels) if lab == NONE_OF_THESE), None)
    # what the user sees of each option is its image; in caption space, the representative's index caption
    seen = [c or options[i].label for i, c in zip(real, engine.captions_of([options[i].image_id for i in real]))]
    choice = user.answerer.choose(k, seen)
    if inverted and real:  # the least alike (the last of equals): a click that pulls away from the target
        worst = min(range(len(real)), key=lambda i: (choice.scores[i] if i < len(choice.scores) else 0.0, -i))
        choice = type(choice)(worst, choice.scores, choice.source)
    index = real[choice.index] if choice.index is not None else (none if none is not None else real[0])
    act = {"action": "choose", "question": question.text, "options": len(options), **choice.to_dict(),
           "choice": index, "none": choice.index is None}
    if inverted:
        act["inverted"] = True
    return engine.answer_choice(session, index), act


def _closest(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """A click on the shown image that looks most like the target (in caption space: the shown images' index
    captions against the user's knowledge), or "none of these" when none is alike (`SimConfig.choice_threshold`)."""
    shown = list(session.last.shown) if session.last else []
    if not shown:
        raise StopQuery("nothing was shown to choose from")
    seen = [c or i for i, c in zip(shown, engine.captions_of(shown))]
    choice = user.answerer.choose(k, seen)
    picked = shown[choice.index] if choice.index is not None else None
    act = {"action": "closest", **choice.to_dict(), "none": picked is None}
    return engine.closest(session, picked), act


def _alike(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[list[str], object]:
    """The shown images and the user's judgement of how alike each looks to the target (index captions in
    caption space, against the user's knowledge)."""
    shown = list(session.last.shown) if session.last else []
    if not shown:
        raise StopQuery("nothing was shown to choose from")
    seen = [c or i for i, c in zip(shown, engine.captions_of(shown))]
    return shown, user.answerer.choose(k, seen)


def _like_this(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """"Like this, but ...": a click on the shown image most like the target ("none of these" when none is
    alike) and how the target differs from that most alike image, in the relative captioner's words."""
    shown, choice = _alike(engine, session, k, user)
    picked = shown[choice.index] if choice.index is not None else None
    best = shown[max(range(len(shown)), key=lambda i: (choice.scores[i] if i < len(choice.scores) else 0.0, -i))]
    reply = user.relative.describe(k, best)
    text = "" if reply.text.startswith("like this one") and " without " not in reply.text else reply.text
    act = {"action": "closest", **choice.to_dict(), "none": picked is None, "said": text}
    return engine.closest(session, picked, text or None), act


def _belief_default(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """What the default page invites, in one round: the closest click, the answer to the belief's question
    ("not sure" says nothing) and how the target differs from the most alike image, said together."""
    question = session.question or engine.ask_belief(session)
    shown, choice = _alike(engine, session, k, user)
    picked = shown[choice.index] if choice.index is not None else None
    best = shown[max(range(len(shown)), key=lambda i: (choice.scores[i] if i < len(choice.scores) else 0.0, -i))]
    reply = user.answerer.answer(k, question.text) if question is not None else None
    relative = user.relative.describe(k, best)
    parts = [] if reply is None or reply.uncertain else [reply.text]
    if not relative.text.startswith("like this one") or " without " in relative.text:
        parts.append(relative.text)
    text = ", ".join(parts)
    act = {"action": "closest", **choice.to_dict(), "none": picked is None, "said": text,
           **({"question": question.text} if question is not None else {})}
    return engine.closest(session, picked, text or None), act


def _belief_marks(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """Marks: every shown image the user judges alike (`SimConfig.choice_threshold`) marked "like it", the rest
    "not it"."""
    shown, choice = _alike(engine, session, k, user)
    threshold = user.answerer.config.choice_threshold
    relevant = [i for i, sc in zip(shown, choice.scores) if sc >= threshold]
    irrelevant = [i for i in shown if i not in relevant]
    return engine.marks(session, relevant, irrelevant), {"action": "marks", "relevant": len(relevant)}


def _belief_question(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """The page's two questions, answered: "Which of these is closest to your image?" (a click on the shown
    image most like the target, or "none of these") and the belief's own question (open ones first, then
    yes/no on a word that splits the probable images; "not sure" says nothing)."""
    question = session.question or engine.ask_belief(session)
    shown, choice = _alike(engine, session, k, user)
    picked = shown[choice.index] if choice.index is not None else None
    act = {"action": "closest", **choice.to_dict(), "none": picked is None}
    if question is None:
        return engine.closest(session, picked), act
    reply = user.answerer.answer(k, question.text)
    act.update({"question": question.text, "answer": reply.text, "uncertain": reply.uncertain})
    return engine.closest(session, picked, None if reply.uncertain else reply.text), act


def _replay(p: Protocol, engine, session: Session, query: Query, t: int) -> tuple[Turn, dict]:
    if p.variant == "split":
        if t >= len(query.rounds_text):
            raise StopQuery("the dialogue has no more rounds")
        text = query.rounds_text[t]
        return engine.search_text(session, text, kind="search"), {"action": "replay", "text": text}
    if t > len(query.dialog):
        raise StopQuery("the dialogue has no more rounds")
    if p.variant == "concat":
        text = chatir_query(query.rounds_text, t) if query.rounds_text else concat_query(
            query.description, query.dialog, t)
        return engine.search_text(session, text, kind="search"), {"action": "replay", "text": text}
    question, answer = query.dialog[t - 1]
    session.pending_question = question or "(no question)"
    return engine.answer(session, answer or "uncertain"), {"action": "replay", "question": question, "text": answer}


# a simulated round of each belief method that has a protocol (`modes/belief/config.py`), by method name
_BELIEF_ROUNDS = {"page": _belief_default, "closest": _closest, "references": _like_this,
                  "questions": _belief_question, "marks": _belief_marks}


# --- the default page's three users (issue 38; their decisions and errors: `evaluation.users`) -------------


def _page(engine, session: Session) -> tuple[list[str], list[str]]:
    """The last page's images and their captions as a person reads them."""
    shown = list(session.last.shown) if session.last else []
    if not shown:
        raise StopQuery("nothing was shown to choose from")
    return shown, [c or i for i, c in zip(shown, engine.captions_of(shown))]


def _user_click(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """The click-only user: the Closest click (or none of these), nothing said."""
    shown, captions = _page(engine, session)
    c = users.click(user, k, shown, captions, len(session.turns))
    return engine.closest(session, c.image_id), {"action": "closest", **c.to_dict()}


def _option_captions(engine, question) -> list[str]:
    ids = [o.image_id or "" for o in question.options]
    caps = engine.captions_of([i for i in ids if i]) if any(ids) else []
    it = iter(caps)
    return [(next(it) or "") if i else "" for i in ids]


def _user_question(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """The question-only user: the page's own question answered (an option clicked, or the words an open
    question asks for; "not sure" says nothing: the page is skipped); no question: skip."""
    _, captions = _page(engine, session)
    question = session.question or engine.ask_belief(session)
    if question is None:
        return engine.skip(session), {"action": "skip", "why": "no question pending"}
    a = users.answer(user, k, question, _option_captions(engine, question), captions, len(session.turns))
    act = {"action": "answer", "question": question.text, "kind": question.kind, **a.to_dict()}
    if a.option is not None:
        return engine.choose(session, a.option, question), act
    if a.uncertain or not a.text.strip():
        return engine.skip(session), {**act, "action": "skip"}
    return engine.reply(session, a.text), act


def _user_typing(engine, session: Session, k: TargetKnowledge, user: SimulatedUser) -> tuple[Turn, dict]:
    """The typing user: the click, the answer to the page's question (a yes/no one by its word; a picture
    question is left unanswered: the click says it) and how the target differs from the most alike image,
    said together (`engine.closest(id, text)`)."""
    shown, captions = _page(engine, session)
    question = session.question or engine.ask_belief(session)
    t = len(session.turns)
    c = users.click(user, k, shown, captions, t)
    parts, act = [], {"action": "closest", **c.to_dict()}
    if question is not None:
        act["question"] = question.text
        labels = [o.label.strip().lower() for o in question.options]
        if not question.options or set(labels) == {"yes", "no"}:
            a = users.answer(user, k, question, [""] * len(labels), captions, t)
            said = labels[a.option] if a.option is not None else ("" if a.uncertain else a.text)
            parts += [said] if said else []
            act.update(a.to_dict())
    relative = user.relative.describe(k, c.best)
    if not relative.text.startswith("like this one") or " without " in relative.text:
        parts.append(relative.text)
    act["said"] = ", ".join(parts)
    return engine.closest(session, c.image_id, act["said"] or None), act


_USER_ROUNDS = {"click": _user_click, "question": _user_question, "typing": _user_typing, "picture": _user_question}
