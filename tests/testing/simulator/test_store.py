"""The object store: one increasing resourceVersion, a history that lists and watches replay, compaction."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.catalog import CONFIGMAPS, SECRETS, ResourceType
from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.store import Event, ObjectStore, key_path, object_key


def commit(
    store: ObjectStore,
    name: str,
    namespace: str = "a",
    event: str = "ADDED",
    value: str = "",
    resource: ResourceType = CONFIGMAPS,
) -> Event:
    obj: dict[str, t.Any] = {
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": str(store.next_version())},
        "data": {"v": value},
    }
    return store.commit(resource, obj, event)


def names(objects: list[dict[str, t.Any]]) -> list[tuple[str, str]]:
    return [(obj["metadata"]["name"], obj["data"]["v"]) for obj in objects]


def test_keys_and_their_order() -> None:
    assert object_key({"metadata": {"name": "n", "namespace": "ns"}}) == ("ns", "n")
    assert object_key({"metadata": {"name": "node"}}) == ("", "node")
    assert key_path(("ns", "n")) == "ns/n" and key_path(("", "n")) == "n"


def test_items_are_in_key_order_and_filtered_by_namespace() -> None:
    store = ObjectStore()
    for name, namespace in [("b", "z"), ("a", "z"), ("c", "a")]:
        commit(store, name, namespace)
    commit(store, "s", "a", resource=SECRETS)
    assert [object_key(obj) for obj in store.items(CONFIGMAPS)] == [("a", "c"), ("z", "a"), ("z", "b")]
    assert [object_key(obj) for obj in store.items(CONFIGMAPS, "z")] == [("z", "a"), ("z", "b")]
    assert store.namespace_has_objects("z") and not store.namespace_has_objects("y")


def test_a_commit_must_carry_the_next_version() -> None:
    store = ObjectStore()
    obj = {"metadata": {"name": "x", "namespace": "a", "resourceVersion": str(store.resource_version + 2)}}
    with pytest.raises(RuntimeError, match="commit of version 3 after 1"):
        store.commit(CONFIGMAPS, obj, "ADDED")
    assert store.items(CONFIGMAPS) == [] and store.resource_version == 1


def test_events_record_the_previous_object_and_a_delete_removes_it() -> None:
    store = ObjectStore()
    added = commit(store, "x", value="1")
    modified = commit(store, "x", event="MODIFIED", value="2")
    deleted = commit(store, "x", event="DELETED", value="2")
    assert (added.previous, modified.previous, deleted.previous) == (None, added.object, modified.object)
    assert store.get(CONFIGMAPS, "a", "x") is None and store.resource_version == deleted.resource_version == 4
    assert [event.type for event in store.events_since(2)] == ["MODIFIED", "DELETED"]


def test_items_at_rebuilds_an_earlier_version_of_one_resource_type() -> None:
    store = ObjectStore()
    commit(store, "x", value="1")  # 2
    commit(store, "y", value="1")  # 3
    commit(store, "s", resource=SECRETS)  # 4
    commit(store, "x", event="MODIFIED", value="2")  # 5
    commit(store, "y", event="DELETED", value="1")  # 6
    commit(store, "z", "b", value="1")  # 7
    assert names(store.items_at(CONFIGMAPS, None, 3)) == [("x", "1"), ("y", "1")]
    assert names(store.items_at(CONFIGMAPS, "a", 5)) == [("x", "2"), ("y", "1")]
    assert names(store.items_at(CONFIGMAPS, None, 7)) == names(store.items(CONFIGMAPS))
    assert store.items_at(CONFIGMAPS, None, 1) == []


def test_compaction_makes_older_versions_too_old() -> None:
    store = ObjectStore()
    for name in "abc":
        commit(store, name)
    store.compact_to(3)
    assert [event.resource_version for event in store.events_since(3)] == [4]
    with pytest.raises(ApiError) as expired:
        store.events_since(2)
    assert (expired.value.code, expired.value.message) == (410, "too old resource version: 2 (3)")
    with pytest.raises(ApiError):
        store.items_at(CONFIGMAPS, None, 2)
    store.compact()
    assert store.horizon == 4 and list(store.events_since(4)) == []
    store.compact_to(2)
    assert store.horizon == 4  # the horizon never goes back


def test_a_history_window_keeps_only_that_many_events() -> None:
    store = ObjectStore(history_window=2)
    for name in "abcd":
        commit(store, name)
    assert store.horizon == 3
    assert [event.resource_version for event in store.events_since(3)] == [4, 5]
    with pytest.raises(ApiError):
        store.events_since(2)


def test_listeners_hear_every_commit_until_they_unsubscribe() -> None:
    store = ObjectStore()
    heard: list[int] = []
    unsubscribe = store.subscribe(lambda event: heard.append(event.resource_version))
    commit(store, "a")
    unsubscribe()
    unsubscribe()
    commit(store, "b")
    assert heard == [2]
