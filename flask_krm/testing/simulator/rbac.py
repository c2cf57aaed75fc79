"""RBAC authorization from the Role, ClusterRole, RoleBinding and ClusterRoleBinding objects stored.

Like kube-apiserver with ``--authorization-mode=RBAC``: ``system:masters`` may do anything,
authenticated users may read discovery and create self access reviews, everything else needs a
binding. Decisions read the stored objects directly, so a new binding is in effect immediately.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import catalog
from .authentication import AUTHENTICATED, MASTERS, Identity
from .catalog import GroupResource
from .errors import forbidden
from .store import ObjectStore

PUBLIC_PATHS = ("/api", "/apis", "/version", "/healthz", "/livez", "/readyz", "/openapi")


@dataclass(frozen=True)
class Attributes:
    """What a request does (``authorizer.Attributes``)."""

    user: Identity
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    resource_request: bool = True
    path: str = ""


def forbidden_message(attributes: Attributes) -> str:
    """The sentence kube-apiserver puts in a 403 (``forbiddenMessage``)."""
    user = attributes.user.name
    if not attributes.resource_request:
        return f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    resource = attributes.resource + (f"/{attributes.subresource}" if attributes.subresource else "")
    scope = f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope"
    return f'User "{user}" cannot {attributes.verb} resource "{resource}" in API group "{attributes.group}" {scope}'


def _rule_allows(rule: dict[str, Any], attributes: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attributes.verb not in verbs:
        return False
    if not attributes.resource_request:
        return any(
            url == "*" or url == attributes.path or (url.endswith("*") and attributes.path.startswith(url[:-1]))
            for url in rule.get("nonResourceURLs") or []
        )
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attributes.group not in groups:
        return False
    combined = attributes.resource + (f"/{attributes.subresource}" if attributes.subresource else "")
    resources = rule.get("resources") or []
    if not any(
        item in ("*", combined) or (attributes.subresource and item == f"*/{attributes.subresource}")
        for item in resources
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or attributes.name in names


def _subject_matches(subject: dict[str, Any], user: Identity) -> str | None:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User" and name == user.name:
        return f'User "{name}"'
    if kind == "Group" and name in user.groups:
        return f'Group "{name}"'
    if kind == "ServiceAccount" and user.name == f"system:serviceaccount:{subject.get('namespace')}:{name}":
        return f'ServiceAccount "{subject.get("namespace")}/{name}"'
    return None


class RbacAuthorizer:
    """Allow/deny decisions with the reasons kube-apiserver's RBAC authorizer gives."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    def authorize(self, attributes: Attributes) -> tuple[bool, str]:
        """(allowed, reason) for ``attributes``."""
        user = attributes.user
        if MASTERS in user.groups:
            return True, ""
        if AUTHENTICATED in user.groups:
            if (
                not attributes.resource_request
                and attributes.verb == "get"
                and attributes.path.startswith(PUBLIC_PATHS)
            ):
                return (
                    True,
                    'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"',
                )
            if (
                attributes.verb == "create"
                and attributes.group == catalog.AUTHORIZATION_GROUP
                and attributes.resource == "selfsubjectaccessreviews"
            ):
                return (
                    True,
                    'RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"',
                )
        for source, rules in self._grants(attributes):
            if any(_rule_allows(rule, attributes) for rule in rules):
                return True, f"RBAC: allowed by {source}"
        return False, ""

    def _grants(self, attributes: Attributes) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """(description, rules) for every binding whose subjects include the user."""
        for binding in self._store.items(catalog.CLUSTER_ROLE_BINDINGS):
            yield from self._bound(binding, attributes, "ClusterRoleBinding", binding["metadata"]["name"])
        if attributes.namespace:
            for binding in self._store.items(catalog.ROLE_BINDINGS, attributes.namespace):
                label = f"{binding['metadata']['name']}/{attributes.namespace}"
                yield from self._bound(binding, attributes, "RoleBinding", label)

    def _bound(
        self, binding: dict[str, Any], attributes: Attributes, binding_kind: str, label: str
    ) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        role_ref = binding.get("roleRef") or {}
        for subject in binding.get("subjects") or []:
            described = _subject_matches(subject, attributes.user)
            if described is None:
                continue
            if role_ref.get("kind") == "ClusterRole":
                role = self._store.get(catalog.CLUSTER_ROLES, "", role_ref.get("name", ""))
            else:
                role = self._store.get(
                    catalog.ROLES, binding["metadata"].get("namespace", ""), role_ref.get("name", "")
                )
            if role is not None:
                source = f'{binding_kind} "{label}" of {role_ref.get("kind")} "{role_ref.get("name")}" to {described}'
                yield source, list(role.get("rules") or [])


def require(authorizer: RbacAuthorizer, attributes: Attributes) -> None:
    """Raise the 403 Forbidden kube-apiserver answers when ``attributes`` are not allowed."""
    allowed, _ = authorizer.authorize(attributes)
    if not allowed:
        resource = (
            GroupResource(attributes.group, attributes.resource)
            if attributes.resource_request
            else GroupResource("", "")
        )
        raise forbidden(resource, attributes.name, forbidden_message(attributes))
