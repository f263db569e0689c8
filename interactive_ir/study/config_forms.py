"""Study-file sections about people: questionnaires (instruments and custom items), recruitment, dates.

Called by `interactive_ir.study.config.parse_study`; every error names the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace as dataclasses_replace
from typing import Any

from interactive_ir.errors import BadInputError
from interactive_ir.study.config_fields import (
    bool_field,
    check_keys,
    choice_field,
    id_field,
    int_field,
    num_field,
    text_field,
)
from interactive_ir.study.config_types import (
    CODE_RE,
    DEFAULT_QUESTIONS,
    PLATFORMS,
    QUESTION_TYPES,
    Question,
    Recruitment,
    StudyConfigError,
)
from interactive_ir.study.instruments import INSTRUMENTS, instrument_items
from interactive_ir.study.questionnaire import check_one


def parse_questionnaires(data: Mapping) -> dict[str, tuple[Question, ...]]:
    """`questionnaires: {after_task, after_condition, end}` (`questions:` is the older after_task list)."""
    forms = data.get("questionnaires")
    if forms is None:
        return {"after_task": parse_questions(data.get("questions", DEFAULT_QUESTIONS), "questions"),
                "after_condition": (), "end": ()}
    if "questions" in data:
        raise StudyConfigError("questions: give either questions (asked after every task) or questionnaires "
                               "(after_task, after_condition, end), not both")
    if not isinstance(forms, Mapping):
        raise StudyConfigError("questionnaires: give a mapping {after_task: [...], after_condition: [...], end: [...]}")
    check_keys(forms, ("after_task", "after_condition", "end"), "questionnaires")
    out = {name: parse_questions(forms.get(name) or [], f"questionnaires.{name}")
           for name in ("after_task", "after_condition", "end")}
    seen: dict[str, str] = {}
    for name, items in out.items():
        for q in items:
            if q.id in seen and seen[q.id] != name:
                raise StudyConfigError(f"questionnaires.{name}: item id {q.id!r} is also used in {seen[q.id]}; "
                                       "give each item its own id")
            seen[q.id] = name
    return out


def parse_questions(value: Any, where0: str = "questions") -> tuple[Question, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise StudyConfigError(f"{where0}: give a list of instrument names ({', '.join(INSTRUMENTS)}) or items "
                               "{id, text, type: likert|text|choice|number|slider}")
    out: list[Question] = []
    for i, q in enumerate(value):
        where = f"{where0}[{i}]"
        if isinstance(q, str):
            name = choice_field(q, f"{where}: instrument", tuple(INSTRUMENTS))
            if any(x.instrument == name for x in out):
                raise StudyConfigError(f"{where}: {name} is listed twice")
            out.extend(instrument_items(name))
            continue
        if not isinstance(q, Mapping):
            raise StudyConfigError(f"{where}: give an instrument name or a mapping {{id, text, type}}, got {q!r}")
        check_keys(q, ("id", "text", "type", "required", "points", "low_label", "high_label", "options", "min",
                        "max", "step", "answer", "screen_out"), where)
        if "id" not in q or "text" not in q:
            raise StudyConfigError(f"{where}: every question needs an id and a text")
        qid = id_field(q["id"], f"{where}.id")
        if any(x.id == qid for x in out):
            raise StudyConfigError(f"{where}.id: {qid!r} is used twice")
        text = text_field(q["text"], f"{where}.text").strip()
        if not text:
            raise StudyConfigError(f"{where}.text: empty")
        kind = choice_field(q.get("type", "likert"), f"{where}.type", QUESTION_TYPES)
        options: tuple[str, ...] = ()
        if kind == "choice":
            raw = q.get("options")
            if isinstance(raw, str) or not isinstance(raw, Sequence) or len(raw) < 2:
                raise StudyConfigError(f"{where}.options: a choice item needs a list of at least 2 options")
            options = tuple(text_field(o, f"{where}.options").strip() for o in raw)
        lo, hi = num_field(q.get("min", 0), f"{where}.min"), num_field(q.get("max", 100), f"{where}.max")
        if kind in ("number", "slider") and hi <= lo:
            raise StudyConfigError(f"{where}: max ({hi}) must be above min ({lo})")
        item = Question(id=qid, text=text, type=kind,
                        required=bool_field(q.get("required", kind != "text"), f"{where}.required"),
                        points=int_field(q.get("points", 5), f"{where}.points", 2, 11),
                        low_label=text_field(q.get("low_label", "strongly disagree"), f"{where}.low_label"),
                        high_label=text_field(q.get("high_label", "strongly agree"), f"{where}.high_label"),
                        options=options, minimum=lo, maximum=hi, step=num_field(q.get("step", 1), f"{where}.step"))
        fields = {}
        if q.get("answer") is not None:
            try:
                fields["answer"] = check_one(item, q["answer"])
            except BadInputError as e:
                raise StudyConfigError(f"{where}.answer: {e}") from None
        screen = q.get("screen_out")
        if screen is not None:
            screen = screen if isinstance(screen, Sequence) and not isinstance(screen, str) else [screen]
            try:
                fields["screen_out"] = tuple(check_one(item, v) for v in screen)
            except BadInputError as e:
                raise StudyConfigError(f"{where}.screen_out: {e}") from None
        out.append(dataclasses_replace(item, **fields) if fields else item)
    return tuple(out)


def parse_recruitment(value: Any) -> Recruitment:
    if value is None:
        return Recruitment()
    if isinstance(value, str):
        value = {"platform": value}
    if not isinstance(value, Mapping):
        raise StudyConfigError("recruitment: give a mapping such as {platform: prolific, completion_code: C1234}")
    check_keys(value, ("platform", "completion_code", "completion_url", "no_consent_code", "screened_out_code"),
                "recruitment")
    platform = choice_field(value.get("platform", "none"), "recruitment.platform", PLATFORMS)
    codes = {}
    for key in ("completion_code", "no_consent_code", "screened_out_code"):
        code = text_field(value.get(key, ""), f"recruitment.{key}").strip()
        if code and not CODE_RE.match(code):
            raise StudyConfigError(f"recruitment.{key}: {code!r} is not a valid code; use 1-64 letters, digits, "
                                   "'_' or '-'")
        codes[key] = code
    url = text_field(value.get("completion_url", ""), "recruitment.completion_url").strip()
    if url:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.netloc:
            raise StudyConfigError(f"recruitment.completion_url: {url!r} is not an https URL; participants are sent "
                                   "there with their code, so give the platform's https link")
    if platform == "prolific" and not codes["completion_code"]:
        raise StudyConfigError("recruitment.completion_code: missing; Prolific needs the study's completion code "
                               "(Prolific study page > Study completion)")
    return Recruitment(platform=platform, completion_url=url, **codes)


def parse_when(value: Any, where: str) -> float | None:
    if value is None:
        return None
    from datetime import datetime, timezone

    if isinstance(value, datetime):
        when = value
    else:
        try:
            when = datetime.fromisoformat(text_field(value, where).strip().replace("Z", "+00:00"))
        except ValueError:
            raise StudyConfigError(f"{where}: {value!r} is not a date and time; write e.g. 2026-12-01T18:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()
