"""``metadata.managedFields`` kept by every write: who set which field, taken from others when changed."""

from __future__ import annotations

import typing as t

from flask_krm.testing.simulator.catalog import CONFIGMAPS, DEPLOYMENTS, FLUNDERS
from flask_krm.testing.simulator.managed_fields import (
    manager_from_user_agent,
    record_write,
    sorted_entries,
    tracked_fields,
)


def config_map(
    data: dict[str, str], managed: list[dict[str, t.Any]] | None = None, **metadata: t.Any
) -> dict[str, t.Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "app",
            "namespace": "demo",
            "uid": "u",
            "resourceVersion": "3",
            **metadata,
            "managedFields": managed or [],
        },
        "data": data,
    }


def owners(entries: list[dict[str, t.Any]]) -> dict[str, dict[str, t.Any]]:
    return {entry["manager"]: entry["fieldsV1"] for entry in entries}


def test_the_default_manager_is_the_user_agent_s_first_part() -> None:
    assert manager_from_user_agent("kubectl/v1.37.0 (linux/amd64)") == "kubectl"
    assert manager_from_user_agent("x" * 200) == "x" * 128


def test_system_metadata_and_type_meta_are_not_tracked() -> None:
    tracked = tracked_fields(config_map({"a": "1"}, labels={"x": "y"}), "", CONFIGMAPS)
    assert tracked == {("metadata", "labels", "x"): "y", ("data", "a"): "1"}
    assert tracked_fields(None, "", CONFIGMAPS) == {}


def test_a_create_owns_its_fields_and_the_maps_it_brought_into_being() -> None:
    (entry,) = record_write(CONFIGMAPS, None, config_map({"a": "1"}, labels={"x": "y"}), "creator", "", "T1")
    assert entry == {
        "manager": "creator",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "T1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}},
    }


def test_another_manager_takes_the_fields_it_changes() -> None:
    created = config_map({"a": "1", "b": "1"})
    created["metadata"]["managedFields"] = record_write(CONFIGMAPS, None, created, "creator", "", "T1")
    changed = config_map({"a": "2", "b": "1"})
    entries = record_write(CONFIGMAPS, created, changed, "editor", "", "T2")
    assert owners(entries) == {"creator": {"f:data": {".": {}, "f:b": {}}}, "editor": {"f:data": {"f:a": {}}}}
    assert [entry["time"] for entry in entries] == ["T1", "T2"], "the untouched manager keeps its time"


def test_removing_a_key_takes_it_and_the_map_itself_from_its_owner() -> None:
    created = config_map({"a": "1", "b": "1"})
    created["metadata"]["managedFields"] = record_write(CONFIGMAPS, None, created, "creator", "", "T1")
    entries = record_write(CONFIGMAPS, created, config_map({"a": "1"}), "editor", "", "T2")
    assert owners(entries) == {"creator": {"f:data": {"f:a": {}}}}, "a removal alone gives the remover nothing"


def test_a_manager_s_own_entry_grows_and_gets_the_new_time() -> None:
    created = config_map({"a": "1"})
    created["metadata"]["managedFields"] = record_write(CONFIGMAPS, None, created, "creator", "", "T1")
    (entry,) = record_write(CONFIGMAPS, created, config_map({"a": "1", "b": "2"}), "creator", "", "T2")
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}}} and entry["time"] == "T2"
    unchanged = record_write(CONFIGMAPS, created, config_map({"a": "1"}), "creator", "", "T3")
    assert unchanged == created["metadata"]["managedFields"], "a write that changes nothing records nothing"


def test_status_is_tracked_only_through_the_status_subresource() -> None:
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}},
        "status": {"replicas": 1},
    }
    assert set(tracked_fields(deployment, "", DEPLOYMENTS)) == {("spec", "replicas"), ("spec", "selector")}
    assert set(tracked_fields(deployment, "status", DEPLOYMENTS)) >= {("status", "replicas")}
    (entry,) = record_write(DEPLOYMENTS, None, deployment, "controller", "status", "T")
    assert entry["subresource"] == "status" and "f:status" in entry["fieldsV1"]


def test_every_object_inside_a_custom_resource_is_a_map_its_creator_owns() -> None:
    flunder = {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f"},
        "spec": {"a": {"b": 1}},
    }
    (entry,) = record_write(FLUNDERS, None, flunder, "me", "", "T")
    assert entry["fieldsV1"] == {"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}}}


def test_an_update_takes_what_it_changes_from_an_apply_entry() -> None:
    applied = {"f:data": {"f:a": {}, "f:b": {}}}
    apply_entry = {
        "manager": "applier",
        "operation": "Apply",
        "apiVersion": "v1",
        "time": "T0",
        "fieldsType": "FieldsV1",
        "fieldsV1": applied,
    }
    old = config_map({"a": "1", "b": "1"}, [apply_entry])
    entries = record_write(CONFIGMAPS, old, config_map({"a": "2", "b": "1"}), "editor", "", "T1")
    assert owners(entries) == {"applier": {"f:data": {"f:b": {}}}, "editor": {"f:data": {"f:a": {}}}}
    taken_all = record_write(CONFIGMAPS, old, config_map({"a": "2", "b": "2"}), "editor", "", "T1")
    assert [entry["manager"] for entry in taken_all] == ["editor"], "an apply entry left with no fields is dropped"


def test_entries_sort_by_operation_time_and_manager() -> None:
    entries = [
        {"manager": "b", "operation": "Update", "time": "T1"},
        {"manager": "a", "operation": "Update", "time": "T1"},
        {"manager": "z", "operation": "Update", "time": "T0"},
        {"manager": "y", "operation": "Apply", "time": "T9"},
    ]
    assert [entry["manager"] for entry in sorted_entries(entries)] == ["y", "z", "a", "b"]
