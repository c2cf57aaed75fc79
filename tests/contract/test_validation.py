"""Object validation as kube-apiserver words it: names, generateName, labels, annotations, owner
references, finalizers, ConfigMap and Secret data (keys, sizes, base64), namespace names."""

from __future__ import annotations

import json
import re
from typing import Any

import kubernetes.client
import pytest

from .kube import configmap, request

DNS_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an "
    "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_NAME = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
MIB = 1024 * 1024


def _create(
    admin: kubernetes.client.ApiClient, namespace: str, body: dict[str, Any], plural: str = "configmaps"
) -> Any:
    return request(admin, "POST", f"/api/v1/namespaces/{namespace}/{plural}", body=body)


def _invalid(kind: str, name: str, causes: list[tuple[str, str, str]]) -> dict[str, Any]:
    """The 422 ``Status`` for ``causes`` (reason, field, message without the field)."""
    messages = list(dict.fromkeys(f"{field}: {message}" for _, field, message in causes))
    summary = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"{kind} {json.dumps(name)} is invalid: {summary}",
        "reason": "Invalid",
        "details": {
            "name": name,
            "kind": kind,
            "causes": [{"reason": reason, "message": message, "field": field} for reason, field, message in causes],
        },
        "code": 422,
    }


def _bad_request(message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


@pytest.mark.parametrize(
    ("name", "causes"),
    [
        ("Bad_Name", [f'Invalid value: "Bad_Name": {DNS_SUBDOMAIN}']),
        ("n" * 254, [f'Invalid value: "{"n" * 254}": must be no more than 253 characters']),
        (
            "a" * 253 + "_",
            [
                f'Invalid value: "{"a" * 253 + "_"}": must be no more than 253 characters',
                f'Invalid value: "{"a" * 253 + "_"}": {DNS_SUBDOMAIN}',
            ],
        ),
        ("trailing\n", [f'Invalid value: "trailing\\n": {DNS_SUBDOMAIN}']),
    ],
    ids=["characters", "length", "both", "trailing-newline"],
)
def test_names_are_dns_subdomains(
    admin: kubernetes.client.ApiClient, namespace: str, name: str, causes: list[str]
) -> None:
    reply = _create(admin, namespace, configmap(name))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap", name, [("FieldValueInvalid", "metadata.name", cause) for cause in causes]
    )


def test_namespace_names_are_dns_labels(admin: kubernetes.client.ApiClient) -> None:
    """A dot is fine in most names but not in a namespace's; too long, it is also too long for its name label."""
    dotted = request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "team.a"}})
    assert dotted.status == 422
    assert (
        dotted.body["message"]
        == 'Namespace "team.a" is invalid: metadata.name: Invalid value: "team.a": must not contain dots'
    )
    assert dotted.body["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "team.a": must not contain dots',
        "field": "metadata.name",
    }
    upper = request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "Team"}})
    assert upper.status == 422
    assert upper.body["details"]["causes"][0]["message"] == f'Invalid value: "Team": {DNS_LABEL}'
    long_name = "n" * 64
    too_long = request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": long_name}})
    assert too_long.status == 422
    assert too_long.body["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": f'Invalid value: "{long_name}": must be no more than 63 characters',
        "field": "metadata.name",
    }


def test_objects_in_a_namespace_with_a_dot(admin: kubernetes.client.ApiClient) -> None:
    reply = request(admin, "POST", "/api/v1/namespaces/team.a/configmaps", body=configmap("c"))
    assert reply.status == 404
    assert reply.body["message"] == 'namespaces "team.a" not found'
    assert request(admin, "GET", "/api/v1/namespaces/team.a/configmaps/c").status == 404


def test_generate_name_is_cut_to_leave_room_for_the_suffix(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    prefix = "g" * 70
    reply = _create(admin, namespace, {"metadata": {"generateName": prefix}})
    assert reply.status == 201
    assert re.fullmatch("g" * 58 + "[a-z0-9]{5}", reply.body["metadata"]["name"])
    assert reply.body["metadata"]["generateName"] == prefix


def test_generate_name_has_its_own_validation_error(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = _create(admin, namespace, {"metadata": {"generateName": "Bad_"}})
    assert reply.status == 422
    generated = reply.body["details"]["name"]
    assert re.fullmatch("Bad_[a-z0-9]{5}", generated)
    assert reply.body == _invalid(
        "ConfigMap",
        generated,
        [
            ("FieldValueInvalid", "metadata.generateName", f'Invalid value: "Bad_": {DNS_SUBDOMAIN}'),
            ("FieldValueInvalid", "metadata.name", f'Invalid value: "{generated}": {DNS_SUBDOMAIN}'),
        ],
    )
    trailing_dash = _create(admin, namespace, {"metadata": {"generateName": "ok-"}})
    assert trailing_dash.status == 201  # a prefix may end in "-"


@pytest.mark.parametrize(
    ("labels", "causes"),
    [
        ({"k": "v" * 64}, [("v" * 64, "must be no more than 63 bytes")]),
        ({"k": "bad value"}, [("bad value", LABEL_VALUE)]),
        ({"k" * 64: "v"}, [("k" * 64, "name part must be no more than 63 bytes")]),
        ({"/k": "v"}, [("/k", "prefix part must be non-empty")]),
        ({"Bad_Prefix/k": "v"}, [("Bad_Prefix/k", f"prefix part {DNS_SUBDOMAIN}")]),
        (
            {"a/b/c": "v"},
            [
                (
                    "a/b/c",
                    "a valid label key "
                    + QUALIFIED_NAME
                    + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                )
            ],
        ),
    ],
    ids=["value-length", "value-characters", "key-length", "empty-prefix", "bad-prefix", "two-slashes"],
)
def test_label_rules(
    admin: kubernetes.client.ApiClient, namespace: str, labels: dict[str, str], causes: list[tuple[str, str]]
) -> None:
    reply = _create(admin, namespace, configmap("labelled", labels=labels))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "labelled",
        [("FieldValueInvalid", "metadata.labels", f'Invalid value: "{value}": {message}') for value, message in causes],
    )


def test_annotation_keys_are_qualified_names_in_any_case(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    assert _create(admin, namespace, configmap("upper", annotations={"Example.com/Some_Key": "v"})).status == 201
    reply = _create(admin, namespace, configmap("spaced", annotations={"bad key": "v"}))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "spaced",
        [("FieldValueInvalid", "metadata.annotations", f'Invalid value: "bad key": name part {QUALIFIED_NAME}')],
    )


def test_annotations_total_at_most_256_kib(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    limit = 256 * 1024
    assert _create(admin, namespace, configmap("fits", annotations={"a": "b" * (limit - 1)})).status == 201
    reply = _create(admin, namespace, configmap("over", annotations={"a": "b" * limit}))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "over",
        [("FieldValueTooLong", "metadata.annotations", f"Too long: may not be more than {limit} bytes")],
    )


def test_config_map_and_secret_data_at_most_1_mib(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    assert _create(admin, namespace, configmap("fits", {"k": "v" * MIB})).status == 201
    config_map = _create(admin, namespace, configmap("over", {"k": "v" * (MIB - 2), "l": "vvv"}))
    assert config_map.status == 422
    assert config_map.body == _invalid(
        "ConfigMap", "over", [("FieldValueTooLong", "[]", f"Too long: may not be more than {MIB} bytes")]
    )
    secret = _create(admin, namespace, {"metadata": {"name": "over"}, "stringData": {"k": "v" * (MIB + 1)}}, "secrets")
    assert secret.status == 422
    assert secret.body == _invalid(
        "Secret", "over", [("FieldValueTooLong", "data", f"Too long: may not be more than {MIB} bytes")]
    )


@pytest.mark.parametrize(
    ("finalizers", "causes"),
    [
        (["Bad Name/x"], [("Bad Name/x", f"prefix part {DNS_SUBDOMAIN}")]),
        (
            ["example.com/"],
            [("example.com/", "name part must be non-empty"), ("example.com/", f"name part {QUALIFIED_NAME}")],
        ),
    ],
    ids=["bad-prefix", "empty-name"],
)
def test_finalizer_names(
    admin: kubernetes.client.ApiClient, namespace: str, finalizers: list[str], causes: list[tuple[str, str]]
) -> None:
    reply = _create(admin, namespace, configmap("final", finalizers=finalizers))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "final",
        [
            ("FieldValueInvalid", "metadata.finalizers", f'Invalid value: "{value}": {message}')
            for value, message in causes
        ],
    )


def test_both_garbage_collection_finalizers(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = _create(admin, namespace, configmap("final", finalizers=["orphan", "foregroundDeletion"]))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "final",
        [
            (
                "FieldValueInvalid",
                "metadata.finalizers",
                'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set',
            )
        ],
    )


def test_unqualified_finalizers_must_be_standard(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    assert _create(admin, namespace, configmap("standard", finalizers=["kubernetes", "example.com/mine"])).status == 201
    reply = _create(admin, namespace, configmap("final", finalizers=["example.com/mine", "mine"]))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "final",
        [
            (
                "FieldValueInvalid",
                "metadata.finalizers[1]",
                'Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified',
            )
        ],
    )


def test_owner_reference_fields(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    empty = {"apiVersion": "", "kind": "", "name": "", "uid": ""}
    reply = _create(admin, namespace, configmap("owned", ownerReferences=[empty]))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "owned",
        [
            ("FieldValueRequired", f"metadata.ownerReferences[0].{key}", "Required value: must not be empty")
            for key in ("apiVersion", "kind", "name", "uid")
        ],
    )
    malformed = {"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"}
    bad_version = _create(admin, namespace, configmap("bad-version", ownerReferences=[malformed]))
    assert bad_version.status == 422
    assert bad_version.body == _invalid(
        "ConfigMap",
        "bad-version",
        [
            (
                "FieldValueInvalid",
                "metadata.ownerReferences[0].apiVersion",
                'Invalid value: "a/b/c": must be <group>/<version> or <version>',
            ),
        ],
    )
    event = {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}
    by_event = _create(admin, namespace, configmap("by-event", ownerReferences=[event]))
    assert by_event.status == 422
    assert by_event.body == _invalid(
        "ConfigMap",
        "by-event",
        [
            (
                "FieldValueInvalid",
                "metadata.ownerReferences[0]",
                'Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: /v1, Kind=Event is disallowed from being an owner',
            )
        ],
    )


def test_only_one_owner_is_the_controller(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    owners = [{"apiVersion": "v1", "kind": "K", "name": name, "uid": name, "controller": True} for name in ("n", "m")]
    reply = _create(admin, namespace, configmap("owned", ownerReferences=owners))
    assert reply.status == 422
    shown = '[{"apiVersion":"v1","kind":"K","name":"n","uid":"n","controller":true},{"apiVersion":"v1","kind":"K","name":"m","uid":"m","controller":true}]'
    assert reply.body == _invalid(
        "ConfigMap",
        "owned",
        [
            (
                "FieldValueInvalid",
                "metadata.ownerReferences",
                f'Invalid value: {shown}: Only one reference can have Controller set to true. Found "true" in references for K/n and K/m',
            )
        ],
    )


def test_config_map_binary_data(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    created = _create(admin, namespace, {"metadata": {"name": "bin"}, "binaryData": {"k": "aGVsbG8="}})
    assert created.status == 201 and created.body["binaryData"] == {"k": "aGVsbG8="}
    not_base64 = _create(admin, namespace, {"metadata": {"name": "text"}, "binaryData": {"k": "not base64!"}})
    assert not_base64.status == 400
    assert not_base64.body == _bad_request(
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 data at input byte 3'
    )
    both = _create(
        admin, namespace, {"metadata": {"name": "both"}, "data": {"k": "x"}, "binaryData": {"k": "aGVsbG8="}}
    )
    assert both.status == 422
    assert both.body == _invalid(
        "ConfigMap",
        "both",
        [("FieldValueInvalid", "data[k]", 'Invalid value: "k": duplicate of key present in binaryData')],
    )


@pytest.mark.parametrize(
    ("key", "messages"),
    [
        (".", ["must not be '.'"]),
        ("..x", ["must not start with '..'"]),
        (
            "a b",
            [
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  "
                "or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ],
        ),
    ],
    ids=["dot", "dot-dot-prefix", "space"],
)
def test_data_keys(admin: kubernetes.client.ApiClient, namespace: str, key: str, messages: list[str]) -> None:
    reply = _create(admin, namespace, configmap("keys", {key: "v"}))
    assert reply.status == 422
    assert reply.body == _invalid(
        "ConfigMap",
        "keys",
        [("FieldValueInvalid", f"data[{key}]", f'Invalid value: "{key}": {message}') for message in messages],
    )


@pytest.mark.parametrize(
    ("value", "position"),
    [
        ("abc", 0),
        ("abcde", 4),
        ("ab=c", 2),
        ("a===", 1),
        ("ab==x", 4),
        ("ab=", 3),
        ("aGVsbG8*", 7),
        ("aGVs bG8=", 4),
        ("é", 0),
    ],
    ids=[
        "short-quantum",
        "one-extra",
        "early-padding",
        "padding-after-one",
        "trailing-garbage",
        "half-padding",
        "late-bad-byte",
        "space",
        "non-ascii",
    ],
)
def test_secret_base64_errors_name_the_position(
    admin: kubernetes.client.ApiClient, namespace: str, value: str, position: int
) -> None:
    reply = _create(admin, namespace, {"metadata": {"name": "s"}, "data": {"k": value}}, "secrets")
    assert reply.status == 400
    assert reply.body == _bad_request(
        f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte {position}'
    )


def test_secret_base64_skips_line_breaks(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = _create(admin, namespace, {"metadata": {"name": "wrapped"}, "data": {"k": "YWJj\nZGVm"}}, "secrets")
    assert reply.status == 201
    assert reply.body["data"] == {"k": "YWJjZGVm"}
