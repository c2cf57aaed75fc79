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
