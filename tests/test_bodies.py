"""JSON from requests: bounded nesting, finite numbers, precise refusals, never a RecursionError."""

from __future__ import annotations

import json
import sys
import typing as t

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flask_krm.bodies import (
    MAX_DEPTH,
    NotFinite,
    NotJson,
    TooDeep,
    TooLong,
    check_json_value,
    load_json,
    nests_too_deep,
)


def nested(levels: int, leaf: t.Any = 1) -> t.Any:
    value = leaf
    for n in range(levels):
        value = [value] if n % 2 else {"k": value}
    return value


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


@given(JSON_VALUES)
def test_every_json_value_within_the_bound_loads_as_written(value: t.Any) -> None:
    assert load_json(json.dumps(value)) == value
    check_json_value(value)


def test_the_bound_is_exactly_max_depth_levels() -> None:
    assert load_json(json.dumps(nested(MAX_DEPTH))) == nested(MAX_DEPTH)
    assert not nests_too_deep(nested(MAX_DEPTH))
    with pytest.raises(TooDeep, match=f"the body is nested deeper than {MAX_DEPTH} levels"):
        load_json(json.dumps(nested(MAX_DEPTH + 1)))
    assert nests_too_deep(nested(MAX_DEPTH + 1))
    assert nests_too_deep([[]] * 3 + [nested(MAX_DEPTH)])  # depth counts the enclosing list
    assert not nests_too_deep("x" * 10_000)


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000, "[" * 100_000 + "]" * 100_000])
def test_nesting_past_the_parsers_recursion_is_too_deep_not_a_crash(text: str) -> None:
    with pytest.raises(TooDeep, match="the path is nested deeper"):
        load_json(text, what="the path")


def test_a_value_built_deeper_than_the_interpreter_recurses_is_checked_without_recursing() -> None:
    with pytest.raises(TooDeep):
        check_json_value(nested(200_000))


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "1e999", "[-1e400]", '{"a": [1.5, NaN]}'])
def test_numbers_json_cannot_carry_are_refused(text: str) -> None:
    with pytest.raises(NotFinite, match="the value holds NaN or Infinity"):
        load_json(text, what="the value")


@pytest.mark.parametrize("value", [float("nan"), [1, float("inf")], {"a": {"b": -float("inf")}}])
def test_a_built_value_with_a_non_finite_number_is_refused(value: t.Any) -> None:
    with pytest.raises(NotFinite):
        check_json_value(value)


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("{data", "Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("", "Expecting value (line 1, column 1)"),
        (b'["\x80"]', "it is not UTF-8 text"),
    ],
)
def test_text_that_is_not_json_says_where(text: str | bytes, detail: str) -> None:
    with pytest.raises(NotJson) as caught:
        load_json(text)
    assert caught.value.detail == detail
    assert str(caught.value) == f"the body is not JSON: {detail}"


@pytest.mark.parametrize("text", ["1" * 5000, '{"replicas": -' + "9" * 4301 + "}", "[1, " + "2" * 10_000 + "]"])
def test_an_integer_past_the_digit_limit_is_refused_naming_the_limit(text: str) -> None:
    with pytest.raises(TooLong) as caught:
        load_json(text, what="the value")
    assert str(caught.value) == f"the value holds a number of more than {sys.get_int_max_str_digits()} digits"


def test_an_integer_at_the_digit_limit_is_read() -> None:
    assert load_json("9" * sys.get_int_max_str_digits()) == int("9" * sys.get_int_max_str_digits())
