"""What the page keeps per browser tab: the `Session` plus the marks and reference not yet used, and the
model work still due for the round on the page.

One `UIState` lives in each user's `gr.State`; the engine and its models are shared read-only.
Every event of a tab receives the same `UIState` object: steps of a tab take its lock (`tab.lock`)
while they change it, so two events never interleave their changes.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from interactive_ir.core.session import Session


@dataclass
class Redo:
    """A round shown without its model step, to be made again with it (`work.refine`)."""

    action: str  # "answer", "feedback" or "relative": the handler that made the round
    tab: UIState  # a copy of the tab as it was before that round (its session, marks, reference, upload)
    args: tuple = ()  # the handler's other arguments (the answer text, the method, the caption)
    handler: Callable | None = None  # that handler itself (`handlers.feedback`, `handlers.relative`); None: "engine"


@dataclass
class UIState:
    session: Session | None = None  # the current search (None before the first description)
    marks: dict[str, bool] = field(default_factory=dict)  # image id -> True relevant / False not relevant (this page)
    reference: str = ""  # a shown image id chosen with "use as reference" ("" none)
    upload: str = ""  # path of a validated uploaded reference image ("" none)
    notice: str = ""  # the last message for the status line (errors, what happened)
    epoch: int = 0  # bumped by every action that moves the search: model work of an older epoch is dropped
    todo: list[str] = field(default_factory=list)  # model steps still due for this round: "refine", "ask"
    redo: Redo | None = None  # how to make this round again with the LLM ("refine"), when it is due
    working: str = ""  # the model step running now for this tab ("" none)
    refined: bool = False  # this round's results were replaced by the model's ("refine" adopted)
    questioner: str = ""  # the kind of questions chosen in Options ("" automatic, "grounded", "llm")
    hide_seen: bool | None = None  # Options' "Hide images already shown" (None: the engine's EngineConfig.hide_seen)
    offer: object = None  # the model's refined round, held while the person acts on the quick one (`work.adopt`)
    sort: str = ""  # the results' order: "" best match, "newest" or "oldest" first (`filter_view.SORTS`)
    query: str = ""  # the search's query as typed (words, NOT terms, filters): a chip's removal edits it
    box: str | None = None  # text for the search box at the next render (the filter row edited the query)
    paused_seen: tuple = ()  # (pause, epoch) when the tab was first told the LLM is paused: told once per pause
    unpinned: set[str] = field(default_factory=set)  # images the person took out of the pinned strip (`render.pinned`)

    def __post_init__(self) -> None:
        self.lock = threading.RLock()  # not a field: asdict/deepcopy/pickle of the state never touch it

    # gr.State deep-copies its initial value for every new tab: give each copy its own lock.
    def __deepcopy__(self, memo) -> UIState:
        return UIState(copy.deepcopy(self.session, memo), dict(self.marks), self.reference, self.upload, self.notice,
                       self.epoch, list(self.todo), copy.deepcopy(self.redo, memo), self.working, self.refined,
                       self.questioner, self.hide_seen, copy.deepcopy(self.offer, memo), self.sort, self.query,
                       self.box, self.paused_seen, set(self.unpinned))

    def __getstate__(self) -> dict:  # picklable (a spaces.GPU worker receives a copy)
        d = dict(self.__dict__)
        d.pop("lock", None)
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)
        self.lock = threading.RLock()

    def take(self, other: UIState) -> None:
        """Adopt `other`'s values (a copy back from a spaces.GPU worker), keeping this object and its lock."""
        if other is not self:
            for k, v in other.__getstate__().items():
                setattr(self, k, v)

    # --- views -----------------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self.session is not None and bool(self.session.turns)

    @property
    def ended(self) -> bool:
        return self.session is not None and self.session.ended

    @property
    def current_ids(self) -> list[str]:
        """Ids shown on the current page (the last round)."""
        return list(self.session.last.shown) if self.started else []

    @property
    def question_due(self) -> bool:
        """The round's results are shown; its question is still to be asked."""
        return "ask" in self.todo

    @property
    def pending(self) -> bool:
        """Model work for this round is due or running."""
        return bool(self.todo or self.working)

    @property
    def acted(self) -> bool:
        """The person has acted on the results on the page (marked one, or chose one as the reference)."""
        return bool(self.marks or self.reference)

    def marked(self) -> tuple[list[str], list[str]]:
        """(relevant, not relevant) ids marked on this page, in the page's order."""
        order = {i: n for n, i in enumerate(self.current_ids)}
        ids = sorted(self.marks, key=lambda i: order.get(i, len(order)))
        return [i for i in ids if self.marks[i]], [i for i in ids if not self.marks[i]]

    # --- changes ---------------------------------------------------------------------------------
    def snapshot(self) -> UIState:
        """A copy of what a handler reads (session, marks, reference, upload), for a `Redo`."""
        return UIState(copy.deepcopy(self.session), dict(self.marks), self.reference, self.upload)

    def supersede(self) -> None:
        """A new action moves the search: model work still due for the old round is dropped."""
        self.epoch += 1
        self.todo = []
        self.redo = None
        self.working = ""
        self.refined = False
        self.offer = None

    def new_page(self) -> None:
        """A new round was shown: marks and a chosen reference belong to the old page."""
        self.marks.clear()
        self.reference = ""

    def keep_marks_on_page(self) -> None:
        """The page's results were replaced: marks and the reference stay only on images still shown."""
        ids = set(self.current_ids)
        self.marks = {i: v for i, v in self.marks.items() if i in ids}
        if self.reference not in ids:
            self.reference = ""

    def reset(self) -> None:
        """Forget the search (in place: model work still running for it lands nowhere)."""
        self.supersede()
        self.session = None
        self.marks.clear()
        self.unpinned = set()
        self.reference = self.upload = self.notice = ""
