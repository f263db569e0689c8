"""`python -m interactive_ir eval --index DIR --queries FILE --protocol P[,P2,...] --out DIR`

Runs simulated users over a queries file with each protocol and writes, per protocol, OUT/<protocol>/
{ranks.json, metrics.json, by_round.csv, hits_recall.png, checkpoint.jsonl[, dialogues.json]}, and
across protocols OUT/{summary.json, summary.csv, hits_recall.png, bri.png}. Run the same command
again to resume an interrupted run. See interactive_ir.evaluation.{protocols,runner,simulators}.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.commands.argtypes import number, plain_path, whole
from interactive_ir.config import DEFAULT_K

log = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from interactive_ir.assembly.specs import NO_MODEL_HELP

    p.add_argument("--index", required=True, type=plain_path, help="index folder, or hf://USER/NAME[@REVISION] (a Hub index)")
    p.add_argument("--queries", required=True, type=plain_path,
                   help='queries JSONL {"target", "description", "captions"} (see the queries command), or a '
                        "ChatIR/PlugIR/VisDial dialogue JSON")
    p.add_argument("--queries-format", choices=["auto", "cirr", "fashioniq", "circo", "fisd", "msrvtt"],
                   default="auto",
                   help="the --queries file is a composed-retrieval benchmark's own annotation file (reference, "
                        "relative caption, target), or msrvtt: MSR-VTT's videodatainfo JSON or 1k-A CSV, each "
                        "sentence a query whose relevant images are its video's frames in the index "
                        "(<video_id>/<frame>.jpg); auto: a queries JSONL or a dialogue JSON")
    p.add_argument("--preset", default=None,
                   help="a paper's settings: plugir, chatir, zhu, imagescope, fisd (rounds, k, stopping, rank "
                        "bookkeeping, pipeline); an explicit flag that conflicts wins, and the run says so")
    from interactive_ir.evaluation.protocols import ALL

    p.add_argument("--protocol", default=None,
                   help=f"comma-separated protocols: {', '.join(ALL)}; aliases conversation, feedback, composed, "
                        "reference, fixed-dialogue, all (default plugir, or the preset's)")
    p.add_argument("--rounds", type=whole(0, 1000), default=None, help="rounds after the description (default 5)")
    p.add_argument("--llm", default=None, help="the engine's LLM spec, e.g. transformers:smollm2, openai:gpt-4o-mini, "
                   f"fake (default: none, unlike the app and chat: eval reads no IIR_LLM, so a run is the same "
                   f"wherever it runs; {NO_MODEL_HELP}: none)")
    p.add_argument("--answerer", default=None,
                   help="who plays the user: 'rule' (default: model-free, from the target's held-out captions), "
                        "'llm' (the --llm model) or an LLM spec, or vlm:SPEC (from the target's pixels). A fake model "
                        "as the user tests the loop only: the run says so and draws no comparison")
    add_user_arguments(p)
    p.add_argument("--vlm", default=None, help="VLM spec for the engine's composed re-ranking (ImageScope stages 2-3; "
                   f"default: none, eval reads no IIR_VLM; {NO_MODEL_HELP}: none)")
    p.add_argument("--dialogues", type=plain_path, default=None,
                   help="fixed dialogues for the fixed-dialogue protocols (ChatIR/PlugIR/VisDial JSON or queries JSONL)")
    p.add_argument("--limit", type=whole(1), default=None, help="run only the first Q queries of the file")
    p.add_argument("--seed", type=whole(0, 2**32 - 1), default=0, help="seed of the simulated user and of sampling (default 0)")
    p.add_argument("--out", required=True, type=plain_path, help="output folder (reused to resume)")
    p.add_argument("--bundle", type=plain_path, default=None,
                   help="also write a run bundle here: configuration, versions, dialogues, per-round ranks and shown "
                        "ids, no images (`metrics DIR` re-scores it without models)")
    p.add_argument("-k", type=whole(1, 1000), default=None, help="results shown per round (default 10)")
    p.add_argument("--metrics-k", default=None, help="cut-offs for Hits/Recall/MRR/NDCG (default 1,5,10)")
    p.add_argument("--stop-on-found", action=argparse.BooleanOptionalAction, default=None,
                   help="the simulated user stops once the target is shown or marked relevant (default: yes, "
                        "known-item search; --no-stop-on-found runs every round, as PlugIR, keeping the target's rank "
                        "from the round it was found in)")
    p.add_argument("--exclude-shown", action=argparse.BooleanOptionalAction, default=None,
                   help="each round shows only images not shown before (default: yes)")
    p.add_argument("--tau", type=number(0, 1), default=None,
                   help="caption weight in fused text scores (0: pure text->image, as PlugIR; default: the index's)")
    p.add_argument("--rank-from", choices=["index", "results"], default=None,
                   help="the target's rank over the whole index (default) or its place in the final re-ranked list")
    p.add_argument("--keep-reference", action="store_true",
                   help="composed queries (--queries-format cirr|fashioniq|circo|fisd): keep the reference image in "
                        "the ranking, shown and counted above the target (default: left out, as those benchmarks "
                        "score)")
    p.add_argument("--on-uncertain", choices=["answer", "skip"], default="answer",
                   help="send an 'uncertain' answer as is (default) or skip the question")
    p.add_argument("--relevant-n", type=whole(1, 1000), default=None, help="relevance actor: most images marked relevant per round (2)")
    p.add_argument("--relevance-overlap", type=number(0, 1), default=None,
                   help="relevance actor: caption word overlap with the target that counts as relevant (0.5; 0 = target only)")
    p.add_argument("--embedder", default=None, help="embedder spec (default: the index manifest's)")
    p.add_argument("--fresh", action="store_true", help="discard checkpoints in --out and start over")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the queries an error ended in an earlier run (e.g. an LLM endpoint that was down)")
    p.add_argument("--keep-sessions", action="store_true", help="also write full sessions (prompts, replies) per protocol")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--torch-threads", type=whole(0, 1024), default=0,
                   help="torch threads for the embedder and local LLM (0: torch's default); on a busy machine 1 can "
                        "be many times faster than oversubscribed spinning threads")
    p.add_argument("--search-threads", type=whole(0, 1024), default=1,
                   help="faiss threads per search (default 1: a single query gains nothing from more, and on a busy "
                        "machine OpenMP's thread hand-off costs ~20 ms per search); 0 leaves faiss's default")


def add_user_arguments(p: argparse.ArgumentParser) -> None:
    """The simulated user's judge, error rate and overlook rate."""
    p.add_argument("--user-similarity", default="words",
                   help="the user's judge of 'alike' (which image is closest, which option; open answers with an "
                        "embedder): words (default: content-word overlap, no model), bm25 (BM25-weighted words over "
                        "the captions compared, no model), index (the index's embedder: shares the retriever's "
                        "notion of alike) or an embedder spec such as text:all-MiniLM-L6-v2")
    p.add_argument("--user-noise", type=number(0, 1), default=None,
                   help="the user's error rate: with this probability a click is on a random shown image and an "
                        "answer a random option (an open one: the answer for a random shown image); default 0, as "
                        "the papers' protocols. The page's users are the protocols user:click (only Closest clicks), "
                        "user:question (only the page's questions) and user:typing (clicks, answers and how the "
                        "image differs)")
    p.add_argument("--overlook", type=number(0, 1), default=0.0,
                   help="a shown target is missed with this probability and the search goes on (its round is "
                        "noted 'overlooked' and does not count as found); default 0")


def _user_backend(spec: str | None, llm, llm_spec: str | None):
    """(kind, llm, vlm) of the simulated user from --answerer (default: the model-free rule)."""
    from interactive_ir.assembly.models import make
    from interactive_ir.errors import BadInputError

    s = (spec or "rule").strip()
    if s == "llm" and llm is None:
        raise BadInputError("--answerer llm needs --llm SPEC (or give the answerer's own spec: --answerer SPEC)")
    if s == "rule":
        return "rule", None, None
    if s.startswith("vlm:"):
        return "vlm", None, make("vlm", s[4:])
    if s == "llm":
        return "llm", llm, None
    return "llm", (llm if s == llm_spec else make("llm", s)), None


def _not_comparable(protocol, user, engine_fake: bool) -> str:
    """Why a protocol's figures must not be compared with others ("" when they may)."""
    if user.is_fake:
        return "the simulated user is the fake LLM (a loop test)"
    if engine_fake and protocol.needs_llm:
        return "the engine's LLM is the fake one: its questions/rewrites are canned (a loop test)"
    return ""


def _preset_pipeline(preset) -> tuple[dict, list[str]]:
    """(PlugIRConfig overrides this build supports, the preset's pipeline choices it lacks)."""
    import dataclasses

    from interactive_ir.modes.conversation.plugir.config import PlugIRConfig

    if preset is None:
        return {}, []
    names = {f.name for f in dataclasses.fields(PlugIRConfig)}
    return ({k: v for k, v in preset.plugir.items() if k in names},
            [f"{k}={v}" for k, v in preset.plugir.items() if k not in names])


@dataclass
class Plan:
    """What the command line asks for, before any model or index is opened."""

    preset: object  # the --preset (presets.Preset) or None
    settings: dict  # rounds, k, stop_on_found, exclude_shown, rank_from, metrics_k, protocol, tau (preset merged)
    conflicts: list[str]  # explicit flags that overrode the preset
    ks: list[int]  # the metrics' cut-offs
    cfg: object  # runner.RunConfig
    sim_cfg: object  # simulators.SimConfig
    queries: list  # the queries (MSR-VTT's are made once the index is open)
    msrvtt: object  # MSR-VTT annotations, or None
    protocols: list  # protocols.Protocol, in order
    plugir_overrides: dict  # the preset's PlugIR settings this build supports
    unsupported: list[str]  # the preset's pipeline choices it lacks


@dataclass
class Backends:
    """The opened index and models, and how the run names them in its checkpoints."""

    retriever: object
    llm: object
    vlm: object
    user: object  # simulators.SimulatedUser
    names: dict  # the backends' settings as the checkpoint header records them
    engine_fake: bool  # the engine's LLM is the fake one


def run(args: argparse.Namespace) -> int:
    """load settings and queries -> open the index -> resolve the queries -> open the models -> run each
    protocol (write its records and report) -> write the summary and print the tables."""
    plan = plan_run(args)
    retriever = open_retriever(args, plan)
    plan.queries = resolve_queries(args, plan, retriever)
    backends = open_backends(args, plan, retriever)
    for line in header_lines(args, plan, backends):
        print(line)
    results = {p.name: run_one_protocol(args, plan, backends, p) for p in plan.protocols}
    write_results(args.out, results, plan.ks)
    if getattr(args, "bundle", None):
        from interactive_ir.evaluation.bundle import eval_bundle

        relevant = {q.qid: list(q.relevant) for q in plan.queries if q.relevant}
        print(f"run bundle written to {eval_bundle(args.out, args.bundle, results, plan.ks, relevant)} "
              "(re-score: python -m interactive_ir metrics DIR)")
    return 0


def plan_run(args: argparse.Namespace) -> Plan:
    """The settings (flags over the preset over the defaults), the queries and the protocols; fails fast,
    before loading any model."""
    from interactive_ir.assembly.specs import is_no_model
    from interactive_ir.commands.metrics_cmd import parse_ks
    from interactive_ir.config import apply_env, apply_overrides
    from interactive_ir.errors import BadInputError
    from interactive_ir.evaluation.presets import apply_preset, get_preset
    from interactive_ir.evaluation.protocols import expand_protocols
    from interactive_ir.evaluation.runner import RunConfig
    from interactive_ir.evaluation.simulators import SimConfig

    preset = get_preset(args.preset) if args.preset else None
    given = {"rounds": args.rounds, "k": args.k, "stop_on_found": args.stop_on_found,
             "exclude_shown": args.exclude_shown, "rank_from": args.rank_from, "metrics_k": args.metrics_k,
             "protocol": args.protocol, "tau": args.tau}
    settings, conflicts = apply_preset(preset, given)
    settings = {k: (DEFAULTS.get(k) if v is None else v) for k, v in settings.items()}
    ks = parse_ks(settings["metrics_k"])
    if args.limit is not None and args.limit < 1:
        raise BadInputError("--limit must be at least 1")
    cfg = RunConfig(rounds=settings["rounds"], seed=args.seed, k=settings["k"], stop_on_found=settings["stop_on_found"],
                    exclude_shown=settings["exclude_shown"], rank_from=settings["rank_from"],
                    on_uncertain=args.on_uncertain, progress=not args.no_progress, keep_sessions=args.keep_sessions,
                    keep_reference=args.keep_reference, overlook=getattr(args, "overlook", 0.0) or 0.0)
    sim_cfg = apply_overrides(apply_env(SimConfig(), "IIR_SIM_"), relevant_n=args.relevant_n,
                              relevance_overlap=args.relevance_overlap,
                              noise=getattr(args, "user_noise", None))
    queries, msrvtt = load_queries(args)
    has_dialogues = bool(queries) and all(q.dialog or q.rounds_text for q in queries)
    protocols = expand_protocols(settings["protocol"], not is_no_model(args.llm), has_dialogues)
    plugir_overrides, unsupported = _preset_pipeline(preset)
    return Plan(preset, settings, conflicts, ks, cfg, sim_cfg, queries, msrvtt, protocols, plugir_overrides,
                unsupported)


DEFAULTS = {"rounds": 5, "k": DEFAULT_K, "stop_on_found": True, "exclude_shown": True, "rank_from": "index",
            "metrics_k": "1,5,10", "protocol": "plugir"}


def load_queries(args: argparse.Namespace) -> tuple[list, object]:
    """(the queries with their fixed dialogues, MSR-VTT's annotations or None: its queries need the index)."""
    from interactive_ir.errors import BadInputError
    from interactive_ir.evaluation.dialogues import attach_dialogues, read_dialogues
    from interactive_ir.evaluation.queries import read_queries

    msrvtt = None
    if args.queries_format == "msrvtt":  # the sentences now; their relevant frames once the index is open
        from interactive_ir.evaluation.datasets.msrvtt import read_annotations

        if args.dialogues:
            raise BadInputError("--dialogues does not go with --queries-format msrvtt (MSR-VTT has no dialogues)")
        msrvtt, queries = read_annotations([args.queries]), []
    elif args.queries_format != "auto":
        from interactive_ir.evaluation.datasets.triplets import load_triplets

        queries = load_triplets(args.queries_format, args.queries)
    else:
        try:
            queries = read_queries(args.queries)
        except (UnicodeDecodeError, RecursionError) as e:  # a binary file, JSON nested past Python's limit
            raise BadInputError(f"{str(args.queries)[:200]} is not a queries file ({type(e).__name__}): give a "
                                'queries JSONL {"target", "description"} or a dialogue JSON') from e
    if args.dialogues:
        queries = attach_dialogues(queries, read_dialogues(args.dialogues))
    return queries, msrvtt


def open_retriever(args: argparse.Namespace, plan: Plan):
    """The index's retriever, with the search and torch thread settings."""
    from interactive_ir.assembly.indexes import open_retriever

    retriever = open_retriever(args.index, args.embedder, plan.cfg.k, tau=plan.settings["tau"])
    if args.search_threads > 0:
        import faiss

        faiss.omp_set_num_threads(args.search_threads)
    if args.torch_threads > 0:
        import importlib.util

        if importlib.util.find_spec("torch") is not None:
            import torch

            torch.set_num_threads(args.torch_threads)
    return retriever


def resolve_queries(args: argparse.Namespace, plan: Plan, retriever) -> list:
    """The queries whose targets are in the index (named by its ids), the first --limit of them."""
    from interactive_ir.errors import BadInputError
    from interactive_ir.evaluation.dialogues import resolve_targets

    queries = plan.queries
    if plan.msrvtt is not None:
        from interactive_ir.evaluation.datasets.msrvtt import queries_from_index

        queries = queries_from_index(plan.msrvtt, retriever.index.ids, args.queries, args.index, args.seed)
    queries, missing = resolve_targets(queries, retriever.index.ids)
    if missing:
        log.warning("%d queries name targets that are not in %s (e.g. %r): left out", len(missing), args.index,
                    missing[0].target)
    if not queries:
        raise BadInputError(f"none of the queries' targets is in the index {args.index}: check --index and --queries")
    return queries[: args.limit] if args.limit else queries


def open_backends(args: argparse.Namespace, plan: Plan, retriever) -> Backends:
    """The engine's LLM and VLM and the simulated user, and their names for the checkpoints."""
    from interactive_ir.assembly.models import open_llm, open_model
    from interactive_ir.evaluation.similarity import make_similarity
    from interactive_ir.evaluation.simulators import make_user

    llm = open_llm(args.llm, default=False)  # eval takes no default LLM: only --llm
    vlm = open_model("vlm", args.vlm)
    kind, user_llm, user_vlm = _user_backend(args.answerer, llm, args.llm)
    sim_cfg = plan.sim_cfg
    similarity = make_similarity(args.user_similarity, retriever.embedder)
    user = make_user(retriever.index, llm=user_llm, answerer=kind, vlm=user_vlm, config=sim_cfg, seed=args.seed,
                     similarity=similarity)
    names = {"llm": None if llm is None else args.llm, "answerer": args.answerer or "rule", "vlm": args.vlm,
             "sim": {"relevant_n": sim_cfg.relevant_n, "relevance_overlap": sim_cfg.relevance_overlap,
                     "allow_uncertain": sim_cfg.allow_uncertain, "similarity": args.user_similarity,
                     "choice_threshold": sim_cfg.choice_threshold,
                     **({"noise": sim_cfg.noise} if sim_cfg.noise else {})},
             "preset": args.preset, "plugir": plan.plugir_overrides}
    engine_fake = llm is not None and args.llm.split(":", 1)[0].strip().lower() == "fake"
    return Backends(retriever, llm, vlm, user, names, engine_fake)


def header_lines(args: argparse.Namespace, plan: Plan, backends: Backends) -> list[str]:
    """What the run prints before it starts: the simulated user, the settings, the preset and its caveats."""
    cfg, preset, queries = plan.cfg, plan.preset, plan.queries
    header = [f"simulated user: {backends.user.describe_self()}",
              f"rounds {cfg.rounds}, k {cfg.k}, stop when the target is shown: {'yes' if cfg.stop_on_found else 'no'}, "
              f"shown images excluded: {'yes' if cfg.exclude_shown else 'no'}, rank from: {cfg.rank_from}, "
              f"{len(queries)} queries, index of {len(backends.retriever.index)} images"
              + (f", {100 * cfg.overlook:g}% of shown targets overlooked" if cfg.overlook else "")]
    if preset:
        header.insert(0, f"preset {preset.name}: {preset.paper}; " + ", ".join(
            f"{k}={v}" for k, v in preset.settings().items()))
        header += [f"the flag wins: {c}" for c in plan.conflicts]
        if plan.unsupported:
            header.append("pipeline choices of the preset not implemented in this build (run without them): "
                          + ", ".join(plan.unsupported))
        if preset.notes:
            header.append(f"note: {preset.notes}")
    with_reference = sum(1 for q in queries if q.reference)
    if with_reference:
        header.append(reference_line(cfg.keep_reference, with_reference))
    if not cfg.stop_on_found:
        header.append("--no-stop-on-found: every round is played, but a target once shown (or marked relevant) keeps "
                      "the rank of the round it was found in; later rounds do not move it")
    if backends.user.is_fake:
        header.append("THE SIMULATED USER IS A FAKE MODEL: this run tests the loop only and compares nothing")
    several = sum(1 for q in queries if q.relevant)
    if several and cfg.stop_on_found:
        header.append(f"note: {several} queries have several relevant images, and each stops once its target is "
                      "shown; --no-stop-on-found (or --preset zhu) plays every round, as Zhu et al.'s accumulated "
                      "recall does")
    return header


def reference_line(keep: bool, n: int) -> str:
    """What the run does with the reference images of its `n` composed queries."""
    if keep:
        return (f"reference image KEPT in the ranking (--keep-reference): {n} composed queries may show it and count "
                "it above the target, which the CIR benchmarks do not")
    return (f"reference image left out of the ranking: {n} composed queries never show it nor count it above the "
            "target, as the CIR benchmarks score (--keep-reference keeps it)")


def run_one_protocol(args: argparse.Namespace, plan: Plan, backends: Backends, protocol) -> dict:
    """Run (or resume) one protocol's searches, write its records and report; its metrics."""
    from interactive_ir.evaluation.dialogues import write_chatir
    from interactive_ir.evaluation.report import summarise, write_protocol_report
    from interactive_ir.evaluation.runner import run_protocol

    folder = args.out / protocol.name.replace(":", "-")
    run_ = run_protocol(protocol, plan.queries, backends.retriever, backends.user, folder, plan.cfg, llm=backends.llm,
                        vlm=backends.vlm, backends=backends.names, fresh=args.fresh, retry_failed=args.retry_failed,
                        plugir_overrides=plan.plugir_overrides)
    relevant = {q.qid: list(q.relevant) for q in plan.queries if q.relevant}
    ranks, metrics = summarise(run_.results, len(backends.retriever.index), plan.ks, relevant, rounds=plan.cfg.rounds,
                               page=plan.cfg.k)
    metrics = {"protocol": protocol.name, "simulated_user": backends.user.describe_self(), "preset": args.preset,
               "settings": dict(plan.settings), **metrics}
    why = _not_comparable(protocol, backends.user, backends.engine_fake)
    if why:
        metrics["not_comparable"] = why
    if ranks:
        write_protocol_report(folder, ranks, metrics, plan.ks, protocol.name)
    if any(r.get("dialog") for r in run_.results):
        by_id = {q.qid: q for q in plan.queries}
        write_chatir(folder / "dialogues.json",
                     [(r["target"], by_id[r["qid"]].description, r["dialog"]) for r in run_.results])
    log.info("%s: %d queries (%d resumed) in %.1f s -> %s", protocol.name, len(run_.results), run_.resumed,
             run_.seconds, folder)
    return metrics


def write_results(out: Path, results: dict[str, dict], ks: list[int]) -> None:
    """The summary across protocols (files), then the tables (headline first, then the papers' metrics) and the
    group metrics (printed)."""
    from interactive_ir.evaluation import headline
    from interactive_ir.evaluation.report import markdown_table, write_summary

    has_paging = headline.compare_with_paging(results, headline.stored_targets(out, results))
    write_summary(out, {p: m for p, m in results.items() if m.get("n_queries")}, ks)
    k_table = 10 if 10 in ks else max(ks)
    print(headline.report_text(results, has_paging))
    print(f"\n## BRI and best-so-far Hits@{k_table}: {headline.PAPERS_LABEL}\n")
    print(markdown_table(results, k=k_table, extra=("s/query", "cpu/query", "llm")))
    for name, m in results.items():
        for line in _group_metrics(m):
            print(f"{name}: {line}")
    print(f"\nwrote {out}/<protocol>/{{ranks.json,metrics.json,by_round.csv,hits_recall.png}} and "
          f"{out}/summary.{{json,csv}}")


def _group_metrics(m: dict) -> list[str]:
    """Last-round Recall_subset@K (CIRR subset groups), mAP@K and accumulated recall by round (several ground
    truths), when the run has them."""
    out = []
    subset = [k for k in m if k.startswith("recall_subset@")]
    if subset:
        out.append("Recall_subset " + ", ".join(f"@{k.split('@')[1]} {m[k][-1]:.4f}" for k in subset)
                   + f" at the last round ({m['n_subset_queries']} queries with a subset group)")
    maps = [k for k in m if k.startswith("map@")]
    if maps:
        out.append("mAP " + ", ".join(f"@{k.split('@')[1]} {m[k][-1]:.4f}" for k in maps)
                   + f" at the last round ({m['n_map_queries']} queries with "
                   "several ground truths)")
    if m.get("accumulated_recall"):  # Zhu et al., eq. 2 (MSR-VTT frames)
        out.append("accumulated recall by round " + " ".join(f"{100 * x:.2f}" for x in m["accumulated_recall"])
                   + " (%, share of each query's relevant images shown so far)")
    return out
