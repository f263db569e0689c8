"""Human user studies.

- the study file: `config` (with `config_types`, `config_fields`, `config_forms`), `instruments`,
  `questionnaire`, `recruitment`, `index_choice`; counterbalancing in `assign`;
- a durable event log: `log`;
- the participant state machine: `runner.StudyRunner` over `flow/` (enrolment, tasks, rounds, replay)
  and `engines` (an engine per condition, the engine's actions in one table);
- the web page: `ui.build_study_demo` over `page/` (logic, render, layout, admin);
- what the log becomes: `analysis/` (export, tables, mixed models, the report); rehearsals with
  simulated participants: `simulate`, `dry_run`.
"""

from interactive_ir.study.assign import Assignment, assign, williams_square
from interactive_ir.study.config import (
           Condition,
           StudyConfig,
           Task,
           load_study,
           parse_study,
           resolve_tasks,
)
from interactive_ir.study.config_types import Question, StudyConfigError
from interactive_ir.study.log import Event, StudyLog, StudyLogConfig, study_log_config

__all__ = ["Assignment", "Condition", "Event", "Question", "StudyConfig", "StudyConfigError", "StudyLog",
           "StudyLogConfig", "Task", "assign", "load_study", "parse_study", "resolve_tasks", "study_log_config",
           "williams_square"]
