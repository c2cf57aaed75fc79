"""The ``Status`` failures as kube-apiserver words them: field errors, Go's printing of bad values,
aggregated messages and the ``Status`` body's shape."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.catalog import CONFIGMAPS, DEPLOYMENTS, GroupKind, GroupResource
from flask_krm.testing.simulator.errors import (
    ApiError,
    FieldError,
    aggregate,
    conflict,
    forbidden,
    go_print,
    go_type_name,
    go_value,
    internal,
    invalid,
    not_found,
)


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (True, "true"),
        (False, "false"),
        (3, "3"),
        (1.5, "1.5"),
        ("a\u00e9", '"a\u00e9"'),
        ({"a": [1, None]}, '{"a":[1,null]}'),
    ],
)
def test_a_bad_value_prints_as_field_error_prints_it(value: object, printed: str) -> None:
    assert go_value(value) == printed


def test_go_print_sorts_map_keys_and_prints_null_as_nil() -> None:
    assert go_print({"b": [1, None], "a": {"y": True, "x": "s"}}) == "map[a:map[x:s y:true] b:[1 <nil>]]"
    assert go_print(None) == "<nil>" and go_print(False) == "false"


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "<nil>"),
        (True, "bool"),
        (7, "int64"),
        (7.0, "float64"),
        ("x", "string"),
        ([], "[]interface {}"),
        ({}, "map[string]interface {}"),
    ],
)
def test_go_type_name_is_the_decoded_value_s_type(value: object, name: str) -> None:
    assert go_type_name(value) == name


def test_aggregate_keeps_one_message_bare_and_brackets_several_without_duplicates() -> None:
    assert aggregate(["one"]) == "one"
    assert aggregate(["one", "one"]) == "one"
    assert aggregate(["one", "two", "one"]) == "[one, two]"


def test_field_error_bodies() -> None:
    assert str(FieldError.invalid("spec.replicas", -1, "must be greater than or equal to 0")) == (
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    )
    assert str(FieldError.required("metadata.name", "name or generateName is required")) == (
        "metadata.name: Required value: name or generateName is required"
    )
    assert FieldError.required("spec").body() == "Required value"
    assert (
        FieldError.not_supported("type", "X", ["A", "B"]).body() == 'Unsupported value: "X": supported values: "A", "B"'
    )
    assert FieldError.too_long("data", 10).body() == "Too long: may not be more than 10 bytes"
    assert FieldError.duplicate("items[1]", "a").body() == 'Duplicate value: "a"'
    assert FieldError.forbidden("spec.x", "not allowed").body() == "Forbidden: not allowed"


def test_invalid_has_a_cause_per_error_and_aggregates_them_in_its_message() -> None:
    errors = [FieldError.required("metadata.name"), FieldError.invalid("spec.replicas", -1, "too small")]
    error = invalid(DEPLOYMENTS.group_kind, "web", errors)
    assert (error.code, error.reason) == (422, "Invalid")
    assert error.message == (
        'Deployment.apps "web" is invalid: [metadata.name: Required value, spec.replicas: Invalid value: -1: too small]'
    )
    assert error.details == {
        "name": "web",
        "group": "apps",
        "kind": "Deployment",
        "causes": [
            {"reason": "FieldValueRequired", "message": "Required value", "field": "metadata.name"},
            {"reason": "FieldValueInvalid", "message": "Invalid value: -1: too small", "field": "spec.replicas"},
        ],
    }


def test_invalid_of_a_nameless_object_quotes_the_empty_name() -> None:
    error = invalid(GroupKind("", "ConfigMap"), "", [FieldError.required("metadata.name")])
    assert error.message == 'ConfigMap "" is invalid: metadata.name: Required value'
    assert "name" not in (error.details or {}) and "group" not in (error.details or {})


def test_forbidden_wording_depends_on_resource_and_name() -> None:
    named = forbidden(CONFIGMAPS.group_resource, "app", "no")
    assert named.message == 'configmaps "app" is forbidden: no' and named.details == {
        "name": "app",
        "kind": "configmaps",
    }
    assert forbidden(DEPLOYMENTS.group_resource, "", "no").message == "deployments.apps is forbidden: no"
    assert forbidden(GroupResource("", ""), "", "no").message == "forbidden: no"


def test_status_lists_its_fields_in_the_go_encoder_s_order() -> None:
    status = conflict(CONFIGMAPS.group_resource, "app", "stale").status()
    assert list(status) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]
    assert status["message"] == 'Operation cannot be fulfilled on configmaps "app": stale' and status["code"] == 409


def test_a_status_without_reason_or_details_leaves_them_out() -> None:
    status = ApiError(500, "", "boom").status()
    assert "reason" not in status and "details" not in status and status["status"] == "Failure"
    assert str(ApiError(500, "", "boom")) == "500 : boom"


def test_not_found_and_internal_details() -> None:
    missing = not_found(DEPLOYMENTS.group_resource, "web")
    assert missing.message == 'deployments.apps "web" not found'
    assert missing.details == {"name": "web", "group": "apps", "kind": "deployments"}
    failed = internal("disk full")
    assert failed.message == "Internal error occurred: disk full" and failed.details == {
        "causes": [{"message": "disk full"}]
    }
