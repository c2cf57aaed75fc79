"""The permissions a configuration needs (:mod:`flask_krm.rbac`) and the RBAC objects granting them."""

from __future__ import annotations

from flask_krm.rbac import (
    HostAccess,
    Impersonated,
    Permission,
    ServiceAccountRef,
    needed_access,
    rbac_objects,
    rules,
)
from flask_krm.scope import ANY_NAMESPACE, AllowedResource, ScopePolicy

CONFIGMAPS = AllowedResource("", "configmaps")
DEPLOYMENTS = AllowedResource("apps", "deployments")
ACCOUNT = ServiceAccountRef("viewer-app", "tools")


def policy(*resources: AllowedResource, namespaces: tuple[str, ...] = ("demo",)) -> ScopePolicy:
    return ScopePolicy(targets=frozenset({"prod"}), resources=resources, namespaces=frozenset(namespaces))


def described(permissions: tuple[Permission, ...]) -> list[str]:
    return [permission.describe() for permission in permissions]


def test_a_read_only_host_needs_get_list_and_watch_in_each_served_namespace() -> None:
    needed = needed_access(HostAccess(policy(CONFIGMAPS, namespaces=("a", "b")), saves=False))
    assert described(needed.identity) == [
        "get configmaps in a",
        "list configmaps in a",
        "watch configmaps in a",
        "get configmaps in b",
        "list configmaps in b",
        "watch configmaps in b",
    ]
    assert needed.people == ()


def test_saves_patch_every_served_resource_and_the_review_list_creates_only_what_it_has_a_policy_for() -> None:
    access = HostAccess(policy(CONFIGMAPS, DEPLOYMENTS), creates=frozenset({("", "configmaps")}), deletes=True)
    verbs = {(p.resource, p.verb) for p in needed_access(access).identity}
    assert verbs == {
        *((resource, verb) for resource in ("configmaps", "deployments") for verb in ("get", "list", "watch")),
        ("configmaps", "patch"),
        ("deployments", "patch"),
        ("configmaps", "create"),
        ("configmaps", "delete"),
        ("deployments", "delete"),
    }


def test_each_namespace_gets_a_role_and_a_binding_and_no_cluster_role() -> None:
    access = HostAccess(policy(CONFIGMAPS, DEPLOYMENTS, namespaces=("demo", "staging")))
    objects = rbac_objects(needed_access(access), ACCOUNT)
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objects] == [
        ("Role", "demo"),
        ("RoleBinding", "demo"),
        ("Role", "staging"),
        ("RoleBinding", "staging"),
    ]
    role, binding = objects[0], objects[1]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch", "patch"]},
    ]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "viewer-app"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "viewer-app", "namespace": "tools"}]


def test_a_cluster_role_only_for_what_has_no_namespace() -> None:
    nodes = AllowedResource("", "nodes", cluster_scoped=True)
    events = AllowedResource("", "events", all_namespaces=True)
    access = HostAccess(policy(nodes, events, CONFIGMAPS, namespaces=("demo",)), saves=False)
    objects = rbac_objects(needed_access(access), ServiceAccountRef("app", "tools", role_name="app-reader"))
    kinds = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    assert kinds == {
        ("Role", "demo", "app-reader"),
        ("RoleBinding", "demo", "app-reader"),
        ("ClusterRole", None, "app-reader"),
        ("ClusterRoleBinding", None, "app-reader"),
    }
    cluster_role = next(o for o in objects if o["kind"] == "ClusterRole")
    assert cluster_role["rules"] == [
        {"apiGroups": [""], "resources": ["events", "nodes"], "verbs": ["get", "list", "watch"]}
    ]
    namespaced = next(o for o in objects if o["kind"] == "Role")
    assert namespaced["rules"][0]["resources"] == ["configmaps", "events"]  # events: in demo too


def test_any_single_namespace_needs_the_cluster_scope() -> None:
    needed = needed_access(HostAccess(policy(CONFIGMAPS, namespaces=(ANY_NAMESPACE,)), saves=False))
    assert {p.namespace for p in needed.identity} == {""}


def test_impersonation_needs_only_impersonate_and_leaves_the_reads_and_writes_to_the_people() -> None:
    access = HostAccess(policy(CONFIGMAPS), impersonation=Impersonated(groups=True, uid=True, extra_keys=("scopes",)))
    needed = needed_access(access)
    assert described(needed.identity) == [
        "impersonate groups at the cluster scope",
        "impersonate users at the cluster scope",
        "impersonate uids.authentication.k8s.io at the cluster scope",
        "impersonate userextras/scopes.authentication.k8s.io at the cluster scope",
    ]
    assert {p.verb for p in needed.people} == {"get", "list", "watch", "patch"}
    objects = rbac_objects(needed, ACCOUNT)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ClusterRole", "viewer-app"),
        ("ClusterRoleBinding", "viewer-app"),
        ("Role", "viewer-app-people"),  # unbound: the people's own bindings are the cluster's
    ]


def test_own_credentials_need_nothing_of_the_identity() -> None:
    needed = needed_access(HostAccess(policy(CONFIGMAPS), own_credentials=True))
    assert needed.identity == ()
    assert len(needed.people) == 4


def test_kubernetes_authorization_needs_subject_access_reviews() -> None:
    needed = needed_access(HostAccess(policy(CONFIGMAPS), saves=False, access_reviews=True))
    assert "create subjectaccessreviews.authorization.k8s.io at the cluster scope" in described(needed.identity)


def test_rules_group_resources_by_api_group_and_verbs() -> None:
    granted = [
        Permission("x", "", "secrets", "get"),
        Permission("x", "", "configmaps", "get"),
        Permission("x", "", "configmaps", "delete"),
        Permission("x", "", "configmaps", "list"),
    ]
    assert rules(granted) == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "delete"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
    ]
