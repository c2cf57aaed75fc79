"""The three-way merge table, absent values, flashes, and keyed lists in the merge."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.store import BUILTIN_LIST_SCHEMAS, DEFAULT_POLICY, LiveResourceStore
from flask_krm.store.merge import Conflict, flashed_paths, three_way_merge
from flask_krm.store.paths import MISSING
from flask_krm.store.regions import Regions

from .objects import CM_UID, configmap, deployment, modified, store_with, with_changes

CONTAINERS = ("spec", "template", "spec", "containers")


def wrap(value: Any) -> dict[str, Any]:
    return {"metadata": {"uid": "u"}, "spec": {} if value is MISSING else {"v": value}}


def merge(base: Any, ours: Any, theirs: Any, **kwargs: Any) -> Any:
    result = three_way_merge(wrap(base), wrap(ours), wrap(theirs), Regions(DEFAULT_POLICY, wrap(theirs)), **kwargs)
    flashed = flashed_paths(wrap(base), wrap(ours), wrap(theirs))
    return result.draft["spec"].get("v", MISSING), result.conflicts, flashed


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "result", "conflict"),
    [
        (1, 1, 2, 2, None),  # no local edit: follow the server
        (1, 5, 1, 5, None),  # the server did not move: keep the edit
        (1, 5, 5, 5, None),  # both agree: converge
        (1, 5, 2, 5, 2),  # both moved differently: keep ours, record theirs
        (1, MISSING, 1, MISSING, None),  # a deletion persists
        (1, MISSING, 2, MISSING, 2),  # deleted here, changed there
        (MISSING, 5, MISSING, 5, None),  # an addition survives an unchanged server
        (1, 5, MISSING, 5, MISSING),  # the server removed what the person edited
        (1, 1, MISSING, MISSING, None),  # the server removed it, nobody edited it
        ([1, 2], [1, 3], [1, 2, 4], [1, 3], [1, 2, 4]),  # arrays are atomic
        ("a", {"x": 1}, "b", {"x": 1}, "b"),  # a shape change is atomic
    ],
)
def test_the_merge_table(base: Any, ours: Any, theirs: Any, result: Any, conflict: Any) -> None:
    merged, conflicts, _ = merge(base, ours, theirs)
    assert merged == result
    if conflict is None:
        assert conflicts == {}
    elif conflict is MISSING:
        assert conflicts == {("spec", "v"): Conflict(("spec", "v"), None, present=False)}
    else:
        assert conflicts == {("spec", "v"): Conflict(("spec", "v"), conflict)}


def test_maps_merge_key_by_key_and_equality_ignores_key_order() -> None:
    merged, conflicts, flashed = merge({"a": 1, "b": 2}, {"b": 2, "a": 9}, {"b": 3, "a": 1, "c": 4})
    assert merged == {"a": 9, "b": 3, "c": 4}
    assert conflicts == {}
    assert set(flashed) == {("spec", "v", "b"), ("spec", "v", "c")}


def test_true_is_not_one() -> None:
    merged, conflicts, _ = merge(1, True, 1)
    assert merged is True and conflicts == {}
    merged, conflicts, _ = merge(True, True, 1)
    assert merged == 1 and type(merged) is int


def test_a_map_the_server_removed_keeps_only_edited_keys_and_a_real_empty_map_is_kept() -> None:
    merged, conflicts, _ = merge({"a": 1, "b": 2}, {"a": 1, "b": 5}, MISSING)
    assert merged == {"b": 5}
    assert list(conflicts) == [("spec", "v", "b")]
    merged, _, _ = merge({"a": 1}, {"a": 1}, {})
    assert merged == {}
    merged, _, _ = merge({"a": 1}, {"a": 1, "n": 1}, {"a": 2})
    assert merged == {"a": 2, "n": 1}


def test_existing_conflicts_stay_until_settled() -> None:
    previous = {("spec", "v"): Conflict(("spec", "v"), 2)}
    _, conflicts, _ = merge(2, 5, 2, conflicts=previous)  # the server did not move again
    assert conflicts == previous
    _, conflicts, _ = merge(2, 5, 5, conflicts=previous)  # it converged
    assert conflicts == {}
    _, conflicts, _ = merge(2, 5, 3, conflicts=previous)  # it moved again: the newer value
    assert conflicts == {("spec", "v"): Conflict(("spec", "v"), 3)}


def test_read_only_regions_follow_the_server_and_flash() -> None:
    store = store_with(deployment())
    assert store.flashed("deploy-1") == []
    store.set_value("deploy-1", ("spec", "replicas"), 5)
    event = modified(with_changes(deployment(), "2", {("status", "readyReplicas"): 2, ("spec", "replicas"): 3}))
    store.apply(event)
    assert store.draft("deploy-1")["status"] == {"readyReplicas": 2}
    flashed = store.flashed("deploy-1")
    assert set(flashed) == {("status", "readyReplicas"), ("metadata", "resourceVersion")}  # not the edited replicas
    store.apply(event)  # a re-delivery changes nothing, flashes included
    assert store.flashed("deploy-1") == flashed
    assert store.dirty("deploy-1") == [("spec", "replicas")]


def test_a_path_that_becomes_read_only_follows_the_server() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    opaque = with_changes(configmap(), "2", {("data", "level"): b"\x00"})
    store.apply(modified(opaque))
    assert store.draft(CM_UID)["data"]["level"] == b"\x00"
    assert store.conflicts(CM_UID) == [] and store.dirty(CM_UID) == []


# -- keyed lists ---------------------------------------------------------------------------------


def keyed_store() -> LiveResourceStore:
    return store_with(deployment(), store=LiveResourceStore(schemas=BUILTIN_LIST_SCHEMAS))


def containers_of(store: LiveResourceStore) -> list[dict[str, Any]]:
    return store.draft("deploy-1")["spec"]["template"]["spec"]["containers"]


def test_an_item_edit_survives_a_reorder_and_an_unrelated_item_change() -> None:
    store = keyed_store()
    store.set_value("deploy-1", CONTAINERS + (0, "image"), "web:2")
    reordered = [
        {"name": "log", "image": "log:2"},
        {"name": "sidecar", "image": "s:1"},
        {"name": "web", "image": "web:1"},
    ]
    store.apply(modified(deployment("2", reordered)))
    assert containers_of(store) == [
        {"name": "log", "image": "log:2"},
        {"name": "sidecar", "image": "s:1"},
        {"name": "web", "image": "web:2"},
    ]
    assert store.conflicts("deploy-1") == []
    assert store.dirty("deploy-1") == [CONTAINERS]
    assert store.patch("deploy-1") == {"spec": {"template": {"spec": {"containers": containers_of(store)}}}}


def test_a_same_field_conflict_stays_on_the_item_and_follows_it_across_reorders() -> None:
    store = keyed_store()
    store.set_value("deploy-1", CONTAINERS + (0, "image"), "web:2")
    store.apply(modified(deployment("2", [{"name": "web", "image": "web:3"}, {"name": "log", "image": "log:1"}])))
    assert [(c.path, c.theirs) for c in store.conflicts("deploy-1")] == [(CONTAINERS + (0, "image"), "web:3")]
    store.apply(modified(deployment("3", [{"name": "log", "image": "log:1"}, {"name": "web", "image": "web:3"}])))
    assert [(c.path, c.theirs) for c in store.conflicts("deploy-1")] == [(CONTAINERS + (1, "image"), "web:3")]
    assert containers_of(store)[1] == {"name": "web", "image": "web:2"}
    store.take_theirs("deploy-1", CONTAINERS + (1, "image"))
    assert store.conflicts("deploy-1") == [] and store.dirty("deploy-1") == []


def test_items_added_locally_survive_and_items_removed_by_the_server_go() -> None:
    store = keyed_store()
    store.set_value("deploy-1", CONTAINERS + (2,), {"name": "mine", "image": "m:1"})
    store.apply(modified(deployment("2", [{"name": "web", "image": "web:1"}])))
    assert [c["name"] for c in containers_of(store)] == ["web", "mine"]
    assert store.conflicts("deploy-1") == []


def test_an_item_the_server_removed_after_a_local_edit_conflicts_as_absent() -> None:
    store = keyed_store()
    store.set_value("deploy-1", CONTAINERS + (1, "image"), "log:2")
    store.apply(modified(deployment("2", [{"name": "web", "image": "web:1"}])))
    assert containers_of(store) == [{"name": "web", "image": "web:1"}, {"name": "log", "image": "log:2"}]
    [conflict] = store.conflicts("deploy-1")
    assert conflict.path == CONTAINERS + (1,) and not conflict.present


def test_an_item_deleted_locally_and_changed_by_the_server_conflicts_at_the_list() -> None:
    store = keyed_store()
    store.set_value("deploy-1", CONTAINERS, [{"name": "web", "image": "web:1"}])
    theirs = [{"name": "web", "image": "web:1"}, {"name": "log", "image": "log:9"}]
    store.apply(modified(deployment("2", theirs)))
    assert containers_of(store) == [{"name": "web", "image": "web:1"}]
    assert [(c.path, c.theirs) for c in store.conflicts("deploy-1")] == [(CONTAINERS, theirs)]


@pytest.mark.parametrize(
    "theirs",
    [
        [{"name": "web", "image": "web:1"}, {"name": "web", "image": "web:9"}],  # duplicate keys
        [{"image": "web:1"}, {"name": "log", "image": "log:1"}],  # a key is missing
        [{"name": None, "image": "x"}],  # a null key
        [{"name": {"nested": 1}}],  # a non-scalar key
        ["web"],  # not objects
    ],
)
def test_a_malformed_keyed_list_falls_back_to_atomic(theirs: list[Any]) -> None:
    store = keyed_store()
    store.set_value("deploy-1", CONTAINERS + (0, "image"), "web:2")
    store.apply(modified(deployment("2", theirs)))
    assert [c.path for c in store.conflicts("deploy-1")] == [CONTAINERS]
    assert containers_of(store) == [{"name": "web", "image": "web:2"}, {"name": "log", "image": "log:1"}]


def test_without_a_schema_containers_are_atomic() -> None:
    store = store_with(deployment())
    store.set_value("deploy-1", CONTAINERS + (0, "image"), "web:2")
    store.apply(modified(deployment("2", [{"name": "log", "image": "log:1"}, {"name": "web", "image": "web:1"}])))
    assert [c.path for c in store.conflicts("deploy-1")] == [CONTAINERS]
