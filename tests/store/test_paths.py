"""Paths and RFC 6901 pointers as the store names the places in an object."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.store import MalformedPathError
from flask_krm.store.paths import MISSING, as_path, get_at, path_to_pointer, pointer_to_path


@pytest.mark.parametrize(
    ("pointer", "path"),
    [
        ("", ()),
        ("/data/token", ("data", "token")),
        ("/data/a~1b", ("data", "a/b")),
        ("/data/user~0name", ("data", "user~name")),
        ("/x/~01", ("x", "~1")),
        ("/data/0", ("data", "0")),
        ("/", ("",)),
    ],
)
def test_pointers_round_trip(pointer: str, path: tuple[str, ...]) -> None:
    assert pointer_to_path(pointer) == path
    assert path_to_pointer(path) == pointer


@pytest.mark.parametrize("pointer", ["data", "/a~2b", "/a~"])
def test_malformed_pointers_are_refused(pointer: str) -> None:
    with pytest.raises(MalformedPathError):
        pointer_to_path(pointer)


def test_a_label_key_with_dots_and_slashes_is_one_segment() -> None:
    path = as_path(["metadata", "labels", "app.kubernetes.io/name"])
    assert path == ("metadata", "labels", "app.kubernetes.io/name")
    assert path_to_pointer(path) == "/metadata/labels/app.kubernetes.io~1name"
    assert get_at({"metadata": {"labels": {"app.kubernetes.io/name": "x"}}}, path) == "x"


def test_get_at_returns_missing_for_what_is_not_there() -> None:
    tree = {"a": [1, {"b": None}]}
    assert get_at(tree, ("a", 1, "b")) is None
    assert get_at(tree, ("a", 2)) is MISSING
    assert get_at(tree, ("a", "0")) is MISSING
    assert get_at(tree, ("a", 0, "x")) is MISSING


@pytest.mark.parametrize("bad", ["a.b", b"ab", 5, None, ("a", None)])
def test_as_path_refuses_non_paths(bad: Any) -> None:
    with pytest.raises(MalformedPathError):
        as_path(bad)
