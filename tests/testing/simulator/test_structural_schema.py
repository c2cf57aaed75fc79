"""A custom resource against its structural schema: each failure a field error worded as kube-apiserver
words it, list-type uniqueness, and the unknown fields pruned."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.structural_schema import go_number, schema_type, unknown_fields, validate

SPEC = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1.5, "multipleOf": 0.5},
        "name": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
        "mode": {"type": "string", "enum": ["Fast", "Slow"]},
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string", "nullable": True},
        "tags": {"type": "array", "maxItems": 2, "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {
            "type": "array",
            "minItems": 1,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}},
        },
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def messages(obj: dict[str, t.Any]) -> list[str]:
    return [str(error) for error in validate(SPEC, obj)]


def test_a_valid_object_has_no_errors() -> None:
    valid = {"size": 3, "ratio": 1.0, "name": "ab", "mode": "Fast", "port": "http", "note": None, "tags": ["a"]}
    assert messages({**valid, "ports": [{"name": "a"}, {"name": "b"}], "env": {"A": "1"}}) == []
    assert messages({"size": 3.0, "port": 8080}) == [], "a whole float is an integer, int-or-string takes both"


def test_types_and_null() -> None:
    assert messages({"size": "3", "note": None, "mode": None}) == [
        'size: Invalid value: "string": size in body must be of type integer: "string"',
        'mode: Invalid value: "null": mode in body must be of type string: "null"',
    ]
    assert messages({"size": 1, "port": True}) == [
        'port: Invalid value: "boolean": port in body must be of type integer,string: "boolean"'
    ]


def test_bounds_lengths_patterns_and_enums() -> None:
    assert messages({"size": 11, "ratio": 1.5, "name": "A", "mode": "Medium"}) == [
        "size: Invalid value: 11: size in body should be less than or equal to 10",
        "ratio: Invalid value: 1.5: ratio in body should be less than 1.5",
        'name: Invalid value: "A": name in body should be at least 2 chars long',
        "name: Invalid value: \"A\": name in body should match '^[a-z]+$'",
        'mode: Unsupported value: "Medium": supported values: "Fast", "Slow"',
    ]
    assert messages({"size": 0, "ratio": 0.7, "name": "abcde"}) == [
        "size: Invalid value: 0: size in body should be greater than or equal to 1",
        "ratio: Invalid value: 0.7: ratio in body should be a multiple of 0.5",
        "name: Too long: may not be more than 4 bytes",
    ]


def test_required_fields_come_after_the_present_ones() -> None:
    assert messages({"name": "A1"}) == [
        "name: Invalid value: \"A1\": name in body should match '^[a-z]+$'",
        "size: Required value",
    ]


def test_item_counts_and_items_checked_by_index() -> None:
    assert messages({"size": 1, "tags": ["a", 2, "c"], "ports": []}) == [
        'tags[1]: Invalid value: "integer": tags[1] in body must be of type string: "integer"',
        "tags: Too many: 3: must have at most 2 items",
        "ports: Invalid value: 0: ports in body should have at least 1 items",
    ]


def test_sets_and_maps_are_unique_by_value_and_by_key() -> None:
    ports = [{"name": "a", "port": 1}, {"name": "a", "port": 2}, {"name": "a", "port": 3}]
    assert messages({"size": 1, "tags": ["x", "x"], "ports": ports}) == [
        'tags[1]: Duplicate value: "x"',
        'ports[1]: Duplicate value: {"name":"a"}',
    ]
    assert messages({"size": 1, "ports": [{"name": "a"}, "b"]})[-1] == (
        'ports[1]: Invalid value: "b": must be an object for an array of list-type map'
    )


def test_additional_properties_are_checked_by_key() -> None:
    assert messages({"size": 1, "env": {"A": 1}}) == [
        'env.A: Invalid value: "integer": env.A in body must be of type string: "integer"'
    ]


@pytest.mark.parametrize(
    ("value", "name"),
    [(None, "null"), (True, "boolean"), (1, "integer"), (1.5, "number"), ("", "string"), ([], "array"), ({}, "object")],
)
def test_schema_type(value: t.Any, name: str) -> None:
    assert schema_type(value) == name


def test_go_number_prints_whole_bounds_without_a_point() -> None:
    assert (go_number(65535.0), go_number(1.5), go_number(-2)) == ("65535", "1.5", "-2")


def test_unknown_fields_are_found_and_pruned_where_the_schema_does_not_preserve_them() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"b": {"type": "string"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {}}},
        },
    }
    obj = {
        "spec": {"a": "1", "x": 1},
        "items": [{"b": "", "y": 2}],
        "free": {"z": 3},
        "labels": {"k": {"w": 1}},
        "top": 0,
    }
    found: list[str] = []
    unknown_fields(schema, obj, "", found, prune=False)
    assert found == ["spec.x", "items[0].y", "labels[k].w", "top"] and obj["spec"] == {"a": "1", "x": 1}
    unknown_fields(schema, obj, "", [], prune=True)
    assert obj == {"spec": {"a": "1"}, "items": [{"b": ""}], "free": {"z": 3}, "labels": {"k": {}}}
