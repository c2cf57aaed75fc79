"""Changes derived from server vs draft over the editable regions, the merge patch that holds
them, and RFC 7386 applied."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.store import DEFAULT_POLICY, READ_ONLY_POLICY, EditPolicy
from flask_krm.store.patch import Change, apply_merge_patch, changes, merge_patch
from flask_krm.store.paths import MISSING
from flask_krm.store.regions import Regions

SERVER = {
    "metadata": {"name": "app", "labels": {"a": "1", "b": "2"}, "resourceVersion": "1"},
    "data": {"level": "info", "replicas": "3"},
    "status": {"phase": "Active"},
}


def diff(draft: dict[str, Any], policy: EditPolicy = DEFAULT_POLICY, server: Any = SERVER) -> list[Change]:
    return changes(Regions(policy, server), server, draft)


def edited(**top: Any) -> dict[str, Any]:
    draft = {key: dict(value) if isinstance(value, dict) else value for key, value in SERVER.items()}
    draft.update(top)
    return draft


def test_an_unchanged_draft_has_no_changes_and_no_patch() -> None:
    assert diff(edited()) == []
    assert merge_patch(diff(edited())) is None


def test_each_kind_of_change_is_named_with_its_old_and_new_value() -> None:
    found = diff(edited(data={"level": "debug", "new": "x"}))
    assert sorted(found, key=lambda c: c.path) == [
        Change(("data", "level"), "update", "info", "debug"),
        Change(("data", "new"), "add", None, "x"),
        Change(("data", "replicas"), "delete", "3", None),
    ]


def test_the_merge_patch_holds_the_changes_with_removed_keys_as_null() -> None:
    found = diff(edited(data={"level": "debug"}, metadata={**SERVER["metadata"], "labels": {"a": "1", "c": "3"}}))
    assert merge_patch(found) == {
        "data": {"level": "debug", "replicas": None},
        "metadata": {"labels": {"b": None, "c": "3"}},
    }


def test_read_only_regions_are_never_changes() -> None:
    draft = edited(status={"phase": "Gone"}, metadata={**SERVER["metadata"], "name": "renamed"})
    assert diff(draft) == []
    assert diff(edited(data={"level": "debug"}), READ_ONLY_POLICY) == []


def test_a_policy_root_diffs_only_under_it() -> None:
    draft = edited(data={"level": "debug", "replicas": "3"}, metadata={**SERVER["metadata"], "labels": {}})
    assert [c.path for c in diff(draft, EditPolicy.only(("data",)))] == [("data", "level")]


def test_arrays_change_whole_and_a_type_change_is_one_update() -> None:
    server = {"spec": {"ports": [1, 2], "mode": {"a": 1}}}
    draft = {"spec": {"ports": [1, 2, 3], "mode": "flat"}}
    found = diff(draft, EditPolicy.only(("spec",)), server)
    assert found == [
        Change(("spec", "ports"), "update", [1, 2], [1, 2, 3]),
        Change(("spec", "mode"), "update", {"a": 1}, "flat"),
    ]
    assert merge_patch(found) == {"spec": {"ports": [1, 2, 3], "mode": "flat"}}


def test_true_and_one_differ() -> None:
    server = {"spec": {"flag": 1}}
    assert diff({"spec": {"flag": True}}, EditPolicy.only(("spec",)), server) == [
        Change(("spec", "flag"), "update", 1, True)
    ]


def test_the_patch_is_a_copy_of_the_draft_values() -> None:
    value = {"nested": ["a"]}
    patch = merge_patch([Change(("spec", "x"), "add", None, value)])
    assert patch is not None
    patch["spec"]["x"]["nested"].append("b")
    assert value == {"nested": ["a"]}


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [  # RFC 7386, appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        (MISSING, {"a": 1}, {"a": 1}),
    ],
)
def test_apply_merge_patch_is_rfc_7386(target: Any, patch: Any, result: Any) -> None:
    assert apply_merge_patch(target, patch) == result


def test_apply_merge_patch_leaves_its_inputs_untouched() -> None:
    target = {"a": {"b": 1}}
    patch = {"a": {"c": [1]}}
    result = apply_merge_patch(target, patch)
    result["a"]["c"].append(2)
    assert target == {"a": {"b": 1}}
    assert patch == {"a": {"c": [1]}}


def test_the_patch_applied_to_the_server_gives_the_drafts_editable_content() -> None:
    draft = edited(data={"level": "debug", "new": "x"}, metadata={**SERVER["metadata"], "labels": {"a": "9"}})
    patched = apply_merge_patch(SERVER, merge_patch(diff(draft)))
    assert patched == draft
