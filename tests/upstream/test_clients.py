"""Per-target API clients, and acting as someone else on a shared connection pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.clients import (
    SERVICE_IDENTITY,
    ActingApiClient,
    ApiClients,
    BearerToken,
    Impersonation,
    InCluster,
    Kubeconfig,
    UnknownTargetError,
)

from .cluster import Cluster


def whoami(api: object) -> dict:
    """The SelfSubjectAccessReview answer for listing configmaps in ``app``, as ``api`` acts."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": "app"}},
    }
    m, url, h, b, _ = api.param_serialize(  # type: ignore[attr-defined]
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(m, url, header_params=h, body=b)  # type: ignore[attr-defined]
    answer = json.loads(response.read())
    allowed = response.status == 201 and answer["status"]["allowed"] is True
    return {"status": response.status, "allowed": allowed}


def test_one_client_per_target_built_on_first_use_with_its_pool_size(kube: KubeSimulator) -> None:
    clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="viewer")}, pool_maxsize=7)
    api = clients.service("sim")
    assert clients.service("sim") is api
    assert api.configuration.connection_pool_maxsize == 7
    assert api.rest_client.pool_manager.connection_pool_kw["maxsize"] == 7
    assert api.configuration.get_api_key_with_prefix("BearerToken", alias="authorization") == "Bearer viewer-token"
    assert list(clients.targets) == ["sim"]
    with pytest.raises(UnknownTargetError, match="'elsewhere'"):
        clients.service("elsewhere")
    with pytest.raises(ValueError):
        ApiClients({}, pool_maxsize=0)
    clients.close()


def test_acting_clients_share_the_pool_and_never_close_it(kube: KubeSimulator) -> None:
    clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="admin")})
    base = clients.service("sim")
    assert clients.acting_as("sim", SERVICE_IDENTITY) is base
    acting = clients.acting_as("sim", Impersonation("viewer"))
    assert isinstance(acting, ActingApiClient)
    assert acting.rest_client is base.rest_client
    acting.close()
    assert whoami(base)["allowed"], "the base client still works after an acting view is closed"
    clients.close()


def test_impersonation_sends_one_header_line_per_group(kube: KubeSimulator, cluster: Cluster) -> None:
    cluster.request(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "readers"},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "readers"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "krm-demo-view"},
        },
    )
    clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="admin")})
    in_second_group = clients.acting_as("sim", Impersonation("someone", groups=("others", "readers")))
    in_no_group = clients.acting_as("sim", Impersonation("someone"))
    assert whoami(in_second_group)["allowed"], "'readers' arrived as a group of its own"
    assert not whoami(in_no_group)["allowed"]
    assert Impersonation("u", ("a", "b"), uid="1", extra=(("scopes.example/x", ("p", "q")),)).headers() == [
        ("Impersonate-User", "u"),
        ("Impersonate-Group", "a"),
        ("Impersonate-Group", "b"),
        ("Impersonate-Uid", "1"),
        ("Impersonate-Extra-scopes.example%2Fx", "p"),
        ("Impersonate-Extra-scopes.example%2Fx", "q"),
    ]
    clients.close()


def test_a_bearer_token_replaces_the_target_credentials(kube: KubeSimulator) -> None:
    clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="admin")})
    assert whoami(clients.acting_as("sim", BearerToken("viewer-token")))["allowed"]
    assert whoami(clients.acting_as("sim", BearerToken("wrong")))["status"] == 401
    assert "wrong" not in repr(BearerToken("wrong")), "a token never shows in a repr"
    with pytest.raises(ValueError):
        BearerToken("")
    with pytest.raises(ValueError):
        Impersonation("")
    clients.close()


def test_an_in_cluster_target_reads_the_token_and_ca_a_pod_has(
    kube: KubeSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service account folder (here a test's; in a pod Kubernetes mounts it) and the
    ``KUBERNETES_SERVICE_HOST``/``PORT`` environment make the target's client."""
    (tmp_path / "token").write_text("viewer-token")
    (tmp_path / "ca.crt").write_bytes(kube.ca_pem)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", kube.url.rsplit(":", 1)[1])
    clients = ApiClients({"pod": InCluster(str(tmp_path))})
    api = clients.service("pod")
    assert api.configuration.host == kube.url
    assert whoami(api)["allowed"], "the viewer's token, verified against the folder's CA"
    (tmp_path / "token").write_text("nobody-token")
    assert whoami(ApiClients({"pod": InCluster(str(tmp_path))}).service("pod"))["status"] == 401
    assert InCluster().service_account_dir == "/var/run/secrets/kubernetes.io/serviceaccount"
    clients.close()
