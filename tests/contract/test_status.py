"""The status subresource of Deployments: generation, spec and status endpoints kept apart."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, request


@pytest.fixture
def deployment_path(admin: kubernetes.client.ApiClient, namespace: str) -> str:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    labels = {"app": "web"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    created = request(admin, "POST", path, body=body)
    assert created.status == 201
    return f"{path}/web"


def _patch(admin: kubernetes.client.ApiClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = request(admin, "PATCH", path, body=body, content_type=MERGE_PATCH)
    assert reply.status == 200, reply.body
    return reply.body  # type: ignore[no-any-return]


def test_spec_changes_bump_generation(admin: kubernetes.client.ApiClient, deployment_path: str) -> None:
    scaled = _patch(admin, deployment_path, {"spec": {"replicas": 3}})
    assert scaled["metadata"]["generation"] == 2
    relabelled = _patch(admin, deployment_path, {"metadata": {"labels": {"team": "a"}}})
    assert relabelled["metadata"]["generation"] == 2  # labels are not spec
    assert int(relabelled["metadata"]["resourceVersion"]) > int(scaled["metadata"]["resourceVersion"])


def test_status_is_ignored_on_the_main_resource(admin: kubernetes.client.ApiClient, deployment_path: str) -> None:
    before = request(admin, "GET", deployment_path).body
    after = request(admin, "PATCH", deployment_path, body={"status": {"replicas": 7}}, content_type=MERGE_PATCH).body
    assert after.get("status", {}).get("replicas") != 7
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # nothing to write


def test_status_endpoint_changes_only_status(admin: kubernetes.client.ApiClient, deployment_path: str) -> None:
    updated = _patch(
        admin,
        f"{deployment_path}/status",
        {"status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 1}, "spec": {"replicas": 9}},
    )
    assert updated["status"]["readyReplicas"] == 1 and updated["status"]["observedGeneration"] == 1
    assert updated["spec"]["replicas"] == 2
    assert updated["metadata"]["generation"] == 1
    fetched = request(admin, "GET", f"{deployment_path}/status").body
    assert fetched["status"] == updated["status"] and fetched["kind"] == "Deployment"


def test_status_writes_follow_optimistic_concurrency(admin: kubernetes.client.ApiClient, deployment_path: str) -> None:
    version = request(admin, "GET", deployment_path).body["metadata"]["resourceVersion"]
    _patch(admin, deployment_path, {"spec": {"replicas": 1}})
    reply = request(
        admin,
        "PATCH",
        f"{deployment_path}/status",
        body={"metadata": {"resourceVersion": version}, "status": {"replicas": 1}},
        content_type=MERGE_PATCH,
    )
    assert reply.status == 409
    assert reply.body["message"].startswith(
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified'
    )
    assert reply.body["details"] == {"name": "web", "group": "apps", "kind": "deployments"}
