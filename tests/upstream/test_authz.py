"""The SubjectAccessReview authorizer against the simulator's RBAC."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flask_krm.principal import Principal
from flask_krm.scope import Scope
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.authz import (
    AccessDenied,
    ReviewFailed,
    Subject,
    SubjectAccessReviewAuthorizer,
    allow_all,
    principal_subject,
)
from flask_krm.upstream.clients import ApiClients, Kubeconfig

from .cluster import APP, Cluster, kubeconfig_via
from .proxy import Proxy

REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@pytest.fixture
def gateway(kube: KubeSimulator) -> Iterator[ApiClients]:
    """Clients acting as the shared-watch service identity (may create SubjectAccessReviews)."""
    clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="krm-gateway")})
    yield clients
    clients.close()


def test_an_allowed_principal_passes(gateway: ApiClients) -> None:
    authorize = SubjectAccessReviewAuthorizer(gateway)
    assert authorize(Principal("viewer"), APP, "krm-full/v1") is True
    assert authorize.allows(Principal("admin", groups=("system:masters",)), APP, "krm-full/v1", "patch") is True


def test_a_refusal_names_the_verb_resource_and_user(gateway: ApiClients, kube: KubeSimulator) -> None:
    kube.add_user("nobody")
    authorize = SubjectAccessReviewAuthorizer(gateway)
    with pytest.raises(AccessDenied) as refused:
        authorize(Principal("nobody"), APP, "krm-full/v1")
    assert refused.value.code == "FORBIDDEN"
    assert refused.value.message.startswith("nobody may not list configmaps")
    assert authorize.allows(Principal("viewer"), APP, "krm-full/v1", "patch") is False, "viewer only reads"
    deployments = Scope(target="sim", group="apps", version="v1", resource="deployments", namespace="app")
    with pytest.raises(AccessDenied, match="may not list deployments.apps"):
        authorize(Principal("nobody"), deployments, "krm-full/v1")


def test_watch_without_list_is_refused(gateway: ApiClients, cluster: Cluster) -> None:
    cluster.request(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "watch-only"},
            "rules": [{"verbs": ["watch"], "apiGroups": [""], "resources": ["configmaps"]}],
        },
    )
    cluster.request(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "watch-only"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "watcher"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "watch-only"},
        },
    )
    with pytest.raises(AccessDenied, match="watcher may not list configmaps"):
        SubjectAccessReviewAuthorizer(gateway)(Principal("watcher"), APP, "krm-full/v1")


def test_an_unmappable_principal_is_refused_without_a_review(kube: KubeSimulator, proxy: Proxy, tmp_path: Path) -> None:
    clients = ApiClients({"sim": Kubeconfig(kubeconfig_via(kube, proxy.url, tmp_path), context="krm-gateway")})

    def unmappable(principal: object) -> Subject:
        raise LookupError("no such user")

    with pytest.raises(AccessDenied, match="not authenticated"):
        SubjectAccessReviewAuthorizer(clients, unmappable)(Principal("x"), APP, "krm-full/v1")
    with pytest.raises(AccessDenied, match="not authenticated"):
        SubjectAccessReviewAuthorizer(clients, lambda p: Subject())(Principal("x"), APP, "krm-full/v1")
    assert proxy.requests == []
    SubjectAccessReviewAuthorizer(clients)(Principal("viewer"), APP, "krm-full/v1")
    assert [r.path for r in proxy.requests] == [REVIEWS, REVIEWS], "list, then watch"
    clients.close()


def test_a_review_that_cannot_be_completed_is_never_an_allow(gateway: ApiClients, kube: KubeSimulator) -> None:
    assert kube.faults is not None
    kube.faults.refuse_connections(5.0, respond_503=True)
    with pytest.raises(ReviewFailed, match="HTTP 503"):
        SubjectAccessReviewAuthorizer(gateway)(Principal("viewer"), APP, "krm-full/v1")
    kube.faults.accept_connections()
    viewer_clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="viewer")})
    with pytest.raises(ReviewFailed, match="HTTP 403"):  # viewer may not create reviews
        SubjectAccessReviewAuthorizer(viewer_clients)(Principal("viewer"), APP, "krm-full/v1")
    viewer_clients.close()


def test_the_default_subject_adds_the_authenticated_group() -> None:
    assert principal_subject(Principal("alice", groups=("dev",))) == Subject("alice", ("dev", "system:authenticated"))
    with pytest.raises(ValueError):
        principal_subject(object())
    assert allow_all(Principal("anyone"), APP, "krm-raw/v1") is True
