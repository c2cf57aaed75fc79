"""DELETE: uid and resourceVersion preconditions, two-phase deletion with finalizers, namespaces."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from .kube import MERGE_PATCH, configmap, request, status_of, watch

OTHER_UID = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def created(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    reply = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a", {"k": "v"}))
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def test_uid_precondition_mismatch(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    core = kubernetes.client.CoreV1Api(admin)
    options = kubernetes.client.V1DeleteOptions(preconditions=kubernetes.client.V1Preconditions(uid=OTHER_UID))
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("a", namespace, body=options)
    status = status_of(caught.value)
    assert caught.value.status == 409 and status["reason"] == "Conflict"
    assert status["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition ({OTHER_UID}) does not match '
        f"the UID in record ({created['metadata']['uid']}). The object might have been deleted and then recreated"
    )
    assert status["details"] == {"name": "a", "kind": "ConfigMap"}
    assert request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps/a").status == 200


def test_resource_version_precondition_mismatch(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/a"
    request(admin, "PATCH", path, body={"data": {"k": "w"}}, content_type=MERGE_PATCH)
    stale = created["metadata"]["resourceVersion"]
    reply = request(
        admin,
        "DELETE",
        path,
        body={"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"resourceVersion": stale}},
    )
    assert reply.status == 409
    assert reply.body["message"].startswith(
        f'Operation cannot be fulfilled on ConfigMap "a": the ResourceVersion in the precondition ({stale}) does not match'
    )


def test_matching_preconditions_delete(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    preconditions = {"uid": created["metadata"]["uid"], "resourceVersion": created["metadata"]["resourceVersion"]}
    reply = request(
        admin, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/a", body={"preconditions": preconditions}
    )
    assert reply.status == 200 and reply.body["details"]["uid"] == created["metadata"]["uid"]


def test_finalizers_make_deletion_two_phase(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = request(admin, "POST", path, body=configmap("held", {"k": "v"}, finalizers=["example.com/hold"])).body
    with watch(admin, path, resourceVersion=created["metadata"]["resourceVersion"]) as events:
        deleting = request(admin, "DELETE", f"{path}/held")
        assert deleting.status == 200
        assert deleting.body["kind"] == "ConfigMap"  # the object, not a Status: it is not gone yet
        assert deleting.body["metadata"]["deletionTimestamp"]
        assert deleting.body["metadata"]["finalizers"] == ["example.com/hold"]
        terminating = events.next()
        assert terminating["type"] == "MODIFIED" and terminating["object"]["metadata"]["deletionTimestamp"]
        assert request(admin, "GET", f"{path}/held").status == 200
        refused = request(
            admin,
            "PATCH",
            f"{path}/held",
            body={"metadata": {"finalizers": ["example.com/hold", "x.com/more"]}},
            content_type=MERGE_PATCH,
        )
        assert refused.status == 422
        assert refused.body["details"]["causes"][0]["field"] == "metadata.finalizers"
        released = request(
            admin, "PATCH", f"{path}/held", body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
        )
        assert released.status == 200
        deleted = events.next()
    assert deleted["type"] == "DELETED"
    assert deleted["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert deleted["object"]["data"] == {"k": "v"}
    assert int(deleted["object"]["metadata"]["resourceVersion"]) > int(
        terminating["object"]["metadata"]["resourceVersion"]
    )
    assert request(admin, "GET", f"{path}/held").status == 404


def test_a_deleted_namespace_is_terminating(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    """The API server's part of namespace deletion; an object held by a finalizer keeps the namespace terminating."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert request(admin, "POST", path, body=configmap("held", finalizers=["example.com/hold"])).status == 201
    reply = request(admin, "DELETE", f"/api/v1/namespaces/{namespace}")
    assert reply.status == 200 and reply.body["kind"] == "Namespace"
    assert reply.body["metadata"]["deletionTimestamp"]
    assert reply.body["status"] == {"phase": "Terminating"}
    refused = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("late"))
    assert refused.status == 403
    assert refused.body["message"] == (
        f'configmaps "late" is forbidden: unable to create new content in namespace {namespace} because it is being terminated'
    )
    assert refused.body["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
    ]
    request(admin, "PATCH", f"{path}/held", body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)


def _names(items: list[dict[str, Any]]) -> list[str]:
    return [item["metadata"]["name"] for item in items]


def test_delete_collection_by_selectors(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    """DELETE on a collection deletes what a list with the same selectors returns, and answers that list."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("p", "q", "r"):
        request(admin, "POST", path, body=configmap(name, {"k": name}, labels={"group": "g"}))
    request(admin, "POST", path, body=configmap("s", labels={"group": "g"}, finalizers=["example.com/hold"]))
    last = request(admin, "POST", path, body=configmap("t", labels={"group": "other"})).body
    with watch(admin, path, resourceVersion=last["metadata"]["resourceVersion"]) as events:
        reply = request(
            admin, "DELETE", path, query=[("labelSelector", "group=g"), ("fieldSelector", "metadata.name!=r")]
        )
        seen = events.take(3)
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMapList" and reply.body["apiVersion"] == "v1"
    assert _names(reply.body["items"]) == ["p", "q", "s"]
    assert "deletionTimestamp" not in reply.body["items"][2]["metadata"]  # the items as they were listed
    assert sorted((event["type"], event["object"]["metadata"]["name"]) for event in seen) == [
        ("DELETED", "p"),
        ("DELETED", "q"),
        ("MODIFIED", "s"),
    ]
    remaining = request(admin, "GET", path).body["items"]
    assert _names(remaining) == ["r", "s", "t"] and remaining[1]["metadata"]["deletionTimestamp"]
    request(admin, "PATCH", f"{path}/s", body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)


def test_delete_collection_dry_run_and_typed(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        request(admin, "POST", path, body=configmap(name))
    dry = request(admin, "DELETE", path, query=[("dryRun", "All")])
    assert dry.status == 200 and _names(dry.body["items"]) == ["a", "b"]
    assert _names(request(admin, "GET", path).body["items"]) == ["a", "b"]
    kubernetes.client.CoreV1Api(admin).delete_collection_namespaced_config_map(namespace)
    assert request(admin, "GET", path).body["items"] == []
    empty = request(admin, "DELETE", path, query=[("labelSelector", "none")])
    assert empty.status == 200 and empty.body["items"] == []


def test_namespaces_cannot_be_deleted_as_a_collection(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "DELETE", "/api/v1/namespaces", query=[("labelSelector", "nothing=here")])
    assert reply.status == 405 and reply.body["reason"] == "MethodNotAllowed"


def test_the_viewer_may_not_delete_a_collection(viewer: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(viewer, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps")
    assert reply.status == 403
    assert reply.body["message"] == (
        f'configmaps is forbidden: User "viewer" cannot deletecollection resource "configmaps" in API group "" in the namespace "{namespace}"'
    )
