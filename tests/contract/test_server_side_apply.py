"""Server-side apply: create, update of owned fields, removal of fields no longer applied, conflicts (409), force."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import yaml

from .kube import MERGE_PATCH, request

APPLY = "application/apply-patch+yaml"
FLUNDERS = "/apis/wardle.example.com/v1alpha1/namespaces/{}/flunders"


def _configmap(data: dict[str, str], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", **metadata}, "data": data}


def _apply(
    api: kubernetes.client.ApiClient, path: str, config: dict[str, Any], manager: str, *query: tuple[str, str]
) -> Any:
    """PATCH ``config`` as YAML (the ``kubectl apply --server-side`` way) with ``fieldManager=manager``."""
    return request(
        api,
        "PATCH",
        path,
        body=yaml.safe_dump(config),
        content_type=APPLY,
        query=[("fieldManager", manager), *query],
    )


def _fields(obj: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Each managedFields entry as (manager, operation, fieldsV1)."""
    return [(entry["manager"], entry["operation"], entry["fieldsV1"]) for entry in obj["metadata"]["managedFields"]]


def test_apply_creates_then_updates_and_prunes_its_own_fields(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cm"
    created = _apply(admin, path, _configmap({"a": "1", "b": "2"}, labels={"app": "x"}), "alice")
    assert created.status == 201, created.body
    assert created.body["data"] == {"a": "1", "b": "2"}
    entry = created.body["metadata"]["managedFields"][0]
    assert {key: entry[key] for key in ("manager", "operation", "apiVersion", "fieldsType")} == {
        "manager": "alice",
        "operation": "Apply",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
    }
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}

    updated = _apply(admin, path, _configmap({"a": "changed", "c": "3"}), "alice")
    assert updated.status == 200, updated.body
    assert updated.body["data"] == {"a": "changed", "c": "3"}  # b and the label are no longer applied: removed
    assert "labels" not in updated.body["metadata"]
    assert _fields(updated.body) == [("alice", "Apply", {"f:data": {"f:a": {}, "f:c": {}}})]
    assert updated.body["metadata"]["resourceVersion"] != created.body["metadata"]["resourceVersion"]

    again = _apply(admin, path, _configmap({"a": "changed", "c": "3"}), "alice")
    assert again.status == 200
    assert again.body["metadata"]["resourceVersion"] == updated.body["metadata"]["resourceVersion"]


def test_a_conflict_with_an_updater_is_409_until_forced(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cm"
    assert _apply(admin, path, _configmap({"a": "1", "b": "2", "c": "3"}), "alice").status == 201
    patched = request(
        admin,
        "PATCH",
        path,
        body={"data": {"a": "bob", "b": "bob"}},
        content_type=MERGE_PATCH,
        query=[("fieldManager", "bob")],
    )
    assert patched.status == 200
    assert _fields(patched.body) == [
        ("alice", "Apply", {"f:data": {"f:c": {}}}),
        ("bob", "Update", {"f:data": {"f:a": {}, "f:b": {}}}),
    ]

    one = _apply(admin, path, _configmap({"a": "alice", "b": "bob", "c": "3"}), "alice")
    assert one.status == 409
    assert one.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "bob" using v1: .data.a',
        "reason": "Conflict",
        "details": {
            "causes": [
                {"reason": "FieldManagerConflict", "message": 'conflict with "bob" using v1', "field": ".data.a"}
            ]
        },
        "code": 409,
    }
    two = _apply(admin, path, _configmap({"a": "alice", "b": "alice", "c": "3"}), "alice")
    assert two.status == 409
    assert two.body["message"] == (
        'Apply failed with 2 conflicts: conflicts with "bob" using v1:\n- .data.a\n- .data.b'
    )
    assert [cause["field"] for cause in two.body["details"]["causes"]] == [".data.a", ".data.b"]
    assert request(admin, "GET", path).body["data"] == {"a": "bob", "b": "bob", "c": "3"}

    forced = _apply(admin, path, _configmap({"a": "alice", "b": "bob", "c": "3"}), "alice", ("force", "true"))
    assert forced.status == 200, forced.body
    assert forced.body["data"] == {"a": "alice", "b": "bob", "c": "3"}
    assert _fields(forced.body) == [
        ("alice", "Apply", {"f:data": {"f:a": {}, "f:b": {}, "f:c": {}}}),
        ("bob", "Update", {"f:data": {"f:b": {}}}),
    ]


def test_two_appliers_share_a_value_and_conflict_over_another(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cm"
    assert _apply(admin, path, _configmap({"shared": "same", "mine": "1"}), "alice").status == 201
    shared = _apply(admin, path, _configmap({"shared": "same"}), "carol")
    assert shared.status == 200
    # carol changed nothing: her entry has no time, so it sorts first
    assert _fields(shared.body) == [
        ("carol", "Apply", {"f:data": {"f:shared": {}}}),
        ("alice", "Apply", {"f:data": {"f:mine": {}, "f:shared": {}}}),
    ]
    assert "time" not in shared.body["metadata"]["managedFields"][0]
    refused = _apply(admin, path, _configmap({"mine": "2"}), "carol")
    assert refused.status == 409
    assert refused.body["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.mine'
    assert refused.body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.mine"}
    ]
    # alice stops applying "shared": carol still owns it, so it stays
    kept = _apply(admin, path, _configmap({"mine": "1"}), "alice")
    assert kept.body["data"] == {"mine": "1", "shared": "same"}


def test_keyed_list_items_are_owned_per_key(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = FLUNDERS.format(namespace) + "/f"

    def flunder(*ports: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "f"},
            "spec": {"ports": list(ports)},
        }

    created = _apply(admin, path, flunder({"name": "http", "port": 80}), "alice")
    assert created.status == 201, created.body
    assert _fields(created.body) == [
        (
            "alice",
            "Apply",
            {"f:spec": {"f:ports": {'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}}}}},
        )
    ]
    added = _apply(admin, path, flunder({"name": "metrics", "port": 9090}), "bob")
    assert added.status == 200, added.body
    assert added.body["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]
    refused = _apply(admin, path, flunder({"name": "http", "port": 8080}), "bob")
    assert refused.status == 409
    assert (
        refused.body["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.ports[name="http"].port'
    )
    invalid = _apply(admin, path, flunder({"name": "metrics", "port": 0}), "bob")
    assert invalid.status == 422
    assert invalid.body["details"]["causes"][0]["field"] == "spec.ports[1].port"


def test_a_dry_run_apply_stores_nothing(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cm"
    reply = _apply(admin, path, _configmap({"a": "1"}), "alice", ("dryRun", "All"))
    assert reply.status == 201 and reply.body["data"] == {"a": "1"}
    assert request(admin, "GET", path).status == 404


def test_a_configuration_that_is_no_object_of_the_kind_is_a_bad_request(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cm"

    def applied(text: str) -> Any:
        return request(admin, "PATCH", path, body=text, content_type=APPLY, query=[("fieldManager", "alice")])

    not_a_map = applied("- 1\n- 2\n")
    assert (not_a_map.status, not_a_map.body["message"]) == (
        400,
        "error decoding patch: error unmarshaling JSON: while decoding JSON: "
        "json: cannot unmarshal array into Go value of type map[string]interface {}",
    )
    untyped = applied("metadata:\n  name: cm\ndata:\n  a: '1'\n")
    assert (untyped.status, untyped.body["message"]) == (400, "invalid object type: /, Kind=")
    other_kind = applied("apiVersion: v1\nkind: Secret\nmetadata:\n  name: cm\n")
    assert (other_kind.status, other_kind.body["message"]) == (400, "invalid object type: /v1, Kind=Secret")
    unparsable = applied("a: [")
    assert unparsable.status == 400 and unparsable.body["message"].startswith("error encoding patch: yaml: line 1: ")
    assert request(admin, "GET", path).status == 404


def test_deployments_merge_containers_by_name_and_ports_by_their_defaulted_key(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/d"
    container = {"name": "app", "image": "i:1", "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]}
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [container]}},
        },
    }
    created = _apply(admin, path, deployment, "alice")
    assert created.status == 201, created.body
    app_fields = {
        ".": {},
        "f:env": {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}},
        "f:image": {},
        "f:name": {},
        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
    }
    template_fields = {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:containers": {'k:{"name":"app"}': app_fields}},
    }
    assert _fields(created.body) == [
        ("alice", "Apply", {"f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": template_fields}})
    ]

    side = {"name": "side", "image": "s:1"}
    with_side = {
        **deployment,
        "spec": {
            **deployment["spec"],
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [container, side]}},
        },
    }
    del with_side["spec"]["replicas"]
    added = _apply(admin, path, with_side, "bob")
    assert added.status == 200, added.body
    assert [item["name"] for item in added.body["spec"]["template"]["spec"]["containers"]] == ["app", "side"]
    assert added.body["spec"]["replicas"] == 2

    changed = {
        **deployment,
        "spec": {
            **deployment["spec"],
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{**container, "image": "i:2"}]}},
        },
    }
    refused = _apply(admin, path, changed, "bob")
    assert refused.status == 409
    assert refused.body["message"] == (
        'Apply failed with 1 conflict: conflict with "alice": .spec.template.spec.containers[name="app"].image'
    )
