"""A search's shared link, and the link replayed: the query as typed (words, "exact phrases", NOT terms,
filters) in `q`, the settings that change results, and every later round's action in `rounds` (compact JSON,
one list per round: ["c", clicked id or "", what was said], ["t", text] (an answer), ["w", text] (words added
in the search box), ["m", [relevant], [not relevant]],
["s"], ["r", reference id, caption], ["l", image id]). Opening the link runs the search again and each round
in order (`replay`); an action that cannot be replayed (an image no longer in the gallery or not on the
page, a filter that no longer parses) is left out, and the status line says which and what was done instead.
"""

from __future__ import annotations

import json
import logging
import re
from urllib.parse import urlencode

from interactive_ir.errors import BadInputError, IIRError
from interactive_ir.ui import handlers
from interactive_ir.ui.state import UIState

log = logging.getLogger(__name__)

MAX_ROUNDS = 50  # rounds a link replays at most (a longer list is cut; the status line says so)
FILTER_TOKEN = re.compile(r"(?<!\S)-?[A-Za-z_]+:(?:\"[^\"]*\"|\S+)")  # a `key:value` filter of the query language


def _text(turn) -> str:
    said = turn.user_text or ""
    return "" if said in ("closest", "none of these", "skip") else said


def round_action(turn) -> list | None:
    """One later round as a link's action (None for a round the link cannot carry, e.g. an uploaded reference)."""
    extra = turn.extra or {}
    kind = turn.kind
    if kind == "closest":
        return ["c", extra.get("clicked") or "", _text(turn)]
    if kind == "tell" and extra.get("added"):  # typed into the search box: not an answer
        return ["w", turn.user_text] if turn.user_text else None
    if kind in ("tell", "answer"):
        return ["t", turn.user_text] if turn.user_text else None
    if kind in ("marks", "feedback"):
        rel = extra.get("relevant", turn.relevant) or []
        irr = extra.get("irrelevant", turn.irrelevant) or []
        return ["m", list(rel), list(irr)]
    if kind == "skip":
        return ["s"]
    if kind == "relative" and turn.reference and not turn.reference_upload:
        return ["r", turn.reference, turn.user_text]
    if kind == "like":
        return ["l", turn.reference or extra.get("image", "")]
    return None


def shared_settings(engine, st: UIState, params) -> str:
    """Apply the settings of a shared link's query (`hide_seen=1|0`, `questioner=<kind>`) to the tab and return
    its description (`q`, "" when none); a setting it cannot use is ignored."""
    params = dict(params or {})
    hide = str(params.get("hide_seen", "")).strip().lower()
    if hide in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        st.hide_seen = hide in ("1", "true", "yes", "on")
    questioner = str(params.get("questioner", "")).strip().lower()
    if questioner:
        try:
            handlers.set_questioner(engine, st, questioner)
        except BadInputError:
            log.info("shared link: questioner %r ignored", questioner)
    st.notice = ""
    return str(params.get("q", "") or "")


def share_query(st: UIState) -> str:
    """The query string that opens this tab's search again: `q` (the query as typed), `hide_seen`, `questioner`
    and `rounds` ("" before a search, or when it began otherwise than with a description)."""
    if not st.started or st.session.turns[0].kind not in ("describe", "search") or not st.session.turns[0].user_text:
        return ""
    params = {"q": st.query or st.session.turns[0].user_text}
    if st.hide_seen is not None:
        params["hide_seen"] = "1" if st.hide_seen else "0"
    if st.questioner:
        params["questioner"] = st.questioner
    rounds = [a for a in (round_action(t) for t in st.session.turns[1:]) if a is not None]
    if rounds:
        params["rounds"] = json.dumps(rounds, separators=(",", ":"), ensure_ascii=False)
    return "?" + urlencode(params)


def parse_rounds(raw) -> tuple[list[list], str]:
    """(actions, note): the link's `rounds`, each a list starting with a known letter; a note when some were
    unreadable or cut."""
    if not raw:
        return [], ""
    try:
        data = json.loads(str(raw))
    except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
        return [], "The link's later rounds could not be read; only its first search was run."
    if not isinstance(data, list):
        return [], "The link's later rounds could not be read; only its first search was run."
    good = [a for a in data if isinstance(a, list) and a and a[0] in ("c", "t", "w", "m", "s", "r", "l")]
    note = "" if len(good) == len(data) else f"{len(data) - len(good)} unreadable round(s) of the link left out."
    if len(good) > MAX_ROUNDS:
        note = (note + f" Only the first {MAX_ROUNDS} rounds of the link were replayed.").strip()
    return good[:MAX_ROUNDS], note


def _ids(x) -> list[str]:
    return [str(i) for i in x] if isinstance(x, list) else []


def _step(engine, st: UIState, action: list, later: bool) -> None:
    """Run one action on the tab (raises what the handler raises); `later`: its question and any LLM rewrite are
    left to the page's model step (the visitor's model, never the engine's own on the quick path)."""
    defer = {"defer_question": True, "later": later}
    kind, args = action[0], action[1:]
    if kind == "m":
        named = _ids(args[0] if args else []) + _ids(args[1] if len(args) > 1 else [])
    else:
        named = [str(args[0])] if kind in ("c", "r", "l") and args and args[0] else []
    gone = [i for i in named if i not in set(st.current_ids)]
    if gone:
        where = "in this gallery" if any(i not in engine.index.row_of for i in gone) else "on the page"
        raise LookupError(f"its image {gone[0]} is not {where} any more")
    if kind == "c":
        handlers.closest(engine, st, str(args[0] or ""), str(args[1] if len(args) > 1 else "") or "", **defer)
    elif kind == "t":
        handlers.answer(engine, st, str(args[0] if args else ""), **defer)
    elif kind == "w":
        handlers.add_words(engine, st, str(args[0] if args else ""), **defer)
    elif kind == "m":
        st.marks = {**{i: True for i in _ids(args[0])}, **{i: False for i in _ids(args[1] if len(args) > 1 else [])}}
        handlers.feedback(engine, st, **defer)
    elif kind == "s":
        handlers.skip(engine, st, **defer)
    elif kind == "r":
        handlers.use_reference(engine, st, str(args[0]))
        handlers.relative(engine, st, str(args[1] if len(args) > 1 else ""), **defer)
    elif kind == "l":
        handlers.more_like(engine, st, str(args[0]), **defer)


def _start(engine, st: UIState, q: str, later: bool) -> str:
    """Start the link's search; when its query no longer parses (a filter), start without its filters and return
    what was done instead."""
    try:
        handlers.start(engine, st, q, defer_question=True, later=later)
        return ""
    except IIRError as e:
        bare = " ".join(FILTER_TOKEN.sub(" ", q).split())
        dropped = " ".join(m.group(0) for m in FILTER_TOKEN.finditer(q))
        if not dropped or not bare or bare == q:
            raise
        handlers.start(engine, st, bare, defer_question=True, later=later)
        return f"The link's filter {dropped} does not work here ({e}); searched without it."


def replay(engine, st: UIState, q: str, rounds=None, *, later: bool = False, **_ignored) -> UIState:
    """The shared link's search run again: `q`, then each action of `rounds` (its raw JSON) in order; what
    could not be replayed is left out and said in the status line (`st.notice`). No round asks a model on the way
    (`defer_question`); `later` (the page): the last round's question follows in the model step, with the
    visitor's model."""
    actions, note = parse_rounds(rounds)
    notes = [n for n in (_start(engine, st, q, later), note) if n]
    done = 0
    for n, action in enumerate(actions, start=2):
        try:
            _step(engine, st, action, later)
            done += 1
        except (IIRError, LookupError, ValueError) as e:
            log.info("shared link: round %d not replayed (%s)", n, e)
            notes.append(f"Round {n} of the link was left out: {e}.")
    if actions:
        notes.insert(0, f"Replayed the shared search: its description and {done} of {len(actions)} later rounds.")
    st.marks.clear()
    st.notice = " ".join(notes)
    return st
