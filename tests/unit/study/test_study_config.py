"""Study file parsing and validation: good files load, bad ones fail with the field named."""

from __future__ import annotations

import json

import pytest

from interactive_ir.study.config import (
    SampleSpec,
    StudyConfigError,
    load_study,
    parse_study,
    resolve_tasks,
    study_warnings,
)


def base(**changes):
    d = {"study_id": "s1", "conditions": {"A": {"mode": "plugir"}, "B": {"mode": "feedback"}},
         "tasks": ["a.png", "b.png", "c.png", "d.png"]}
    d.update(changes)
    return d


def test_minimal_file_gets_defaults():
    s = parse_study(base())
    assert s.study_id == "s1" and s.rounds == 5 and s.k == 10 and s.show_target is True
    assert s.counterbalance == "latin" and s.index == "demo"
    a, b = s.conditions
    assert a.modes == ("conversation",) and a.conversation_method == "plugir"
    assert b.modes == ("feedback",) and b.conversation_method is None
    assert [q.id for q in s.questions] == ["effective", "efficient", "comments"]
    assert [q.id for q in s.likert] == ["effective", "efficient"]
    assert s.questions[2].type == "text" and s.questions[2].required is False
    assert [t.target for t in s.tasks] == ["a.png", "b.png", "c.png", "d.png"]


def test_presets_and_custom_modes():
    s = parse_study(base(conditions={
        "zs": {"mode": "zs"}, "mix": "mixed", "txt": {"mode": "text"},
        "custom": {"modes": ["text", "feedback"], "feedback_method": "rocchio", "k": 5, "label": "System X",
                   "settings": {"feedback": {"rocchio_beta": 0.5}}},
    }))
    zs, mix, txt, custom = s.conditions
    assert zs.modes == ("conversation",) and zs.conversation_method == "zs"
    assert mix.modes == ("conversation", "feedback", "composed")
    assert txt.modes == ("text",)
    assert custom.preset == "custom" and custom.modes == ("text", "feedback") and custom.k == 5
    assert custom.feedback_method == "rocchio" and custom.label == "System X"
    assert custom.settings == {"feedback": {"rocchio_beta": 0.5}}


def test_condition_list_form_and_task_mappings():
    s = parse_study(base(conditions=[{"name": "A", "mode": "text"}, {"name": "B", "mode": "composed"}],
                         tasks=[{"target": "x.png", "prompt": "a red car", "rounds": 3}, "y.png"]))
    assert [c.name for c in s.conditions] == ["A", "B"]
    assert s.tasks[0].prompt == "a red car" and s.tasks[0].rounds == 3 and s.tasks[1].rounds is None


@pytest.mark.parametrize("changes, message", [
    ({"conditions": {"A": {"mode": "plgir"}}}, "conditions.A.mode: 'plgir' is not one of"),
    ({"conditions": {"A": {"mode": "plgir"}}}, "did you mean 'plugir'"),
    ({"conditions": {"A": {"mode": "text", "modes": ["text"]}}}, "conditions.A: give exactly one of mode"),
    ({"conditions": {"A": {"modes": ["talk"]}}}, "conditions.A.modes: 'talk' is not one of"),
    ({"conditions": {"A": {"mode": "text", "feedback_method": "rocchio"}}},
     "conditions.A.feedback_method: this condition has no feedback mode"),
    ({"conditions": {"A": {"mode": "feedback", "feedback_method": "rochio"}}}, "did you mean 'rocchio'"),
    ({"conditions": {"A": {"mode": "text", "settings": {"plugr": {}}}}}, "conditions.A.settings.plugr: unknown field"),
    ({"conditions": {"A": {"mode": "text", "k": 0}}}, "conditions.A.k: 0 is out of range"),
    ({"conditions": {"bad name": {"mode": "text"}}}, "is not a valid id"),
    ({"conditions": {}}, "conditions: empty"),
    ({"rounds": "five"}, "rounds: expected a whole number"),
    ({"rounds": 0}, "rounds: 0 is out of range"),
    ({"k": True}, "k: expected a whole number"),
    ({"show_target": "yes"}, "show_target: expected true or false"),
    ({"counterbalance": "latin-square"}, "counterbalance: 'latin-square' is not one of"),
    ({"study_id": "my study"}, "study_id: 'my study' is not a valid id"),
    ({"tasks": []}, "tasks: give a non-empty list"),
    ({"tasks": ["a.png"]}, "tasks: 1 task(s) for 2 conditions"),
    ({"tasks": ["a.png", "a.png"]}, "tasks[1].target: 'a.png' is listed twice"),
    ({"tasks": [{"prompt": "x"}, "b.png"]}, "tasks[0].target: missing"),
    ({"tasks": {"sample": 1, "seed": 2}}, "tasks.sample: 1 task(s) for 2 conditions"),
    ({"tasks": {"n": 4}}, "tasks.n: unknown field"),
    ({"questions": [{"id": "q", "text": "t", "type": "stars"}]}, "questions[0].type: 'stars' is not one of"),
    ({"questions": [{"id": "q", "text": "t"}, {"id": "q", "text": "u"}]}, "questions[1].id: 'q' is used twice"),
    ({"questions": [{"text": "t"}]}, "questions[0]: every question needs an id and a text"),
    ({"questions": [{"id": "q", "text": "t", "points": 1}]}, "questions[0].points: 1 is out of range"),
    ({"roundz": 3}, "roundz: unknown field; did you mean 'rounds'?"),
])
def test_errors_name_the_field(changes, message):
    with pytest.raises(StudyConfigError) as e:
        parse_study(base(**changes))
    assert message in str(e.value)


def test_missing_required_fields():
    for key in ("study_id", "conditions", "tasks"):
        d = base()
        del d[key]
        with pytest.raises(StudyConfigError, match=f"^{key}: missing"):
            parse_study(d)
    with pytest.raises(StudyConfigError, match="a study file holds a mapping"):
        parse_study(["not", "a", "mapping"])


def test_load_yaml_and_json(tmp_path):
    y = tmp_path / "s.yaml"
    y.write_text("study_id: y1\nconditions: {A: text, B: feedback}\ntasks: {sample: 3, seed: 7}\nrounds: 2\n")
    s = load_study(y)
    assert s.study_id == "y1" and s.tasks == SampleSpec(3, 7) and s.rounds == 2 and s.source == str(y)
    j = tmp_path / "s.json"
    j.write_text(json.dumps(base(study_id="j1")))
    assert load_study(j).study_id == "j1"


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(StudyConfigError, match="study file not found"):
        load_study(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("study_id: [unclosed\n")
    with pytest.raises(StudyConfigError, match=r"bad.yaml is not valid YAML \(line"):
        load_study(bad)
    badj = tmp_path / "bad.json"
    badj.write_text("{")
    with pytest.raises(StudyConfigError, match="bad.json is not valid JSON"):
        load_study(badj)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("study_id: x\nconditions: {A: text}\ntasks: [a.png]\nk: -1\n")
    with pytest.raises(StudyConfigError, match=r"wrong.yaml: k: -1 is out of range"):
        load_study(wrong)


def test_resolve_listed_tasks_checks_ids():
    s = parse_study(base(rounds=4, tasks=["a.png", {"target": "b.png", "rounds": 2}]))
    tasks = resolve_tasks(s, ["a.png", "b.png", "z.png"])
    assert [(t.index, t.target, t.rounds) for t in tasks] == [(0, "a.png", 4), (1, "b.png", 2)]
    with pytest.raises(StudyConfigError, match=r"1 target\(s\) not in the index, e.g. 'b.png' \(did you mean 'b.jpg'\?\)"):
        resolve_tasks(s, ["a.png", "b.jpg"])


def test_resolve_sampled_tasks_is_seeded():
    s = parse_study(base(tasks={"sample": 3, "seed": 5}))
    ids = [f"img{i:02d}.png" for i in range(20)]
    a = [t.target for t in resolve_tasks(s, ids)]
    b = [t.target for t in resolve_tasks(s, list(reversed(ids)))]  # order of the index does not matter
    assert a == b and len(set(a)) == 3 and set(a) <= set(ids)
    other = parse_study(base(tasks={"sample": 3, "seed": 6}))
    assert [t.target for t in resolve_tasks(other, ids)] != a
    with pytest.raises(StudyConfigError, match="3 tasks asked but the index holds 2 images"):
        resolve_tasks(s, ids[:2])


def test_hidden_target_needs_a_prompt():
    s = parse_study(base(show_target=False, tasks=["a.png", {"target": "b.png", "prompt": "a boat"}]))
    tasks = resolve_tasks(s, ["a.png", "b.png"], {"a.png": "a red dog"}.get)
    assert [t.prompt for t in tasks] == ["a red dog", "a boat"]
    with pytest.raises(StudyConfigError, match=r"tasks\[0\]: the target is not shown"):
        resolve_tasks(s, ["a.png", "b.png"], lambda i: "")


def test_to_dict_is_plain_json():
    s = parse_study(base(questions=[{"id": "q1", "text": "Good?", "points": 7}]))
    d = s.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["conditions"][0]["modes"] == ["conversation"] and d["questions"][0]["points"] == 7


def test_warnings():
    s = parse_study(base(conditions={"A": "text", "B": "text", "C": "text"}))
    notes = study_warnings(s)
    assert any("do not split evenly over 3" in n for n in notes)
    assert any("multiples of 6 participants" in n for n in notes)


def test_example_study_file_is_valid_on_the_demo_gallery():
    from iir_testutils import ROOT

    from interactive_ir.study.index_choice import study_index_ids

    s = load_study(ROOT / "assets" / "study" / "example_study.yaml")
    ids, caps = study_index_ids(s)
    tasks = resolve_tasks(s, ids, caps.get)
    assert len(tasks) == 6 and len(ids) == 320
    assert {c.preset for c in s.conditions} == {"plugir", "feedback", "text"}
