"""The demo users and the RBAC objects that give them their rights.

``admin`` is in ``system:masters`` (everything, including impersonation); ``viewer`` reads the demo
resource types everywhere; ``editor`` reads them everywhere and edits them in the demo namespaces;
``krm-gateway`` is the service identity of a shared-watch gateway: it reads and watches everything
and may create SubjectAccessReviews. The same objects can be applied to a real kube-apiserver.
"""

from __future__ import annotations

from typing import Any

from .authentication import MASTERS, User
from .catalog import AUTHORIZATION_GROUP, RBAC_GROUP

DEMO_USERS: tuple[User, ...] = (
    User("admin", "admin-token", (MASTERS,)),
    User("editor", "editor-token"),
    User("viewer", "viewer-token"),
    User("krm-gateway", "krm-gateway-token"),
)
DEMO_NAMESPACES = ("demo", "demo-staging")

READ = ["get", "list", "watch"]
WRITE = ["get", "list", "watch", "create", "update", "patch", "delete"]
DEMO_RESOURCES = (
    ("", ["configmaps", "secrets", "namespaces"]),
    ("apps", ["deployments"]),
    ("wardle.example.com", ["flunders"]),
)
EDITABLE_RESOURCES = (("", ["configmaps", "secrets"]), ("apps", ["deployments"]), ("wardle.example.com", ["flunders"]))


def _rules(resources: tuple[tuple[str, list[str]], ...], verbs: list[str]) -> list[dict[str, Any]]:
    return [{"verbs": verbs, "apiGroups": [group], "resources": names} for group, names in resources]


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules}


def _binding(kind: str, name: str, role: str, user: str, namespace: str = "") -> dict[str, Any]:
    metadata = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": kind,
        "metadata": metadata,
        "subjects": [{"kind": "User", "apiGroup": RBAC_GROUP, "name": user}],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
    }


def cluster_rbac_objects() -> list[dict[str, Any]]:
    """ClusterRoles and ClusterRoleBindings of the demo users (no namespace needed)."""
    gateway_rules = _rules(DEMO_RESOURCES, READ) + [
        {"verbs": ["create"], "apiGroups": [AUTHORIZATION_GROUP], "resources": ["subjectaccessreviews"]}
    ]
    return [
        _cluster_role("krm-demo-view", _rules(DEMO_RESOURCES, READ)),
        _cluster_role("krm-demo-edit", _rules(EDITABLE_RESOURCES, WRITE)),
        _cluster_role("krm-gateway", gateway_rules),
        _binding("ClusterRoleBinding", "krm-demo-view-viewer", "krm-demo-view", "viewer"),
        _binding("ClusterRoleBinding", "krm-demo-view-editor", "krm-demo-view", "editor"),
        _binding("ClusterRoleBinding", "krm-gateway", "krm-gateway", "krm-gateway"),
    ]


def namespace_rbac_objects(namespace: str) -> list[dict[str, Any]]:
    """The RoleBinding that lets ``editor`` edit in ``namespace``."""
    return [_binding("RoleBinding", "krm-demo-edit-editor", "krm-demo-edit", "editor", namespace)]
