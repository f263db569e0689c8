"""Dry run of a study: simulated participants go through the whole study file with the same runner,
database and report as people, so a researcher checks the flow, the timings and the analysis before
recruiting anyone.

A simulated participant consents (with a made-up recruitment id when the study recruits on a
platform), then for each task in their plan: describes the target with what a person looking at it could
say (`participant_text`: a caption of the target other than the one the index ranks with, else the
task's prompt from the study file; never the index's own caption unless nothing else exists, which the
dry run then says), and while the round budget lasts uses the condition's first mode, driven by the evaluation's simulated
user (`interactive_ir.evaluation.simulators.make_user`): answers questions, marks results, writes
relative captions, or searches with another caption. It picks the target when the simulated user's
relevance actor says it is shown (in this or an earlier round), else gives up. Questionnaire items get
seeded random valid answers (attention checks answered right 90% of the time; screening answers avoided).

Time is simulated: the runner's clock advances by a plausible time per action (`SimTiming`), so time to
success and time limits behave as in a real session. The simulated user is a stand-in that knows the
target's other captions; its results check the study's plumbing and give no comparison of the conditions.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from interactive_ir.errors import SessionError
from interactive_ir.study.config import Task
from interactive_ir.study.config_types import Question
from interactive_ir.study.runner import StudyRunner, TaskTimeout


@dataclass(frozen=True)
class SimTiming:
    """Seconds a simulated participant spends per action (uniform between the two bounds)."""

    read_brief: tuple[float, float] = (5, 20)  # reading a task's briefing
    describe: tuple[float, float] = (10, 40)  # typing the first description
    round: tuple[float, float] = (8, 35)  # looking at results and acting on them
    form_item: tuple[float, float] = (2, 6)  # answering one questionnaire item


class SimClock:
    """A settable clock for the runner."""

    def __init__(self, start: float):
        self.t = start

    def __call__(self) -> float:
        return self.t

    def wait(self, rng: random.Random, span: tuple[float, float]) -> None:
        self.t += rng.uniform(*span)


def answer_item(q: Question, rng: random.Random) -> object:
    """A seeded random valid answer to one item."""
    if q.answer is not None:
        return q.answer if rng.random() < 0.9 else _random_answer(q, rng, avoid=(q.answer,))
    return _random_answer(q, rng, avoid=q.screen_out)


def _random_answer(q: Question, rng: random.Random, avoid=()) -> object:
    for _ in range(100):
        if q.type == "likert":
            v = rng.randint(1, q.points)
        elif q.type == "choice":
            v = rng.choice(q.options)
        elif q.type in ("slider", "number"):
            steps = int((q.maximum - q.minimum) / (q.step or 1))
            v = q.minimum + rng.randint(0, steps) * (q.step or 1)
            v = int(v) if float(v).is_integer() else v
        else:
            return ""
        if v not in avoid:
            return v
    return v


# where a simulated participant's description of a target came from (`ParticipantText.source`)
OTHER_CAPTIONS = "other captions"  # captions of the target the index stores beside the one it ranks with
TASK_PROMPT = "task prompt"  # the task's prompt written in the study file
INDEX_CAPTION = "index caption"  # only the index's own caption: the dry run then checks the flow only
NOTHING = "nothing"  # no caption and no prompt: the participant types a bare "a photo" (flow check only)
FLOW_ONLY = (INDEX_CAPTION, NOTHING)  # sources that make the dry run a check of the flow only


@dataclass(frozen=True)
class ParticipantText:
    """What a simulated participant says about a task's target, and where it came from."""

    description: str  # the first description typed
    captions: tuple[str, ...]  # further things it may say (a new search), in order
    source: str  # OTHER_CAPTIONS, TASK_PROMPT, INDEX_CAPTION or NOTHING


def participant_text(index, task: Task, study_prompt: str = "") -> ParticipantText:
    """What a person shown `task`'s target could say, without the index's own caption of it (the one it ranks
    with, `records[row].captions[0]`): the target's other stored captions, else `study_prompt` (the prompt the
    study file gives the task; "" when the study file gives none, e.g. a prompt made from the index caption),
    else the index caption itself, marked INDEX_CAPTION, else "a photo", marked NOTHING (never the target's id)."""
    row = index.row_of.get(task.target)
    stored = [c for c in (index.records[row].captions if row is not None else ()) if c and c.strip()]
    others = [c for c in stored[1:] if c != stored[0]]
    if others:
        return ParticipantText(others[0], tuple(others[1:]), OTHER_CAPTIONS)
    if study_prompt.strip():
        return ParticipantText(study_prompt.strip(), (), TASK_PROMPT)
    if stored:
        return ParticipantText(stored[0], (), INDEX_CAPTION)
    return ParticipantText("a photo", (), NOTHING)


def simulate_participant(runner: StudyRunner, user, clock: SimClock, n: int,
                         text_of: Callable[[Task], ParticipantText], timing: SimTiming = SimTiming(),
                         seed: int = 0, sources: dict | None = None) -> str:
    """Run one simulated participant through the study; how it ended (the progress phase).
    `text_of`: what the participant says about a task's target; `sources` (when given) counts, by
    `ParticipantText.source`, where each task's description came from."""
    from interactive_ir.evaluation.queries import Query

    rng = random.Random(f"{seed}:{n}")
    runner.participants.competition = None  # a dry run of a competition: no organiser, each task starts at once
    rec = runner.study.recruitment
    arrival = None
    if rec.platform != "none":
        key = {"prolific": "PROLIFIC_PID", "mturk": "workerId"}[rec.platform]
        arrival = {"platform": rec.platform, "id": f"SIM{seed}x{n:05d}", "params": {key: f"SIM{seed}x{n:05d}"}}
    p, _token = runner.join(True, arrival)
    pid = p.participant
    while True:
        p = runner.progress(pid)
        if p.phase == "questionnaire":
            items = runner.study.form(p.form)
            clock.t += sum(rng.uniform(*timing.form_item) for _ in items)
            runner.submit_questionnaire(pid, {q.id: answer_item(q, rng) for q in items})
            continue
        if p.phase != "briefing":
            return p.phase
        clock.wait(rng, timing.read_brief)
        p = runner.start_task(pid)
        said = text_of(p.current.task)
        if sources is not None:
            sources[said.source] = sources.get(said.source, 0) + 1
        query = Query(qid=f"{pid}:{p.current.position}", target=p.current.task.target, description=said.description,
                      captions=said.captions)
        modes = runner.condition_of(p).modes
        try:
            _search_task(runner, pid, user, query, modes, clock, rng, timing)
        except TaskTimeout:
            continue


def _search_task(runner, pid, user, query, modes, clock, rng, timing) -> None:
    from interactive_ir.evaluation.knowledge import knowledge_of

    k = knowledge_of(query)  # what the simulated participant knows: captions of the image it was shown, and
    #                          whether a shown image is that one (by hash); never the index row or rank
    p = runner.progress(pid)
    if p.described:  # the task's locked organiser description ran first: own words once the lock ends
        clock.t += p.lock_left(runner.clock())
    else:
        clock.wait(rng, timing.describe)
        runner.describe(pid, query.description)
    extra = list(query.captions)
    while True:
        p = runner.progress(pid)
        s = p.session
        judgement = user.actor.judge(k, s.shown_ids(), s.round)  # the actor judges everything seen
        clock.wait(rng, timing.round)
        seen_target = next((i for i in judgement.truth if k.recognise.is_target(i)), None)
        if seen_target is not None:
            runner.pick(pid, seen_target)
            return
        if not p.can_search:
            runner.give_up(pid)
            return
        mode = modes[0]
        try:
            if mode == "conversation" and s.pending_question:
                runner.answer(pid, user.answerer.answer(k, s.pending_question).text or "I do not know")
            elif mode == "conversation":
                runner.skip(pid)
            elif mode == "feedback":
                j = user.actor.judge(k, s.last.shown, s.round)
                if j.relevant or j.irrelevant:
                    runner.feedback(pid, j.relevant, j.irrelevant)
                else:
                    runner.give_up(pid)
                    return
            elif mode == "composed":
                runner.relative(pid, user.relative.describe(k, s.last.shown[0]).text or query.description)
            else:
                runner.search(pid, extra.pop(0) if extra else query.description)
        except TaskTimeout:
            raise
        except SessionError:
            runner.give_up(pid)
            return
