"""LIST: body shape, all-namespaces lists, selectors, resourceVersion semantics and pagination."""

from __future__ import annotations

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, configmap, request


@pytest.fixture
def labelled(admin: kubernetes.client.ApiClient, namespace: str) -> str:
    """Four ConfigMaps with assorted labels."""
    core = kubernetes.client.CoreV1Api(admin)
    for name, labels in (
        ("a", {"app": "web", "tier": "front"}),
        ("b", {"app": "web", "tier": "back"}),
        ("c", {"app": "db"}),
        ("d", {}),
    ):
        core.create_namespaced_config_map(namespace, configmap(name, {"k": name}, labels=labels))
    return namespace


def _names(admin: kubernetes.client.ApiClient, namespace: str, **query: str) -> list[str]:
    reply = request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps", query=query.items())
    assert reply.status == 200, reply.body
    return [item["metadata"]["name"] for item in reply.body["items"]]


def test_list_body(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    body = request(admin, "GET", f"/api/v1/namespaces/{labelled}/configmaps").body
    assert body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
    assert set(body["metadata"]) == {"resourceVersion"}
    list_version = int(body["metadata"]["resourceVersion"])
    assert all(int(item["metadata"]["resourceVersion"]) <= list_version for item in body["items"])
    assert all("kind" not in item and "apiVersion" not in item for item in body["items"])  # built-in list items
    assert [item["metadata"]["name"] for item in body["items"]] == ["a", "b", "c", "d"]


def test_all_namespaces_list(admin: kubernetes.client.ApiClient, labelled: str, namespace: str) -> None:
    body = request(admin, "GET", "/api/v1/configmaps", query=[("labelSelector", "app")]).body
    mine = [item["metadata"]["name"] for item in body["items"] if item["metadata"]["namespace"] == labelled]
    assert mine == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("app in (web, db)", ["a", "b", "c"]),
        ("app notin (web)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier=back", ["b"]),
        ("app=web,!tier", []),
    ],
)
def test_label_selectors(admin: kubernetes.client.ApiClient, labelled: str, selector: str, expected: list[str]) -> None:
    assert _names(admin, labelled, labelSelector=selector) == expected


def test_field_selectors(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    assert _names(admin, labelled, fieldSelector="metadata.name=c") == ["c"]
    assert _names(admin, labelled, fieldSelector="metadata.name!=c") == ["a", "b", "d"]
    body = request(
        admin, "GET", "/api/v1/configmaps", query=[("fieldSelector", f"metadata.namespace={labelled},metadata.name=b")]
    ).body
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]] == [(labelled, "b")]


def test_bad_selectors_are_bad_requests(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    unsupported = request(
        admin, "GET", f"/api/v1/namespaces/{labelled}/configmaps", query=[("fieldSelector", "data.k=a")]
    )
    assert unsupported.status == 400 and unsupported.body["reason"] == "BadRequest"
    assert (
        unsupported.body["message"]
        == '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    on_secrets = request(admin, "GET", f"/api/v1/namespaces/{labelled}/secrets", query=[("fieldSelector", "data.k=a")])
    assert on_secrets.status == 400 and on_secrets.body["message"] == "field label not supported: data.k"
    malformed = request(
        admin, "GET", f"/api/v1/namespaces/{labelled}/configmaps", query=[("labelSelector", "app in web")]
    )
    assert malformed.status == 400 and malformed.body["reason"] == "BadRequest"
    assert malformed.body["message"] == "unable to parse requirement: found 'web' expected: '('"


def test_pagination_is_a_consistent_snapshot(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    path = f"/api/v1/namespaces/{labelled}/configmaps"
    first = request(admin, "GET", path, query=[("limit", 2)]).body
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
    assert first["metadata"]["remainingItemCount"] == 2
    token = first["metadata"]["continue"]
    kubernetes.client.CoreV1Api(admin).create_namespaced_config_map(labelled, configmap("bb"))
    request(admin, "PATCH", f"{path}/c", body={"data": {"k": "changed"}}, content_type=MERGE_PATCH)
    second = request(admin, "GET", path, query=[("limit", 2), ("continue", token)]).body
    assert [i["metadata"]["name"] for i in second["items"]] == ["c", "d"]
    assert second["items"][0]["data"] == {"k": "c"}  # as of the first page's resourceVersion
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert "continue" not in second["metadata"]


def test_pagination_with_a_selector_has_no_remaining_count(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    page = request(
        admin, "GET", f"/api/v1/namespaces/{labelled}/configmaps", query=[("limit", 1), ("labelSelector", "app")]
    ).body
    assert len(page["items"]) == 1 and page["metadata"]["continue"]
    assert "remainingItemCount" not in page["metadata"]


def test_continue_with_a_resource_version_is_refused(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    path = f"/api/v1/namespaces/{labelled}/configmaps"
    token = request(admin, "GET", path, query=[("limit", 1)]).body["metadata"]["continue"]
    reply = request(admin, "GET", path, query=[("continue", token), ("resourceVersion", "5")])
    assert reply.status == 400
    assert reply.body["message"] == "specifying resource version is not allowed when using continue"


def test_exact_resource_version_lists_the_past(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    path = f"/api/v1/namespaces/{labelled}/configmaps"
    before = request(admin, "GET", path).body["metadata"]["resourceVersion"]
    request(admin, "PATCH", f"{path}/a", body={"data": {"k": "new"}}, content_type=MERGE_PATCH)
    request(admin, "DELETE", f"{path}/d")
    past = request(admin, "GET", path, query=[("resourceVersion", before), ("resourceVersionMatch", "Exact")]).body
    assert past["metadata"]["resourceVersion"] == before
    assert [(i["metadata"]["name"], i["data"]["k"]) for i in past["items"]] == [
        ("a", "a"),
        ("b", "b"),
        ("c", "c"),
        ("d", "d"),
    ]
    latest = request(
        admin, "GET", path, query=[("resourceVersion", before), ("resourceVersionMatch", "NotOlderThan")]
    ).body
    assert int(latest["metadata"]["resourceVersion"]) > int(before)
    assert [(i["metadata"]["name"], i["data"]["k"]) for i in latest["items"]] == [("a", "new"), ("b", "b"), ("c", "c")]


def test_resource_version_match_needs_a_resource_version(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    reply = request(
        admin, "GET", f"/api/v1/namespaces/{labelled}/configmaps", query=[("resourceVersionMatch", "Exact")]
    )
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["details"]["kind"] == "ListOptions" and reply.body["details"]["group"] == "meta.k8s.io"
    assert reply.body["details"]["causes"][0]["field"] == "resourceVersionMatch"


def test_custom_resource_lists_are_unstructured(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"
    for name in ("f", "g"):
        body = {"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": name}, "spec": {}}
        assert request(admin, "POST", path, body=body).status == 201
    whole = request(admin, "GET", path).body
    assert list(whole) == ["apiVersion", "items", "kind", "metadata"]  # encoded from a map: sorted keys
    assert whole["metadata"]["continue"] == ""  # present even when there is nothing more
    page = request(admin, "GET", path, query=[("limit", 1)]).body
    assert page["metadata"]["continue"] and page["metadata"]["remainingItemCount"] == 1


def test_a_list_at_resource_version_0_ignores_the_limit(admin: kubernetes.client.ApiClient, labelled: str) -> None:
    """``resourceVersion=0`` is served whole from the watch cache: no page, no continue token."""
    path = f"/api/v1/namespaces/{labelled}/configmaps"
    everything = request(admin, "GET", path).body["items"]
    assert len(everything) > 1
    for match in ([], [("resourceVersionMatch", "NotOlderThan")]):
        reply = request(admin, "GET", path, query=[("resourceVersion", "0"), ("limit", "1"), *match])
        assert reply.status == 200
        assert [item["metadata"]["name"] for item in reply.body["items"]] == [
            item["metadata"]["name"] for item in everything
        ]
        assert "continue" not in reply.body["metadata"] and "remainingItemCount" not in reply.body["metadata"]
