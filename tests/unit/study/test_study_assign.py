"""Counterbalancing: balanced Latin squares and per-participant plans."""

from __future__ import annotations

from collections import Counter
from itertools import groupby, pairwise

import pytest

from interactive_ir.errors import BadInputError
from interactive_ir.study.assign import assign, task_groups, williams_square
from interactive_ir.study.config import Task


def tasks(n):
    return [Task(index=i, target=f"t{i}.png", prompt="", rounds=5) for i in range(n)]


def test_williams_rows_by_hand():
    assert williams_square(1) == [[0], [0]]
    assert williams_square(2) == [[0, 1], [1, 0]]
    assert williams_square(4) == [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
    assert williams_square(3)[:3] == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    assert williams_square(3)[3:] == [[2, 1, 0], [0, 2, 1], [1, 0, 2]]


@pytest.mark.parametrize("m", [2, 3, 4, 5, 6])
def test_williams_is_latin_and_carry_over_balanced(m):
    rows = williams_square(m)
    assert len(rows) == (m if m % 2 == 0 else 2 * m)
    for row in rows:
        assert sorted(row) == list(range(m))
    reps = len(rows) // m
    for col in range(m):  # each condition in each position equally often
        assert Counter(r[col] for r in rows) == {c: reps for c in range(m)}
    pairs = Counter(p for r in rows for p in pairwise(r))  # each ordered pair follows equally often
    assert set(pairs.values()) == {reps} and len(pairs) == m * (m - 1)


def test_task_groups_split_in_order():
    assert task_groups(6, 3) == [[0, 1], [2, 3], [4, 5]]
    assert task_groups(7, 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert task_groups(3, 3) == [[0], [1], [2]]


def test_latin_plans_by_hand():
    t = tasks(4)
    plan0 = assign(t, ["A", "B"], "latin", 0)
    plan1 = assign(t, ["A", "B"], "latin", 1)
    assert [(a.position, a.condition, a.task.target) for a in plan0] == [
        (1, "A", "t0.png"), (2, "A", "t1.png"), (3, "B", "t2.png"), (4, "B", "t3.png")]
    assert [(a.condition, a.task.target) for a in plan1] == [
        ("B", "t0.png"), ("B", "t1.png"), ("A", "t2.png"), ("A", "t3.png")]
    assert [(a.condition, a.task.target) for a in assign(t, ["A", "B"], "latin", 2)] == \
        [(a.condition, a.task.target) for a in plan0]


@pytest.mark.parametrize("n_tasks, names", [(6, "ABC"), (8, "ABCD"), (7, "ABC"), (2, "AB")])
def test_latin_balance_over_a_full_cycle(n_tasks, names):
    t, conds = tasks(n_tasks), list(names)
    rows = len(williams_square(len(conds)))
    plans = [assign(t, conds, "latin", p) for p in range(rows)]
    for plan in plans:  # every participant does every task once and meets every condition
        assert sorted(a.task.index for a in plan) == list(range(n_tasks))
        assert set(a.condition for a in plan) == set(conds)
        assert [a.position for a in plan] == list(range(1, n_tasks + 1))
    pairing = Counter((a.task.index, a.condition) for plan in plans for a in plan)
    for i in range(n_tasks):  # every task under every condition equally often
        assert {pairing[(i, c)] for c in conds} == {rows // len(conds)}
    firsts = Counter(plan[0].condition for plan in plans)  # every condition first equally often
    assert set(firsts.values()) == {rows // len(conds)} and set(firsts) == set(conds)


def test_random_is_seeded_by_study_seed_and_participant_id():
    t, conds = tasks(6), ["A", "B", "C"]
    key = lambda plan: [(a.condition, a.task.index) for a in plan]  # noqa: E731
    a1 = assign(t, conds, "random", 0, "alice", seed=1)
    assert key(a1) == key(assign(t, conds, "random", 5, "alice", seed=1))  # number does not matter
    assert sorted(a.task.index for a in a1) == list(range(6)) and {a.condition for a in a1} == set(conds)
    others = {tuple(key(assign(t, conds, "random", 0, f"p{i}", seed=1))) for i in range(20)}
    assert len(others) > 5
    assert any(key(assign(t, conds, "random", 0, f"p{i}", seed=1)) != key(assign(t, conds, "random", 0, f"p{i}", seed=2))
               for i in range(10))
    for plan in (assign(t, conds, "random", 0, f"p{i}", seed=3) for i in range(10)):  # blocks stay together
        blocks = [c for c, _ in groupby(a.condition for a in plan)]
        assert len(blocks) == 3


def test_none_keeps_file_order():
    plan = assign(tasks(4), ["A", "B"], "none", 7, "x")
    assert [(a.condition, a.task.index) for a in plan] == [("A", 0), ("A", 1), ("B", 2), ("B", 3)]


def test_bad_inputs():
    with pytest.raises(BadInputError, match="counterbalance must be one of"):
        assign(tasks(2), ["A"], "balanced", 0)
    with pytest.raises(BadInputError, match="1 task\\(s\\) for 2 condition"):
        assign(tasks(1), ["A", "B"], "latin", 0)
    with pytest.raises(BadInputError, match="participant numbers start at 0"):
        assign(tasks(2), ["A"], "latin", -1)
