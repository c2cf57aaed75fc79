"""resourceVersion ordering: arbitrary-size decimals, and what cannot be ordered."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flask_krm.sse import decode_events
from flask_krm.versions import (
    MAX_RESOURCE_VERSION_LENGTH,
    Ordering,
    compare,
    is_decimal,
    is_stale,
    unorderable_message,
)
from tests.corpus import golden_sse

FORTY = "2345678901234567890123456789012345678901"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("9", "10", -1),
        ("10", "9", 1),
        ("123", "23", 1),
        ("23", "123", -1),
        ("1002", "1001", 1),
        ("1001", "1001", 0),
        (FORTY, FORTY[:-1], 1),
        ("1" + FORTY, FORTY, 1),
        (FORTY, "9" * 39, 1),
        ("0123", "123", None),
        ("0", "1", None),
        ("", "1", None),
        ("", "", None),
        ("opaque-alpha", "opaque-alpha", None),
        ("12a", "12", None),
        ("+12", "12", None),
        (" 12", "12", None),
        ("١٢", "12", None),  # Arabic-Indic digits are digits to str.isdigit, not to Kubernetes
        (12, "12", None),
        (None, "12", None),
        ("1" * (MAX_RESOURCE_VERSION_LENGTH + 1), "1", None),
    ],
)
def test_compare(a: object, b: object, expected: int | None) -> None:
    assert compare(a, b) == expected
    if expected is not None:
        assert compare(b, a) == -expected


def test_is_decimal() -> None:
    assert is_decimal("1") and is_decimal(FORTY) and is_decimal("9" * MAX_RESOURCE_VERSION_LENGTH)
    for value in ("", "0", "01", "1.0", "1e3", "-1", "²", 1, None, "9" * (MAX_RESOURCE_VERSION_LENGTH + 1)):
        assert not is_decimal(value)


def test_is_stale() -> None:
    assert is_stale("1001", "1002") is True
    assert is_stale("1002", "1002") is False  # equal passes
    assert is_stale("1003", "1002") is False
    assert is_stale("x", "1002") is None


def test_the_unorderable_message_is_the_corpus_text() -> None:
    frames = decode_events(golden_sse("resourceversion-unorderable"))
    assert unorderable_message("opaque-alpha") == frames[-1]["message"]


def test_the_unorderable_message_shows_a_long_value_shortened() -> None:
    message = unorderable_message("x" * 10_000)
    assert len(message) < 500 and "xxx..." in message
    assert "(12)" in unorderable_message(12)


def test_ordering_modes() -> None:
    assert Ordering("strict") is Ordering.STRICT and Ordering("lenient") is Ordering.LENIENT


decimals = st.integers(min_value=1, max_value=10**60)


@given(decimals, decimals)
def test_ordering_agrees_with_integer_order(a: int, b: int) -> None:
    assert compare(str(a), str(b)) == (a > b) - (a < b)


@given(decimals, decimals, decimals)
def test_ordering_is_a_total_order(a: int, b: int, c: int) -> None:
    x, y, z = str(a), str(b), str(c)
    assert compare(x, x) == 0
    assert compare(x, y) == -compare(y, x)  # type: ignore[operator]
    assert compare(x, y) in (-1, 0, 1)
    if compare(x, y) <= 0 and compare(y, z) <= 0:  # type: ignore[operator]
        assert compare(x, z) <= 0  # type: ignore[operator]


@given(st.text(max_size=30), decimals)
def test_anything_not_decimal_is_unorderable(text: str, n: int) -> None:
    decimal = text.isascii() and text.isdigit() and not text.startswith("0")
    assert (compare(text, str(n)) is None) == (not decimal)
