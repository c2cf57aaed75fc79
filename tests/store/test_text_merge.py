"""A person's change to a text applied to a newer version of it, by lines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flask_krm.store.text_merge import merge_lines


def text(value: object) -> str:
    return json.dumps(value, indent=2)


BASE = text([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])


def test_changes_on_different_lines_both_apply() -> None:
    mine = BASE.replace('"a:1"', '"a:mine"')
    current = BASE.replace('"b:1"', '"b:theirs"')
    merged = merge_lines(BASE, mine, current)
    assert merged is not None
    assert json.loads(merged) == [{"name": "a", "image": "a:mine"}, {"name": "b", "image": "b:theirs"}]


def test_changes_to_the_same_line_collide() -> None:
    assert merge_lines(BASE, BASE.replace("a:1", "a:mine"), BASE.replace("a:1", "a:theirs")) is None


def test_adjacent_changes_collide() -> None:
    lines = ["x\n", "y\n", "z\n"]
    base = "".join(lines)
    assert merge_lines(base, "X\ny\nz\n", "x\nY\nz\n") is None


def test_the_same_change_on_both_sides_applies_once() -> None:
    mine = BASE.replace("a:1", "a:2")
    assert merge_lines(BASE, mine, mine) == mine


def test_an_insertion_and_a_distant_edit_both_apply() -> None:
    base = "one\ntwo\nthree\nfour\nfive\n"
    assert merge_lines(base, "zero\none\ntwo\nthree\nfour\nfive\n", "one\ntwo\nthree\nfour\nFIVE\n") == (
        "zero\none\ntwo\nthree\nfour\nFIVE\n"
    )


@given(
    st.lists(st.sampled_from(["a\n", "b\n", "c\n"]), max_size=6), st.lists(st.sampled_from(["a\n", "d\n"]), max_size=6)
)
def test_one_sided_changes_are_taken_whole(base_lines: list[str], other_lines: list[str]) -> None:
    base, other = "".join(base_lines), "".join(other_lines)
    assert merge_lines(base, other, base) == other
    assert merge_lines(base, base, other) == other


@pytest.mark.parametrize("current", ["", "x\n"])
def test_mine_equal_to_current_is_current(current: str) -> None:
    assert merge_lines("base\n", current, current) == current
