"""Merge patches and replaces: optimistic concurrency, uid checks, immutable fields, no-op writes, content types."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from .kube import MERGE_PATCH, configmap, request, status_of, watch

STALE_MESSAGE = (
    'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
    "please apply your changes to the latest version and try again"
)


@pytest.fixture
def created(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    reply = request(
        admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a", {"x": "1", "y": "2"})
    )
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def _patch(
    admin: kubernetes.client.ApiClient, namespace: str, body: Any, name: str = "a", content_type: str = MERGE_PATCH
) -> Any:
    return request(
        admin, "PATCH", f"/api/v1/namespaces/{namespace}/configmaps/{name}", body=body, content_type=content_type
    )


def test_merge_patch_merges_and_null_removes(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    reply = _patch(admin, namespace, {"data": {"x": None, "z": "3"}, "metadata": {"labels": {"new": "label"}}})
    assert reply.status == 200
    assert reply.body["data"] == {"y": "2", "z": "3"}
    assert reply.body["metadata"]["labels"] == {"new": "label"}
    assert int(reply.body["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert reply.body["metadata"]["uid"] == created["metadata"]["uid"]


def test_typed_patch_with_merge_content_type(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    patched = kubernetes.client.CoreV1Api(admin).patch_namespaced_config_map(
        "a", namespace, {"data": {"x": "typed"}}, _content_type=MERGE_PATCH
    )
    assert patched.data == {"x": "typed", "y": "2"}


def test_current_resource_version_is_accepted(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    version = created["metadata"]["resourceVersion"]
    reply = _patch(admin, namespace, {"metadata": {"resourceVersion": version}, "data": {"x": "locked"}})
    assert reply.status == 200 and reply.body["data"]["x"] == "locked"


def test_stale_resource_version_is_a_conflict(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    version = created["metadata"]["resourceVersion"]
    assert _patch(admin, namespace, {"data": {"x": "theirs"}}).status == 200
    reply = _patch(admin, namespace, {"metadata": {"resourceVersion": version}, "data": {"x": "mine"}})
    assert reply.status == 409
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": STALE_MESSAGE,
        "reason": "Conflict",
        "details": {"name": "a", "kind": "configmaps"},
        "code": 409,
    }
    assert request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps/a").body["data"]["x"] == "theirs"


def test_uid_mismatch_in_a_patch_is_invalid(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    """A merge patch carrying another uid tries to change an immutable field: 422 on metadata.uid.

    (The uid is not a precondition of PATCH; with a stale resourceVersion the 409 comes first.)
    """
    other = "00000000-0000-0000-0000-000000000000"
    reply = _patch(
        admin, namespace, {"metadata": {"uid": other, "resourceVersion": created["metadata"]["resourceVersion"]}}
    )
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    assert reply.body["details"]["kind"] == "ConfigMap" and reply.body["details"]["name"] == "a"
    assert {
        "reason": "FieldValueInvalid",
        "message": f'Invalid value: "{other}": field is immutable',
        "field": "metadata.uid",
    } in reply.body["details"]["causes"]
    _patch(admin, namespace, {"data": {"x": "moved on"}})
    stale = _patch(
        admin, namespace, {"metadata": {"uid": other, "resourceVersion": created["metadata"]["resourceVersion"]}}
    )
    assert stale.status == 409 and stale.body["reason"] == "Conflict"


def test_no_op_patch_writes_nothing(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    version = created["metadata"]["resourceVersion"]
    with watch(admin, f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion=version) as events:
        same = _patch(admin, namespace, {"data": {"x": "1"}, "metadata": {"resourceVersion": version}})
        assert same.status == 200 and same.body["metadata"]["resourceVersion"] == version
        changed = _patch(admin, namespace, {"data": {"x": "2"}})
        event = events.next()
    assert event["type"] == "MODIFIED"
    assert event["object"]["metadata"]["resourceVersion"] == changed.body["metadata"]["resourceVersion"]
    assert event["object"]["data"]["x"] == "2"


@pytest.mark.parametrize("content_type", ["application/strategic-merge-patch+json", "application/json"])
def test_unsupported_patch_types_of_a_custom_resource(
    admin: kubernetes.client.ApiClient, namespace: str, content_type: str
) -> None:
    path = f"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"
    body = {"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": "f"}, "spec": {}}
    assert request(admin, "POST", path, body=body).status == 201
    reply = request(admin, "PATCH", f"{path}/f", body={"spec": {"reference": "x"}}, content_type=content_type)
    assert reply.status == 415 and reply.body["reason"] == "UnsupportedMediaType"
    assert reply.body["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include: "
    )
    assert MERGE_PATCH in reply.body["message"]


def test_immutable_configmap(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    request(
        admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body={**configmap("frozen", {"k": "v"}), "immutable": True},
    )
    reply = _patch(admin, namespace, {"data": {"k": "changed"}}, name="frozen")
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    assert (
        reply.body["message"]
        == 'ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    )
    assert reply.body["details"] == {
        "name": "frozen",
        "kind": "ConfigMap",
        "causes": [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: field is immutable when `immutable` is set",
                "field": "data",
            }
        ],
    }
    assert _patch(admin, namespace, {"metadata": {"labels": {"still": "editable"}}}, name="frozen").status == 200


def test_immutable_secret(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/secrets"
    request(admin, "POST", path, body={"metadata": {"name": "s"}, "data": {"k": "dg=="}, "immutable": True})
    reply = request(
        admin, "PATCH", f"{path}/s", body={"data": {"k": "dw=="}, "immutable": False}, content_type=MERGE_PATCH
    )
    assert reply.status == 422
    assert {cause["field"] for cause in reply.body["details"]["causes"]} == {"immutable", "data"}


def test_deployment_selector_is_immutable(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    labels = {"app": "web"}
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    assert request(admin, "POST", path, body=body).status == 201
    new_labels = {"app": "web", "track": "canary"}
    patch = {"spec": {"selector": {"matchLabels": new_labels}, "template": {"metadata": {"labels": new_labels}}}}
    reply = request(admin, "PATCH", f"{path}/web", body=patch, content_type=MERGE_PATCH)
    assert reply.status == 422
    assert reply.body["details"]["group"] == "apps" and reply.body["details"]["kind"] == "Deployment"
    assert reply.body["message"].startswith('Deployment.apps "web" is invalid: spec.selector: Invalid value: ')
    assert reply.body["message"].endswith(": field is immutable")


def test_replace_with_a_stale_version_or_another_uid(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    core = kubernetes.client.CoreV1Api(admin)
    _patch(admin, namespace, {"data": {"x": "moved on"}})
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("a", namespace, created)
    assert stale.value.status == 409 and status_of(stale.value)["message"] == STALE_MESSAGE
    current = request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps/a").body
    other_uid = {**current, "metadata": {**current["metadata"], "uid": "00000000-0000-0000-0000-000000000000"}}
    reply = request(admin, "PUT", f"/api/v1/namespaces/{namespace}/configmaps/a", body=other_uid)
    assert reply.status == 409
    assert reply.body["message"] == (
        f'Operation cannot be fulfilled on configmaps "a": StorageError: invalid object, Code: 4, '
        f"Key: /registry/configmaps/{namespace}/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: {current['metadata']['uid']}"
    )
    replaced = request(
        admin, "PUT", f"/api/v1/namespaces/{namespace}/configmaps/a", body={**current, "data": {"only": "this"}}
    )
    assert replaced.status == 200 and replaced.body["data"] == {"only": "this"}


def test_wrong_value_types_are_refused(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    reply = _patch(admin, namespace, {"data": {"x": 5}})
    assert reply.status == 422 and reply.body["details"]["causes"][0]["field"] == "patch"
    created_badly = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("b", {"n": 1}))  # type: ignore[dict-item]
    assert created_badly.status == 400 and created_badly.body["reason"] == "BadRequest"


def _owners(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["manager"]: entry for entry in obj["metadata"]["managedFields"]}


def test_field_managers(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    first = _owners(created)["OpenAPI-Generator"]  # the official client's user agent names the default manager
    assert (first["operation"], first["apiVersion"], first["fieldsType"]) == ("Update", "v1", "FieldsV1")
    assert set(first["fieldsV1"]["f:data"]) >= {"f:x", "f:y"}
    path = f"/api/v1/namespaces/{namespace}/configmaps/a"
    moved = request(
        admin,
        "PATCH",
        path,
        query=[("fieldManager", "other")],
        body={"data": {"x": "changed"}},
        content_type=MERGE_PATCH,
    ).body
    owners = _owners(moved)
    assert "f:x" in owners["other"]["fieldsV1"]["f:data"]
    assert "f:x" not in owners["OpenAPI-Generator"]["fieldsV1"]["f:data"]
    unchanged = request(
        admin,
        "PATCH",
        path,
        query=[("fieldManager", "third")],
        body={"data": {"x": "changed"}},
        content_type=MERGE_PATCH,
    ).body
    assert set(_owners(unchanged)) == {"OpenAPI-Generator", "other"}  # a no-op write records no manager


def test_status_writes_are_managed_per_subresource(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    labels = {"app": "web"}
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    assert request(admin, "POST", path, body=body).status == 201
    reply = request(
        admin,
        "PATCH",
        f"{path}/web/status",
        query=[("fieldManager", "controller")],
        body={"status": {"replicas": 1}},
        content_type=MERGE_PATCH,
    )
    entry = _owners(reply.body)["controller"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:replicas": {}}}
