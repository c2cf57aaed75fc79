"""The demo users' RBAC objects give each user the rights the demo promises, and no more."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.authentication import Authenticator
from flask_krm.testing.simulator.identities import DEMO_USERS, namespace_rbac_objects
from flask_krm.testing.simulator.rbac import Attributes, RbacAuthorizer


def allowed(authorizer: RbacAuthorizer, user: str, verb: str, group: str, resource: str, namespace: str = "") -> bool:
    identity = Authenticator(DEMO_USERS).authenticate(f"Bearer {user}-token")
    assert identity is not None
    return authorizer.authorize(Attributes(identity, verb, group, resource, namespace=namespace))[0]


@pytest.mark.parametrize(
    ("group", "resource"),
    [("", "configmaps"), ("", "secrets"), ("apps", "deployments"), ("wardle.example.com", "flunders")],
)
def test_viewer_reads_everywhere_and_writes_nowhere(demo_authorizer: RbacAuthorizer, group: str, resource: str) -> None:
    for verb in ("get", "list", "watch"):
        assert allowed(demo_authorizer, "viewer", verb, group, resource, "elsewhere")
    for verb in ("create", "update", "patch", "delete"):
        assert not allowed(demo_authorizer, "viewer", verb, group, resource, "demo")


def test_editor_edits_only_in_the_namespaces_bound_to_it(demo_authorizer: RbacAuthorizer) -> None:
    assert allowed(demo_authorizer, "editor", "patch", "apps", "deployments", "demo")
    assert allowed(demo_authorizer, "editor", "create", "", "secrets", "demo")
    assert not allowed(demo_authorizer, "editor", "patch", "apps", "deployments", "demo-staging")
    assert allowed(demo_authorizer, "editor", "list", "apps", "deployments", "demo-staging")
    assert not allowed(demo_authorizer, "editor", "patch", "", "namespaces")


def test_the_gateway_reads_and_may_review_access_but_not_write(demo_authorizer: RbacAuthorizer) -> None:
    assert allowed(demo_authorizer, "krm-gateway", "watch", "", "configmaps", "demo")
    assert allowed(demo_authorizer, "krm-gateway", "create", "authorization.k8s.io", "subjectaccessreviews")
    assert not allowed(demo_authorizer, "krm-gateway", "patch", "", "configmaps", "demo")
    assert not allowed(demo_authorizer, "viewer", "create", "authorization.k8s.io", "subjectaccessreviews")


def test_admin_may_do_anything(demo_authorizer: RbacAuthorizer) -> None:
    assert allowed(demo_authorizer, "admin", "delete", "rbac.authorization.k8s.io", "clusterroles")


def test_the_namespace_binding_names_its_namespace() -> None:
    (binding,) = namespace_rbac_objects("team-a")
    assert binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] == "team-a"
    assert binding["subjects"][0]["name"] == "editor"
