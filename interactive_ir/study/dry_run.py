"""`study simulate`: build the study's engine as the app does, run simulated participants into a fresh
database, and write the report (see `interactive_ir.study.simulate`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from interactive_ir.errors import BadInputError


def dry_run(study_file: Path, participants: int, db: Path | None = None, out: Path | None = None,
            index: Path | None = None, llm: str = "", embedder: str = "", seed: int = 0, plots: bool = True,
            engine=None) -> dict:
    """Simulate `participants` through the study; the report dict with "outcomes", "database" and "out"."""
    from interactive_ir.evaluation.simulators import index_captions, make_user
    from interactive_ir.study.config import load_study
    from interactive_ir.study.log import StudyLog, study_db_path, study_log_config
    from interactive_ir.study.report import write_report
    from interactive_ir.study.runner import StudyRunner
    from interactive_ir.study.simulate import SimClock, simulate_participant

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
    if engine is None:
        from interactive_ir.ui.startup import app_config, load_app, with_study_index

        cfg = with_study_index(app_config(llm=llm, embedder=embedder, study=Path(study_file), index=index))
        engine = load_app(cfg).engine
    clock = SimClock(1_800_000_000.0)
    outcomes: Counter = Counter()
    with StudyLog(db) as log:
        log.set_meta("simulated", {"participants": participants, "seed": seed,
                                   "llm": getattr(engine.llm, "spec", None) if engine.llm is not None else None})
        runner = StudyRunner(study, engine, log, clock=clock)
        user = make_user(engine.index, answerer="rule", seed=seed)
        captions_of = index_captions(engine.index)
        for n in range(participants):
            outcomes[simulate_participant(runner, user, clock, n, captions_of, seed=seed)] += 1
        out = out or db.with_name(f"{db.stem}_report")
        rep = write_report(log, out, plots=plots)
    rep.update(outcomes=dict(outcomes), database=str(db), out=str(out))
    return rep
