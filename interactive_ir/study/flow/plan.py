"""A participant's plan: the practice task, then the study's tasks under counterbalanced conditions; and
the questionnaires due when a task ends.

The plan is stored with the participant when they enrol (`rows`) and read back from there (`from_rows`),
so a participant keeps the tasks they were assigned even if the study file changes later.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from interactive_ir.study.assign import Assignment, assign
from interactive_ir.study.config import StudyConfig, Task
from interactive_ir.study.progress import Progress


class StudyPlan:
    """The study's tasks (and practice task) and how they are assigned to participant number n."""

    def __init__(self, study: StudyConfig, tasks: Sequence[Task], practice: Task | None):
        self.study = study
        self.tasks = list(tasks)
        self.practice = practice

    def for_participant(self, number: int, participant: str) -> list[Assignment]:
        """The participant's plan: the practice task (under their first condition), then the assigned tasks."""
        study = self.study
        plan = assign(self.tasks, [c.name for c in study.conditions], study.counterbalance, number, participant,
                      study.seed)
        if self.practice is None:
            return plan
        plan = [Assignment(position=0, task=self.practice, condition=plan[0].condition), *plan]
        return [dataclasses.replace(a, position=i) for i, a in enumerate(plan, 1)]

    def from_rows(self, rows: list[dict]) -> list[Assignment]:
        """A plan stored at enrolment (`rows`), with the study's tasks where they are unchanged."""
        by_index = {t.index: t for t in self.tasks}
        out = []
        for r in rows:
            task = by_index.get(r["task_index"])
            if r.get("practice"):
                task = self.practice if self.practice and self.practice.target == r["target"] else None
            if task is None or task.target != r["target"]:  # the study file changed: keep what was assigned
                task = Task(index=r["task_index"], target=r["target"], prompt=r.get("prompt", ""), rounds=r["rounds"],
                            time_limit_s=r.get("time_limit_s"), practice=bool(r.get("practice")),
                            lock_description_s=int(r.get("lock_description_s") or 0))
            out.append(Assignment(position=r["position"], task=task, condition=r["condition"]))
        return out


def plan_rows(plan: list[Assignment]) -> list[dict]:
    """How a plan is stored with the participant (read back by `StudyPlan.from_rows`)."""
    return [{"position": a.position, "task_index": a.task.index, "target": a.task.target, "prompt": a.task.prompt,
             "rounds": a.task.rounds, "condition": a.condition, "time_limit_s": a.task.time_limit_s,
             "practice": a.task.practice, "lock_description_s": a.task.lock_description_s}
            for a in plan]


def due_forms(study: StudyConfig, p: Progress) -> list[str]:
    """Questionnaires due when the current task ends: after the task, after its condition's block (when
    the next task is under another condition), at the end of the study. None after the practice task."""
    if p.current is None or p.current.task.practice:
        return []
    nxt = p.plan[p.index + 1] if p.index + 1 < len(p.plan) else None
    forms = ["task"] if study.questions else []
    if study.after_condition and (nxt is None or nxt.condition != p.current.condition):
        forms.append("condition")
    if study.end_questions and nxt is None:
        forms.append("end")
    return forms
