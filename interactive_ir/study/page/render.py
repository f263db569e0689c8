"""HTML and Markdown of the study page: progress, briefing, target, result cards, admin tables.

Pure functions of the runner's `Progress` and the engine (read only); every indexed or typed string is
escaped. Cards reuse the main app's CSS classes (assets/ui/app.css) and its click script (cards.js:
buttons with `data-action` and `data-id`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from interactive_ir.study.config import Condition, StudyConfig
from interactive_ir.study.progress import Progress
from interactive_ir.ui.render import answer_words, esc, options_html
from interactive_ir.ui.serving.media import image_url

CARD_ACTIONS = {  # data-action -> (label, tooltip, needed mode or None)
    "pick": ("This is it", "This is the image I am looking for", None),
    "relevant": ("✓ Relevant", "Looks like my image (click again to unmark)", "feedback"),
    "irrelevant": ("✗ Not relevant", "Does not look like my image (click again to unmark)", "feedback"),
    "reference": ("Use as reference", "Say how my image differs from this one", "composed"),
}

STYLE = """<style>
.iir-study-target { max-width: 100%; max-height: 260px; object-fit: contain; border: 3px solid #f59e0b;
  border-radius: 8px; background: var(--background-fill-secondary); }
.iir-study-target.small { max-height: 180px; }
.iir-study-prompt { font-size: 1.05rem; padding: .4rem .6rem; border-left: 4px solid #f59e0b; background: #fffbeb;
  color: #78350f; border-radius: 4px; }
.iir-study-budget { font-weight: 600; }
#iir-results .iir-btn.iir-pick { background: #fef3c7; color: #92400e; border-color: #f59e0b; grid-column: span 2; }
.iir-timer { display: inline-block; margin-left: .6rem; font-variant-numeric: tabular-nums; font-weight: 700; }
.iir-timer.is-low { color: #b91c1c; }
.iir-working { display: inline-flex; gap: .5rem; align-items: center; font-weight: 600; color: #1d4ed8; }
.iir-working::before { content: ""; width: .9rem; height: .9rem; border: 2px solid #93c5fd; border-top-color: #1d4ed8;
  border-radius: 50%; animation: iir-spin 0.8s linear infinite; }
@keyframes iir-spin { to { transform: rotate(360deg); } }
.iir-code { font-size: 1.3rem; padding: .2rem .5rem; background: #ecfdf5; border: 1px solid #10b981; }
.iir-strip { display: flex; gap: .4rem; overflow-x: auto; padding: .3rem 0; }
.iir-strip figure { margin: 0; text-align: center; font-size: .75rem; }
.iir-strip img { height: 64px; border-radius: 4px; }
.iir-hidden { display: none !important; }
.iir-scale .wrap { gap: 2px !important; } .iir-scale label { padding: 2px 6px !important; min-width: 0 !important; }
/* issue 39: on a phone the first results are on the first screen (the first was at y=916 of 844): the search
   page's two columns dissolve into one list ordered target (small), description, results, then the rest */
@media (max-width: 600px) {
  #iir-study-search > .row, #iir-study-search > .row > .column { display: contents !important; }
  #iir-study-search { display: flex !important; flex-direction: column; }
  #iir-study-search > * , #iir-study-search > .row > .column > * { order: 5; }
  #iir-study-search #iir-study-target { order: 1; } #iir-study-search #iir-study-budget { order: 2; }
  #iir-study-search #iir-desc { order: 3; } #iir-study-search #iir-working, #iir-study-search #iir-results { order: 4; }
  .iir-study-target, .iir-study-target.small { max-height: 96px; }
}
</style>"""


@dataclass
class TabState:
    """Per-tab marks and reference for the current round (the runner holds everything else)."""

    marks: dict[str, bool] = field(default_factory=dict)  # image id -> relevant (True) / not relevant (False)
    reference: str = ""  # a shown image chosen as the reference ("" = the last round's top result)
    notice: str = ""  # the last message for the status line
    round: int = -1  # the round the marks belong to (they are dropped when a new round is shown)
    arrival: dict | None = None  # recruitment platform parameters read from the page URL (data only)
    link_error: str = ""  # what is wrong with the URL's platform parameters ("" = nothing)
    confirm_give_up: bool = False  # "Give up" was pressed once: the confirmation is showing
    expert: bool | None = None  # the URL's expert=1 / expert=0: an expert or novice session (None: not said)
    drawn: str = ""  # what the page last drew, in short (a competition's poll redraws only when it changes)
    client: str = ""  # the address the tab's last join came from (enrolments are limited per address)
    seen: int = -1  # the participant's last event id in the log that `marks` and `reference` reflect (-1: reload)

    def sync(self, p: Progress | None) -> None:
        rnd = p.session.round if p is not None and p.session is not None else -1
        if rnd != self.round or p is None or p.phase != "search":
            self.confirm_give_up = False  # a new round, task or page drops a pending "Give up?"
        if rnd != self.round:
            self.marks.clear()
            self.reference = ""
            self.round = rnd

    def marked(self) -> tuple[list[str], list[str]]:
        return [i for i, v in self.marks.items() if v], [i for i, v in self.marks.items() if not v]


def task_name(p: Progress) -> str:
    return "Practice task" if p.practising else f"Task {p.task_number} of {p.n_tasks}"


def header_md(study: StudyConfig, p: Progress | None) -> str:
    title = study.title or "Image search study"
    if p is None:
        return f"# {esc(title)}"
    where = ""
    if p.phase in ("briefing", "search", "questionnaire") and p.current is not None:
        where = f" · **{task_name(p)}**"
    elif p.phase == "done":
        where = f" · all {p.n_tasks} tasks done"
    return f"# {esc(title)}\nParticipant `{esc(p.participant)}`{where}"


def target_html(engine, target: str, small: bool = False) -> str:
    row = engine.index.row_of.get(target)
    if row is None:
        return ""
    url = image_url(engine.index, target)
    cls = "iir-study-target small" if small else "iir-study-target"
    if not url:  # caption-only collection: describe the target in words
        return f'<div class="iir-study-prompt">{esc(engine.index.records[row].caption or target)}</div>'
    return f'<img class="{cls}" src="{esc(url)}" alt="the target image">'


def _md_plain(text: str) -> str:
    """`text` as Markdown shows it literally: HTML escaped, Markdown's markup characters backslashed."""
    return "".join("\\" + c if c in "\\`*_[]<>#|~" else c for c in esc(text))


def brief_md(study: StudyConfig, p: Progress, condition: Condition) -> str:
    a = p.current
    lines = [f"## {task_name(p)}"]
    if p.practising:
        lines.append("This task is for practice: it lets you try the system, and it is not counted.")
    prev = p.plan[p.index - 1] if p.index > 0 else None
    if study.breaks and prev is not None and prev.condition != a.condition:
        lines.append('<div class="iir-study-prompt" id="iir-break">Time for a short break. The next tasks use '
                     "another system: take a minute, then press <b>Start searching</b> when you are ready.</div>")
    if condition.label:
        lines.append(f"You will use **{_md_plain(condition.label)}**.")  # one bold run (<b> in Markdown split it)
    if study.show_target:
        lines.append("Find the image shown here in the collection.")
    if a.task.prompt:
        lines.append(f'<div class="iir-study-prompt">Look for: {esc(a.task.prompt)}</div>')
    lines.append(f"You have **{a.task.rounds} round(s)** after your first description.")
    if a.task.time_limit_s:
        lines.append(f"You have **{_duration(a.task.time_limit_s)}** for this task; a timer shows the time left.")
    if study.instructions:
        lines.append(study.instructions)
    lines.append(how_to(condition))
    return "\n\n".join(lines)


def how_to(condition: Condition) -> str:
    steps = ["Start by describing the image in a few words."]
    if "conversation" in condition.modes:
        steps.append("The system asks questions: answer them (or skip a question).")
    if "feedback" in condition.modes:
        steps.append("Mark results ✓ relevant or ✗ not relevant, then press **More like my marks**.")
    if "composed" in condition.modes:
        steps.append("Pick a result as the reference and say how your image differs from it.")
    if "text" in condition.modes:
        steps.append("Rewrite your search to get new results.")
    steps.append("When you see the image, press **This is it** on it. If you cannot find it, press **Give up**.")
    return "\n".join(f"- {s}" for s in steps)


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s} s" if m and s else f"{m} min" if m else f"{s} s"


def timer_html(p: Progress, now: float) -> str:
    """A countdown of the task's time (assets/study/timer.js ticks it and reports 0 to the server)."""
    left = p.time_left(now)
    if left is None:
        return ""
    m, s = divmod(int(left), 60)
    return (f'<span class="iir-timer" role="timer" data-left="{left:.1f}" data-key="{p.index}:{left:.1f}">'
            f'Time left: <span class="iir-clock">{m}:{s:02d}</span></span>')


def budget_md(p: Progress, now: float | None = None) -> str:
    timer = timer_html(p, now) if now is not None else ""
    return _budget(p) + timer


def _budget(p: Progress) -> str:
    if not p.described:
        return f'<span class="iir-study-budget">{p.budget} round(s) after your description</span>'
    if p.rounds_left:
        return f'<span class="iir-study-budget">{p.rounds_used} of {p.budget} rounds after your description used · {p.rounds_left} left</span>'
    return ('<span class="iir-study-budget">All rounds used: press <b>This is it</b> on the image if it is shown, '
            "else <b>End task</b></span>")


def results_html(engine, p: Progress, condition: Condition, tab: TabState) -> str:
    s = p.session
    if s is None or not s.turns:
        return '<div class="iir-empty">Describe the image to see the first results.</div>'
    hits = engine.hits_of(s.last)
    if not hits:
        return '<div class="iir-empty">No more images to show: every image was shown already.</div>'
    open_ = not p.ended
    cards = []
    for rank, h in enumerate(hits, 1):
        mark = tab.marks.get(h.id)
        cls = ["iir-card"] + (["is-rel"] if mark is True else ["is-irr"] if mark is False else []) + (
            ["is-ref"] if tab.reference == h.id else [])
        url = image_url(engine.index, h.id)
        pic = (f'<img src="{esc(url)}" alt="{esc(h.caption or h.id)}" loading="lazy">' if url
               else f'<div class="iir-noimg">{esc(h.caption or h.id)}</div>')
        buttons = []
        if open_:
            for action, (label, tip, mode) in CARD_ACTIONS.items():
                if mode is not None and mode not in condition.modes:
                    continue
                pressed = {"relevant": mark is True, "irrelevant": mark is False,
                           "reference": tab.reference == h.id}.get(action)
                aria = "" if pressed is None else f' aria-pressed="{"true" if pressed else "false"}"'
                buttons.append(f'<button type="button" class="iir-btn iir-{action}" data-action="{action}" '
                               f'data-id="{esc(h.id)}" title="{esc(tip)}"{aria}>{label}</button>')
        actions = f'<div class="iir-actions">{"".join(buttons)}</div>' if buttons else ""
        cards.append(f'<article class="{" ".join(cls)}" data-id="{esc(h.id)}" data-rank="{rank}" role="listitem">'
                     f'<div class="iir-pic"><span class="iir-rank">#{rank}</span>{pic}</div>{actions}</article>')
    head = f'<div class="iir-page-head">Round {s.last.round + 1}: {len(s.last.shown)} results</div>'  # as the main app
    grid = f'{head}<div class="iir-grid" role="list" aria-label="results">{"".join(cards)}</div>'
    return grid + (strip_html(engine, p) if open_ else "")


def strip_html(engine, p: Progress) -> str:
    """Images of the earlier rounds (not on the page now), each with "This is it": a target passed over in an
    earlier round can still be picked."""
    s = p.session
    now = set(s.last.shown) if s and s.last else set()
    figures = []
    for t in (s.turns[:-1] if s else []):
        for image_id in t.shown:
            if image_id in now:
                continue
            now.add(image_id)
            url = image_url(engine.index, image_id)
            pic = f'<img src="{esc(url)}" alt="round {t.round + 1}" loading="lazy">' if url else esc(image_id)
            figures.append(f'<figure data-id="{esc(image_id)}">{pic}<figcaption>round {t.round + 1}</figcaption>'
                           f'<button type="button" class="iir-btn iir-pick" data-action="pick" '
                           f'data-id="{esc(image_id)}" title="This is the image I am looking for">This is it</button>'
                           "</figure>")
    if not figures:
        return ""
    return ('<details class="iir-earlier" id="iir-earlier"><summary>Earlier rounds '
            f'({len(figures)} images): pick one here if you passed your image</summary>'
            f'<div class="iir-strip">{"".join(figures)}</div></details>')


def _dialogue(s) -> list[tuple[str, str]]:
    """(question, answer) as the participant sees them: a clicked picture's caption in plain words (`answer_words`:
    "closest to: a mosquito", not the index's "clipart of mosquito; keywords: animals, bugs")."""
    return [(t.answered_question, answer_words(t)) for t in s.turns if t.kind == "answer" and t.answered_question]


def question_html(p: Progress, engine=None) -> str:
    """The dialogue so far and the pending question; a question with options (grounded: "Which is closest to
    your image?", yes/no) shows them as buttons (the main page's `options_html`: thumbnails with a short
    label, "none of these"), each sending {action: "choose", index, question} through cards.js."""
    s = p.session
    if s is None or not s.turns:
        return ""
    past = "".join(f'<div class="iir-msg iir-system"><b class="iir-who">System:</b> {esc(q)}</div>'
                   f'<div class="iir-msg iir-you"><b class="iir-who">You:</b> {esc(a)}</div>'
                   for q, a in _dialogue(s))  # what was asked and answered so far stays in view
    if s.pending_question:
        q = s.question
        opts = options_html(engine, q) if engine is not None and q is not None and q.options else ""
        if opts:  # the main page's hint mentions typing, which the study page offers only for LLM questions
            opts = opts.replace("Click the closest one (or type an answer below).", "Click the closest one.")
        return (f'{past}<div class="iir-question" role="status"><b class="iir-who">System asks:</b> '
                f"{esc(s.pending_question)}{opts}</div>")
    if s.options.question_due:
        return (f'{past}<div class="iir-working" role="status" id="iir-question-working">The system is writing a '
                "question about these results: look through them meanwhile</div>")
    return f'{past}<div class="iir-msg iir-note">No question this round: skip to get one, or end the task.</div>'


def reference_html(engine, p: Progress, tab: TabState) -> str:
    s = p.session
    ref = tab.reference or (s.last.shown[0] if s and s.last and s.last.shown else "")
    if not ref:
        return ""
    url = image_url(engine.index, ref)
    pic = f'<img class="iir-ref-img" src="{esc(url)}" alt="the reference image">' if url else ""
    which = "your chosen result" if tab.reference else "the top result of the last round"
    return f'<div class="iir-ref">{pic}<span>Reference: <b>{which}</b></span></div>'


# ---------------------------------------------------------------- admin


def form_title(form: str, condition: Condition | None) -> str:
    if form == "condition":
        label = f" ({esc(condition.label)})" if condition and condition.label else ""
        return f"## About the system you used in the last tasks{label}"
    if form == "end":
        return "## A few last questions"
    return "## About the system you just used"


@dataclass
class Outcomes:
    """How one participant's tasks that count ended (from the log's task-end events)."""

    found: int = 0  # the target picked
    gave_up: int = 0  # "Give up" / "End task" pressed
    out_of_rounds: int = 0  # ended with the round budget used up
    timed_out: int = 0  # the task's time ran out

    def add(self, kind: str) -> None:
        field_of = {"found": "found", "give_up": "gave_up", "budget_exhausted": "out_of_rounds", "timeout": "timed_out"}
        setattr(self, field_of[kind], getattr(self, field_of[kind]) + 1)

    @property
    def ended(self) -> int:
        return self.found + self.gave_up + self.out_of_rounds + self.timed_out

    @property
    def not_found(self) -> int:
        return self.ended - self.found

    def sentence(self, n_tasks: int) -> str:
        """What the end page says about the tasks, in plain words (give-ups are not called completed)."""
        tasks = "task" if n_tasks == 1 else "tasks"
        if self.found == n_tasks:
            return "You found the image in the task." if n_tasks == 1 else f"You found the image in all {n_tasks} tasks."
        how = [f"{n} {what}" for n, what in ((self.gave_up, "you ended yourself"),
                                             (self.out_of_rounds, "ran out of rounds"),
                                             (self.timed_out, "ran out of time")) if n]
        rest = f" ({', '.join(how)})" if how else ""
        return (f"You found the image in {self.found} of {n_tasks} {tasks}; {self.not_found} ended without "
                f"it{rest}. That is fine: every search helps the study.")


def admin_rows(progresses: Sequence[Progress], last_seen: dict[str, float],
               outcomes: dict[str, Outcomes] | None = None) -> list[list]:
    """One row per participant: id, number, phase, tasks found, tasks ended without the target, tasks in
    all, last activity (UTC), recruitment id."""
    outcomes = outcomes or {}
    rows = []
    for p in progresses:
        o = outcomes.get(p.participant, Outcomes())
        when = last_seen.get(p.participant)
        rows.append([p.participant, p.number, p.phase, o.found, o.not_found, p.n_tasks,
                     time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when)) if when else "",
                     p.recruit.get("id", "") + (" (repeat)" if p.recruit.get("repeat") else "")])
    return rows


ADMIN_HEADERS = ["participant", "number", "phase", "tasks found", "tasks not found (gave up, out of rounds or time)",
                 "tasks", "last activity (UTC)", "recruitment id"]


def admin_summary(study: StudyConfig, progresses: Sequence[Progress], n_events: int,
                  outcomes: dict[str, Outcomes] | None = None) -> str:
    phases = [p.phase for p in progresses]
    done = phases.count("done")
    active = sum(ph in ("briefing", "search", "questionnaire") for ph in phases)
    total = Outcomes()
    for o in (outcomes or {}).values():
        for name in ("found", "gave_up", "out_of_rounds", "timed_out"):
            setattr(total, name, getattr(total, name) + getattr(o, name))
    return (f"**{study.study_id}**: {len(progresses)} participant(s): {done} finished, {active} in progress, "
            f"{phases.count('consent')} at consent, {phases.count('declined')} declined; {total.ended} task(s) "
            f"ended: {total.found} found, {total.gave_up} given up, {total.out_of_rounds} out of rounds, "
            f"{total.timed_out} out of time; {n_events} event(s) logged.")
