"""Captions files in every supported form, and their errors."""

from __future__ import annotations

import json

import pytest

from interactive_ir.errors import CaptionsFormatError
from interactive_ir.index.captions_io import match_captions, read_captions


def test_jsonl_both_forms(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"image": "a.jpg", "caption": "one"}\n\n{"image": "a.jpg", "caption": "two"}\n'
                 '{"image": "b.jpg", "captions": ["x", "y"], "split": "train"}\n')
    assert read_captions(p) == {"a.jpg": ["one", "two"], "b.jpg": ["x", "y"]}


def test_coco(tmp_path):
    p = tmp_path / "captions_val2017.json"
    p.write_text(json.dumps({"images": [{"id": 1, "file_name": "0001.jpg"}, {"id": 2, "file_name": "0002.jpg"}],
                             "annotations": [{"id": 9, "image_id": 1, "caption": "A cat. "},
                                             {"id": 10, "image_id": 2, "caption": "A dog"},
                                             {"id": 11, "image_id": 1, "caption": "Cat on mat"}]}))
    assert read_captions(p) == {"0001.jpg": ["A cat.", "Cat on mat"], "0002.jpg": ["A dog"]}


def test_csv_with_header_and_commas(tmp_path):
    p = tmp_path / "captions.txt"
    p.write_text('image,caption\n1000.jpg,"A girl, in pink, climbs"\n1000.jpg,Stairs\n')
    assert read_captions(p) == {"1000.jpg": ["A girl, in pink, climbs", "Stairs"]}


def test_tsv_flickr_token_form(tmp_path):
    p = tmp_path / "Flickr8k.token.tsv"
    p.write_text("1000.jpg#0\tA child\n1000.jpg#1\tA girl\n")
    assert read_captions(p) == {"1000.jpg": ["A child", "A girl"]}


@pytest.mark.parametrize("name,text,msg", [
    ("c.jsonl", '{"image": "a.jpg"\n', "not valid JSON"),
    ("c.jsonl", '{"caption": "no image"}\n', '"image" key'),
    ("c.json", '{"images": [], "annotations": [{"id": 1, "image_id": 5, "caption": "x"}]}', "unknown image_id"),
    ("c.csv", "onlyonecolumn\n", "two columns"),
    ("c.jsonl", "", "empty"),
])
def test_malformed(tmp_path, name, text, msg):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(CaptionsFormatError, match=msg):
        read_captions(p)


def test_match_by_relative_path_or_unique_name():
    got, missing = match_captions({"sub/a.jpg": ["1"], "b.jpg": ["2"], "zz.jpg": ["3"], "./c.jpg": ["4"]},
                                  ["sub/a.jpg", "deep/b.jpg", "c.jpg"])
    assert got == {"sub/a.jpg": ["1"], "deep/b.jpg": ["2"], "c.jpg": ["4"]} and missing == ["zz.jpg"]


@pytest.mark.parametrize("text", ['{"images": [1, 2]}', '{"annotations": [5], "images": []}',
                                  '{"images": 5, "annotations": []}', '{"images": [5], "annotations": []}'])
def test_malformed_coco_is_a_format_error(tmp_path, text):
    f = tmp_path / "c.json"
    f.write_text(text)
    with pytest.raises(CaptionsFormatError, match="COCO"):
        read_captions(f)
