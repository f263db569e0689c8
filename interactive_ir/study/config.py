"""The study file (YAML or JSON): conditions, tasks, round budget, counterbalancing, questionnaire.

A minimal study file::

    study_id: pilot-1
    index: demo                 # "demo" = the demo gallery, or an index folder
    rounds: 5                   # round budget: search rounds after the first description
    k: 10                       # results shown per round
    show_target: true           # show the target image to the participant
    counterbalance: latin       # latin | random | none
    seed: 0
    consent: "I agree that my interactions are logged ..."
    conditions:
      A: {mode: plugir}                          # plugir | zs | feedback | composed | mixed | text
      B: {mode: feedback, feedback_method: rocchio}
    tasks: [animals_bee_0145.png, food_cake_0122.png]   # or {sample: 8, seed: 1}
    questions:
      - {id: effective, text: The system was effective}   # Likert 1-5 by default
      - {id: comments, text: Any comments?, type: text, required: false}

`load_study(path)` parses and validates it; every error names the field (``conditions.B.mode: ...``).
Task targets are checked against an index with `resolve_tasks(study, ids)`, which also draws sampled tasks.
"""

from __future__ import annotations

import difflib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from interactive_ir.config import DEFAULT_K
from interactive_ir.modes import registry
from interactive_ir.study.config_fields import bool_field as _bool
from interactive_ir.study.config_fields import check_keys as _check_keys
from interactive_ir.study.config_fields import choice_field as _choice
from interactive_ir.study.config_fields import id_field as _id
from interactive_ir.study.config_fields import int_field as _int
from interactive_ir.study.config_fields import text_field as _str
from interactive_ir.study.config_forms import parse_questionnaires, parse_recruitment, parse_when
from interactive_ir.study.config_types import Question, Recruitment, StudyConfigError
from interactive_ir.study.dres import DresSettings, parse_dres

MODES = registry.page_mode_names()  # interaction modes a search page can offer
PRESETS: dict[str, tuple[tuple[str, ...], str | None]] = {
    # condition `mode:` -> (interaction modes, conversation method)
    "plugir": (("conversation",), "plugir"),  # PlugIR questions, context reformulation, filtering
    "zs": (("conversation",), "zs"),  # PlugIR's ZS baseline: questions, dialogue concatenated as the query
    "feedback": (("feedback",), None),  # relevance feedback on the shown images
    "composed": (("composed",), None),  # a reference image + a relative caption
    "mixed": (("conversation", "feedback", "composed"), "plugir"),  # all of the above, the user chooses
    "text": (("text",), None),  # plain text search: rewrite the query each round
    # the belief over the collection (issue 23): every action (answers, marks, a reference's caption) is
    # evidence for one posterior and each page comes from it, with the belief's own questions (no LLM)
    "belief": (("conversation", "feedback", "composed"), None),
}
COUNTERBALANCE = ("latin", "random", "none")
SETTINGS_SECTIONS = registry.sections()  # engine mode configs a condition may override

DEFAULT_CONSENT = (
    "This is a study of image search systems. You will search for images and answer a few questions. "
    "Everything you type and click is logged with timestamps, under the participant id shown on the "
    "next page, and used for research only. You may stop at any time."
)


@dataclass(frozen=True)
class Condition:
    """One experimental condition: which interaction modes its search page offers, and how they run."""

    name: str  # the key under `conditions:` (logged with every event; participants never see it)
    preset: str  # the `mode:` named in the file (one of PRESETS), or "custom" when `modes:` lists them
    modes: tuple[str, ...]  # interaction modes offered, a subset of MODES
    label: str = ""  # what participants see, e.g. "System A" ("" shows nothing)
    k: int | None = None  # results per round (None: the study's k)
    conversation_method: str | None = None  # PlugIR method for the conversation mode (registry.method_names)
    feedback_method: str | None = None  # relevance-feedback method (None: the engine default)
    composed_method: str | None = None  # composed-search method (None: the engine default)
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # engine mode config overrides,
    #                                                     by section ("plugir", "feedback", "composed")

    @property
    def belief(self) -> bool:
        """The search runs on the belief over the collection (`mode: belief`)."""
        return self.preset == "belief"


@dataclass(frozen=True)
class TaskSpec:
    """A task listed in the study file."""

    target: str  # the target image id (its path relative to the indexed folder)
    prompt: str = ""  # text shown instead of (or beside) the target, e.g. a description to start from
    rounds: int | None = None  # this task's round budget (None: the study's `rounds`)
    time_limit_s: int | None = None  # this task's time limit in seconds (None: the study's `time_limit_s`)
    lock_description_s: int | None = None  # seconds the organiser's description (the prompt) is the only query
    #                                        (None: the study's `lock_description_s`)


@dataclass(frozen=True)
class SampleSpec:
    """`tasks: {sample: N, seed: S}`: N targets drawn from the index with a seeded generator."""

    n: int
    seed: int = 0


@dataclass(frozen=True)
class Task:
    """A task resolved against an index: what every participant may be given."""

    index: int  # position in the study's task list (0-based), stable across participants
    target: str  # target image id
    prompt: str  # text shown to the participant ("" when none)
    rounds: int  # round budget
    time_limit_s: int | None = None  # seconds to find the target (None: no limit); the task then ends "timeout"
    practice: bool = False  # the practice task: done first, never analysed
    lock_description_s: int = 0  # the prompt is run as the first query and the participant cannot type their
    #                              own for this many seconds after the start (VBS: 45; 0: no lock)


@dataclass(frozen=True)
class StudyConfig:
    """A validated study file."""

    study_id: str  # names the log database (<IIR_STUDY_DIR>/<study_id>.sqlite) and every export row
    conditions: tuple[Condition, ...]
    tasks: tuple[TaskSpec, ...] | SampleSpec  # listed targets, or a seeded sample of the index
    title: str = ""  # page title ("" = "Image search study")
    index: str = "demo"  # "demo" (the demo gallery) or an index folder; the app serves it
    index_named: bool = False  # True when the file gives `index:` (else `python app.py --index` may choose)
    rounds: int = 5  # round budget per task: search rounds after the first description (PlugIR: 10)
    k: int = DEFAULT_K  # results shown per round (a condition may override)
    show_target: bool = True  # show the target image on the briefing and beside the search page
    counterbalance: str = "latin"  # "latin" (balanced Latin square by participant number), "random"
    #                                (seeded shuffle per participant id) or "none" (file order)
    seed: int = 0  # seed of "random" counterbalancing
    consent: str = DEFAULT_CONSENT  # shown first; the participant must agree to go on
    instructions: str = ""  # shown on every task briefing (markdown)
    questions: tuple[Question, ...] = ()  # asked after every task (`questionnaires.after_task` or `questions`)
    after_condition: tuple[Question, ...] = ()  # asked after the last task of each condition's block
    end_questions: tuple[Question, ...] = ()  # asked once at the end of the study
    recruitment: Recruitment = Recruitment()  # recruitment platform and completion codes
    time_limit_s: int | None = None  # seconds per task (a task may override; None: no limit)
    practice: TaskSpec | None = None  # a practice task done first under the first condition, never analysed
    breaks: bool = False  # a break page between conditions
    closes_at: float | None = None  # unix time after which nobody new may start (returning participants are told)
    dres: DresSettings | None = None  # the live link to a DRES server (`dres:`; None: no link), see study.dres
    scoreboard: bool = False  # serve the public, read-only KIS scoreboard at /scoreboard (a competition)
    competition: bool = False  # tasks start only when the organiser opens them on /admin, for everyone at once
    lock_description_s: int = 0  # every task's description lock in seconds (a task may override; 0: none)
    source: str = ""  # the file it was read from

    def condition(self, name: str) -> Condition:
        for c in self.conditions:
            if c.name == name:
                return c
        raise StudyConfigError(f"no condition {name!r} in study {self.study_id!r}")

    @property
    def likert(self) -> tuple[Question, ...]:
        return tuple(q for q in self.questions if q.type == "likert")

    def form(self, name: str) -> tuple[Question, ...]:
        """The items of questionnaire `name`: "task", "condition" or "end"."""
        return {"task": self.questions, "condition": self.after_condition, "end": self.end_questions}[name]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tasks"] = asdict(self.tasks) if isinstance(self.tasks, SampleSpec) else [asdict(t) for t in self.tasks]
        d["practice"] = asdict(self.practice) if self.practice else None
        return json.loads(json.dumps(d))  # plain JSON types (tuples become lists)


# ---------------------------------------------------------------- reading


def load_study(path: str | Path) -> StudyConfig:
    """Read and validate a study file (.yaml/.yml or .json)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise StudyConfigError(f"study file not found: {path}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise StudyConfigError(f"cannot read study file {path}: {e}") from e
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise StudyConfigError(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from e
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            why = " ".join(str(getattr(e, "problem", None) or e).split())  # one line (a ReaderError spans two)
            raise StudyConfigError(f"{path} is not valid YAML{where}: {why}") from e
    try:
        return parse_study(data, source=str(path))
    except StudyConfigError as e:
        raise StudyConfigError(f"{path}: {e}") from None


def parse_study(data: Any, source: str = "") -> StudyConfig:
    """Validate a study given as a mapping (the parsed file)."""
    if not isinstance(data, Mapping):
        raise StudyConfigError(f"a study file holds a mapping of fields (study_id, conditions, tasks, ...), "
                               f"got {type(data).__name__}")
    known = ("study_id", "title", "index", "rounds", "k", "show_target", "counterbalance", "seed", "consent",
             "instructions", "conditions", "tasks", "questions", "questionnaires", "recruitment", "time_limit_s",
             "practice", "breaks", "closes_at", "dres", "scoreboard", "competition", "lock_description_s")
    _check_keys(data, known, "")
    for req in ("study_id", "conditions", "tasks"):
        if req not in data:
            raise StudyConfigError(f"{req}: missing; every study file needs study_id, conditions and tasks")
    study_id = _id(data["study_id"], "study_id")
    rounds = _int(data.get("rounds", 5), "rounds", 1, 100)
    k = _int(data.get("k", 10), "k", 1, 100)
    counter = _choice(data.get("counterbalance", "latin"), "counterbalance", COUNTERBALANCE)
    conditions = _conditions(data["conditions"])
    tasks = _tasks(data["tasks"])
    if isinstance(tasks, tuple) and len(tasks) < len(conditions):
        raise StudyConfigError(f"tasks: {len(tasks)} task(s) for {len(conditions)} conditions; every participant "
                               "meets every condition, so list at least one task per condition")
    if isinstance(tasks, SampleSpec) and tasks.n < len(conditions):
        raise StudyConfigError(f"tasks.sample: {tasks.n} task(s) for {len(conditions)} conditions; sample at least "
                               "one task per condition")
    forms = parse_questionnaires(data)
    limit = data.get("time_limit_s")
    practice = data.get("practice")
    if practice is not None:
        practice = _tasks([practice], "practice")[0]
        if isinstance(tasks, tuple) and any(t.target == practice.target for t in tasks):
            raise StudyConfigError(f"practice.target: {practice.target!r} is also a task; practise on another image")
    return StudyConfig(
        study_id=study_id,
        title=_str(data.get("title", ""), "title"),
        index=_str(data.get("index", "demo"), "index") or "demo",
        index_named=bool(_str(data.get("index", ""), "index")),
        rounds=rounds,
        k=k,
        show_target=_bool(data.get("show_target", True), "show_target"),
        counterbalance=counter,
        seed=_int(data.get("seed", 0), "seed", 0, 2**31 - 1),
        consent=_str(data.get("consent", DEFAULT_CONSENT), "consent") or DEFAULT_CONSENT,
        instructions=_str(data.get("instructions", ""), "instructions"),
        conditions=conditions,
        tasks=tasks,
        questions=forms["after_task"],
        after_condition=forms["after_condition"],
        end_questions=forms["end"],
        recruitment=parse_recruitment(data.get("recruitment")),
        time_limit_s=None if limit is None else _int(limit, "time_limit_s", 10, 24 * 3600),
        practice=practice,
        breaks=_bool(data.get("breaks", False), "breaks"),
        closes_at=parse_when(data.get("closes_at"), "closes_at"),
        dres=parse_dres(data.get("dres")),
        scoreboard=_bool(data.get("scoreboard", False), "scoreboard"),
        competition=_competition(data, counter, conditions),
        lock_description_s=_int(data.get("lock_description_s", 0), "lock_description_s", 0, 3600),
        source=source,
    )


# ---------------------------------------------------------------- sections


def _competition(data: Mapping, counter: str, conditions: Sequence[Condition]) -> bool:
    """`competition:`, checked: the organiser opens task N for everyone, so all meet the tasks in file order."""
    on = _bool(data.get("competition", False), "competition")
    if on and (counter == "random" or (counter == "latin" and len(conditions) > 1)):
        raise StudyConfigError(f"competition: the organiser opens each task for everyone at once, so every "
                               f"participant must meet the tasks in the file's order; counterbalance "
                               f"{counter!r} reorders them: set counterbalance: none")
    return on


def _conditions(value: Any) -> tuple[Condition, ...]:
    if isinstance(value, Sequence) and not isinstance(value, str):  # a list of {name: ..., mode: ...}
        items = []
        for i, c in enumerate(value):
            if not isinstance(c, Mapping) or "name" not in c:
                raise StudyConfigError(f"conditions[{i}]: give a mapping with a name, e.g. {{name: A, mode: plugir}}")
            items.append((c["name"], {k: v for k, v in c.items() if k != "name"}))
    elif isinstance(value, Mapping):
        items = list(value.items())
    else:
        raise StudyConfigError("conditions: give a mapping of condition name -> settings, e.g. {A: {mode: plugir}}")
    if not items:
        raise StudyConfigError("conditions: empty; define at least one condition")
    out: list[Condition] = []
    for name, spec in items:
        name = _id(name, "conditions: a condition name")
        if any(c.name == name for c in out):
            raise StudyConfigError(f"conditions.{name}: defined twice")
        out.append(_condition(name, spec))
    return tuple(out)


def _condition(name: str, spec: Any) -> Condition:
    where = f"conditions.{name}"
    if isinstance(spec, str):
        spec = {"mode": spec}
    if not isinstance(spec, Mapping):
        raise StudyConfigError(f"{where}: give a mapping such as {{mode: plugir}}, got {spec!r}")
    _check_keys(spec, ("mode", "modes", "label", "k", "conversation_method", "feedback_method", "composed_method",
                       "settings"), where)
    if ("mode" in spec) == ("modes" in spec):
        raise StudyConfigError(f"{where}: give exactly one of mode (one of {', '.join(PRESETS)}) or modes "
                               f"(a list of {', '.join(MODES)})")
    if "mode" in spec:
        preset = _choice(spec["mode"], f"{where}.mode", tuple(PRESETS))
        modes, conv = PRESETS[preset]
    else:
        raw = spec["modes"]
        if isinstance(raw, str) or not isinstance(raw, Sequence) or not raw:
            raise StudyConfigError(f"{where}.modes: give a non-empty list of {', '.join(MODES)}")
        modes = tuple(dict.fromkeys(_choice(m, f"{where}.modes", MODES) for m in raw))
        preset, conv = "custom", ("plugir" if "conversation" in modes else None)
    if "conversation_method" in spec:
        if "conversation" not in modes:
            raise StudyConfigError(f"{where}.conversation_method: this condition has no conversation mode")
        conv = _choice(spec["conversation_method"], f"{where}.conversation_method",
                       registry.method_names("conversation"))
    fb = spec.get("feedback_method")
    if fb is not None:
        if "feedback" not in modes:
            raise StudyConfigError(f"{where}.feedback_method: this condition has no feedback mode")
        fb = _choice(fb, f"{where}.feedback_method", registry.method_names("feedback"))
    cm = spec.get("composed_method")
    if cm is not None:
        if "composed" not in modes:
            raise StudyConfigError(f"{where}.composed_method: this condition has no composed mode")
        cm = _choice(cm, f"{where}.composed_method", registry.method_names("composed"))
    settings = spec.get("settings", {}) or {}
    if not isinstance(settings, Mapping):
        raise StudyConfigError(f"{where}.settings: give a mapping of section -> overrides, e.g. "
                               "{plugir: {n_questions: 3}}")
    _check_keys(settings, SETTINGS_SECTIONS, f"{where}.settings")
    for sec, over in settings.items():
        if not isinstance(over, Mapping):
            raise StudyConfigError(f"{where}.settings.{sec}: give a mapping of field -> value")
    k = spec.get("k")
    return Condition(
        name=name, preset=preset, modes=modes, label=_str(spec.get("label", ""), f"{where}.label"),
        k=None if k is None else _int(k, f"{where}.k", 1, 100), conversation_method=conv,
        feedback_method=fb, composed_method=cm, settings={s: dict(o) for s, o in settings.items()},
    )


def _tasks(value: Any, name: str = "tasks") -> tuple[TaskSpec, ...] | SampleSpec:
    if isinstance(value, Mapping):
        _check_keys(value, ("sample", "seed"), "tasks")
        if "sample" not in value:
            raise StudyConfigError("tasks: give a list of target image ids, or {sample: N, seed: S}")
        return SampleSpec(n=_int(value["sample"], "tasks.sample", 1, 10_000),
                          seed=_int(value.get("seed", 0), "tasks.seed", 0, 2**31 - 1))
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise StudyConfigError("tasks: give a non-empty list of target image ids, or {sample: N, seed: S}")
    out: list[TaskSpec] = []
    for i, t in enumerate(value):
        where = f"tasks[{i}]" if name == "tasks" else name
        if isinstance(t, str):
            t = {"target": t}
        if not isinstance(t, Mapping):
            raise StudyConfigError(f"{where}: give an image id or {{target: ID, prompt: TEXT, rounds: N}}, got {t!r}")
        _check_keys(t, ("target", "prompt", "rounds", "time_limit_s", "lock_description_s"), where)
        target = _str(t.get("target", ""), f"{where}.target").strip()
        if not target:
            raise StudyConfigError(f"{where}.target: missing; give the target image id")
        if any(x.target == target for x in out):
            raise StudyConfigError(f"{where}.target: {target!r} is listed twice")
        rounds, limit = t.get("rounds"), t.get("time_limit_s")
        out.append(TaskSpec(target=target, prompt=_str(t.get("prompt", ""), f"{where}.prompt").strip(),
                            rounds=None if rounds is None else _int(rounds, f"{where}.rounds", 1, 100),
                            time_limit_s=None if limit is None else _int(limit, f"{where}.time_limit_s", 10,
                                                                          24 * 3600),
                            lock_description_s=None if t.get("lock_description_s") is None else _int(
                                t["lock_description_s"], f"{where}.lock_description_s", 0, 3600)))
    return tuple(out)


# ---------------------------------------------------------------- against an index


def resolve_tasks(study: StudyConfig, ids: Sequence[str], caption_of: Callable[[str], str] | None = None) -> list[Task]:
    """The study's tasks for an index holding `ids`: listed targets checked, or a seeded sample drawn.

    When the target is not shown and a task has no prompt, the prompt is the target's caption from
    `caption_of` (a study that hides the target must tell the participant what to look for).
    """
    known = set(ids)
    if isinstance(study.tasks, SampleSpec):
        pool = sorted(known - ({study.practice.target} if study.practice else set()))  # never the practice image
        if study.tasks.n > len(pool):
            raise StudyConfigError(f"tasks.sample: {study.tasks.n} tasks asked but the index holds {len(pool)} images")
        specs = [TaskSpec(target=t) for t in random.Random(study.tasks.seed).sample(pool, study.tasks.n)]
    else:
        specs = list(study.tasks)
        missing = [t.target for t in specs if t.target not in known]
        if missing:
            close = difflib.get_close_matches(missing[0], list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise StudyConfigError(f"tasks: {len(missing)} target(s) not in the index, e.g. {missing[0]!r}{hint}; "
                                   "targets are image ids: paths relative to the indexed folder")
    out = []
    for i, s in enumerate(specs):
        prompt = s.prompt
        if not study.show_target and not prompt:
            prompt = caption_of(s.target) if caption_of else ""
            if not prompt:
                raise StudyConfigError(f"tasks[{i}]: the target is not shown (show_target: false) and the task has "
                                       "no prompt and the index no caption for it: give a prompt")
        lock = study.lock_description_s if s.lock_description_s is None else s.lock_description_s
        if lock and not prompt:
            raise StudyConfigError(f"tasks[{i}]: lock_description_s runs the organiser's description first: give "
                                   "the task a prompt")
        out.append(Task(index=i, target=s.target, prompt=prompt, rounds=s.rounds or study.rounds,
                        time_limit_s=s.time_limit_s or study.time_limit_s, lock_description_s=lock))
    return out


def resolve_practice(study: StudyConfig, ids: Sequence[str], caption_of: Callable[[str], str] | None = None
                     ) -> Task | None:
    """The practice task (index -1, never analysed), checked against the index; None when the study has none."""
    s = study.practice
    if s is None:
        return None
    if s.target not in set(ids):
        raise StudyConfigError(f"practice.target: {s.target!r} is not in the index; give an image id of the index")
    prompt = s.prompt or ("" if study.show_target else (caption_of(s.target) if caption_of else ""))
    if not study.show_target and not prompt:
        raise StudyConfigError("practice: the target is not shown and the practice task has no prompt: give one")
    return Task(index=-1, target=s.target, prompt=prompt, rounds=s.rounds or study.rounds,
                time_limit_s=s.time_limit_s or study.time_limit_s, practice=True)


def study_warnings(study: StudyConfig, n_tasks: int | None = None) -> list[str]:
    """Design remarks that are not errors (shown by `study validate`)."""
    notes = []
    n = n_tasks if n_tasks is not None else (study.tasks.n if isinstance(study.tasks, SampleSpec) else len(study.tasks))
    m = len(study.conditions)
    if m > 1 and n % m:
        notes.append(f"{n} tasks do not split evenly over {m} conditions: some conditions get one task more")
    if study.counterbalance == "latin" and m > 1:
        rows = m if m % 2 == 0 else 2 * m
        notes.append(f"latin: the design is balanced for multiples of {rows} participants")
    return notes
