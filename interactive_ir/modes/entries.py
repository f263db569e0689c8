"""What one row of the mode table is: a way of searching (`Mode`) and the methods it runs (`Method`).

Each mode package declares its own `Mode` beside its config dataclass (the config validates its names
against it); `modes.registry` gathers them into the one table that the page, the CLI, `eval`, the study
and the README read. This module imports nothing of the modes, so every one of them can use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from interactive_ir.errors import BadInputError


class UnknownModeError(BadInputError):
    """A mode name that is not in the table; the message lists the valid ones."""


class UnknownMethodError(BadInputError):
    """A method (or questioner) name that its mode does not have; the message lists the valid ones."""


@dataclass(frozen=True)
class Method:
    """One way a mode runs a round (or, for `Mode.questioners`, who writes the questions)."""

    name: str  # the value configs, flags, study files and the HTTP API take, e.g. "rocchio"
    mode: str  # the name of the mode it belongs to
    label: str  # the words the page shows, e.g. "Move the query"
    description: str  # one line: what it does (the page shows it after the label)
    needs_llm: bool = False  # refused without an LLM
    needs_vlm: bool = False  # refused without a VLM
    protocol: str = ""  # its `eval --protocol` name ("": no protocol of its own)

    @property
    def choice_label(self) -> str:
        """"label: description", as the Options panel shows it."""
        return f"{self.label}: {self.description}"


@dataclass(frozen=True)
class Mode:
    """One way of searching, with its methods in the order the page offers them."""

    name: str  # "conversation", "feedback", "composed", "text", "belief"
    label: str  # the words the page shows for it
    description: str  # one line
    config: type | None = None  # its config dataclass (None: only the engine's own settings)
    section: str = ""  # its config's keyword in `build_engine`, `Engine.mode_configs` and a study's `settings`
    methods: tuple[Method, ...] = ()
    questioners: tuple[Method, ...] = ()  # who may write its questions (the conversation mode)
    plain: str = ""  # the method "auto" picks without an LLM; the page runs it at once, before an LLM's
    best: str = ""  # the method "auto" picks with an LLM
    method_noun: str = ""  # what messages call its methods ("": "<name> method")
    takes_over: tuple[str, ...] = ()  # the modes whose controls reach it instead on a session of this mode
    #                                   (`SessionOptions.mode`): the belief takes answers, marks and references

    @property
    def on_page(self) -> bool:
        """Whether a page (or a study condition's `modes:`) offers it as controls of its own."""
        return not self.takes_over

    @property
    def method_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.methods)

    @property
    def questioner_names(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.questioners)

    def method(self, name: str) -> Method:
        """The method called `name`; UnknownMethodError naming the valid ones."""
        return pick(self.methods, name, self.method_noun or f"{self.name} method")

    def questioner(self, name: str) -> Method:
        return pick(self.questioners, name, "questioner")

    def auto(self, has_llm: bool) -> str:
        """The method "auto" stands for: `best` with an LLM, `plain` without ("" when the mode has no auto)."""
        return self.best if has_llm else self.plain

    def resolve(self, method: str | None, has_llm: bool) -> str:
        """The method a round runs: `method` ("auto" or None: `auto(has_llm)`), checked against the table
        (UnknownMethodError) and refused when it needs an LLM that is absent (BadInputError saying what to do)."""
        m = (method or "auto").strip().lower()
        if m == "auto":
            m = self.auto(has_llm)
        if self.method(m).needs_llm and not has_llm:
            raise BadInputError(f"the {m} method needs an LLM (give --llm SPEC); without one use "
                                f"{' or '.join(self.without_llm())}")
        return m

    def without_llm(self) -> tuple[str, ...]:
        """The methods that run without an LLM."""
        return tuple(m.name for m in self.methods if not m.needs_llm)


def pick(entries, name: str, what: str):
    """The entry of `entries` called `name`; UnknownMethodError ("unknown <what> 'x'; choose one of ...")."""
    for e in entries:
        if e.name == name:
            return e
    names = ", ".join(e.name for e in entries)
    raise UnknownMethodError(f"unknown {what} {name!r}; choose one of {names}")
