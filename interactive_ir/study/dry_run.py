"""`study simulate`: build the study's engine as the app does (`assembly.app.assemble`), run simulated
participants into a fresh database, and write the report (see `interactive_ir.study.simulate`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from interactive_ir.errors import BadInputError


def dry_run(study_file: Path, participants: int, db: Path | None = None, out: Path | None = None,
            index: Path | None = None, llm: str = "", embedder: str = "", seed: int = 0, plots: bool = True,
            engine=None) -> dict:
    """Simulate `participants` through the study; the report dict with "outcomes", "database" and "out"."""
    from interactive_ir.evaluation.simulators import make_user
    from interactive_ir.study.analysis.report import write_report
    from interactive_ir.study.config import load_study
    from interactive_ir.study.log import StudyLog, study_db_path, study_log_config
    from interactive_ir.study.runner import StudyRunner
    from interactive_ir.study.simulate import FLOW_ONLY, SimClock, participant_text, simulate_participant

    study = load_study(study_file)
    db = db or study_db_path(f"{study.study_id}.simulated", study_log_config())
    if db.exists():
        with StudyLog(db) as probe:
            if probe.get_meta("simulated") is None:
                raise BadInputError(f"{db} is a study's own log, not a dry run's: give another --db; a dry run "
                                    "never writes into a study's own database")
        db.unlink()
        for extra in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            extra.unlink(missing_ok=True)
    if engine is None:  # the app's assembly for the app's options, on the study's index (no photo gallery)
        from interactive_ir.assembly.app import assemble
        from interactive_ir.assembly.options import app_config
        from interactive_ir.study.index_choice import with_study_index

        cfg = with_study_index(app_config(llm=llm, embedder=embedder, study=Path(study_file), index=index))
        engine = assemble(cfg).engine
    clock = SimClock(1_800_000_000.0)
    outcomes: Counter = Counter()
    prompts = _study_prompts(study)  # target -> the prompt the study file gives it (never one made from the index)
    with StudyLog(db) as log:
        meta = {"participants": participants, "seed": seed,
                "llm": getattr(engine.llm, "spec", None) if engine.llm is not None else None}
        log.set_meta("simulated", meta)
        runner = StudyRunner(study, engine, log, clock=clock)
        user = make_user(engine.index, answerer="rule", seed=seed)
        sources: dict[str, int] = {}
        def text_of(task):
            return participant_text(engine.index, task, prompts.get(task.target, ""))

        for n in range(participants):
            outcomes[simulate_participant(runner, user, clock, n, text_of, seed=seed, sources=sources)] += 1
        meta["participant_text"] = sources  # tasks described from each source (OTHER_CAPTIONS, TASK_PROMPT, ...)
        flow_only = sum(sources.get(src, 0) for src in FLOW_ONLY)
        if flow_only:
            meta["note"] = index_caption_note(flow_only, sum(sources.values()))
        log.set_meta("simulated", meta)
        out = out or db.with_name(f"{db.stem}_report")
        rep = write_report(log, out, plots=plots)
    rep.update(outcomes=dict(outcomes), database=str(db), out=str(out), participant_text=dict(sources))
    return rep


def index_caption_note(n: int, total: int) -> str:
    """The dry run's warning when its participants knew a target only by the index's own caption."""
    return (f"in {n} of {total} task(s) the simulated participant had only the index's own caption of the target, "
            "or nothing (the index stores no other caption and the study file gives no prompt): the dry run checks "
            "the flow only, its search outcomes say nothing of how people would fare")


def _study_prompts(study) -> dict[str, str]:
    """Each listed target's prompt as the study file writes it ("" none; a sampled task has none)."""
    from interactive_ir.study.config import SampleSpec

    specs = [] if isinstance(study.tasks, SampleSpec) else list(study.tasks)
    specs += [study.practice] if study.practice is not None else []
    out: dict[str, str] = {}
    for spec in specs:
        out[spec.target] = out.get(spec.target) or spec.prompt
    return out
