"""What the simulator adds beside a bare kube-apiserver: its garbage collector's finalizers, and
the field tables' release."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources

import kubernetes.client
import pytest

from flask_krm.testing.simulator import KubeSimulator
from tests.contract.kube import configmap, request, watch
from tests.realkube import pinned_kubernetes_version


@pytest.fixture
def admin() -> Iterator[kubernetes.client.ApiClient]:
    with KubeSimulator() as kube, kube.api_client() as client:
        yield client


@pytest.mark.parametrize(("policy", "finalizer"), [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")])
def test_the_collector_removes_its_finalizer_and_the_object_goes(
    admin: kubernetes.client.ApiClient, policy: str, finalizer: str
) -> None:
    request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "gc"}})
    path = "/api/v1/namespaces/gc/configmaps"
    created = request(admin, "POST", path, body=configmap("a")).body
    with watch(admin, path, resourceVersion=created["metadata"]["resourceVersion"]) as events:
        reply = request(admin, "DELETE", f"{path}/a", body={"propagationPolicy": policy})
        marked, deleted = events.take(2)
    assert reply.status == 200 and reply.body["metadata"]["finalizers"] == [finalizer]
    assert marked["type"] == "MODIFIED" and marked["object"]["metadata"]["finalizers"] == [finalizer]
    assert deleted["type"] == "DELETED"
    assert request(admin, "GET", f"{path}/a").status == 404


def test_other_finalizers_still_hold_the_object(admin: kubernetes.client.ApiClient) -> None:
    request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "gc"}})
    path = "/api/v1/namespaces/gc/configmaps"
    request(admin, "POST", path, body=configmap("held", finalizers=["example.com/hold"]))
    reply = request(admin, "DELETE", f"{path}/held", query=[("propagationPolicy", "Foreground")])
    assert reply.body["metadata"]["finalizers"] == ["example.com/hold", "foregroundDeletion"]
    remaining = request(admin, "GET", f"{path}/held").body
    assert remaining["metadata"]["finalizers"] == ["example.com/hold"] and remaining["metadata"]["deletionTimestamp"]


def test_the_field_tables_come_from_the_pinned_release() -> None:
    table = json.loads(resources.files("flask_krm.testing.simulator").joinpath("field_schemas.json").read_text())
    assert table["source"] == f"k8s.io/kubernetes {pinned_kubernetes_version()} api/openapi-spec/v3"
    assert set(table["kinds"]) == {
        "Namespace",
        "ConfigMap",
        "Secret",
        "Deployment",
        "Scale",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    }


def test_the_openapi_documents_come_from_the_pinned_server() -> None:
    bundle = json.loads(resources.files("flask_krm.testing.simulator").joinpath("openapi_v3.json").read_text())
    assert bundle["source"] == f"kube-apiserver {pinned_kubernetes_version()} /openapi/v3"
    assert set(bundle["crd_documents"]) == {"apis/wardle.example.com/v1alpha1"}
