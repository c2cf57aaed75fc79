"""``Impersonate-*`` headers: who a request acts as, and which grants let the requester make it so."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.authentication import AUTHENTICATED, MASTERS, Identity
from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.impersonation import ImpersonationRequest, impersonate, parse_impersonation
from flask_krm.testing.simulator.rbac import Attributes, RbacAuthorizer
from flask_krm.testing.simulator.registry import Registry
from flask_krm.testing.simulator.server import install_rbac

RBAC = "rbac.authorization.k8s.io"
ALICE = Identity("alice", (AUTHENTICATED,))


def test_headers_name_the_user_groups_uid_and_extras() -> None:
    wanted = parse_impersonation(
        [
            ("Impersonate-User", "bob"),
            ("impersonate-user", "ignored"),
            ("Impersonate-Group", "a"),
            ("Impersonate-Group", "b"),
            ("Impersonate-Uid", "42"),
            ("Impersonate-Extra-Scopes", "read"),
            ("Impersonate-Extra-Scopes", "write"),
            ("Accept", "application/json"),
        ]
    )
    assert wanted == ImpersonationRequest("bob", ("a", "b"), "42", (("scopes", ("read", "write")),))
    assert parse_impersonation([("Accept", "application/json")]) is None


def test_groups_without_a_user_are_a_bad_request_worded_in_go() -> None:
    with pytest.raises(ApiError) as refused:
        parse_impersonation([("Impersonate-Group", "a"), ("Impersonate-Extra-Team", "x")])
    assert refused.value.code == 400 and refused.value.message == (
        'requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"a"}, '
        'Extra:map[string][]string{"team":[]string{"x"}}} without impersonating a user name'
    )
    with pytest.raises(ApiError) as uid_only:
        parse_impersonation([("Impersonate-Uid", "7")])
    assert "Groups:[]string(nil), Extra:map[string][]string(nil)}" in uid_only.value.message


def test_the_impersonated_identity_s_groups() -> None:
    assert ImpersonationRequest("bob", ("a",)).identity().groups == ("a", AUTHENTICATED)
    assert ImpersonationRequest("bob", ("system:unauthenticated",)).identity().groups == ("system:unauthenticated",)
    assert ImpersonationRequest("system:anonymous").identity().groups == ()
    account = ImpersonationRequest("system:serviceaccount:ops:robot")
    assert account.service_account == ("ops", "robot")
    assert account.identity().groups == ("system:serviceaccounts", "system:serviceaccounts:ops", AUTHENTICATED)
    assert ImpersonationRequest("system:serviceaccount:ops").service_account is None


def grant(registry: Registry, name: str, rules: list[dict[str, object]]) -> RbacAuthorizer:
    install_rbac(
        registry,
        [
            {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
            {
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "alice"}],
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
            },
        ],
    )
    return RbacAuthorizer(registry.store)


GET_CONFIGMAP = Attributes(ALICE, "get", "", "configmaps", namespace="demo", name="app")


def test_masters_may_impersonate_anyone(registry: Registry) -> None:
    authorizer = RbacAuthorizer(registry.store)
    root = Identity("root", (MASTERS, AUTHENTICATED))
    assert impersonate(authorizer, root, ImpersonationRequest("bob", ("x",)), GET_CONFIGMAP) == Identity(
        "bob", ("x", AUTHENTICATED)
    )


def test_without_a_grant_the_first_mode_s_refusal_is_the_answer(registry: Registry) -> None:
    with pytest.raises(ApiError) as refused:
        impersonate(RbacAuthorizer(registry.store), ALICE, ImpersonationRequest("bob"), GET_CONFIGMAP)
    assert refused.value.code == 403 and refused.value.message == (
        'configmaps "app" is forbidden: User "alice" cannot impersonate-on:user-info:get resource "configmaps" '
        'in API group "" in the namespace "demo"'
    )


def test_the_legacy_impersonate_verb_on_users_and_groups_is_enough(registry: Registry) -> None:
    authorizer = grant(
        registry,
        "legacy",
        [{"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"]}],
    )
    assert impersonate(authorizer, ALICE, ImpersonationRequest("bob"), GET_CONFIGMAP).name == "bob"
    with pytest.raises(ApiError):
        impersonate(authorizer, ALICE, ImpersonationRequest("carol"), GET_CONFIGMAP)
    with pytest.raises(ApiError) as group_refused:
        impersonate(authorizer, ALICE, ImpersonationRequest("bob", ("admins",)), GET_CONFIGMAP)
    assert "impersonate-on:user-info:get" in group_refused.value.message


def test_constrained_impersonation_needs_both_the_mode_on_the_request_and_on_the_user(registry: Registry) -> None:
    on_user = {"verbs": ["impersonate:user-info"], "apiGroups": ["authentication.k8s.io"], "resources": ["users"]}
    on_get = {"verbs": ["impersonate-on:user-info:get"], "apiGroups": [""], "resources": ["configmaps"]}
    authorizer = grant(registry, "constrained", [on_user, on_get])
    assert impersonate(authorizer, ALICE, ImpersonationRequest("bob"), GET_CONFIGMAP).name == "bob"
    patch = Attributes(ALICE, "patch", "", "configmaps", namespace="demo", name="app")
    with pytest.raises(ApiError) as refused:
        impersonate(authorizer, ALICE, ImpersonationRequest("bob"), patch)
    assert "impersonate-on:user-info:patch" in refused.value.message


def test_a_service_account_is_impersonated_in_its_own_mode(registry: Registry) -> None:
    on_account = {
        "verbs": ["impersonate:serviceaccount"],
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["serviceaccounts"],
        "resourceNames": ["robot"],
    }
    on_get = {"verbs": ["impersonate-on:serviceaccount:get"], "apiGroups": [""], "resources": ["configmaps"]}
    authorizer = grant(registry, "accounts", [on_account, on_get])
    acting = impersonate(authorizer, ALICE, ImpersonationRequest("system:serviceaccount:ops:robot"), GET_CONFIGMAP)
    assert acting.name == "system:serviceaccount:ops:robot" and "system:serviceaccounts:ops" in acting.groups
