"""Exporting a search's results and marks (CSV, JSON) and its page's images (zip): ui/export.py."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import replace

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.llms import FakeLLM
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.errors import IndexLoadError, SessionError
from interactive_ir.ui import export
from interactive_ir.ui import handlers as h
from interactive_ir.ui.state import UIState

K = 4
AWKWARD = 'a dog, a "big" one\nby the sea, 50% off; c\'est la vie'


@pytest.fixture
def engine(tiny_index):
    r, _, _ = tiny_index
    return build_engine(r, llm=FakeLLM(), config=EngineConfig(k=K), belief=query_modes())


class AwkwardCaptions:
    """The engine, with every hit's caption full of commas, quotes and line breaks."""

    def __init__(self, engine):
        self.index = engine.index
        self._engine = engine

    def hits_of(self, turn):
        return [replace(x, caption=f"{AWKWARD} #{n}") for n, x in enumerate(self._engine.hits_of(turn))]


def _csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_has_the_page_in_rank_order_with_marks(engine):
    st = h.start(engine, UIState(), "a red dog on the beach")
    page = st.current_ids
    h.toggle_mark(engine, st, page[1], True)
    h.toggle_mark(engine, st, page[2], False)
    got = _csv_rows(export.csv_text(engine, st))
    assert [r["id"] for r in got] == page
    assert [r["rank"] for r in got] == [str(n) for n in range(1, len(page) + 1)]
    assert {r["round"] for r in got} == {"0"}
    assert [r["mark"] for r in got] == ["", "relevant", "not relevant", ""][: len(page)]
    scores = [float(r["score"]) for r in got]
    assert scores == sorted(scores, reverse=True)
    assert all(r["caption"] for r in got)  # the tiny index has captions


def test_awkward_captions_survive_csv_and_json(engine):
    st = h.start(engine, UIState(), "a red dog on the beach")
    fake = AwkwardCaptions(engine)
    got = _csv_rows(export.csv_text(fake, st))
    assert len(got) == len(st.current_ids)
    for n, r in enumerate(got):
        # in plain words as on the page (its line break a space), its commas and quotes kept
        assert r["caption"] == 'A dog, a "big" one by the sea, 50% off; c\'est la vie #' + str(n)
        assert set(r) == set(export.COLUMNS)
    data = json.loads(export.json_text(fake, st))
    assert data["description"] == "a red dog on the beach"
    assert [r["id"] for r in data["results"]] == st.current_ids
    assert [r["caption"] for r in data["results"]] == [r["caption"] for r in got]


def test_csv_and_json_round_trip_line_breaks_quotes_and_commas():
    rows = [export.ExportRow("a/b, c.jpg", 1, 2, AWKWARD, 0.5, "relevant"),
            export.ExportRow('q"uote.jpg', 2, 2, "", -0.25, "")]
    got = _csv_rows(export.to_csv(rows))
    assert [(r["id"], r["caption"], r["mark"], float(r["score"])) for r in got] == \
        [("a/b, c.jpg", AWKWARD, "relevant", 0.5), ('q"uote.jpg', "", "", -0.25)]
    data = json.loads(export.to_json(rows, UIState()))
    assert data["results"][0]["caption"] == AWKWARD and data["results"][1]["id"] == 'q"uote.jpg'


def test_marks_of_earlier_rounds_follow_the_page(engine):
    st = h.start(engine, UIState(), "a red dog on the beach")
    first = st.current_ids
    h.toggle_mark(engine, st, first[0], True)
    h.toggle_mark(engine, st, first[3], False)
    h.feedback(engine, st)
    assert st.session.round == 1
    got = _csv_rows(export.csv_text(engine, st))
    page = st.current_ids
    assert [r["id"] for r in got[: len(page)]] == page
    earlier = {r["id"]: r for r in got[len(page):]}
    for image_id, mark, rank in ((first[0], "relevant", "1"), (first[3], "not relevant", "4")):
        if image_id in page:  # shown again: its row is the page's, with its mark
            assert next(r for r in got if r["id"] == image_id)["mark"] == mark
        else:
            assert earlier[image_id]["round"] == "0" and earlier[image_id]["rank"] == rank
            assert earlier[image_id]["mark"] == mark
    assert len(earlier) == len({first[0], first[3]} - set(page))


def test_ids_restrict_the_export(engine):
    st = h.start(engine, UIState(), "a red dog on the beach")
    keep = st.current_ids[1:3]
    assert [r.id for r in export.rows(engine, st, keep)] == keep


def test_empty_session_is_a_clear_refusal(engine):
    for fn in (export.csv_text, export.json_text, export.image_files):
        with pytest.raises(SessionError, match="nothing to export yet"):
            fn(engine, UIState())


def test_zip_holds_the_page_images(engine, tmp_path):
    st = h.start(engine, UIState(), "a red dog on the beach")
    out = export.write_zip(engine, st, tmp_path / "page.zip")
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == st.current_ids
        row = engine.index.row_of.get(st.current_ids[0])
        assert z.read(st.current_ids[0]) == open(engine.index.image_file(row), "rb").read()


def test_zip_over_the_caps_is_refused_before_writing(engine, tmp_path):
    st = h.start(engine, UIState(), "a red dog on the beach")
    with pytest.raises(SessionError, match="too many"):
        export.write_zip(engine, st, tmp_path / "a.zip", max_images=K - 1)
    with pytest.raises(SessionError, match="MB, too much"):
        export.write_zip(engine, st, tmp_path / "b.zip", max_bytes=10)
    assert not (tmp_path / "a.zip").exists() and not (tmp_path / "b.zip").exists()


def test_zip_goes_through_the_index_path_checks(engine, tmp_path):
    st = h.start(engine, UIState(), "a red dog on the beach")
    victim = st.current_ids[0]
    row = engine.index.row_of.get(victim)
    path = engine.index.image_file(row)
    import os

    os.remove(path)
    os.symlink("/etc/hostname", path)  # a link leading out of the image root
    with pytest.raises(IndexLoadError):
        export.write_zip(engine, st, tmp_path / "c.zip")


@pytest.mark.parametrize("kind", sorted(export.FILES))
def test_write_file_names_each_kind(engine, tmp_path, kind):
    st = h.start(engine, UIState(), "a red dog on the beach")
    out = export.write_file(engine, st, kind, tmp_path)
    assert out.name == export.FILES[kind] and out.stat().st_size > 0
    with pytest.raises(SessionError, match="nothing to export"):
        export.write_file(engine, UIState(), kind, tmp_path / "none")


def test_old_exports_are_deleted_before_a_new_one_is_written(tmp_path):
    import os

    from interactive_ir.ui.export import fresh_folder

    old = fresh_folder(tmp_path, now=1000.0)
    (old / "search-images.zip").write_bytes(b"x" * 10)
    os.utime(old, (1000.0, 1000.0))
    recent = fresh_folder(tmp_path, keep_s=600, now=1500.0)  # old is 500 s old: kept
    assert old.exists() and recent.exists()
    newest = fresh_folder(tmp_path, keep_s=600, now=1700.0)  # old is 700 s old: gone
    assert not old.exists() and newest.exists() and newest.parent == tmp_path


def test_the_selection_from_the_page_is_read_safely():
    from interactive_ir.ui.export import MAX_SELECTED, selected_ids

    assert selected_ids('["a.jpg", "b.jpg", "a.jpg"]') == ["a.jpg", "b.jpg"]
    for junk in ("", None, "not json", "{}", '"a.jpg"', "[1, 2]", '[""]', "[null]", "[" * 100_000):  # nested: issue 40
        assert selected_ids(junk) == [], junk
    assert len(selected_ids(str([f"i{n}" for n in range(MAX_SELECTED + 50)]).replace("'", '"'))) == MAX_SELECTED


def test_a_selection_exports_only_the_selected_images(tiny_index, tmp_path):
    import csv
    import io
    import zipfile

    from interactive_ir.engine import EngineConfig, build_engine
    from interactive_ir.ui import handlers as h
    from interactive_ir.ui.export import write_file
    from interactive_ir.ui.state import UIState

    engine = build_engine(tiny_index[0], llm=None, config=EngineConfig(k=6), belief=query_modes())
    st = h.start(engine, UIState(), "a red dog")
    picked = [st.current_ids[4], st.current_ids[1]]
    z = write_file(engine, st, "zip", tmp_path, picked)
    assert sorted(zipfile.ZipFile(z).namelist()) == sorted(picked)
    rows = list(csv.DictReader(io.StringIO(write_file(engine, st, "csv", tmp_path, picked).read_text())))
    assert [r["id"] for r in rows] == [st.current_ids[1], st.current_ids[4]]  # page order, their ranks
    assert [r["rank"] for r in rows] == ["2", "5"]
