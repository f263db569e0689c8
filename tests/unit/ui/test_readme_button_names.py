"""The buttons the README names are the ones on the page (issue 39: the README and the dialogue said Closest
where the card said "More like this")."""

from __future__ import annotations

import re
from pathlib import Path

from iir_testutils import query_modes

from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.ui import i18n
from interactive_ir.ui.render import ACTIONS

README = Path(__file__).resolve().parents[3] / "README.md"


def _belief_paragraph() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("**The belief (the default page).**")
    return text[start: text.index("\n\n", start)]


def test_the_card_button_for_the_closest_result_is_called_closest():
    assert ACTIONS["like"][0] == "Closest"  # the HTTP API's action name stays "like"


def test_every_button_the_readme_names_for_the_default_page_is_on_it(tiny_index):
    from interactive_ir.ui import build_demo

    engine = build_engine(tiny_index[0], llm=None, config=EngineConfig(k=4), belief=query_modes())
    demo = build_demo(engine, ["notes"])
    english = {v: k for k, v in i18n._KEYS.items()}
    on_page = {label for label, _ in ACTIONS.values()}
    for block in demo.blocks.values():
        value = getattr(block, "value", None)
        if type(block).__name__ in ("Button", "DownloadButton") and isinstance(value, str):
            key = re.search(r'"key":\s*"([^"]+)"', value)
            on_page.add(english.get(key.group(1), value) if key else value)
    named = re.findall(r"\*\*([^*]+)\*\*", _belief_paragraph())[1:]  # the first is the paragraph's title
    assert named and not [n for n in named if n not in on_page], (named, sorted(on_page))
