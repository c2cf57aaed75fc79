"""The real kube-apiserver fixture: version, static-token users, RBAC, the Flunder CRD, teardown."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import kubernetes.client
import kubernetes.config
import pytest
from kubernetes.client.exceptions import ApiException

from flask_krm.testing.simulator import DEMO_USERS, User
from tests.realkube import KubeApiServer, pinned_kubernetes_version, start_kube_apiserver

pytestmark = pytest.mark.apiserver


@pytest.fixture(scope="module")
def kube(request: pytest.FixtureRequest, real_kube: KubeApiServer) -> KubeApiServer:
    """The session's real server (``real_kube``), its version and address printed once."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nreal kube-apiserver {real_kube.version} at {real_kube.url}")
    return real_kube


def release(version: str) -> tuple[int, int, int]:
    match = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)(?:[-+].*)?", version)
    assert match, f"not a release version: {version!r}"
    return int(match[1]), int(match[2]), int(match[3])


def whoami(client: kubernetes.client.ApiClient) -> kubernetes.client.V1UserInfo:
    review = kubernetes.client.AuthenticationV1Api(client).create_self_subject_review(
        kubernetes.client.V1SelfSubjectReview()
    )
    assert review.status is not None and review.status.user_info is not None
    return review.status.user_info


def test_server_reports_at_least_the_pinned_release(kube: KubeApiServer) -> None:
    with kube.api_client("viewer") as client:
        info = kubernetes.client.VersionApi(client).get_code()
    assert info.git_version == kube.version
    assert release(kube.version) >= release(pinned_kubernetes_version()) >= (1, 34, 0)


@pytest.mark.parametrize("user", DEMO_USERS, ids=lambda user: user.name)
def test_static_token_users_authenticate_as_themselves(kube: KubeApiServer, user: User) -> None:
    with kube.api_client(user.name) as client:
        info = whoami(client)
    assert info.username == user.name
    assert {*user.groups, "system:authenticated"} <= set(info.groups or ())


def test_an_unknown_token_is_unauthorized(kube: KubeApiServer) -> None:
    with kube.api_client("viewer") as client:
        client.configuration.api_key = {"authorization": "not-a-demo-token"}
        with pytest.raises(ApiException) as refused:
            kubernetes.client.CoreV1Api(client).list_namespaced_config_map("default")
    assert refused.value.status == 401


def test_rbac_lets_the_viewer_read_but_not_patch(kube: KubeApiServer) -> None:
    probe = kubernetes.client.V1ConfigMap(metadata=kubernetes.client.V1ObjectMeta(name="rbac-probe"), data={"k": "v"})
    patch = {"data": {"k": "changed"}}
    with kube.api_client("admin") as admin, kube.api_client("viewer") as viewer:
        kubernetes.client.CoreV1Api(admin).create_namespaced_config_map("default", probe)
        assert kubernetes.client.CoreV1Api(viewer).read_namespaced_config_map("rbac-probe", "default").data == {
            "k": "v"
        }
        with pytest.raises(ApiException) as refused:
            kubernetes.client.CoreV1Api(viewer).patch_namespaced_config_map("rbac-probe", "default", patch)
        patched = kubernetes.client.CoreV1Api(admin).patch_namespaced_config_map("rbac-probe", "default", patch)
    assert refused.value.status == 403
    assert json.loads(refused.value.body or "{}")["reason"] == "Forbidden"
    assert patched.data == {"k": "changed"}


def test_the_flunder_crd_is_served_namespaced(kube: KubeApiServer) -> None:
    flunder = {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "fl-1"},
        "spec": {"reference": "x"},
    }
    with kube.api_client("admin") as client:
        created = kubernetes.client.CustomObjectsApi(client).create_namespaced_custom_object(
            "wardle.example.com", "v1alpha1", "default", "flunders", flunder
        )
    assert isinstance(created, dict)
    assert created["metadata"]["namespace"] == "default"
    assert created["spec"] == {"reference": "x"}


def test_the_kubeconfig_reaches_the_server_as_its_current_user(kube: KubeApiServer) -> None:
    with kubernetes.config.new_client_from_config(config_file=kube.kubeconfig_path) as client:  # type: ignore[no-untyped-call]
        assert whoami(client).username == DEMO_USERS[0].name


def test_only_compaction_is_offered(kube: KubeApiServer) -> None:
    assert not kube.supports("faults")
    assert kube.supports("compaction")


def test_compaction_reaches_etcd() -> None:
    """A server of its own: compaction takes the history that other tests here read."""
    with start_kube_apiserver(watch_cache=False) as server, server.api_client() as client:
        core = kubernetes.client.CoreV1Api(client)
        old = server.faults.revision()
        core.create_namespace(kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name="compacted")))
        core.create_namespace(
            kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name="compacted-2"))
        )
        assert server.faults.compact() == server.faults.revision() > old
        with pytest.raises(ApiException) as caught:
            core.list_namespace(resource_version=str(old), resource_version_match="Exact")
    assert caught.value.status == 410


def test_stopping_removes_processes_and_data() -> None:
    with start_kube_apiserver() as server:
        port = int(server.url.rsplit(":", 1)[1])
        data_dir = Path(server.kubeconfig_path).parent
        assert data_dir.is_dir()
    assert not data_dir.exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
