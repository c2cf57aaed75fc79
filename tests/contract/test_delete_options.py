"""DeleteOptions: every option validated before anything is deleted; propagation policies and their finalizers."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, configmap, request

SUPPORTED_POLICIES = 'supported values: "Foreground", "Background", "Orphan", "nil"'


@pytest.fixture
def path(admin: kubernetes.client.ApiClient, namespace: str) -> str:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    assert request(admin, "POST", collection, body=configmap("a", {"k": "v"})).status == 201
    return f"{collection}/a"


def _invalid_options(causes: list[tuple[str, str, str]]) -> dict[str, Any]:
    messages = [f"{field}: {message}" for _, field, message in causes]
    summary = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'DeleteOptions.meta.k8s.io "" is invalid: {summary}',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": "DeleteOptions",
            "causes": [{"reason": reason, "message": message, "field": field} for reason, field, message in causes],
        },
        "code": 422,
    }


BOGUS_POLICY = ("FieldValueNotSupported", "propagationPolicy", f'Unsupported value: "Bogus": {SUPPORTED_POLICIES}')


@pytest.mark.parametrize("where", ["body", "query"])
def test_an_unknown_propagation_policy_deletes_nothing(
    admin: kubernetes.client.ApiClient, path: str, where: str
) -> None:
    if where == "body":
        reply = request(
            admin, "DELETE", path, body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Bogus"}
        )
    else:
        reply = request(admin, "DELETE", path, query=[("propagationPolicy", "Bogus")])
    assert reply.status == 422
    assert reply.body == _invalid_options([BOGUS_POLICY])
    assert request(admin, "GET", path).status == 200


def test_options_are_validated_before_the_object_is_looked_up(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    missing = request(
        admin, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/missing", body={"propagationPolicy": "Bogus"}
    )
    assert missing.status == 422 and missing.body == _invalid_options([BOGUS_POLICY])
    collection = request(
        admin, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps", body={"propagationPolicy": "Bogus"}
    )
    assert collection.status == 422 and collection.body == _invalid_options([BOGUS_POLICY])


def test_every_invalid_option_is_named(admin: kubernetes.client.ApiClient, path: str) -> None:
    reply = request(
        admin, "DELETE", path, body={"propagationPolicy": "Bogus", "orphanDependents": False, "dryRun": ["Some"]}
    )
    assert reply.status == 422
    assert reply.body == _invalid_options(
        [
            (
                "FieldValueInvalid",
                "propagationPolicy",
                'Invalid value: "Bogus": orphanDependents and deletionPropagation cannot be both set',
            ),
            BOGUS_POLICY,
            ("FieldValueNotSupported", "dryRun", 'Unsupported value: ["Some"]: supported values: "All"'),
        ]
    )
    assert request(admin, "GET", path).status == 200


def test_orphan_dependents_and_a_policy_cannot_both_be_set(admin: kubernetes.client.ApiClient, path: str) -> None:
    reply = request(admin, "DELETE", path, body={"propagationPolicy": "Orphan", "orphanDependents": True})
    assert reply.status == 422
    assert reply.body == _invalid_options(
        [
            (
                "FieldValueInvalid",
                "propagationPolicy",
                'Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set',
            ),
        ]
    )


def test_an_undecodable_grace_period_in_the_query_is_a_bad_request(
    admin: kubernetes.client.ApiClient, path: str
) -> None:
    reply = request(admin, "DELETE", path, query=[("gracePeriodSeconds", "soon")])
    assert reply.status == 400
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'strconv.ParseInt: parsing "soon": invalid syntax',
        "reason": "BadRequest",
        "code": 400,
    }
    assert request(admin, "GET", path).status == 200


def test_query_booleans_are_true_unless_false_or_0(admin: kubernetes.client.ApiClient, path: str) -> None:
    """The query codec reads ``orphanDependents=maybe`` as true: the object is kept for the collector to orphan."""
    reply = request(admin, "DELETE", path, query=[("orphanDependents", "maybe")])
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMap" and reply.body["metadata"]["finalizers"] == ["orphan"]
    request(admin, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            [1],
            "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type "
            'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }',
        ),
        (
            {"kind": "ListOptions", "apiVersion": "v1"},
            'no kind "ListOptions" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"',
        ),
    ],
    ids=["not-an-object", "another-kind"],
)
def test_bodies_that_are_no_delete_options(
    admin: kubernetes.client.ApiClient, path: str, body: Any, message: str
) -> None:
    reply = request(admin, "DELETE", path, body=body)
    assert reply.status == 400 and reply.body["message"] == message
    assert request(admin, "GET", path).status == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"propagationPolicy": 5},
            "json: cannot unmarshal number into Go struct field DeleteOptions.propagationPolicy of type v1.DeletionPropagation",
        ),
        (
            {"gracePeriodSeconds": "5"},
            "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64",
        ),
        (
            {"preconditions": {"uid": 5}},
            "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid of type types.UID",
        ),
    ],
    ids=["policy", "grace-period", "precondition"],
)
def test_undecodable_body_options_are_bad_requests(
    admin: kubernetes.client.ApiClient, path: str, body: dict[str, Any], message: str
) -> None:
    reply = request(admin, "DELETE", path, body=body)
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"] == message
    assert request(admin, "GET", path).status == 200


@pytest.mark.parametrize(("policy", "finalizer"), [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")])
def test_foreground_and_orphan_deletion_answer_the_object_marked_for_the_collector(
    admin: kubernetes.client.ApiClient, path: str, policy: str, finalizer: str
) -> None:
    """The garbage collector's finalizer is added (a real cluster's collector then removes it and the object goes)."""
    reply = request(admin, "DELETE", path, body={"propagationPolicy": policy})
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMap"
    assert reply.body["metadata"]["finalizers"] == [finalizer]
    assert reply.body["metadata"]["deletionTimestamp"] and reply.body["metadata"]["deletionGracePeriodSeconds"] == 0
    request(
        admin, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
    )  # the collector's part, if still due


def test_orphan_dependents_false_on_a_held_object_is_accepted(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    """``orphanDependents: false`` on an object that is not gone at once answers 202 Accepted."""
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    request(admin, "POST", collection, body=configmap("held", finalizers=["example.com/hold"]))
    reply = request(admin, "DELETE", f"{collection}/held", body={"orphanDependents": False})
    assert reply.status == 202
    assert reply.body["metadata"]["finalizers"] == ["example.com/hold"] and reply.body["metadata"]["deletionTimestamp"]
    request(admin, "PATCH", f"{collection}/held", body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)


def test_background_deletion_is_immediate(admin: kubernetes.client.ApiClient, path: str) -> None:
    reply = request(admin, "DELETE", path, query=[("propagationPolicy", "Background")])
    assert reply.status == 200 and reply.body["kind"] == "Status" and reply.body["status"] == "Success"
    assert request(admin, "GET", path).status == 404


def test_a_collection_delete_applies_preconditions_to_each_object(
    admin: kubernetes.client.ApiClient, path: str
) -> None:
    other = "00000000-0000-0000-0000-000000000000"
    uid = request(admin, "GET", path).body["metadata"]["uid"]
    reply = request(admin, "DELETE", path.rsplit("/", 1)[0], body={"preconditions": {"uid": other}})
    assert reply.status == 409
    assert reply.body["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition ({other}) does not match the UID in record '
        f"({uid}). The object might have been deleted and then recreated"
    )
    assert request(admin, "GET", path).status == 200
