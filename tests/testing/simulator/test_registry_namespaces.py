"""The simulator's namespace controller: a deleted namespace is emptied, then removed once its finalizers are done."""

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
