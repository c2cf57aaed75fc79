"""What the simulator's registry adds beside a bare kube-apiserver: its garbage collector's
finalizers, and the namespace controller (a deleted namespace is emptied, then removed once its
finalizers are done)."""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes.client
import pytest

from flask_krm.testing.simulator import KubeSimulator
from tests.contract.kube import MERGE_PATCH, configmap, request, watch


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


def test_deleting_a_namespace_deletes_its_objects_then_itself(admin: kubernetes.client.ApiClient) -> None:
    request(admin, "POST", "/api/v1/namespaces", body={"metadata": {"name": "doomed"}})
    plain = request(admin, "POST", "/api/v1/namespaces/doomed/configmaps", body=configmap("plain")).body
    request(
        admin, "POST", "/api/v1/namespaces/doomed/configmaps", body=configmap("held", finalizers=["example.com/hold"])
    )
    with watch(
        admin,
        "/api/v1/namespaces",
        resourceVersion=plain["metadata"]["resourceVersion"],
        fieldSelector="metadata.name=doomed",
    ) as namespaces:
        deleted = request(admin, "DELETE", "/api/v1/namespaces/doomed")
        assert deleted.body["status"]["phase"] == "Terminating"
        assert namespaces.next()["type"] == "MODIFIED"
        assert request(admin, "GET", "/api/v1/namespaces/doomed/configmaps/plain").status == 404
        held = request(admin, "GET", "/api/v1/namespaces/doomed/configmaps/held").body
        assert held["metadata"]["deletionTimestamp"]
        assert request(admin, "GET", "/api/v1/namespaces/doomed").status == 200
        request(
            admin,
            "PATCH",
            "/api/v1/namespaces/doomed/configmaps/held",
            body={"metadata": {"finalizers": None}},
            content_type=MERGE_PATCH,
        )
        gone = namespaces.next()
    assert gone["type"] == "DELETED" and gone["object"]["metadata"]["name"] == "doomed"
    assert request(admin, "GET", "/api/v1/namespaces/doomed").status == 404
