"""Text with lone surrogates or control characters is cleaned, and the tab's next requests work;
`index --workers -3` says what is wrong."""

from __future__ import annotations

import json

import pytest
from iir_testutils import query_modes

from interactive_ir.errors import BadInputError
from interactive_ir.retrieval.retriever import check_query_text


def test_lone_surrogates_and_control_characters_are_cleaned():
    text = check_query_text("a\ud800 red\x00dog\x1b[1m\u2028on the beach\t\n", 100)
    assert text == "a red dog [1m on the beach"
    json.dumps(text).encode("utf-8")  # encodable: it can go into the page and the logs
    with pytest.raises(BadInputError, match="empty"):
        check_query_text("\ud800\x00\x07", 100)
    with pytest.raises(BadInputError, match="must be text"):
        check_query_text(b"bytes", 100)


def test_a_surrogate_in_a_description_does_not_break_the_tabs_next_requests(tiny_index):
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui import render
    from interactive_ir.ui.state import UIState

    r, _, _ = tiny_index
    eng = build_engine(r, llm=FakeLLM(), config=EngineConfig(k=4), belief=query_modes())
    st = h.start(eng, UIState(), "a red dog\ud800 on the beach")
    assert "\ud800" not in st.session.turns[0].user_text
    json.dumps(render.dialogue_html(st, True)).encode("utf-8")
    h.answer(eng, st, "it is \udfffbig")
    h.toggle_mark(eng, st, st.current_ids[0], True)
    assert len(st.session.turns) == 2 and st.marks


def test_index_with_negative_workers_says_what_to_do(tmp_path, capsys):
    from interactive_ir.cli import main

    with pytest.raises(SystemExit) as e:  # refused by the parser, in one line naming the range
        main(["index", "--images", str(tmp_path), "--out", str(tmp_path / "idx"), "--workers", "-3",
              "--embedder", "fake:8"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--workers: -3 is out of range: give a whole number from 1 to 256" in err
    assert not (tmp_path / "idx").exists()
