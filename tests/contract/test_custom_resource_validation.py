"""A custom resource is checked against its CRD's structural schema: 422 with kube-openapi's wording and field paths."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, request

FLUNDERS = "/apis/wardle.example.com/v1alpha1/namespaces/{}/flunders"
KIND = "Flunder.wardle.example.com"
PATTERN = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$"


def _flunder(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": name}, "spec": spec}


def _invalid(name: str, causes: list[tuple[str, str, str]]) -> dict[str, Any]:
    """The 422 ``Status`` for ``causes`` given as (reason, field, message body)."""
    listed = [f"{field}: {body}" for _, field, body in causes]
    message = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{KIND} "{name}" is invalid: {message}',
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": "wardle.example.com",
            "kind": "Flunder",
            "causes": [{"reason": reason, "message": body, "field": field} for reason, field, body in causes],
        },
        "code": 422,
    }


SINGLE_ERRORS = [
    pytest.param(
        {"ports": [{"name": "http", "port": "80"}]},
        (
            "FieldValueTypeInvalid",
            "spec.ports[0].port",
            'Invalid value: "string": spec.ports[0].port in body must be of type integer: "string"',
        ),
        id="type",
    ),
    pytest.param(
        "text",
        ("FieldValueTypeInvalid", "spec", 'Invalid value: "string": spec in body must be of type object: "string"'),
        id="type-of-an-object",
    ),
    pytest.param(
        {"ports": {"name": "http"}},
        (
            "FieldValueTypeInvalid",
            "spec.ports",
            'Invalid value: "object": spec.ports in body must be of type array: "object"',
        ),
        id="type-of-a-list",
    ),
    pytest.param(
        {"ports": [{"name": "http", "protocol": "FTP"}]},
        (
            "FieldValueNotSupported",
            "spec.ports[0].protocol",
            'Unsupported value: "FTP": supported values: "TCP", "UDP", "SCTP"',
        ),
        id="enum",
    ),
    pytest.param(
        {"reference": "Not_A_Name"},
        (
            "FieldValueInvalid",
            "spec.reference",
            f"Invalid value: \"Not_A_Name\": spec.reference in body should match '{PATTERN}'",
        ),
        id="pattern",
    ),
    pytest.param(
        {"reference": "a" * 64},
        ("FieldValueTooLong", "spec.reference", "Too long: may not be more than 63 bytes"),
        id="max-length",
    ),
    pytest.param(
        {"ports": [{"name": "http", "port": 70000}]},
        (
            "FieldValueInvalid",
            "spec.ports[0].port",
            "Invalid value: 70000: spec.ports[0].port in body should be less than or equal to 65535",
        ),
        id="maximum",
    ),
    pytest.param(
        {"ports": [{"name": "http", "port": 0}]},
        (
            "FieldValueInvalid",
            "spec.ports[0].port",
            "Invalid value: 0: spec.ports[0].port in body should be greater than or equal to 1",
        ),
        id="minimum",
    ),
    pytest.param(
        {"ports": [{"name": "http"}, {"port": 81}]},
        ("FieldValueRequired", "spec.ports[1].name", "Required value"),
        id="required-key",
    ),
    pytest.param(
        {"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]},
        ("FieldValueDuplicate", "spec.ports[1]", 'Duplicate value: {"name":"http"}'),
        id="duplicate-key",
    ),
]


@pytest.mark.parametrize(("spec", "cause"), SINGLE_ERRORS)
def test_a_create_against_the_schema_is_refused(
    admin: kubernetes.client.ApiClient, namespace: str, spec: Any, cause: tuple[str, str, str]
) -> None:
    path = FLUNDERS.format(namespace)
    reply = request(admin, "POST", path, body=_flunder("f", spec))
    assert reply.status == 422, reply.body
    assert reply.body == _invalid("f", [cause])
    assert request(admin, "GET", f"{path}/f").status == 404


def test_missing_keys_are_required_and_duplicate(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    """Two items without their key: each is missing it, and the second repeats the first's empty key."""
    reply = request(
        admin, "POST", FLUNDERS.format(namespace), body=_flunder("f", {"ports": [{"port": 80}, {"port": 81}]})
    )
    assert reply.body == _invalid(
        "f",
        [
            ("FieldValueRequired", "spec.ports[0].name", "Required value"),
            ("FieldValueRequired", "spec.ports[1].name", "Required value"),
            ("FieldValueDuplicate", "spec.ports[1]", "Duplicate value: {}"),
        ],
    )


def test_schema_errors_come_before_list_key_errors(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    spec = {"ports": [{"name": "a", "port": 80}, {"name": "a", "port": "x"}, {"name": "b", "protocol": "FTP"}]}
    reply = request(admin, "POST", FLUNDERS.format(namespace), body=_flunder("f", spec))
    assert reply.body == _invalid(
        "f",
        [
            (
                "FieldValueTypeInvalid",
                "spec.ports[1].port",
                'Invalid value: "string": spec.ports[1].port in body must be of type integer: "string"',
            ),
            (
                "FieldValueNotSupported",
                "spec.ports[2].protocol",
                'Unsupported value: "FTP": supported values: "TCP", "UDP", "SCTP"',
            ),
            ("FieldValueDuplicate", "spec.ports[1]", 'Duplicate value: {"name":"a"}'),
        ],
    )


def test_unknown_fields_below_spec_are_kept(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    """``spec`` preserves unknown fields; a valid Flunder is stored as sent."""
    spec = {"reference": "", "colour": "blue", "ports": [{"name": "http", "port": 65535, "protocol": "UDP"}]}
    reply = request(admin, "POST", FLUNDERS.format(namespace), body=_flunder("f", spec))
    assert reply.status == 201, reply.body
    assert reply.body["spec"] == spec


@pytest.mark.parametrize("method", ["PUT", "PATCH", "PATCH-dry-run"])
def test_updates_are_checked_too(admin: kubernetes.client.ApiClient, namespace: str, method: str) -> None:
    path = FLUNDERS.format(namespace)
    created = request(admin, "POST", path, body=_flunder("f", {"ports": [{"name": "http", "port": 80}]}))
    assert created.status == 201
    ports = [{"name": "http", "port": 80}, {"name": "http", "port": -1}]
    if method == "PUT":
        reply = request(admin, "PUT", f"{path}/f", body={**created.body, "spec": {"ports": ports}})
    else:
        query = [("dryRun", "All")] if method.endswith("dry-run") else []
        reply = request(
            admin, "PATCH", f"{path}/f", body={"spec": {"ports": ports}}, content_type=MERGE_PATCH, query=query
        )
    assert reply.body == _invalid(
        "f",
        [
            (
                "FieldValueInvalid",
                "spec.ports[1].port",
                "Invalid value: -1: spec.ports[1].port in body should be greater than or equal to 1",
            ),
            ("FieldValueDuplicate", "spec.ports[1]", 'Duplicate value: {"name":"http"}'),
        ],
    )
    assert request(admin, "GET", f"{path}/f").body["spec"] == {"ports": [{"name": "http", "port": 80}]}


def test_fields_the_schema_neither_declares_nor_preserves_are_pruned(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    spec = {"ports": [{"name": "http", "port": 80, "colour": "blue"}]}
    reply = request(admin, "POST", FLUNDERS.format(namespace), body=_flunder("f", spec))
    assert reply.status == 201, reply.body
    assert reply.body["spec"] == {"ports": [{"name": "http", "port": 80}]}
    assert reply.headers.getlist("Warning") == ['299 - "unknown field \\"spec.ports[0].colour\\""']
    strict = request(
        admin,
        "POST",
        FLUNDERS.format(namespace),
        body=_flunder("g", spec),
        query=[("fieldValidation", "Strict")],
    )
    assert strict.status == 400
    assert strict.body["message"] == (
        'Flunder in version "v1alpha1" cannot be handled as a Flunder: '
        'strict decoding error: unknown field "spec.ports[0].colour"'
    )
