"""Run simulated searches through the engine and record the target's rank at every round.

**Ranks.** After each round, `rank` is the target's 1-based rank over the *whole index* under that
round's query row: 1 + the number of indexed images scoring strictly higher (`Retriever.rank_of`,
nothing excluded). This is how ChatIR and PlugIR evaluate, and what `ranks.json` holds. It ignores
two things the user sees: the images the engine leaves out because they were shown before
(`EngineConfig.exclude_shown`), and a VLM re-ranking of the top (composed mode with `--vlm`). What was
really shown is recorded separately: `shown_rank` is the target's position in the round's results
(null when it was not shown), summarised as `shown` (share of targets shown so far) in metrics.json, and
`unseen_ranks` is the target's rank among the images no earlier round showed (its place on the page when
shown): the rank the headline metrics use (`evaluation.headline`), under which paging moves too.

The round's query row is the one the turn notes itself (`Turn.query_row`: every mode sets it to the row
its results were searched with; a search made afterwards, e.g. for the next question's candidates, does
not change it). A turn without a row keeps the previous rank.

**The reference of a composed query.** A CIR triplet (FISD, CIRR, CIRCO, FashionIQ) asks for the reference image
changed as the caption says, and those benchmarks score it with the reference left out: it is never shown
(`session.meta["exclude"]`, which the engine's `exclude_for` honours) and never counted above the target
(every rank here: the target's, each ground truth's). `RunConfig.keep_reference` (`--keep-reference`) keeps it
in both, as this runner did before.

**Resuming.** Each finished query is appended as one JSON line to `<out>/checkpoint.jsonl` (flushed
and fsynced); its first line records the run's settings. Run the same command again and finished
queries are skipped; a half-written last line is dropped. Changed settings are refused (use a new
`--out` or `--fresh`).

**Stopping.** Known-item search has one target: once it is shown the simulated user has found it (in
feedback, marking it relevant is finding it: the round it was shown in is the found round) and stops
(`RunConfig.stop_on_found`, on by default, in every protocol); its last rank is carried over the
remaining rounds. `--no-stop-on-found` plays every round regardless (PlugIR's own evaluation, which
never shows results to its simulated user), but the target's ranks from the found round on stay those
of the found round (`QueryResult.found_round`; the turn records say "rank kept"): otherwise feedback
marking the shown target relevant puts its index caption into the query and ranks it 1 next round, a
reward for finding what was already found.

**The information boundary.** The simulated user is handed `knowledge.knowledge_of(query)` only (held-out
captions, a hashed recogniser of the target, pixels for VLM users): never the query, its id or rank.

**Costs.** Each turn records its wall seconds, the CPU seconds of this process (`time.process_time`,
every thread), the engine's LLM round trips and the simulated user's model round trips; report.py sums
them per protocol and per turn.

**Determinism.** Everything random here is seeded by (seed, query id, round), and torch's generator
(when loaded) is reseeded per query, so a query's result does not depend on which queries ran before
it: with deterministic backends an interrupted and resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from interactive_ir.config import DEFAULT_K
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import BadInputError, IIRError
from interactive_ir.evaluation.knowledge import knowledge_of
from interactive_ir.evaluation.protocols import Protocol, StopQuery, first_round, next_round
from interactive_ir.evaluation.query_records import Query
from interactive_ir.evaluation.simulators import SimulatedUser

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.jsonl"
FORMAT = 1


@dataclass(frozen=True)
class RunConfig:
    """How simulated searches run (CLI flags of `eval`)."""

    rounds: int = 5  # interaction rounds after the description (round 0), so rounds + 1 ranks per query
    seed: int = 0  # seeds the relevance actor and torch's sampling, per query
    k: int = DEFAULT_K  # results shown per round
    exclude_shown: bool = True  # each round shows only images not shown before (the papers' protocols; passed to
    #                             EngineConfig.hide_seen, whose own default is off)
    stop_on_found: bool = True  # the user stops once the target is shown (known-item search; A Sanity Check on Composed Image Retrieval); False:
    #                             every round runs (PlugIR's protocol, whose simulated user never sees results)
    rank_from: str = "index"  # "index": the target's rank over the whole index; "results": its place in the round's
    #                           final (re-ranked) list when it is there, else one past the list at best (ImageScope)
    on_uncertain: str = "answer"  # an "uncertain" answer is sent as the answer ("answer") or the question is skipped
    progress: bool = True  # tqdm progress bar with ETA on stderr
    keep_sessions: bool = False  # also write every full session (with prompts and replies) to sessions.jsonl
    keep_reference: bool = False  # a composed query's reference image stays in the ranking (shown, and counted in
    #                               the target's rank); False: left out, as the CIR benchmarks score (`left_out`)
    overlook: float = 0.0  # a shown target is missed with this probability (`--overlook`): the round is noted as
    #                        not found (`overlooked` in its turn record) and the search goes on; 0: never missed

    def __post_init__(self):
        if not 0.0 <= self.overlook <= 1.0:
            raise BadInputError(f"--overlook must be between 0 and 1, got {self.overlook}")
        if self.rounds < 0:
            raise BadInputError(f"--rounds must be 0 or more, got {self.rounds}")
        if self.k < 1:
            raise BadInputError(f"-k must be at least 1, got {self.k}")
        if self.rank_from not in ("index", "results"):
            raise BadInputError(f"rank_from must be 'index' or 'results', got {self.rank_from!r}")
        if self.on_uncertain not in ("answer", "skip"):
            raise BadInputError(f"on_uncertain must be 'answer' or 'skip', got {self.on_uncertain!r}")


@dataclass
class QueryResult:
    """One simulated search, as written to the checkpoint."""

    qid: str
    target: str
    ranks: list[int] = field(default_factory=list)  # the target's rank over the whole index, by round
    shown_ranks: list[int | None] = field(default_factory=list)  # its position in what was shown, by round
    unseen_ranks: list[int] = field(default_factory=list)  # its rank among the images not shown in earlier rounds
    #   (its place on the page when shown): how far the user would still scroll; the headline rank (`headline`)
    turns: list[dict] = field(default_factory=list)  # a compact record of each round (see `_turn_record`)
    stop: str = "rounds"  # why it ended: "rounds", "found", "stopped: ..." or "error: ..."
    seconds: float = 0.0  # wall time of the whole search
    engine_llm_seconds: float = 0.0  # of which the engine's LLM calls
    sim_seconds: float = 0.0  # of which the simulated user
    cpu_seconds: float = 0.0  # CPU time of this process over the whole search (all threads)
    llm_round_trips: int = 0  # the engine's LLM calls over the whole search
    user_round_trips: int = 0  # the simulated user's model calls over the whole search
    dialog: list[list[str]] = field(default_factory=list)  # (question, answer) pairs answered, for dialogues.json
    subset_ranks: list[int] = field(default_factory=list)  # the target's rank within its subset group, by round
    relevant_ranks: list[list[int]] = field(default_factory=list)  # with several ground truths: the rank of each
    #   (target first, then `relevant`) over the whole index, by round (CIRCO's mAP@K)
    found_round: int | None = None  # the first round that showed the target (None: never shown)

    def to_dict(self) -> dict:
        return asdict(self)


# --- one query ----------------------------------------------------------------------------------------


def _reseed(seed: int, qid: str) -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
        torch.manual_seed(int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF)


def _short(text: str, n: int = 400) -> str:
    text = text or ""
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def llm_round_trips(turn) -> int:
    """The engine's LLM round trips in a turn (a batched call of several prompts is one)."""
    if "llm_round_trips" in turn.extra:
        return int(turn.extra["llm_round_trips"])
    # prompts batched into one call share their stage and latency
    return len({(c.get("stage"), c.get("latency_s")) for c in turn.llm_calls})


def _turn_record(turn, rank: int, shown_rank: int | None, act: dict | None, wall: float = 0.0,
                 cpu: float = 0.0) -> dict:
    rec = {"round": turn.round, "kind": turn.kind, "method": turn.method, "query": _short(turn.query),
           "rank": rank, "shown_rank": shown_rank, "shown": list(turn.shown), "question": turn.question,
           "llm_calls": len(turn.llm_calls), "llm_round_trips": llm_round_trips(turn),
           "user_round_trips": int((act or {}).get("round_trips", 0)), "seconds": turn.timings.get("total", 0.0),
           "wall_seconds": round(wall, 6), "cpu_seconds": round(cpu, 6), "llm_seconds": turn.timings.get("llm", 0.0)}
    if turn.error:
        rec["error"] = turn.error
    if act:
        rec["user"] = {k: (_short(v, 300) if isinstance(v, str) else v) for k, v in act.items()}
    return rec


def left_out(query: Query, cfg: RunConfig) -> tuple[str, ...]:
    """The images a query's search never shows nor ranks: a composed query's reference (unless `keep_reference`)."""
    return (query.reference,) if query.reference and not cfg.keep_reference else ()


def _relevant_ranks(retriever, row, query: Query, shown: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[int]:
    """The rank of the target and of each other relevant image over the whole index but `exclude` (ties in its
    favour); with `shown` (rank from the results), a shown one's place in that list, the others after it."""
    scores = retriever.all_scores(row)
    index_row = retriever.index.row_of
    gone = [index_row[i] for i in exclude if i in index_row and i not in {query.target, *query.relevant}]
    if gone:
        scores = scores.copy()
        scores[gone] = -np.inf
    out = []
    for image in dict.fromkeys((query.target, *query.relevant)):
        if image in shown:
            out.append(list(shown).index(image) + 1)
        elif image in index_row:
            r = int(np.sum(scores > scores[index_row[image]])) + 1
            out.append(max(r, len(shown) + 1) if shown else r)
        else:
            out.append(len(scores) + 1)  # a ground truth missing from the index is never retrieved
    return out


def _subset_rank(retriever, row, query: Query, shown: Sequence[str] = ()) -> int:
    """The target's rank among its subset group (CIRR's Recall_subset), by the round's query scores; with
    `shown` (rank from the results), members in the final shown list come first, in its order."""
    from interactive_ir.evaluation.metrics import subset_rank

    scores = retriever.all_scores(row)
    index_row = retriever.index.row_of
    group = {i: float(scores[index_row[i]]) for i in {*query.subset, query.target} if i in index_row}
    place = {image: len(shown) - pos for pos, image in enumerate(shown)}
    group = {i: (10.0 + place[i] if i in place else v) for i, v in group.items()}  # scores are cosines, <= 1
    return subset_rank(group, query.target)


def belief_rank(engine, session, query: Query) -> int | None:
    """The target's rank under the posterior of the session's latest round when it was a belief round (asked
    of the belief mode right after the round: nothing per row is kept per round), else None."""
    mode = getattr(engine, "belief_mode", None)
    row = engine.retriever.index.row_of.get(query.target)
    return None if mode is None or row is None or session is None else mode.target_rank(session, row)


def _row_rank(turn, query: Query, retriever, res: QueryResult, cfg: RunConfig,
              posterior_rank: int | None = None) -> tuple[np.ndarray | None, int]:
    """(the turn's query row, the target's rank under it); a turn without a row keeps the previous rank.
    `posterior_rank`: the target's rank under a belief round's posterior (`belief_rank`), which decides."""
    row = None if turn.query_row is None else np.asarray(turn.query_row, np.float32)
    if posterior_rank is not None:  # a belief round ranks by the posterior (ties count in the target's favour)
        rank = int(posterior_rank)
    elif row is not None:
        rank = retriever.rank_of(row, query.target, exclude=left_out(query, cfg))
    else:
        rank = res.ranks[-1] if res.ranks else len(retriever.index)
    shown_rank = turn.shown.index(query.target) + 1 if query.target in turn.shown else None
    if cfg.rank_from == "results":  # ImageScope: the final re-ranked list decides, the index rank beyond it
        rank = shown_rank if shown_rank is not None else max(int(rank), len(turn.shown) + 1)
    return row, int(rank)


def _group_ranks(res: QueryResult, row, query: Query, retriever, shown_results: Sequence[str],
                 exclude: Sequence[str] = ()) -> None:
    """Add the round's ranks of every ground truth (`exclude` left out) and the target's rank within its subset
    group (carried over when the turn has no row)."""
    if query.relevant:
        res.relevant_ranks.append(_relevant_ranks(retriever, row, query, shown_results, exclude)
                                  if row is not None else list(res.relevant_ranks[-1] if res.relevant_ranks
                                                               else [len(retriever.index)] * (1 + len(query.relevant))))
    if query.subset:
        res.subset_ranks.append(_subset_rank(retriever, row, query, shown_results) if row is not None
                                else (res.subset_ranks[-1] if res.subset_ranks else len(query.subset)))


def _unseen_rank(res: QueryResult, row, rank: int, shown_rank: int | None, query: Query, retriever,
                 cfg: RunConfig) -> int:
    """The target's rank among the images earlier rounds did not show (its page position when shown now)."""
    if shown_rank is not None:
        return shown_rank
    if row is None:
        return res.unseen_ranks[-1] if res.unseen_ranks else rank
    seen = {i for t in res.turns for i in t.get("shown", ())}
    if cfg.rank_from == "results" or not seen:
        return rank
    return min(rank, retriever.rank_of(row, query.target, seen | set(left_out(query, cfg))))


def note_round(res: QueryResult, turn, act: dict | None, query: Query, retriever, cfg: RunConfig,
               clock: list[float], posterior_rank: int | None = None) -> bool:
    """Record a round into `res` (ranks, the turn record, costs); `clock`: the wall and CPU readings at the
    round's start, moved on to now; `posterior_rank`: a belief round's target rank (`belief_rank`). True when
    the target was shown."""
    row, rank = _row_rank(turn, query, retriever, res, cfg, posterior_rank)
    if row is None:
        act = {**(act or {}), "rank_note": "no search this round: rank carried over"}
    shown_rank = turn.shown.index(query.target) + 1 if query.target in turn.shown else None
    now, cpu = time.perf_counter(), time.process_time()
    rec = _turn_record(turn, rank, shown_rank, act, now - clock[0], cpu - clock[1])
    clock[:] = [now, cpu]
    res.ranks.append(rank)
    # a belief round's rank is already among the unseen images (shown ones are ruled out of its posterior)
    res.unseen_ranks.append(rank if posterior_rank is not None and shown_rank is None
                            else _unseen_rank(res, row, rank, shown_rank, query, retriever, cfg))
    _group_ranks(res, row, query, retriever, list(turn.shown) if cfg.rank_from == "results" else (),
                 left_out(query, cfg))
    res.shown_ranks.append(shown_rank)
    res.turns.append(rec)
    res.engine_llm_seconds += turn.timings.get("llm", 0.0)
    res.llm_round_trips += rec["llm_round_trips"]
    res.user_round_trips += rec["user_round_trips"]
    return shown_rank is not None


def keep_found_rank(res: QueryResult) -> None:
    """After the found round (--no-stop-on-found): the round just noted keeps the found round's target ranks
    (over the index, in its subset group, and its own entry among several ground truths)."""
    f = res.found_round
    res.ranks[-1] = res.ranks[f]
    if res.subset_ranks:
        res.subset_ranks[-1] = res.subset_ranks[f]
    if res.relevant_ranks:
        res.relevant_ranks[-1] = [res.relevant_ranks[f][0], *res.relevant_ranks[-1][1:]]
    res.turns[-1]["rank"] = res.ranks[f]
    res.turns[-1]["rank_note"] = f"target found at round {f}: its rank then is kept"


def overlooked(res: QueryResult, cfg: RunConfig, key: str, round_: int) -> bool:
    """Whether the user misses the target shown in the round just noted (probability `cfg.overlook`, seeded by
    the run's seed, the target's key and the round); a miss is noted in the record: not shown to the user."""
    if cfg.overlook <= 0.0:
        return False
    import random

    if random.Random(f"overlook:{cfg.seed}:{key}:{round_}").random() >= cfg.overlook:
        return False
    res.turns[-1]["overlooked"] = True
    res.shown_ranks[-1] = None
    return True


def run_query(engine, protocol: Protocol, query: Query, user: SimulatedUser, cfg: RunConfig,
              on_session: Callable | None = None) -> QueryResult:
    """One simulated search: round 0, then up to `cfg.rounds` rounds; ranks recorded after each."""
    _reseed(cfg.seed, query.qid)
    retriever = engine.retriever
    res = QueryResult(query.qid, query.target)
    knowledge = knowledge_of(query, retriever.index, pixels=getattr(user, "needs_pixels", False))
    session = engine.new_session(protocol.session_options(), target=query.target, query_id=query.qid,
                                 **protocol.session_meta())
    if left_out(query, cfg):
        session.meta["exclude"] = list(left_out(query, cfg))
    t0, c0 = time.perf_counter(), time.process_time()
    clock = [t0, c0]  # wall and CPU readings at the start of the current round
    try:
        turn = first_round(protocol, engine, session, query)
        shown = note_round(res, turn, None, query, retriever, cfg, clock, belief_rank(engine, session, query))
        shown = shown and not overlooked(res, cfg, knowledge.key, 0)
        res.found_round = 0 if shown else None
        for t in range(1, cfg.rounds + 1):
            if res.found_round is not None and cfg.stop_on_found:
                break
            ts = time.perf_counter()
            turn, act = next_round(protocol, engine, session, query, user, t, cfg.on_uncertain, knowledge)
            res.sim_seconds += time.perf_counter() - ts - turn.timings.get("total", 0.0)
            shown = note_round(res, turn, act, query, retriever, cfg, clock, belief_rank(engine, session, query))
            shown = shown and not overlooked(res, cfg, knowledge.key, t)
            if res.found_round is not None:
                keep_found_rank(res)
            elif shown:
                res.found_round = t
        if res.found_round is not None and cfg.stop_on_found:  # found, in the last round too
            engine.found(session, query.target)
            res.stop = "found"
    except StopQuery as e:
        res.stop = f"stopped: {e}"
    except IIRError as e:
        log.warning("query %s (%s) failed at round %d: %s", query.qid, protocol.name, len(res.ranks), e)
        res.stop = f"error: {e}"
    res.dialog = [list(p) for p in session.dialogue()]
    res.seconds = round(time.perf_counter() - t0, 4)
    res.cpu_seconds = round(time.process_time() - c0, 4)
    res.engine_llm_seconds = round(res.engine_llm_seconds, 4)
    res.sim_seconds = round(max(0.0, res.sim_seconds), 4)
    if on_session is not None:
        on_session(session)
    return res


# --- the checkpoint -----------------------------------------------------------------------------------


def _read_checkpoint(path: Path, header: dict) -> dict[str, dict]:
    """Finished queries by id; repairs a half-written last line; refuses another run's checkpoint."""
    if not path.exists():
        return {}
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        log.warning("%s ends with a half-written line (an interrupted run): dropping it", path)
        with open(path, "r+b") as f:
            f.truncate(cut)
        data = data[:cut]
    lines = [ln for ln in data.decode("utf-8").splitlines() if ln.strip()]
    if not lines:
        return {}
    try:
        first = json.loads(lines[0])
        records = [json.loads(ln) for ln in lines[1:]]
    except json.JSONDecodeError as e:
        raise BadInputError(f"{path} is corrupt ({e.msg} at line {e.lineno}): pass --fresh to start over") from e
    old = first.get("header") if isinstance(first, dict) else None
    if old != header:
        diff = sorted(k for k in set(old or {}) | set(header) if (old or {}).get(k) != header.get(k))
        raise BadInputError(f"{path} belongs to a run with other settings ({', '.join(diff)} differ): pass --fresh "
                            "to start over, or choose another --out")
    return {rec["qid"]: rec for rec in records}


def _failed(rec: dict) -> bool:
    return str(rec.get("stop") or "").startswith("error:")


@dataclass
class ProtocolRun:
    """What `run_protocol` returns."""

    protocol: Protocol
    results: list[dict]  # checkpoint records of every query, in query order
    resumed: int  # queries taken from an earlier run's checkpoint
    seconds: float  # wall time of this call


def run_header(protocol: Protocol, cfg: RunConfig, index_fingerprint: dict, backends: dict,
               references: bool = False) -> dict:
    """The settings a checkpoint belongs to (the query set may grow: a larger --limit resumes). `keep_reference`
    only with `references` (queries with a reference image), so that other runs resume from older checkpoints."""
    skip = ("progress", "keep_sessions") if references else ("progress", "keep_sessions", "keep_reference")
    settings = {k: v for k, v in asdict(cfg).items() if k not in skip}
    from interactive_ir.backends.redact import redact_text

    shown = {k: redact_text(v) if isinstance(v, str) else v for k, v in backends.items()}  # specs carry no secret
    return {"format": FORMAT, "protocol": protocol.name, **settings, "index": index_fingerprint, "backends": shown}


def query_hash(q: Query) -> str:
    """What a query gives the simulated user (text, knowledge, dialogue), hashed: resuming checks it is unchanged."""
    text = json.dumps(q.to_dict(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def index_fingerprint(retriever) -> dict:
    idx = retriever.index
    return {"path": str(Path(idx.path).resolve()), "images": len(idx), "embedder": idx.embedder_spec}


def check_dialogues(protocol: Protocol, queries: Sequence[Query]) -> None:
    """Refuse a fixed-dialogue protocol when a query has no dialogue of the kind it replays."""
    if not protocol.needs_dialogues:
        return
    need = {"split": lambda q: q.rounds_text, "cr": lambda q: q.dialog}.get(
        protocol.variant, lambda q: q.dialog or q.rounds_text)
    bad = [q.qid for q in queries if not need(q)]
    if bad:
        raise BadInputError(f"protocol {protocol.name} replays fixed dialogues, but {len(bad)} queries have none "
                            f"(e.g. {bad[0]!r}): pass --dialogues FILE (ChatIR/PlugIR/VisDial JSON)")


def check_resumable(path: Path, done: dict[str, dict], queries: Sequence[Query]) -> None:
    """Refuse to resume when a finished query's target or text differs from the queries file's."""
    for q in queries:
        if q.qid in done and done[q.qid]["target"] != q.target:
            raise BadInputError(f"{path}: query {q.qid!r} was run with target {done[q.qid]['target']!r}, the queries "
                                f"file now says {q.target!r}: pass --fresh, or choose another --out")
        if q.qid in done and done[q.qid].get("query_hash", query_hash(q)) != query_hash(q):
            raise BadInputError(f"{path}: query {q.qid!r} was run with another description, captions or dialogue "
                                "than the queries file now gives: pass --fresh, or choose another --out")


def protocol_engine(protocol: Protocol, retriever, cfg: RunConfig, llm=None, vlm=None,
                    plugir_overrides: dict | None = None):
    """The engine a protocol runs on (`engine.build_engine` with its mode configs and the run's k)."""
    modes = protocol.mode_configs()
    if plugir_overrides:
        from interactive_ir.config import apply_overrides
        from interactive_ir.modes.conversation.mode import plugir_config

        modes["plugir"] = apply_overrides(modes.get("plugir") or plugir_config(), **plugir_overrides)
    return build_engine(retriever, llm=llm, vlm=vlm, config=EngineConfig(k=cfg.k, hide_seen=cfg.exclude_shown),
                        **modes)


def run_protocol(protocol: Protocol, queries: Sequence[Query], retriever, user: SimulatedUser, out: Path,
                 cfg: RunConfig = RunConfig(), llm=None, vlm=None, backends: dict | None = None,
                 fresh: bool = False, retry_failed: bool = False, plugir_overrides: dict | None = None) -> ProtocolRun:
    """Run every query (skipping those already in `out/checkpoint.jsonl`) and return all records.

    `retry_failed` runs again the queries a backend error ended (stop "error: ..."); the new record is appended
    to the checkpoint and, being the last one for its query, replaces the old one on every later read.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    check_dialogues(protocol, queries)
    path = out / CHECKPOINT
    header = run_header(protocol, cfg, index_fingerprint(retriever), backends or {},
                        references=any(q.reference for q in queries))
    if fresh and path.exists():
        path.unlink()
        (out / "sessions.jsonl").unlink(missing_ok=True)
    done = _read_checkpoint(path, header)
    check_resumable(path, done, queries)
    engine = protocol_engine(protocol, retriever, cfg, llm, vlm, plugir_overrides)
    todo = [q for q in queries if q.qid not in done or (retry_failed and _failed(done[q.qid]))]
    t0 = time.perf_counter()
    from tqdm import tqdm

    bar = tqdm(total=len(queries), initial=len(queries) - len(todo), desc=protocol.name, unit="query",
               disable=not cfg.progress, file=sys.stderr, dynamic_ncols=True)
    sessions = open(out / "sessions.jsonl", "a", encoding="utf-8") if cfg.keep_sessions else None
    try:
        with open(path, "a", encoding="utf-8") as f:
            if f.tell() == 0:
                f.write(json.dumps({"header": header}) + "\n")
            for q in todo:
                on_session = (lambda s: sessions.write(s.to_json() + "\n")) if sessions else None
                rec = {**run_query(engine, protocol, q, user, cfg, on_session).to_dict(), "query_hash": query_hash(q)}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
                done[q.qid] = rec
                bar.update(1)
    finally:
        bar.close()
        if sessions:
            sessions.close()
    return ProtocolRun(protocol, [done[q.qid] for q in queries], len(queries) - len(todo), time.perf_counter() - t0)
