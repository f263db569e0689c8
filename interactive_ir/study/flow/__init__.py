"""A participant's way through a study, in named parts over one shared state:

- `state`: each participant's `Progress` behind its own lock, and the writing of their events;
- `plan`: which tasks, under which conditions, in which order, and the questionnaires due after each;
- `enrolment`: participants, tokens and consent;
- `tasks`: the task state machine (start, pick, give up, time out, questionnaires);
- `rounds`: the search rounds of a task and the system's question, through the engine's own actions;
- `replay`: a participant's place rebuilt from the study log alone.

`interactive_ir.study.runner.StudyRunner` puts them together.
"""
