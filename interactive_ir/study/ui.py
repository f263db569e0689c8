"""Study mode of the web app: `python app.py --study STUDY.yaml` serves `build_study_demo(...)`.

Pages, in order: consent (which enrols) -> for each task (a practice task first when the study has one):
briefing (task n of N, the target, a break note between conditions) -> search with the assigned
condition within the round budget and time limit -> the questionnaires due (after the task, after the
condition, at the end) -> the end page with the platform's completion code.

Identity: enrolling gives the participant a secret token (256 random bits) that the browser keeps
(`gr.BrowserState`, localStorage) and sends with every call; the server maps the token's hash to the
participant. Nothing the page sends names a participant, so knowing someone's participant id or
recruitment id (PROLIFIC_PID, workerId) gives no access to their tasks, and no call says whether an id
exists. A reload resumes where the participant was; the runner rebuilds their place from the study log.
The recruitment platform's URL parameters are read on page load and recorded at consent.

An admin page at /admin (password from IIR_STUDY_ADMIN_PASSWORD, refused when weak) lists participants
and their completion and downloads the event log.

The page is `interactive_ir.study.page`: `logic.StudyPage` holds the page logic as plain functions of
(token, TabState, values) and `view()` returns plain values; `layout` lays out Gradio components and
wires events to it; `render` writes its HTML; `admin` is the admin page. This module builds it.
"""

from __future__ import annotations

import os
from pathlib import Path

from interactive_ir.errors import BadInputError
from interactive_ir.study.config import StudyConfig, load_study
from interactive_ir.study.log import StudyLog, study_log_config
from interactive_ir.study.page.admin import ADMIN_ENV, check_password_strength
from interactive_ir.study.page.logic import StudyPage
from interactive_ir.study.runner import StudyRunner


def make_runner(engine, study: StudyConfig | str | Path, log: StudyLog | None = None) -> StudyRunner:
    study = study if isinstance(study, StudyConfig) else load_study(study)
    return StudyRunner(study, engine, log or StudyLog.for_study(study.study_id, study_log_config()))


def build_study_demo(engine, setup_notes=(), study: StudyConfig | str | Path | None = None, *,
                     log: StudyLog | None = None, admin_password: str | None = None):
    """The study page over a shared `engine` (a `gr.Blocks`).

    Called by `app.py --study FILE` as `build_study_demo(engine, notes, study_path)`; the arguments
    `(engine, study, notes)` are accepted too. The log goes to IIR_STUDY_DIR/<study_id>.sqlite unless
    `log` is given; the admin password comes from IIR_STUDY_ADMIN_PASSWORD unless given, and a weak or
    example password is refused (BadInputError) before anything is served.
    """
    if isinstance(setup_notes, (StudyConfig, str, Path)):  # called as (engine, study, notes)
        setup_notes, study = (study or ()), setup_notes
    if study is None:
        raise BadInputError("build_study_demo needs a study file or a StudyConfig")
    password = admin_password if admin_password is not None else os.environ.get(ADMIN_ENV, "")
    check_password_strength(password)
    page = StudyPage(make_runner(engine, study, log), setup_notes or ())
    from interactive_ir.study.page.layout import layout

    return layout(page, password)

