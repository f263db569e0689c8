"""The admin page's actions on a `StudyPage` (a mixin; no Gradio): participants and completion, the event log's
export, replay pages, and a competition's open and close of tasks."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from interactive_ir.study.page.render import admin_rows, admin_summary


class AdminActions:
    """What /admin does; mixed into `StudyPage`, whose `runner`, `study`, `progress`, `waiting` and `outcomes`
    it uses."""

    def admin_view(self) -> tuple[str, list[list]]:
        sid = self.study.study_id
        progresses = [self.runner.progress(p["participant"]) for p in self.runner.log.participants(sid)]
        outcomes = self.outcomes()
        return (admin_summary(self.study, progresses, self.runner.log.count(sid), outcomes),
                admin_rows(progresses, self.runner.log.last_activity(sid), outcomes))

    def competition_md(self) -> str:
        """The competition's state for the admin page: the open task, since when, who waits for it."""
        state = self.runner.competition_state()
        if state is None:
            return ""
        n = len(self.runner.tasks)
        waiting = sum(1 for r in self.runner.log.participants(self.study.study_id)
                      if (p := self.progress(r["participant"])) is not None and self.waiting(p))
        if state.open_task is None:
            done = ", ".join(map(str, state.closed)) or "none"
            return (f"**No task is open** ({n} tasks; closed so far: {done}). {waiting} participant(s) waiting. "
                    "Open a task: everyone waiting for it gets it at once.")
        since = max(0.0, self.runner.clock() - (state.opened_at or 0.0))
        return (f"**Task {state.open_task} of {n} is open** since {since:.0f} s. {waiting} participant(s) waiting "
                "for another task.")

    def open_task(self, n: Any) -> str:
        """Open task `n` for everyone (the admin page's "Open task"): the new state line."""
        self.runner.open_task(n)
        return self.competition_md()

    def close_task(self) -> str:
        """Close the open task (its running searches end as timed out): the new state line."""
        n, ended = self.runner.close_task()
        return f"Closed task {n}: {len(ended)} running search(es) ended.\n\n" + self.competition_md()

    def export(self, fmt: str) -> str:
        from interactive_ir.study.analysis.export import export_events

        out = Path(tempfile.mkdtemp(prefix="iir-study-")) / f"{self.study.study_id}.events.{fmt}"
        export_events(self.runner.log, out, fmt, self.study.study_id)
        return str(out)

    def replay(self, participant: str) -> str:
        """A replay page (static HTML) of one participant's tasks, or of everyone's when `participant` is blank."""
        from interactive_ir.study.analysis.replay_html import write_replay
        from interactive_ir.study.analysis.timeline import study_replay

        who = (participant or "").strip() or None
        rep = study_replay(self.runner.log, who, study_id=self.study.study_id)
        name = f"{self.study.study_id}.{who or 'all'}.replay.html".replace("/", "_")
        return str(write_replay(rep, Path(tempfile.mkdtemp(prefix="iir-study-")) / name))
