"""`python -m interactive_ir chat --index DIR [--llm SPEC] [-k 5] [--method plugir]`: search by conversation.

Each turn prints the top-k results (path, caption) and the system's question; type the answer. A question
with options (the grounded questioner, the default without an LLM or with only SmolLM2) lists them by number:
type the number to choose one. Commands:
/found N (the N-th result shown is the image: ends with its rank), /skip (another question, next results),
/like N [N ...] and /unlike N [N ...] (relevance feedback), /ref N TEXT (the image should be like result N but TEXT),
/closest N [TEXT] (result N is the closest so far, maybe "but TEXT": the belief over the collection), /none (none
is close), /help, /quit. N is the position in the last list shown.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from interactive_ir.commands.argtypes import plain_path, whole
from interactive_ir.modes import registry

HELP = """commands:
  <text>          answer the question
  N               choose option N of a question with options
  /found N        result N is the image you were looking for (ends the search)
  /skip           skip the question: next results and another question
  /like N [N ...] results N are close to what you want (relevance feedback: more like them)
  /unlike N [N ...]  results N are not what you want
  /ref N TEXT     like result N, but TEXT (e.g. /ref 2 with a red collar)
  /closest N [TEXT]  result N is the closest so far (maybe: but TEXT); the next results come from the belief
                  over the whole collection (every image's probability, updated by each click)
  /none           none of these is close (the belief moves away from all of them)
  /help           this list
  /quit           stop"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from interactive_ir.assembly.specs import DEFAULT_LLM_HELP, NO_MODEL_HELP
    from interactive_ir.modes.conversation.plugir.config import QUESTION_STYLES

    p.add_argument("--index", required=True, type=plain_path, help="index folder, or hf://USER/NAME[@REVISION] (a Hub index)")
    p.add_argument("--llm", default=None, help="LLM spec, e.g. openai:gpt-4o-mini, transformers:smollm2, fake "
                   f"(default, as the app's: {DEFAULT_LLM_HELP}; {NO_MODEL_HELP}: no LLM)")
    p.add_argument("-k", type=whole(1, 1000), default=5, help="results shown per turn (default 5)")
    p.add_argument("--method", choices=registry.method_names("conversation"), default=None, help="conversation method (default plugir = CR+RCE+F)")
    p.add_argument("--description", default=None, help="the first description (else read from stdin)")
    p.add_argument("--embedder", default=None, help="embedder spec (default: the one in the index manifest)")
    p.add_argument("--n-candidates", type=whole(1, 10**8), default=None, help="retrieval candidates n (default max(20, 1%% of the index))")
    p.add_argument("--clusters", type=whole(1, 1000), default=None, help="KMeans clusters m (default 10)")
    p.add_argument("--questions", type=whole(1, 100), default=None, help="candidate questions q_n per turn (default 5)")
    p.add_argument("--questioner", choices=registry.questioner_values(), default=None,
                   help="who asks: llm (PlugIR), grounded (no LLM: options from the result clusters, answered by "
                   "number), auto (default: grounded without an LLM or with SmolLM2, llm otherwise)")
    p.add_argument("--hide-seen", action="store_true", default=None,
                   help="show only images not shown before in every round (default: IIR_HIDE_SEEN, else off: "
                   "results shown again are marked '(seen before)')")
    p.add_argument("--question-style", choices=QUESTION_STYLES, default=None,
                   help="sample: q_n copies of the paper's prompt in one batch; list: one prompt, q_n questions")
    p.add_argument("--captioner", default=None, help="captioner spec for images without a stored caption "
                   f"(default: IIR_CAPTIONER or none; {NO_MODEL_HELP}: none)")
    p.add_argument("--vlm", default=None, help=f"VLM spec re-ranking /ref results (default: IIR_VLM or none; "
                   f"{NO_MODEL_HELP}: none)")
    p.add_argument("--save", type=plain_path, default=None, help="write the session as JSON here when the chat ends")


def run(args: argparse.Namespace) -> int:
    from interactive_ir.assembly.indexes import open_retriever
    from interactive_ir.assembly.models import open_llm, open_model
    from interactive_ir.assembly.specs import given_spec
    from interactive_ir.engine import build_engine, engine_config
    from interactive_ir.errors import BadInputError
    from interactive_ir.modes.conversation.plugir.config import plugir_config

    if args.k < 1:
        raise BadInputError("-k must be at least 1")
    cfg = plugir_config(method=args.method, n_candidates=args.n_candidates, n_clusters=args.clusters,
                        n_questions=args.questions, question_style=args.question_style,
                        questioner=args.questioner)
    retriever = open_retriever(args.index, args.embedder, args.k)
    llm = open_llm(args.llm)  # the one default rule when none is given, as the app's
    captioner = open_model("captioner", given_spec(args.captioner, "IIR_CAPTIONER"))
    vlm = open_model("vlm", given_spec(args.vlm, "IIR_VLM"))
    engine = build_engine(retriever, llm=llm, captioner=captioner, vlm=vlm,
                          config=engine_config(k=args.k, hide_seen=args.hide_seen),
                          plugir=cfg)
    chat = Chat(engine, sys.stdin, sys.stdout)
    try:
        return chat.run(args.description)
    finally:
        if args.save:
            args.save.write_text(chat.session.to_json(), encoding="utf-8")
            print(f"session saved to {args.save}", file=sys.stderr)


class Chat:
    """The terminal loop: reads lines from `inp`, writes to `out`, drives an engine."""

    def __init__(self, engine, inp: TextIO, out: TextIO):
        self.engine = engine
        self.inp = inp
        self.out = out
        self.session = engine.new_session(frontend="chat")

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def read(self, prompt: str = "> ") -> str | None:
        print(prompt, end="", file=self.out, flush=True)
        line = self.inp.readline()
        return None if line == "" else line.strip()

    def run(self, description: str | None = None) -> int:
        from interactive_ir.errors import IIRError

        if not self.engine.questions_enabled:
            self.say("(no LLM: the system will not ask questions)")
        elif self.engine.questioner_for(self.session) == "grounded":
            self.say("(questions come with options: type the option's number to choose it)")
        while not self.session.turns:
            if description is None:
                self.say("Describe the image you are looking for:")
                description = self.read()
                if description is None:
                    return 0
            try:
                self.show(self.engine.start(self.session, description))
            except IIRError as e:
                self.say(f"error: {e}")
            description = None
        self.say("(type your answer, or /help)")
        while True:
            line = self.read()
            if line is None or line in ("/quit", "/q", "/exit"):
                self.session.meta["gave_up"] = not self.session.found
                self.say("bye")
                return 0
            if not line:
                continue
            try:
                done = self.handle(line)
            except IIRError as e:
                self.say(f"error: {e}")
                continue
            if done:
                return 0

    def handle(self, line: str) -> bool:
        """Run one command or answer; True when the search ended."""
        cmd, _, rest = line.partition(" ")
        q = self.session.question
        if q is not None and q.options and line.isdigit():
            n = int(line)
            if not 1 <= n <= len(q.options):
                self.say(f"there is no option {n}: choose 1 to {len(q.options)}")
                return False
            self.show(self.engine.answer_choice(self.session, n - 1, question=q))
        elif not line.startswith("/"):
            self.show(self.engine.answer(self.session, line))
        elif cmd == "/help":
            self.say(HELP)
        elif cmd == "/skip":
            self.show(self.engine.skip(self.session))
        elif cmd == "/found":
            image_id = self.pick(rest, cmd)
            if image_id is not None:
                f = self.engine.found(self.session, image_id)
                self.say(f"found {image_id} in round {f['round']} at rank {f['rank']}")
                return True
        elif cmd in ("/like", "/unlike"):
            if "feedback" not in registry.offered(self.engine):
                self.say("relevance feedback (/like, /unlike) is not available with this engine")
                return False
            ids = self.pick_many(rest, cmd)
            if ids:
                rel, irr = (ids, []) if cmd == "/like" else ([], ids)
                self.show(self.engine.feedback(self.session, rel, irr))
        elif cmd in ("/closest", "/none"):
            n, _, text = rest.strip().partition(" ")
            image_id = self.pick(n, cmd) if cmd == "/closest" else None
            if cmd == "/none" or image_id is not None:
                self.show(self.engine.closest(self.session, image_id, text.strip() or None))
        elif cmd == "/ref":
            if "composed" not in registry.offered(self.engine):
                self.say("composed search (/ref) is not available with this engine")
                return False
            n, _, caption = rest.strip().partition(" ")
            image_id = self.pick(n, cmd)
            if image_id is not None:
                if not caption.strip():
                    self.say("usage: /ref N TEXT, e.g. /ref 2 with a red collar")
                else:
                    self.show(self.engine.relative(self.session, caption.strip(), reference=image_id))
        else:
            self.say(f"unknown command {cmd}; /help lists them")
        return False

    def pick_many(self, text: str, cmd: str) -> list[str]:
        """The image ids at the 1-based positions in `text` ("1 3" or "1,3"), or [] (with a message)."""
        parts = text.replace(",", " ").split()
        if not parts:
            self.pick("", cmd)
            return []
        ids = [self.pick(p, cmd) for p in parts]
        return [] if None in ids else list(dict.fromkeys(ids))

    def pick(self, text: str, cmd: str = "/found") -> str | None:
        """The image id at 1-based position `text` of the last list shown, or None (with a message)."""
        shown = self.session.last.shown if self.session.last else []
        try:
            n = int(text.strip())
        except ValueError:
            self.say(f"give the result's number (1 to {len(shown)}), e.g. {cmd} 2")
            return None
        if not 1 <= n <= len(shown):
            self.say(f"there is no result {n}: the last list has {len(shown)}")
            return None
        return shown[n - 1]

    def show(self, turn) -> None:
        label = "reformulated query" if turn.extra.get("plugir", {}).get("reformulated") else "query"
        self.say(f"\nround {turn.round} ({turn.kind}) {label}: {turn.query}" if turn.query else
                 f"\nround {turn.round} ({turn.kind})")
        hits = self.engine.hits_of(turn)
        if not hits:
            self.say("  (no more results)")
        for i, h in enumerate(hits, 1):
            self.say(f"  {i}. {h.path}  {h.caption}" + ("  (seen before)" if h.seen else ""))
        if turn.error:
            self.say(f"! {turn.error}")
        if turn.question:
            self.say(f"Q: {turn.question}" + ("  (built from the results)" if turn.question_fallback else ""))
        if turn.asked is not None and turn.asked.options:
            for i, o in enumerate(turn.asked.options, 1):
                self.say(f"  [{i}] {o.label}" + (f"  ({o.image_id})" if o.image_id else ""))
