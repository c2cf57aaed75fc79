"""The scale subresource of Deployments: an ``autoscaling/v1`` Scale to read and write replicas."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, request

JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@pytest.fixture
def deployment(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    labels = {"app": "web", "tier": "front"}
    selector = {
        "matchLabels": labels,
        "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod", "dev"]}],
    }
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": selector,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    created = request(admin, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body)
    assert created.status == 201
    return created.body  # type: ignore[no-any-return]


def _scale(deployment: dict[str, Any], replicas: int) -> dict[str, Any]:
    metadata = deployment["metadata"]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        },
        "spec": {"replicas": replicas} if replicas else {},
        "status": {"replicas": 0, "selector": "app=web,env notin (dev,prod),tier=front"},
    }


def _path(deployment: dict[str, Any]) -> str:
    return f"/apis/apps/v1/namespaces/{deployment['metadata']['namespace']}/deployments/web"


def test_get_scale(admin: kubernetes.client.ApiClient, deployment: dict[str, Any]) -> None:
    reply = request(admin, "GET", f"{_path(deployment)}/scale")
    assert reply.status == 200
    assert reply.body == _scale(deployment, 2)
    typed = kubernetes.client.AppsV1Api(admin).read_namespaced_deployment_scale(
        "web", deployment["metadata"]["namespace"]
    )
    assert typed.spec.replicas == 2 and typed.status.selector == "app=web,env notin (dev,prod),tier=front"


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        (MERGE_PATCH, {"spec": {"replicas": 5}}),
        (STRATEGIC_MERGE_PATCH, {"spec": {"replicas": 5}}),
        (JSON_PATCH, [{"op": "replace", "path": "/spec/replicas", "value": 5}]),
    ],
    ids=["merge", "strategic", "json"],
)
def test_patch_scale_sets_the_replicas(
    admin: kubernetes.client.ApiClient, deployment: dict[str, Any], content_type: str, patch: Any
) -> None:
    reply = request(admin, "PATCH", f"{_path(deployment)}/scale", body=patch, content_type=content_type)
    assert reply.status == 200
    scaled = request(admin, "GET", _path(deployment)).body
    assert scaled["spec"]["replicas"] == 5 and scaled["metadata"]["generation"] == 2
    assert reply.body == _scale(scaled, 5)


def test_scale_to_zero_and_put(admin: kubernetes.client.ApiClient, deployment: dict[str, Any]) -> None:
    to_zero = request(
        admin, "PATCH", f"{_path(deployment)}/scale", body={"spec": {"replicas": 0}}, content_type=MERGE_PATCH
    )
    assert to_zero.status == 200 and to_zero.body["spec"] == {}
    put = request(
        admin,
        "PUT",
        f"{_path(deployment)}/scale",
        body={"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 3}},
    )
    assert put.status == 200 and put.body["spec"] == {"replicas": 3}
    assert request(admin, "GET", _path(deployment)).body["spec"]["replicas"] == 3
    typed = kubernetes.client.AppsV1Api(admin).patch_namespaced_deployment_scale(
        "web", deployment["metadata"]["namespace"], {"spec": {"replicas": 4}}
    )
    assert typed.spec.replicas == 4


def test_negative_replicas_are_invalid_on_the_scale(
    admin: kubernetes.client.ApiClient, deployment: dict[str, Any]
) -> None:
    reply = request(
        admin, "PATCH", f"{_path(deployment)}/scale", body={"spec": {"replicas": -1}}, content_type=MERGE_PATCH
    )
    assert reply.status == 422
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
        "reason": "Invalid",
        "details": {
            "name": "web",
            "group": "autoscaling",
            "kind": "Scale",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: must be greater than or equal to 0",
                    "field": "spec.replicas",
                }
            ],
        },
        "code": 422,
    }


def test_scale_preconditions(admin: kubernetes.client.ApiClient, deployment: dict[str, Any]) -> None:
    stale = deployment["metadata"]["resourceVersion"]
    request(admin, "PATCH", _path(deployment), body={"metadata": {"labels": {"moved": "on"}}}, content_type=MERGE_PATCH)
    conflict = request(
        admin,
        "PATCH",
        f"{_path(deployment)}/scale",
        body={"metadata": {"resourceVersion": stale}, "spec": {"replicas": 3}},
        content_type=MERGE_PATCH,
    )
    assert conflict.status == 409
    assert conflict.body["message"] == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    other = "00000000-0000-0000-0000-000000000000"
    wrong_uid = request(
        admin,
        "PATCH",
        f"{_path(deployment)}/scale",
        body={"metadata": {"uid": other}, "spec": {"replicas": 3}},
        content_type=MERGE_PATCH,
    )
    assert wrong_uid.status == 409
    assert wrong_uid.body["message"] == (
        f'Operation cannot be fulfilled on deployments/scale.apps "web": Precondition failed: UID in precondition: {other}, '
        f"UID in object meta: {deployment['metadata']['uid']}"
    )
    renamed = request(
        admin,
        "PUT",
        f"{_path(deployment)}/scale",
        body={"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "other"}, "spec": {"replicas": 3}},
    )
    assert renamed.status == 400
    assert renamed.body["message"] == "the name of the object (other) does not match the name on the URL (web)"
    assert request(admin, "GET", _path(deployment)).body["spec"]["replicas"] == 2


def test_scale_of_a_missing_deployment_and_other_methods(
    admin: kubernetes.client.ApiClient, deployment: dict[str, Any]
) -> None:
    namespace = deployment["metadata"]["namespace"]
    missing = request(admin, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/missing/scale")
    assert missing.status == 404 and missing.body["message"] == 'deployments.apps "missing" not found'
    deleting = request(admin, "DELETE", f"{_path(deployment)}/scale")
    assert deleting.status == 405
    assert request(admin, "GET", _path(deployment)).status == 200
    assert request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps/web/scale").status == 404


def test_scale_in_discovery(admin: kubernetes.client.ApiClient) -> None:
    resources = {entry["name"]: entry for entry in request(admin, "GET", "/apis/apps/v1").body["resources"]}
    assert resources["deployments/scale"] == {
        "name": "deployments/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
