"""The value-tree helpers the store is built on: JSON equality, structural sharing, persistent
updates, opaque values."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.store import PathTypeError
from flask_krm.store.paths import MISSING
from flask_krm.store.values import delete_in, json_copy, json_equal, opaque_paths, set_in, share


def test_json_equality_ignores_key_order_and_distinguishes_bools() -> None:
    assert json_equal({"a": 1, "b": [1, {"c": 2}]}, {"b": [1, {"c": 2}], "a": 1})
    assert not json_equal(True, 1)
    assert not json_equal([True], [1])
    assert json_equal(1, 1.0)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal(None, MISSING)


def test_share_reuses_unchanged_subtrees() -> None:
    old = {"a": {"x": [1, 2]}, "b": {"y": 1}}
    new = json_copy(old)
    assert share(new, old) is old
    new["b"]["y"] = 2
    shared = share(new, old)
    assert shared == new and shared is not old
    assert shared["a"] is old["a"]
    assert shared["b"] is not new["b"]  # a copy: the caller's object is never aliased
    reordered = {"b": old["b"], "a": old["a"]}
    assert share(reordered, old) is not old  # key order is part of what is held


def test_persistent_updates_copy_the_spine_and_share_the_rest() -> None:
    tree = {"a": {"b": 1}, "c": {"d": 2}}
    updated = set_in(tree, ("a", "b"), 5)
    assert tree == {"a": {"b": 1}, "c": {"d": 2}}
    assert updated["a"] == {"b": 5} and updated["c"] is tree["c"]
    assert delete_in(tree, ("a", "zzz")) is tree
    assert delete_in(tree, ("a", "b")) == {"a": {}, "c": {"d": 2}}
    with pytest.raises(PathTypeError):
        set_in(tree, ("a", "b", "c"), 1)


@pytest.mark.parametrize("bad", [b"raw", "\ud800", float("inf"), object()])
def test_opaque_values_are_found_where_they_are(bad: Any) -> None:
    assert opaque_paths({"a": [1, {"b": bad}], "c": "ok"}) == [("a", 1, "b")]
    assert opaque_paths({"a": [1, {"b": "fine ü"}]}) == []
