"""Keyed lists: the list-map keys a structural schema gives a path, and item identities."""

from __future__ import annotations

from flask_krm.store import BUILTIN_LIST_SCHEMAS
from flask_krm.store.keyed_lists import KeyedLists, identities


def test_schema_lookup_follows_properties_items_and_additional_properties() -> None:
    ports = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"]}
    schema = {
        "properties": {
            "spec": {
                "additionalProperties": {"type": "array", "items": {"properties": {"ports": ports}}},
                "properties": {
                    "set": {"x-kubernetes-list-type": "set"},
                    "empty": {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []},
                },
            }
        }
    }
    lists = KeyedLists(schema)
    assert lists.map_keys(("spec", "anything", 3, "ports")) == ("port", "protocol")
    assert lists.map_keys(("spec", "set")) is None
    assert lists.map_keys(("spec", "empty")) is None
    assert lists.map_keys(("spec", "anything", "ports")) is None
    assert KeyedLists(BUILTIN_LIST_SCHEMAS[("batch/v1", "CronJob")]).map_keys(
        ("spec", "jobTemplate", "spec", "template", "spec", "containers", 0, "env")
    ) == ("name",)


def test_identities_distinguish_types_and_refuse_duplicates() -> None:
    assert identities([{"port": 80}, {"port": "80"}], ("port",)) is not None
    assert identities([{"port": 80}, {"port": 80}], ("port",)) is None
    assert identities("not a list", ("port",)) is None


def test_a_list_map_needs_string_keys() -> None:
    schema = {
        "properties": {
            "text": {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": "name"},
            "numbers": {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [1]},
            "atomic": {"x-kubernetes-list-type": "atomic", "x-kubernetes-list-map-keys": ["name"]},
        }
    }
    lists = KeyedLists(schema)
    assert lists.map_keys(("text",)) is None
    assert lists.map_keys(("numbers",)) is None
    assert lists.map_keys(("atomic",)) is None


def test_a_path_through_a_scalar_schema_has_no_keys() -> None:
    lists = KeyedLists({"properties": {"spec": {"properties": {"name": "not a schema"}}}})
    assert lists.map_keys(("spec", "name", "deeper")) is None


def test_every_index_of_a_list_shares_the_items_schema() -> None:
    lists = KeyedLists(BUILTIN_LIST_SCHEMAS[("v1", "Pod")])
    assert lists.map_keys(("spec", "containers")) == ("name",)
    assert lists.map_keys(("spec", "containers", 0, "ports")) == ("containerPort", "protocol")
    assert lists.map_keys(("spec", "containers", 7, "ports")) == ("containerPort", "protocol")
    assert lists.map_keys(("spec", "containers", 0, "image")) is None


def test_the_builtin_workloads_key_their_pod_templates_containers_by_name() -> None:
    template = ("spec", "template", "spec", "containers")
    for kind in [("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job")]:
        assert KeyedLists(BUILTIN_LIST_SCHEMAS[kind]).map_keys(template) == ("name",)


def test_identities_are_the_key_values_in_key_order() -> None:
    items = [{"port": 80, "protocol": "TCP", "name": "web"}, {"port": 80, "protocol": "UDP"}]
    assert identities(items, ("port", "protocol")) == [
        (("int", 80), ("str", "TCP")),
        (("int", 80), ("str", "UDP")),
    ]
    assert identities([], ("port",)) == []


def test_an_item_without_a_scalar_key_value_makes_the_list_atomic() -> None:
    assert identities([{"port": 80}, {"name": "no port"}], ("port",)) is None
    assert identities([{"port": None}], ("port",)) is None
    assert identities([{"port": [80]}], ("port",)) is None
    assert identities([{"port": 80}, "not a map"], ("port",)) is None
