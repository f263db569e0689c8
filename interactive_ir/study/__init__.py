"""Human user studies: study files, counterbalancing, a durable event log, the participant state
machine, exports and the analysis report. The Gradio study page is `interactive_ir.study.ui`."""

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
