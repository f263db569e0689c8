"""What a button in the results can do: one table from the action a button sends (its `data-action`, which
`cards.js` passes on; the HTTP API's `card` endpoint takes the same names) to the handler that does it.

The buttons are a result card's (and the large view's), "Found" under an earlier round's thumbnail, "Refined
results ready: show" in the results' heading, a filter chip's ✕ and a date histogram's bar (`filter_view`).
Every handler takes (engine, tab state, the button's `data-id`, then the row's fixed arguments) and returns the
tab's state. Buttons the browser handles itself (`open`, `unfold`) and the question's options (`choose`, the
dialogue's own listener) send no card action.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from interactive_ir.errors import BadInputError
from interactive_ir.ui import filter_handlers, handlers, work
from interactive_ir.ui.state import UIState


@dataclass(frozen=True)
class CardAction:
    """One button's action."""

    handler: Callable  # (engine, UIState, image id or value, *args, **kwargs) -> UIState
    args: tuple = ()  # fixed arguments after the button's id
    kwargs: Mapping = field(default_factory=dict)  # fixed keyword arguments
    uses_id: bool = True  # False: the handler takes no id (the button carries none)


CARD_ACTIONS: Mapping[str, CardAction] = MappingProxyType({
    "relevant": CardAction(handlers.toggle_mark, (True,)),  # a mark, or its removal when clicked again
    "irrelevant": CardAction(handlers.toggle_mark, (False,)),
    "closest": CardAction(handlers.closest),  # "Closest" (the belief's page): this one is nearest my image
    "reference": CardAction(handlers.use_reference),  # "Use as reference" for a relative caption
    "found": CardAction(handlers.found),  # the search ends with this image
    "unpin": CardAction(handlers.unpin),  # out of the pinned strip (marked, closest, reference: kept in view)
    # "More like this": its question (when the page asks one) follows in the "model" queue (`listeners`)
    "like": CardAction(handlers.more_like, kwargs={"defer_question": True}),
    "refined": CardAction(work.show_offer, uses_id=False),  # "Refined results ready: show"
    "unfilter": CardAction(filter_handlers.unfilter),  # a filter chip's ✕ (its id: the filter as typed)
    "when": CardAction(filter_handlers.keep_period),  # a date histogram's bar (its id: the year or month)
})


def run(engine, st: UIState, action: str, image_id: str) -> UIState:
    """The button `action` (a key of `CARD_ACTIONS`) clicked on `image_id`."""
    row = CARD_ACTIONS.get(action)
    if row is None:
        raise BadInputError(f"unknown action {action!r}")
    if not row.uses_id:
        return row.handler(engine, st, *row.args, **row.kwargs)
    return row.handler(engine, st, image_id, *row.args, **row.kwargs)
