"""``dryRun=All``: writes are validated and answered as if done, and nothing is stored or watched."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, configmap, request, watch

DRY = [("dryRun", "All")]


@pytest.fixture
def created(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    reply = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a", {"k": "v"}))
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def _configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def test_dry_run_create(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "POST", _configmaps(namespace), query=DRY, body=configmap("dry", {"k": "v"}))
    assert reply.status == 201
    metadata = reply.body["metadata"]
    assert metadata["name"] == "dry" and metadata["namespace"] == namespace
    assert metadata["uid"] and metadata["creationTimestamp"]
    assert "resourceVersion" not in metadata
    assert reply.body["data"] == {"k": "v"}
    assert request(admin, "GET", f"{_configmaps(namespace)}/dry").status == 404
    generated = request(admin, "POST", _configmaps(namespace), query=DRY, body={"metadata": {"generateName": "dry-"}})
    assert generated.status == 201 and generated.body["metadata"]["name"].startswith("dry-")
    typed = kubernetes.client.CoreV1Api(admin).create_namespaced_config_map(
        namespace, configmap("typed"), dry_run="All"
    )
    assert typed.metadata.name == "typed" and typed.metadata.resource_version is None


def test_dry_run_create_is_validated(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    exists = request(admin, "POST", _configmaps(namespace), query=DRY, body=configmap("a"))
    assert exists.status == 409 and exists.body["reason"] == "AlreadyExists"
    bad_name = request(admin, "POST", _configmaps(namespace), query=DRY, body=configmap("Not_A_Name"))
    assert bad_name.status == 422 and bad_name.body["details"]["causes"][0]["field"] == "metadata.name"


def test_dry_run_patch_and_update(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = f"{_configmaps(namespace)}/a"
    version = created["metadata"]["resourceVersion"]
    patched = request(admin, "PATCH", path, query=DRY, body={"data": {"k": "patched"}}, content_type=MERGE_PATCH)
    assert patched.status == 200 and patched.body["data"] == {"k": "patched"}
    assert patched.body["metadata"]["resourceVersion"] == version
    replaced = request(admin, "PUT", path, query=DRY, body={**created, "data": {"only": "this"}})
    assert replaced.status == 200 and replaced.body["data"] == {"only": "this"}
    assert replaced.body["metadata"]["resourceVersion"] == version
    current = request(admin, "GET", path).body
    assert current["data"] == {"k": "v"} and current["metadata"]["resourceVersion"] == version


def test_dry_run_delete(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = f"{_configmaps(namespace)}/a"
    reply = request(admin, "DELETE", path, query=DRY)
    assert reply.status == 200
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert request(admin, "GET", path).status == 200
    in_body = request(admin, "DELETE", path, body={"apiVersion": "v1", "kind": "DeleteOptions", "dryRun": ["All"]})
    assert in_body.status == 200 and request(admin, "GET", path).status == 200


def test_dry_run_delete_of_an_object_with_finalizers(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    held = request(admin, "POST", _configmaps(namespace), body=configmap("held", finalizers=["example.com/hold"])).body
    path = f"{_configmaps(namespace)}/held"
    reply = request(admin, "DELETE", path, query=DRY)
    assert reply.status == 200
    assert reply.body["metadata"]["deletionTimestamp"] and reply.body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert reply.body["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]
    assert "deletionTimestamp" not in request(admin, "GET", path).body["metadata"]
    assert (
        request(admin, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH).status == 200
    )


def test_dry_run_delete_of_a_namespace(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "DELETE", f"/api/v1/namespaces/{namespace}", query=DRY)
    assert reply.status == 200
    assert reply.body["status"] == {"phase": "Terminating"} and reply.body["metadata"]["deletionTimestamp"]
    assert request(admin, "GET", f"/api/v1/namespaces/{namespace}").body["status"] == {"phase": "Active"}


def test_dry_runs_emit_no_events(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = _configmaps(namespace)
    with watch(admin, path, resourceVersion=created["metadata"]["resourceVersion"]) as events:
        assert request(admin, "POST", path, query=DRY, body=configmap("dry")).status == 201
        assert (
            request(
                admin, "PATCH", f"{path}/a", query=DRY, body={"data": {"k": "dry"}}, content_type=MERGE_PATCH
            ).status
            == 200
        )
        assert request(admin, "DELETE", f"{path}/a", query=DRY).status == 200
        real = request(admin, "PATCH", f"{path}/a", body={"data": {"k": "real"}}, content_type=MERGE_PATCH).body
        event = events.next()
    assert event["type"] == "MODIFIED" and event["object"]["data"] == {"k": "real"}
    assert event["object"]["metadata"]["resourceVersion"] == real["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("method", "kind", "value"),
    [
        ("POST", "CreateOptions", "Bogus"),
        ("POST", "CreateOptions", ""),
        ("PATCH", "PatchOptions", "Bogus"),
        ("PUT", "UpdateOptions", "all"),
        ("DELETE", "DeleteOptions", "Bogus"),
    ],
)
def test_unsupported_dry_run_values(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any], method: str, kind: str, value: str
) -> None:
    path = _configmaps(namespace) if method == "POST" else f"{_configmaps(namespace)}/a"
    body = {"PATCH": {"data": {"k": "x"}}, "POST": configmap("b"), "PUT": created, "DELETE": None}[method]
    reply = request(
        admin,
        method,
        path,
        query=[("dryRun", value)],
        body=body,
        content_type=MERGE_PATCH if method == "PATCH" else "application/json",
    )
    assert reply.status == 422
    detail = f'Unsupported value: ["{value}"]: supported values: "All"'
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind}.meta.k8s.io "" is invalid: dryRun: {detail}',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": kind,
            "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}],
        },
        "code": 422,
    }
    assert (
        request(admin, "GET", f"{_configmaps(namespace)}/a").body["metadata"]["resourceVersion"]
        == created["metadata"]["resourceVersion"]
    )
