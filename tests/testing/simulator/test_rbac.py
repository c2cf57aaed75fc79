"""RBAC decisions from the stored roles and bindings, with kube-apiserver's reasons and 403 wording."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.authentication import AUTHENTICATED, MASTERS, Identity
from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.rbac import Attributes, RbacAuthorizer, forbidden_message, require
from flask_krm.testing.simulator.registry import Registry
from flask_krm.testing.simulator.server import install_rbac

RBAC = "rbac.authorization.k8s.io"
ALICE = Identity("alice", ("team", AUTHENTICATED))
ROBOT = Identity("system:serviceaccount:ops:robot", (AUTHENTICATED,))


def role(kind: str, name: str, rules: list[dict[str, t.Any]], namespace: str = "") -> dict[str, t.Any]:
    metadata = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": metadata, "rules": rules}


def binding(
    kind: str, name: str, role_kind: str, role_name: str, subject: dict[str, str], namespace: str = ""
) -> dict[str, t.Any]:
    metadata = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": kind,
        "metadata": metadata,
        "subjects": [subject],
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role_name},
    }


@pytest.fixture
def authorizer(registry: Registry) -> RbacAuthorizer:
    install_rbac(
        registry,
        [
            role(
                "ClusterRole",
                "read-app",
                [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app"]}],
            ),
            role("ClusterRole", "statuses", [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]}]),
            role("ClusterRole", "metrics", [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/logs/*"]}]),
            role("Role", "deploy", [{"verbs": ["patch"], "apiGroups": ["apps"], "resources": ["deployments"]}], "ops"),
            binding(
                "ClusterRoleBinding", "team-reads-app", "ClusterRole", "read-app", {"kind": "Group", "name": "team"}
            ),
            binding(
                "ClusterRoleBinding", "alice-statuses", "ClusterRole", "statuses", {"kind": "User", "name": "alice"}
            ),
            binding("ClusterRoleBinding", "alice-metrics", "ClusterRole", "metrics", {"kind": "User", "name": "alice"}),
            binding(
                "RoleBinding",
                "robot-deploys",
                "Role",
                "deploy",
                {"kind": "ServiceAccount", "name": "robot", "namespace": "ops"},
                "ops",
            ),
        ],
    )
    return RbacAuthorizer(registry.store)


def test_a_rule_s_resource_names_limit_it_to_those_objects(authorizer: RbacAuthorizer) -> None:
    allowed, reason = authorizer.authorize(Attributes(ALICE, "get", "", "configmaps", namespace="x", name="app"))
    assert (
        allowed
        and reason == 'RBAC: allowed by ClusterRoleBinding "team-reads-app" of ClusterRole "read-app" to Group "team"'
    )
    assert authorizer.authorize(Attributes(ALICE, "get", "", "configmaps", namespace="x", name="other")) == (False, "")
    assert not authorizer.authorize(Attributes(ALICE, "list", "", "configmaps", namespace="x"))[0]


def test_a_wildcard_subresource_rule_grants_that_subresource_of_every_resource(authorizer: RbacAuthorizer) -> None:
    assert authorizer.authorize(Attributes(ALICE, "patch", "apps", "deployments", "status", "x", "web"))[0]
    assert not authorizer.authorize(Attributes(ALICE, "patch", "apps", "deployments", "", "x", "web"))[0]
    assert not authorizer.authorize(Attributes(ALICE, "patch", "apps", "deployments", "scale", "x", "web"))[0]


def test_non_resource_urls_match_exactly_or_by_prefix(authorizer: RbacAuthorizer) -> None:
    def may_get(path: str) -> bool:
        return authorizer.authorize(Attributes(ALICE, "get", resource_request=False, path=path))[0]

    assert may_get("/metrics") and may_get("/logs/today")
    assert not may_get("/metrics/extra") and not may_get("/logs")


def test_a_role_binding_grants_its_role_to_a_service_account_in_its_namespace_only(authorizer: RbacAuthorizer) -> None:
    allowed, reason = authorizer.authorize(
        Attributes(ROBOT, "patch", "apps", "deployments", namespace="ops", name="web")
    )
    assert (
        allowed
        and reason == 'RBAC: allowed by RoleBinding "robot-deploys/ops" of Role "deploy" to ServiceAccount "ops/robot"'
    )
    assert not authorizer.authorize(Attributes(ROBOT, "patch", "apps", "deployments", namespace="dev", name="web"))[0]
    impostor = Identity("system:serviceaccount:dev:robot", (AUTHENTICATED,))
    assert not authorizer.authorize(Attributes(impostor, "patch", "apps", "deployments", namespace="ops"))[0]


def test_every_authenticated_user_may_read_discovery_and_review_itself(authorizer: RbacAuthorizer) -> None:
    nobody = Identity("nobody", (AUTHENTICATED,))
    allowed, reason = authorizer.authorize(Attributes(nobody, "get", resource_request=False, path="/apis/apps/v1"))
    assert allowed and '"system:discovery"' in reason
    allowed, reason = authorizer.authorize(
        Attributes(nobody, "create", "authorization.k8s.io", "selfsubjectaccessreviews")
    )
    assert allowed and '"system:basic-user"' in reason
    assert not authorizer.authorize(Attributes(nobody, "post", resource_request=False, path="/apis"))[0]
    unauthenticated = Identity("anonymous", ())
    assert not authorizer.authorize(Attributes(unauthenticated, "get", resource_request=False, path="/api"))[0]


def test_masters_may_do_anything_without_a_binding(authorizer: RbacAuthorizer) -> None:
    assert authorizer.authorize(Attributes(Identity("root", (MASTERS,)), "delete", RBAC, "clusterroles", name="x")) == (
        True,
        "",
    )


def test_a_binding_to_a_missing_role_grants_nothing(registry: Registry) -> None:
    install_rbac(
        registry, [binding("ClusterRoleBinding", "dangling", "ClusterRole", "gone", {"kind": "User", "name": "alice"})]
    )
    assert not RbacAuthorizer(registry.store).authorize(Attributes(ALICE, "get", "", "configmaps", namespace="x"))[0]


def test_forbidden_message_names_the_resource_and_scope() -> None:
    assert forbidden_message(Attributes(ALICE, "patch", "apps", "deployments", "scale", "ops", "web")) == (
        'User "alice" cannot patch resource "deployments/scale" in API group "apps" in the namespace "ops"'
    )
    assert forbidden_message(Attributes(ALICE, "list", "", "namespaces")) == (
        'User "alice" cannot list resource "namespaces" in API group "" at the cluster scope'
    )
    assert forbidden_message(Attributes(ALICE, "get", resource_request=False, path="/metrics")) == (
        'User "alice" cannot get path "/metrics"'
    )


def test_require_raises_kube_apiserver_s_403(authorizer: RbacAuthorizer) -> None:
    require(authorizer, Attributes(ALICE, "get", "", "configmaps", namespace="x", name="app"))
    with pytest.raises(ApiError) as refused:
        require(authorizer, Attributes(ALICE, "delete", "apps", "deployments", namespace="ops", name="web"))
    assert refused.value.code == 403 and refused.value.message == (
        'deployments.apps "web" is forbidden: User "alice" cannot delete resource "deployments" '
        'in API group "apps" in the namespace "ops"'
    )
    with pytest.raises(ApiError) as refused_path:
        require(authorizer, Attributes(ALICE, "get", resource_request=False, path="/secret-path"))
    assert refused_path.value.message == 'forbidden: User "alice" cannot get path "/secret-path"'
