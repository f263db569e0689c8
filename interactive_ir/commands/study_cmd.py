"""`python -m interactive_ir study validate|plan|export|report ...`: check study files, analyse study logs.

  study validate STUDY.yaml [--index DIR]            check the file (and its targets against the index)
  study plan STUDY.yaml --participants N [--index DIR]  print each participant's counterbalanced plan
  study export --db FILE --format csv|jsonl|parquet [--out FILE]   one row per logged event
  study export --db FILE --format dres|lsc-csv [--out FILE]         DRES logs per task / the NTCIR-LSC run CSV
  study export --db FILE --bundle DIR                               a run bundle (re-scored without models)
  study report --db FILE --out DIR [--k 1,5,10] [--no-plots]       mixed models, report.html, tables, PNGs
  study simulate STUDY.yaml --participants N [--db FILE] [--out DIR]  a dry run with simulated participants
  study replay --db FILE|EVAL_DIR [--participant P] [--task T] --out page.html   watch sessions step by step
  study compare-sim --db HUMAN --sim SIMULATED [--out DIR]   the simulator's condition ranking against people's
  study scoreboard --db FILE [--out page.html]               KIS scores per participant and task (also at /scoreboard)

The study itself runs in the web app: `python app.py --study STUDY.yaml` (logs in IIR_STUDY_DIR,
default ./study_data, as <study_id>.sqlite).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from interactive_ir.commands.argtypes import number, plain_path, whole
from interactive_ir.errors import BadInputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from interactive_ir.assembly.specs import DEFAULT_LLM_HELP, NO_MODEL_HELP

    sub = p.add_subparsers(dest="study_command", metavar="ACTION")
    v = sub.add_parser("validate", help="check a study file (and its task targets against an index)")
    v.add_argument("study_file", type=plain_path, metavar="STUDY.yaml")
    v.add_argument("--index", type=plain_path, help="index folder to check the targets against (default: the study's index)")
    pl = sub.add_parser("plan", help="print the counterbalanced plan of the first N participants")
    pl.add_argument("study_file", type=plain_path, metavar="STUDY.yaml")
    pl.add_argument("--participants", type=whole(1, 100_000), default=4, help="how many participants (default 4)")
    pl.add_argument("--index", type=plain_path, help="index folder (default: the study's index)")
    e = sub.add_parser("export", help="export the event log: one row per event")
    e.add_argument("--db", required=True, type=plain_path, help="the study database (<IIR_STUDY_DIR>/<study_id>.sqlite)")
    e.add_argument("--format", choices=("csv", "jsonl", "parquet", "dres", "lsc-csv"), default=None,
                   help="output format (default: from --out's suffix, else csv): csv|jsonl|parquet one row per event; "
                        "dres: DRES query-event, result and submission logs per task (JSON); lsc-csv: the NTCIR/LSC "
                        "run CSV (GROUP-ID, RUN-ID, TOPIC-ID, IMAGE-ID, SECONDS-ELAPSED, SCORE)")
    e.add_argument("--out", type=plain_path, help="output file (default: beside the database, e.g. pilot.events.csv)")
    e.add_argument("--group", default="", help="lsc-csv: the GROUP-ID (default: the study id)")
    e.add_argument("--collection", default="", help="dres: the mediaItemCollectionName of the images (default: none)")
    e.add_argument("--bundle", type=plain_path, default=None,
                   help="write a run bundle folder instead: configuration, versions, dialogues, per-round ranks and "
                        "shown ids, the event log, no images (`metrics DIR` and `study report --db DIR` re-score it)")
    r = sub.add_parser("report", help="per-condition metrics, questionnaire means with 95%% CIs, correlations, plots")
    r.add_argument("--db", required=True, type=plain_path, help="the study database, or a study's run bundle folder")
    r.add_argument("--out", required=True, type=plain_path, help="folder for report.json, summary.md, sessions.csv, PNGs")
    r.add_argument("--k", default="1,5,10", help="cut-offs for Hits@K (default 1,5,10; the study's k is added)")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots (no matplotlib needed)")
    r.add_argument("--exclude-away", action="store_true",
                   help="leave out tasks whose participant left the page too long or too often (the report shows "
                        "the analysis with them too)")
    r.add_argument("--max-away-s", type=number(0), default=None,
                   help="seconds away from the page that flag a task (default IIR_STUDY_AWAY_MAX_S, 30; 0: off)")
    r.add_argument("--max-defocus", type=whole(0), default=None,
                   help="times away from the page that flag a task (default IIR_STUDY_AWAY_MAX_DEFOCUS, 5; 0: off)")
    r.add_argument("--compare-sim", type=plain_path, default=None, metavar="SIM_DB",
                   help="also compare a simulated run of the study with this one (compare_sim.{json,md} in --out)")
    sm = sub.add_parser("simulate", help="dry run: simulated participants through the whole study, then the report")
    sm.add_argument("study_file", type=plain_path, metavar="STUDY.yaml")
    sm.add_argument("--participants", type=whole(1, 100_000), default=8, help="how many simulated participants (default 8)")
    sm.add_argument("--db", type=plain_path, help="database to write (default: <IIR_STUDY_DIR>/<study_id>.simulated.sqlite; "
                                           "never the real study's)")
    sm.add_argument("--out", type=plain_path, help="report folder (default: beside the database, <name>_report)")
    sm.add_argument("--index", type=plain_path, help="index folder (default: the study's index)")
    sm.add_argument("--llm", default="", help=f"the app's LLM for questions (default, as the app's: {DEFAULT_LLM_HELP}; "
                    f"{NO_MODEL_HELP}: none; 'fake' for a fast check)")
    sm.add_argument("--embedder", default="", help="embedder spec (default: the index's own)")
    sm.add_argument("--seed", type=whole(0, 2**32 - 1), default=0, help="seed of the simulated participants (default 0)")
    sm.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    cs = sub.add_parser("compare-sim", help="does a simulator rank the conditions as people do? (tau, distances)")
    cs.add_argument("--db", required=True, type=plain_path, help="the people's study database (or its run bundle)")
    cs.add_argument("--sim", required=True, type=plain_path, help="the simulated one (`study simulate`'s database or bundle)")
    cs.add_argument("--out", type=plain_path, default=None, help="folder for compare_sim.json and compare_sim.md")
    cs.add_argument("--boot", type=whole(1, 1_000_000), default=1000, help="bootstrap resamples of the tau interval (default 1000)")
    cs.add_argument("--seed", type=whole(0, 2**32 - 1), default=0, help="seed of the bootstrap (default 0)")
    sb = sub.add_parser("scoreboard", help="correct/wrong submissions, times and KIS scores per participant and task")
    sb.add_argument("--db", required=True, type=plain_path, help="the study database")
    sb.add_argument("--out", type=plain_path, default=None, help="also write the scoreboard as an HTML page")
    rp = sub.add_parser("replay", help="a static HTML page that plays sessions back, round by round")
    rp.add_argument("--db", required=True, type=plain_path,
                    help="a study database (people or `study simulate`), or an `eval --out` folder / checkpoint.jsonl")
    rp.add_argument("--participant", default=None, help="the participant id (eval: the protocol; default: all)")
    rp.add_argument("--task", default=None, help="the task's number in the participant's plan (eval: the target)")
    rp.add_argument("--out", type=plain_path, default=None, help="the page to write (default: beside --db, replay.html)")
    rp.add_argument("--images", default="",
                    help="folder or address of the images, to draw them in the tiles (default: ids only)")


def _validate(args) -> int:
    from interactive_ir.study.config import load_study, resolve_practice, resolve_tasks, study_warnings
    from interactive_ir.study.index_choice import study_index_ids

    study = load_study(args.study_file)
    ids, caps = study_index_ids(study, args.index)
    tasks = resolve_tasks(study, ids, caps.get)
    practice = resolve_practice(study, ids, caps.get)
    modes = ", ".join(f"{c.name}={c.preset}" for c in study.conditions)
    print(f"{args.study_file}: OK: study {study.study_id!r}, {len(study.conditions)} condition(s) ({modes}), "
          f"{len(tasks)} task(s) on {len(ids)} images, {study.rounds} round(s) per task, "
          f"counterbalance {study.counterbalance}, {len(study.questions)} question(s)")
    forms = {f: sorted({q.instrument or "custom" for q in study.form(f)}) for f in ("task", "condition", "end")}
    print(f"questionnaires: after each task {forms['task'] or 'none'}, after each condition "
          f"{forms['condition'] or 'none'}, at the end {forms['end'] or 'none'}; practice task: "
          f"{practice.target if practice else 'none'}; time limit: "
          f"{f'{study.time_limit_s} s' if study.time_limit_s else 'none'}; recruitment: {study.recruitment.platform}")
    for note in study_warnings(study, len(tasks)):
        print(f"note: {note}")
    return 0


def _plan(args) -> int:
    from interactive_ir.study.assign import assign
    from interactive_ir.study.config import load_study, resolve_tasks
    from interactive_ir.study.index_choice import study_index_ids

    if args.participants < 1:
        raise BadInputError("--participants must be at least 1")
    study = load_study(args.study_file)
    ids, caps = study_index_ids(study, args.index)
    tasks = resolve_tasks(study, ids, caps.get)
    names = [c.name for c in study.conditions]
    for n in range(args.participants):
        plan = assign(tasks, names, study.counterbalance, n, f"#{n}", study.seed)
        print(f"participant {n}: " + ", ".join(f"{a.condition}:{a.task.target}" for a in plan))
    return 0


def _export(args) -> int:
    from interactive_ir.study.analysis.export import FORMATS, export_events
    from interactive_ir.study.log import open_readonly

    if args.bundle is not None:
        from interactive_ir.study.bundle import study_bundle

        print(f"run bundle written to {study_bundle(args.db, args.bundle)} (re-score: python -m interactive_ir "
              f"metrics {args.bundle}; study report --db {args.bundle} --out DIR)")
        return 0
    fmt = args.format or (args.out.suffix.lstrip(".").lower() if args.out else "csv")
    if fmt in ("dres", "lsc-csv"):
        return _export_interop(args, fmt)
    if fmt not in FORMATS:
        raise BadInputError(f"cannot tell the format from {args.out}: pass --format {'|'.join(FORMATS)}")
    out = args.out or args.db.with_name(f"{args.db.stem}.events.{fmt}")
    with open_readonly(args.db) as log:
        n = export_events(log, out, fmt)
    print(f"exported {n} event(s) to {out}")
    return 0


def _export_interop(args, fmt: str) -> int:
    from interactive_ir.study.analysis.interop import export_interop
    from interactive_ir.study.log import open_readonly

    out = args.out or args.db.with_name(f"{args.db.stem}.{'dres.json' if fmt == 'dres' else 'lsc.csv'}")
    with open_readonly(args.db) as log:
        n = export_interop(log, out, fmt, group=args.group, collection=args.collection)
    print(f"exported {n} {'task(s)' if fmt == 'dres' else 'submission row(s)'} as {fmt} to {out}")
    return 0


def _report(args) -> int:
    from interactive_ir.commands.metrics_cmd import parse_ks
    from interactive_ir.study.analysis.report import write_report
    from interactive_ir.study.log import open_readonly, study_log_config

    overrides = {k: v for k, v in (("away_max_s", args.max_away_s), ("away_max_defocus", args.max_defocus))
                 if v is not None}
    cfg = study_log_config(**overrides)
    db = args.db
    if db.is_dir():  # a run bundle (study export --bundle): its event log, rebuilt
        from interactive_ir.study.bundle import bundle_log

        db = bundle_log(db)
    with open_readonly(db) as log:
        rep = write_report(log, args.out, ks=parse_ks(args.k), plots=not args.no_plots,
                           exclude_away=args.exclude_away, away=(cfg.away_max_s, cfg.away_max_defocus))
    print(f"report of {rep['n_sessions_ended']} ended task(s) by {rep['n_participants']} participant(s) "
          f"written to {args.out}:")
    for f in rep["files"]:
        print(f"  {f}")
    print(json.dumps({c: {"bri": d["bri"]["mean"], "found_rate": d["found_rate"]}
                      for c, d in rep["conditions"].items()}))
    for w in rep["warnings"]:
        print(f"warning: {w}")
    para = rep["paradata"]
    print(f"time on the page: {len(para['flagged'])} task(s) flagged as away "
          + ("(left out)" if para["excluded"] else "(kept; --exclude-away leaves them out)"))
    if args.compare_sim is not None:
        _write_compare(args.db, args.compare_sim, Path(args.out), 1000, 0)
    print(f"open {Path(args.out) / 'report.html'} for the mixed-effects models, plots and the data dictionary")
    return 0


def _simulate(args) -> int:
    from interactive_ir.study.dry_run import dry_run

    if args.participants < 1:
        raise BadInputError("--participants must be at least 1")
    rep = dry_run(args.study_file, args.participants, db=args.db, out=args.out, index=args.index, llm=args.llm,
                  embedder=args.embedder, seed=args.seed, plots=not args.no_plots)
    print(f"simulated {args.participants} participant(s): {rep['outcomes']}; database {rep['database']}")
    print(f"report of {rep['n_sessions_ended']} analysed task(s) written to {rep['out']} (open report.html)")
    for w in rep["warnings"]:
        print(f"warning: {w}")
    print("note: simulated participants check the study's flow and analysis; their results compare nothing")
    said = rep.get("participant_text") or {}
    if said:
        print("the simulated participants described their targets from: "
              + ", ".join(f"{src} ({n} task(s))" for src, n in sorted(said.items())))
    if (rep.get("simulated") or {}).get("note"):
        print(f"note: {rep['simulated']['note']}")
    return 0


def _compare_sim(args) -> int:
    if args.boot < 0:
        raise BadInputError("--boot must be 0 or more")
    _write_compare(args.db, args.sim, args.out, args.boot, args.seed)
    return 0


def _write_compare(human: Path, sim: Path, out: Path | None, boot: int, seed: int) -> None:
    from interactive_ir.study.analysis.compare_sim import compare_logs, compare_markdown

    rep = compare_logs(human, sim, boot, seed)
    text = compare_markdown(rep)
    print(text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare_sim.json").write_text(json.dumps(rep, indent=1), encoding="utf-8")
        (out / "compare_sim.md").write_text(text, encoding="utf-8")
        print(f"written to {out}/compare_sim.{{json,md}}")


def _scoreboard(args) -> int:
    from interactive_ir.study.analysis.scoreboard import scoreboard, scoreboard_html
    from interactive_ir.study.log import open_readonly

    with open_readonly(args.db) as log:
        teams = scoreboard(log)
    if not teams:
        print("no task has started yet: the scoreboard fills in as participants submit")
    for rank, t in enumerate(teams, 1):
        cells = ", ".join(f"task {n}: {'correct' if s.correct else 'not found'} {s.score:.0f} ({s.wrong} wrong"
                          + (f", {s.time_s:.0f} s)" if s.correct else ")") for n, s in sorted(t.tasks.items()))
        who = {True: ", expert", False: ", novice"}.get(t.expert, "")
        print(f"{rank}. {t.participant} ({t.condition}{who}) {t.total:.0f}: {cells}")
    if args.out is not None:
        args.out.write_text(f"<!doctype html><meta charset='utf-8'><title>Scoreboard</title>{scoreboard_html(teams)}",
                            encoding="utf-8")
        print(f"written to {args.out}")
    return 0


def _replay(args) -> int:
    from interactive_ir.study.analysis.replay_html import write_replay
    from interactive_ir.study.analysis.timeline import load_replay

    rep = load_replay(args.db, args.participant, args.task)
    out = args.out or (args.db / "replay.html" if args.db.is_dir() else args.db.with_name(f"{args.db.stem}.replay.html"))
    images = args.images
    if images and "://" not in images:
        images = Path(images).resolve().as_uri()
    write_replay(rep, out, images)
    unfinished = sum(t.status == "unfinished" for t in rep.tasks)
    print(f"replay of {len(rep.tasks)} task(s) ({unfinished} unfinished) written to {out}")
    for note in rep.notes:
        print(f"note: {note}")
    return 0


def run(args: argparse.Namespace) -> int:
    actions = {"validate": _validate, "plan": _plan, "export": _export, "report": _report, "simulate": _simulate,
               "replay": _replay, "compare-sim": _compare_sim, "scoreboard": _scoreboard}
    action = actions.get(getattr(args, "study_command", None))
    if action is None:
        print("usage: python -m interactive_ir study {validate,plan,export,report,simulate,replay,compare-sim,scoreboard} ... (see --help)",
              file=sys.stderr)
        return 2
    return action(args)
