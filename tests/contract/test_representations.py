"""``Accept`` negotiation: metadata-only objects and lists, Tables, YAML, and what is not acceptable."""

from __future__ import annotations

import re
from typing import Any

import kubernetes.client
import pytest
import yaml

from .kube import configmap, request, watch

PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
AGE = re.compile(r"^[0-9]+s$")  # a fresh object's age, as kubectl shows it
ROUTE_NOT_ACCEPTABLE = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
STREAMS = ", application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
HANDLER_NOT_ACCEPTABLE = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
FLUNDER = "wardle.example.com/v1alpha1"


@pytest.fixture
def created(admin: kubernetes.client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    replies = [
        request(admin, "POST", path, body=configmap(name, {"k": name, "l": "x"}, labels={"app": name}))
        for name in ("a", "b", "c")
    ]
    assert all(reply.status == 201 for reply in replies)
    return [reply.body for reply in replies]


def _path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps" + (f"/{name}" if name else "")


def _flunder(admin: kubernetes.client.ApiClient, namespace: str) -> str:
    path = f"/apis/{FLUNDER}/namespaces/{namespace}/flunders"
    body = {
        "apiVersion": FLUNDER,
        "kind": "Flunder",
        "metadata": {"name": "f", "labels": {"x": "y"}},
        "spec": {"reference": "r"},
    }
    assert request(admin, "POST", path, body=body).status == 201
    return path


def test_partial_object_metadata(
    admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]
) -> None:
    full = request(admin, "GET", _path(namespace, "a")).body
    reply = request(admin, "GET", _path(namespace, "a"), accept=PARTIAL)
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    assert reply.body == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": full["metadata"]}
    older = request(
        admin, "GET", _path(namespace, "a"), accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"
    )
    assert older.body["apiVersion"] == "meta.k8s.io/v1beta1"


def test_partial_object_metadata_list(
    admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]
) -> None:
    full = request(admin, "GET", _path(namespace), query=[("limit", 2)]).body
    reply = request(admin, "GET", _path(namespace), query=[("limit", 2)], accept=PARTIAL_LIST)
    assert reply.status == 200
    assert reply.body["kind"] == "PartialObjectMetadataList" and reply.body["apiVersion"] == "meta.k8s.io/v1"
    assert reply.body["metadata"] == {
        "resourceVersion": reply.body["metadata"]["resourceVersion"],
        "continue": reply.body["metadata"]["continue"],
        "remainingItemCount": 1,
    }
    assert reply.body["items"] == [
        {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": item["metadata"]}
        for item in full["items"]
    ]


def test_partial_object_metadata_of_a_custom_resource(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = _flunder(admin, namespace)
    one = request(admin, "GET", f"{path}/f", accept=PARTIAL).body
    assert (
        one["kind"] == "PartialObjectMetadata"
        and one["metadata"]["labels"] == {"x": "y"}
        and set(one) == {"kind", "apiVersion", "metadata"}
    )
    listed = request(admin, "GET", path, accept=PARTIAL_LIST).body
    assert [item["metadata"]["name"] for item in listed["items"]] == ["f"]
    assert set(listed["metadata"]) == {"resourceVersion"}


def test_partial_object_metadata_answers_writes_too(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "POST", _path(namespace), body=configmap("w", {"k": "v"}), accept=PARTIAL)
    assert reply.status == 201
    assert (
        reply.body["kind"] == "PartialObjectMetadata"
        and reply.body["metadata"]["name"] == "w"
        and "data" not in reply.body
    )
    deleted = request(admin, "DELETE", _path(namespace, "w"), accept=PARTIAL)
    assert deleted.status == 200 and deleted.body["kind"] == "Status"  # a Status is never converted


@pytest.mark.parametrize(
    ("list_request", "accept", "message"),
    [
        (
            False,
            PARTIAL_LIST,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)",
        ),
        (
            True,
            PARTIAL,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)",
        ),
    ],
)
def test_metadata_of_the_wrong_shape(
    admin: kubernetes.client.ApiClient,
    namespace: str,
    created: list[dict[str, Any]],
    list_request: bool,
    accept: str,
    message: str,
) -> None:
    reply = request(admin, "GET", _path(namespace, "" if list_request else "a"), accept=accept)
    assert reply.status == 406
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "NotAcceptable",
        "code": 406,
    }


@pytest.mark.parametrize(
    ("accept", "status", "message"),
    [
        ("text/html", 406, ROUTE_NOT_ACCEPTABLE),
        ("application/*", 406, ROUTE_NOT_ACCEPTABLE),
        ("application/json;as=Widget;g=meta.k8s.io;v=v1", 406, HANDLER_NOT_ACCEPTABLE),
        ("application/json;as=Table;g=example.com;v=v1", 406, HANDLER_NOT_ACCEPTABLE),
        ("application/json;as=Widget;g=meta.k8s.io;v=v1, application/json", 200, None),
        ("text/html, */*", 200, None),
        ("application/vnd.kubernetes.protobuf;q=0.5, application/json;q=0.9", 200, None),
    ],
)
def test_what_is_acceptable(
    admin: kubernetes.client.ApiClient,
    namespace: str,
    created: list[dict[str, Any]],
    accept: str,
    status: int,
    message: str | None,
) -> None:
    reply = request(admin, "GET", _path(namespace, "a"), accept=accept)
    assert reply.status == status
    assert reply.headers["Content-Type"] == "application/json"
    if message is None:
        assert reply.body["kind"] == "ConfigMap"
    else:
        assert reply.body["message"] == message and reply.body["reason"] == "NotAcceptable"
        assert ("details" in reply.body) == (message == ROUTE_NOT_ACCEPTABLE)


def test_list_routes_also_name_the_watch_streams(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "GET", _path(namespace), accept="text/html")
    assert reply.status == 406 and reply.body["message"] == ROUTE_NOT_ACCEPTABLE + STREAMS


def test_custom_resources_refuse_html_in_the_handler(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = _flunder(admin, namespace)
    reply = request(admin, "GET", f"{path}/f", accept="text/html")
    assert reply.status == 406 and reply.body["message"] == HANDLER_NOT_ACCEPTABLE and "details" not in reply.body


def test_yaml(admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]) -> None:
    reply = request(admin, "GET", _path(namespace, "a"), accept="application/yaml")
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/yaml"
    assert yaml.safe_load(reply.data) == request(admin, "GET", _path(namespace, "a")).body
    missing = request(admin, "GET", _path(namespace, "missing"), accept="application/yaml")
    assert missing.status == 404 and missing.headers["Content-Type"] == "application/yaml"
    assert yaml.safe_load(missing.data)["reason"] == "NotFound"


def _columns(table: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(column["name"], column["type"], column["priority"]) for column in table["columnDefinitions"]]


def test_table_of_config_maps(
    admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]
) -> None:
    reply = request(admin, "GET", _path(namespace), query=[("limit", 2)], accept=TABLE)
    assert reply.status == 200
    table = reply.body
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert set(table["metadata"]) == {"resourceVersion", "continue", "remainingItemCount"}
    assert _columns(table) == [("Name", "string", 0), ("Data", "string", 0), ("Age", "string", 0)]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["columnDefinitions"][0]["description"].startswith("Name must be unique within a namespace.")
    assert [row["cells"][:2] for row in table["rows"]] == [["a", 2], ["b", 2]]
    assert all(AGE.match(row["cells"][2]) for row in table["rows"])
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": created[0]["metadata"],
    }


def test_table_row_objects(admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]) -> None:
    whole = request(admin, "GET", _path(namespace, "a"), query=[("includeObject", "Object")], accept=TABLE).body
    assert whole["metadata"] == {"resourceVersion": created[0]["metadata"]["resourceVersion"]}
    assert whole["rows"][0]["object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        **{k: v for k, v in created[0].items() if k not in ("kind", "apiVersion")},
    }
    assert (
        request(admin, "GET", _path(namespace, "a"), query=[("includeObject", "None")], accept=TABLE).body["rows"][0][
            "object"
        ]
        is None
    )
    bad = request(admin, "GET", _path(namespace, "a"), query=[("includeObject", "Everything")], accept=TABLE)
    assert bad.status == 400
    assert bad.body["message"] == (
        "Unable to convert to Table as requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty"
    )
    empty = request(admin, "GET", _path(namespace), query=[("labelSelector", "app=none")], accept=TABLE).body
    assert empty["rows"] == []


def test_tables_of_other_kinds(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    labels = {"app": "web"}
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "registry.k8s.io/pause:3.10"},
                        {"name": "d", "image": "registry.k8s.io/pause:3.9"},
                    ]
                },
            },
        },
    }
    assert request(admin, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=deployment).status == 201
    deployments = request(admin, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments", accept=TABLE).body
    assert _columns(deployments) == [
        ("Name", "string", 0),
        ("Ready", "string", 0),
        ("Up-to-date", "string", 0),
        ("Available", "string", 0),
        ("Age", "string", 0),
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    ]
    cells = deployments["rows"][0]["cells"]
    assert cells[:4] == ["web", "0/1", 0, 0] and AGE.match(cells[4])
    assert cells[5:] == ["c,d", "registry.k8s.io/pause:3.10,registry.k8s.io/pause:3.9", "app=web"]

    secret = {"metadata": {"name": "s"}, "type": "example.com/kind", "data": {"a": "YQ==", "b": "Yg=="}}
    assert request(admin, "POST", f"/api/v1/namespaces/{namespace}/secrets", body=secret).status == 201
    secrets = request(admin, "GET", f"/api/v1/namespaces/{namespace}/secrets/s", accept=TABLE).body
    assert [column["name"] for column in secrets["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert secrets["rows"][0]["cells"][:3] == ["s", "example.com/kind", 2]

    namespaces = request(admin, "GET", f"/api/v1/namespaces/{namespace}", accept=TABLE).body
    assert [column["name"] for column in namespaces["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert namespaces["rows"][0]["cells"][:2] == [namespace, "Active"]

    binding = {
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "u1", "apiGroup": "rbac.authorization.k8s.io"},
            {"kind": "User", "name": "u2", "apiGroup": "rbac.authorization.k8s.io"},
            {"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "other"},
        ],
    }
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    assert request(admin, "POST", f"{rbac}/rolebindings", body=binding).status == 201
    bindings = request(admin, "GET", f"{rbac}/rolebindings/b", accept=TABLE).body
    assert [column["name"] for column in bindings["columnDefinitions"]] == [
        "Name",
        "Role",
        "Age",
        "Users",
        "Groups",
        "ServiceAccounts",
    ]
    row = bindings["rows"][0]["cells"]
    assert row[:2] == ["b", "ClusterRole/view"] and row[3:] == ["u1, u2", "g", "other/sa"]

    role = {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    created_role = request(admin, "POST", f"{rbac}/roles", body=role).body
    roles = request(admin, "GET", f"{rbac}/roles", accept=TABLE).body
    assert _columns(roles) == [("Name", "string", 0), ("Created At", "date", 0)]
    assert roles["rows"][0]["cells"] == ["r", created_role["metadata"]["creationTimestamp"]]


def test_tables_of_custom_resources_and_their_definition(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    flunders = request(admin, "GET", _flunder(admin, namespace), accept=TABLE).body
    assert _columns(flunders) == [("Name", "string", 0), ("Age", "date", 0)]
    assert flunders["rows"][0]["cells"][0] == "f" and AGE.match(flunders["rows"][0]["cells"][1])
    definition = request(
        admin,
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/flunders.wardle.example.com",
        accept=TABLE,
    ).body
    assert [column["name"] for column in definition["columnDefinitions"]] == [
        "Name",
        "Scope",
        "Versions",
        "Created At",
        "Group",
        "Kind",
        "ShortNames",
        "Established",
    ]
    cells = definition["rows"][0]["cells"]
    assert cells[:3] == ["flunders.wardle.example.com", "Namespaced", "v1alpha1(storage)"]
    assert cells[4:] == ["wardle.example.com", "Flunder", "", True]


def test_metadata_only_watch(admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]) -> None:
    query = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "labelSelector": "app=a",
    }
    with watch(admin, _path(namespace), accept=PARTIAL, **query) as events:
        snapshot = events.until(lambda event: event["type"] == "BOOKMARK")
        changed = request(
            admin,
            "PATCH",
            _path(namespace, "a"),
            body={"metadata": {"annotations": {"n": "1"}}},
            content_type="application/merge-patch+json",
        ).body
        live = events.next()
    added, end = snapshot[0], snapshot[-1]
    assert added == {
        "type": "ADDED",
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": created[0]["metadata"]},
    }
    assert end["object"]["kind"] == "PartialObjectMetadata" and end["object"]["metadata"]["annotations"] == {
        "k8s.io/initial-events-end": "true"
    }
    assert live["type"] == "MODIFIED" and live["object"]["metadata"] == changed["metadata"]


def test_table_watch(admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]) -> None:
    with watch(
        admin, _path(namespace), accept=TABLE, resourceVersion=created[0]["metadata"]["resourceVersion"]
    ) as events:
        first, second = events.take(2)
    assert first["object"]["kind"] == "Table" and [row["cells"][0] for row in first["object"]["rows"]] == ["b"]
    assert [column["name"] for column in first["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert second["object"]["columnDefinitions"] is None  # the columns come with the first event only
    assert second["object"]["rows"][0]["cells"][:2] == ["c", 2]


def test_a_yaml_watch_is_not_acceptable(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    with pytest.raises(kubernetes.client.exceptions.ApiException) as caught:
        with watch(admin, _path(namespace), accept="application/yaml"):
            pass
    assert caught.value.status == 406
    assert yaml.safe_load(caught.value.body)["message"] == (
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    )


def test_a_metadata_list_watch_sends_nothing(
    admin: kubernetes.client.ApiClient, namespace: str, created: list[dict[str, Any]]
) -> None:
    """Each event of such a watch fails to convert, and kube-apiserver drops it."""
    with watch(admin, _path(namespace), accept=PARTIAL_LIST, timeoutSeconds=1) as events:
        assert events.rest() == []


def test_the_selector_cell_of_a_deployment(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    labels = {"app": "web", "tier": "front", "zone": "a", "owner": "me"}
    selector = {
        "matchLabels": {"tier": "front", "app": "web"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b", "a"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "owner", "operator": "Exists"},
        ],
    }
    body = {
        "metadata": {"name": "sel"},
        "spec": {
            "selector": selector,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    assert request(admin, "POST", path, body=body).status == 201
    cells = request(admin, "GET", f"{path}/sel", accept=TABLE).body["rows"][0]["cells"]
    assert cells[7] == "app=web,!canary,env notin (dev),owner,tier=front,zone in (a,b)"
