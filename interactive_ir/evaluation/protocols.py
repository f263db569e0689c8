"""Evaluation protocols: how a simulated user moves a search forward, round by round, through the engine.

Round 0 is always the query's description. Each later round is one call of an engine mode method:

| protocol | round 0 | rounds 1.. | needs |
|---|---|---|---|
| `plugir`, `cr+rce`, `cr`, `zs` | `start` | `answer` the pending question (`skip` when there is none) | LLM |
| `feedback:expand`, `rocchio` | `search_text` | `feedback` with the relevance actor's marks on the last page | - |
| `feedback:summary`, `feedback:keywords`, `feedback:cot` | same | same, with that LLM rewrite | LLM |
| `composed:compose` | `search_text` | `relative` on the last round's top-1 with the simulated relative caption | - |
| `composed:imagescope` | same | same, ImageScope stage 1 (stages 2-3 with `--vlm`) | LLM |
| `mixed` | `start` | the engine's modes in turn: answer, feedback, relative, answer, ... | LLM |
| `fixed-dialogue` (= `:concat`) | `search_text` | ChatIR's query: the caption and the first t entries joined by ", " | dialogues |
| `fixed-dialogue:split` | `search_text` | the dialogue file's round-t entry as the query (PlugIR's released files) | dialogues |
| `fixed-dialogue:cr` | `start` | `answer` with the dialogue's question and answer (PlugIR context reformulation) | dialogues, LLM |

`plugir` is CR + RCE + F; `cr+rce`, `cr` and `zs` are the paper's ablations (`PlugIRConfig.method`).
Aliases: `feedback` = the five feedback protocols, `composed` = `composed:compose` and (with an LLM)
`composed:imagescope`, `conversation` = the four PlugIR methods, `all` = every protocol the backends allow.
Protocols other than the conversation ones and `mixed` turn questions off (`session.meta["ask_questions"]`),
so no LLM time is spent on questions nobody answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.dialogues import chatir_query, concat_query
from interactive_ir.evaluation.queries import Query
from interactive_ir.evaluation.simulators import SimulatedUser
from interactive_ir.session import Session, Turn

CONVERSATION = ("plugir", "cr+rce", "cr", "zs")
FEEDBACK = ("feedback:expand", "feedback:summary", "feedback:keywords", "feedback:cot", "rocchio")
COMPOSED = ("composed:compose", "composed:imagescope")
FIXED = ("fixed-dialogue:concat", "fixed-dialogue:split", "fixed-dialogue:cr")
ALL = (*CONVERSATION, *FEEDBACK, *COMPOSED, "mixed", *FIXED)
ALIASES = {
    "fixed-dialogue": ("fixed-dialogue:concat",),
    "feedback:rocchio": ("rocchio",),
    "composed:auto": ("composed:compose",),
}
MIXED_CYCLE = ("answer", "feedback", "relative")  # the modes `mixed` takes in turn from round 1


class StopQuery(Exception):
    """The simulated user cannot go on (nothing shown, dialogue exhausted): the query ends early."""


@dataclass(frozen=True)
class Protocol:
    """One way of running simulated searches."""

    name: str  # canonical name, e.g. "plugir", "feedback:cot", "composed:compose", "fixed-dialogue:concat"
    family: str  # "conversation", "feedback", "composed", "mixed" or "fixed-dialogue"
    variant: str  # the method within the family: PlugIR method, feedback method, composed method, replay kind
    needs_llm: bool  # the engine needs an LLM for it
    needs_dialogues: bool = False  # every query needs a fixed dialogue

    @property
    def asks_questions(self) -> bool:
        return self.family in ("conversation", "mixed")

    def mode_configs(self) -> dict:
        """Keyword mode configs for `build_engine` (env `IIR_PLUGIR_*` etc. still apply underneath)."""
        from interactive_ir.conversation import plugir_config

        # questioner="llm": these protocols are PlugIR's (the engine's "auto" would ask grounded questions with SmolLM2)
        if self.family == "conversation":
            return {"plugir": plugir_config(method=self.variant, questioner="llm")}
        if self.family == "fixed-dialogue":
            return {"plugir": plugir_config(method="plugir")}  # CR on; questions are off (see session_meta)
        if self.family == "mixed":
            return {"plugir": plugir_config(questioner="llm")}
        return {}

    def session_meta(self) -> dict:
        return {"protocol": self.name, "ask_questions": self.asks_questions}


def get_protocol(name: str) -> Protocol:
    n = name.strip().lower()
    n = ALIASES.get(n, (n,))[0]
    if n in CONVERSATION:
        return Protocol(n, "conversation", n, True)
    if n in FEEDBACK:
        m = n.split(":", 1)[1] if ":" in n else n
        return Protocol(n, "feedback", m, m in ("summary", "keywords", "cot"))
    if n in COMPOSED:
        m = n.split(":", 1)[1]
        return Protocol(n, "composed", m, m == "imagescope")
    if n == "mixed":
        return Protocol(n, "mixed", "alternate", True)
    if n in FIXED:
        m = n.split(":", 1)[1]
        return Protocol(n, "fixed-dialogue", m, m == "cr", needs_dialogues=True)
    raise BadInputError(f"unknown protocol {name!r}; choose from {', '.join(ALL)} or the aliases "
                        "conversation, feedback, composed, fixed-dialogue, all")


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
    if p.family in ("conversation", "mixed"):
        return engine.start(session, query.description)
    if p.family == "fixed-dialogue":
        if p.variant == "cr":
            return engine.start(session, query.description)
        text = query.rounds_text[0] if query.rounds_text else query.description
        return engine.search_text(session, text)
    return engine.search_text(session, query.description)


def next_round(p: Protocol, engine, session: Session, query: Query, user: SimulatedUser, t: int,
               on_uncertain: str = "answer") -> tuple[Turn, dict]:
    """Round t >= 1: (the turn, what the simulated user did)."""
    if p.family == "conversation":
        return _answer(engine, session, query, user, on_uncertain)
    if p.family == "feedback":
        return _feedback(engine, session, query, user, t, p.variant)
    if p.family == "composed":
        return _relative(engine, session, query, user, p.variant)
    if p.family == "mixed":
        mode = MIXED_CYCLE[(t - 1) % len(MIXED_CYCLE)]
        if mode == "answer":
            return _answer(engine, session, query, user, on_uncertain)
        if mode == "feedback":
            return _feedback(engine, session, query, user, t, None)
        return _relative(engine, session, query, user, None)
    if p.family == "fixed-dialogue":
        return _replay(p, engine, session, query, t)
    raise BadInputError(f"protocol family {p.family!r} has no rounds")  # pragma: no cover


def _answer(engine, session: Session, query: Query, user: SimulatedUser, on_uncertain: str) -> tuple[Turn, dict]:
    question = session.pending_question
    if not question:
        return engine.skip(session), {"action": "skip", "why": "no question pending"}
    reply = user.answerer.answer(query, question)
    act = {"action": "answer", "question": question, **reply.to_dict()}
    if reply.uncertain and on_uncertain == "skip":
        act["action"] = "skip"
        return engine.skip(session), act
    return engine.answer(session, reply.text), act


def _feedback(engine, session: Session, query: Query, user: SimulatedUser, t: int,
              method: str | None) -> tuple[Turn, dict]:
    shown = session.last.shown if session.last else []
    j = user.actor.judge(query, shown, t)
    if not j.relevant and not j.irrelevant:
        raise StopQuery("nothing was shown to mark")
    act = {"action": "feedback", "relevant": j.relevant, "irrelevant": len(j.irrelevant), "truth": len(j.truth)}
    return engine.feedback(session, j.relevant, j.irrelevant, method=method), act


def _relative(engine, session: Session, query: Query, user: SimulatedUser, method: str | None) -> tuple[Turn, dict]:
    shown = session.last.shown if session.last else []
    if not shown:
        raise StopQuery("nothing was shown to compare with")
    # the top result, as paper 004; but never the target itself (a user who sees it would not describe how
    # it differs from itself): when the target is on top the next best result is the reference
    reference = next((i for i in shown if i != query.target), shown[0])
    reply = user.relative.describe(query, reference)
    act = {"action": "relative", "reference": reference, **reply.to_dict()}
    return engine.relative(session, reply.text, reference=reference, method=method), act


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
