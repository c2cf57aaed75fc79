"""Discovery: the legacy documents the official client and kubectl read."""

from __future__ import annotations

import kubernetes.client

from .kube import Reply, request

MERGE_PATCH = "application/merge-patch+json"


def _resources(admin: kubernetes.client.ApiClient, path: str) -> dict[str, dict[str, object]]:
    reply = request(admin, "GET", path)
    assert reply.status == 200
    assert reply.body["kind"] == "APIResourceList"
    return {entry["name"]: entry for entry in reply.body["resources"]}


def test_core_versions_and_groups(admin: kubernetes.client.ApiClient) -> None:
    versions = request(admin, "GET", "/api").body
    assert versions["kind"] == "APIVersions" and "v1" in versions["versions"]
    groups = request(admin, "GET", "/apis").body
    assert groups["kind"] == "APIGroupList"
    by_name = {group["name"]: group for group in groups["groups"]}
    assert by_name["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert {"groupVersion": "wardle.example.com/v1alpha1", "version": "v1alpha1"} in by_name["wardle.example.com"][
        "versions"
    ]
    assert "authorization.k8s.io" in by_name
    assert request(admin, "GET", "/apis/apps").body["name"] == "apps"


def test_core_v1_resources(admin: kubernetes.client.ApiClient) -> None:
    resources = _resources(admin, "/api/v1")
    configmaps = resources["configmaps"]
    assert (
        configmaps["namespaced"] is True
        and configmaps["kind"] == "ConfigMap"
        and configmaps["singularName"] == "configmap"
    )
    assert {"create", "delete", "get", "list", "patch", "update", "watch"} <= set(configmaps["verbs"])  # type: ignore[arg-type]
    assert "cm" in configmaps["shortNames"]  # type: ignore[operator]
    assert resources["namespaces"]["namespaced"] is False
    assert resources["secrets"]["kind"] == "Secret"


def test_group_resources_and_status_subresource(admin: kubernetes.client.ApiClient) -> None:
    apps = _resources(admin, "/apis/apps/v1")
    assert apps["deployments"]["kind"] == "Deployment"
    assert {"get", "patch", "update"} <= set(apps["deployments/status"]["verbs"])  # type: ignore[arg-type]
    flunders = _resources(admin, "/apis/wardle.example.com/v1alpha1")["flunders"]
    assert flunders["namespaced"] is True and flunders["kind"] == "Flunder"
    reviews = _resources(admin, "/apis/authorization.k8s.io/v1")
    assert "create" in reviews["subjectaccessreviews"]["verbs"]  # type: ignore[operator]
    assert "create" in reviews["selfsubjectaccessreviews"]["verbs"]  # type: ignore[operator]


def test_unknown_resource_is_404_with_status(admin: kubernetes.client.ApiClient) -> None:
    reply = request(admin, "GET", "/api/v1/namespaces/default/widgets")
    assert reply.status == 404
    assert reply.body["kind"] == "Status" and reply.body["reason"] == "NotFound"
    assert reply.body["message"] == "the server could not find the requested resource"


def test_the_custom_resource_definition_carries_its_schema(admin: kubernetes.client.ApiClient) -> None:
    reply = request(admin, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/flunders.wardle.example.com")
    assert reply.status == 200
    definition = reply.body
    assert definition["spec"]["names"]["kind"] == "Flunder"
    conditions = {condition["type"]: condition["status"] for condition in definition["status"]["conditions"]}
    assert conditions["Established"] == "True"
    schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    ports = schema["properties"]["spec"]["properties"]["ports"]
    assert ports["x-kubernetes-list-type"] == "map" and ports["x-kubernetes-list-map-keys"] == ["name"]


def test_verbs_storage_version_hashes_and_categories(admin: kubernetes.client.ApiClient) -> None:
    core = _resources(admin, "/api/v1")
    assert core["configmaps"]["verbs"] == [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    assert core["namespaces"]["verbs"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    assert (core["configmaps"]["storageVersionHash"], core["secrets"]["storageVersionHash"]) == (
        "qFsyl6wFWjQ=",
        "S6u1pOWzb84=",
    )
    assert core["namespaces"]["storageVersionHash"] == "Q3oi5N2YM8M="
    deployments = _resources(admin, "/apis/apps/v1")["deployments"]
    assert deployments["storageVersionHash"] == "8aSe+NMegvE=" and deployments["categories"] == ["all"]
    assert "deletecollection" in deployments["verbs"]  # type: ignore[operator]
    rbac = _resources(admin, "/apis/rbac.authorization.k8s.io/v1")
    assert (
        rbac["roles"]["storageVersionHash"] == "7FuwZcIIItM="
        and rbac["clusterroles"]["storageVersionHash"] == "bYE5ZWDrJ44="
    )
    flunders = _resources(admin, "/apis/wardle.example.com/v1alpha1")
    assert flunders["flunders"]["verbs"] == [
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch",
    ]
    assert flunders["flunders"]["storageVersionHash"] == "UHqNx5H3K7A="
    assert "storageVersionHash" not in flunders["flunders/status"]
    definitions = _resources(admin, "/apis/apiextensions.k8s.io/v1")["customresourcedefinitions"]
    assert definitions["storageVersionHash"] == "jfWCUB31mvA=" and definitions["categories"] == ["api-extensions"]
    reviews = _resources(admin, "/apis/authorization.k8s.io/v1")["subjectaccessreviews"]
    assert reviews["verbs"] == ["create"] and "storageVersionHash" not in reviews


def test_a_namespace_holds_no_namespaces(admin: kubernetes.client.ApiClient) -> None:
    assert request(admin, "GET", "/api/v1/namespaces/default").body["metadata"]["name"] == "default"
    for path in ("/api/v1/namespaces/default/namespaces/default", "/api/v1/namespaces/default/namespaces"):
        reply = request(admin, "GET", path)
        assert (reply.status, reply.body["reason"]) == (404, "NotFound"), path
        assert reply.body["message"] == "the server could not find the requested resource"


def test_a_trailing_slash_names_the_same_collection_or_object(admin: kubernetes.client.ApiClient) -> None:
    listed = request(admin, "GET", "/api/v1/namespaces/")
    assert listed.status == 200 and listed.body["kind"] == "NamespaceList"
    assert request(admin, "GET", "/api/v1/namespaces/default//").body["metadata"]["name"] == "default"


def test_an_empty_path_segment_finds_nothing(admin: kubernetes.client.ApiClient) -> None:
    for path in (
        "/api//v1/namespaces",
        "/api/v1//namespaces",
        "/api/v1/namespaces//default",
        "/apis/apps//v1/deployments",
    ):
        reply = request(admin, "GET", path)
        assert (reply.status, reply.body["reason"]) == (404, "NotFound"), path
        assert reply.body["message"] == "the server could not find the requested resource"
    for path in ("//api", "//api/v1/namespaces", "/apis//apps/v1/deployments"):
        assert_not_found_page(request(admin, "GET", path), path)
    assert request(admin, "GET", "/api/v1/namespaces/default/configmaps//").body["kind"] == "ConfigMapList"


def assert_not_found_page(reply: Reply, path: str) -> None:
    """``reply`` is Go's own 404 page: the API server's mux has no handler for the path."""
    assert reply.status == 404 and reply.body is None, path
    assert reply.headers["Content-Type"] == "text/plain; charset=utf-8" and reply.data == b"404 page not found\n"
    assert reply.headers["X-Content-Type-Options"] == "nosniff"


def test_a_path_outside_the_served_groups_gets_the_plain_not_found_page(admin: kubernetes.client.ApiClient) -> None:
    for method, path in (
        ("GET", "/foo"),
        ("POST", "/foo"),
        ("GET", "/apiz"),
        ("GET", "/apis/nope"),
        ("GET", "/apis/nope/v1"),
        ("GET", "/apis/nope/v1/things"),
        ("PATCH", "/apis/nope/v1/namespaces/default/things/x"),
    ):
        body = {} if method != "GET" else None
        assert_not_found_page(request(admin, method, path, body=body, content_type=MERGE_PATCH), f"{method} {path}")
    for path in ("/apis/apps/v9", "/apis/apps/v9/deployments", "/api/v9/namespaces", "/apis/apps/v1/nothings"):
        reply = request(admin, "GET", path)  # a served group's handler: the server's Status
        assert (reply.status, reply.body["reason"]) == (404, "NotFound"), path
    assert request(admin, "GET", "/apis/apps/").body["kind"] == "APIGroup"
