"""Least-privilege RBAC: the permissions a host's configuration needs, and the objects granting them.

:func:`needed_access` turns what a host does upstream (:class:`HostAccess`: the scope policy it
serves, whether its editors save, which resources its review list creates and deletes, whether it
impersonates, whether it asks Kubernetes for access reviews) into :class:`Permission` values, and
:func:`rbac_objects` into Kubernetes Roles, ClusterRoles and their bindings to one service account:

- ``get``, ``list`` and ``watch`` on every resource the policy serves, in each namespace it serves;
- ``patch`` where editors save, ``create`` and ``delete`` where the review list writes;
- with impersonation, the service account needs only ``impersonate`` (on users, and on groups,
  uids or extra attributes when those are sent); the reads and writes then act as each person, so
  the people need the read and write permissions themselves (:attr:`NeededAccess.people`);
- ``create`` on ``subjectaccessreviews`` when authorization is asked of Kubernetes.

A namespace the policy names gets a Role and a RoleBinding there; a ClusterRole is made only for
what has no namespace: cluster-scoped resources, all-namespace or any-namespace serving, and
impersonation.
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .scope import ANY_NAMESPACE, AllowedResource, ScopePolicy

READ_VERBS: t.Final = ("get", "list", "watch")
VERB_ORDER: t.Final = ("get", "list", "watch", "create", "patch", "delete", "impersonate")
AUTHORIZATION_GROUP: t.Final = "authorization.k8s.io"
AUTHENTICATION_GROUP: t.Final = "authentication.k8s.io"
RBAC_API_VERSION: t.Final = "rbac.authorization.k8s.io/v1"


@dataclass(frozen=True, slots=True, order=True)
class Permission:
    """One verb on one resource, in one namespace (``""``: at the cluster scope)."""

    namespace: str
    group: str
    resource: str
    verb: str

    @property
    def verb_rank(self) -> int:
        """The verb's place in the order Kubernetes documents them: get, list, watch, create, patch, ..."""
        return VERB_ORDER.index(self.verb) if self.verb in VERB_ORDER else len(VERB_ORDER)

    @property
    def resource_name(self) -> str:
        """``resource.group``, or ``resource`` for the core group."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def describe(self) -> str:
        """Such as ``patch configmaps in demo`` or ``impersonate users at the cluster scope``."""
        where = f"in {self.namespace}" if self.namespace else "at the cluster scope"
        return f"{self.verb} {self.resource_name} {where}"


@dataclass(frozen=True, slots=True)
class Impersonated:
    """What an impersonating client sends besides the user: groups, a uid, extra attribute keys."""

    groups: bool = False
    uid: bool = False
    extra_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HostAccess:
    """What a host does with one target's API server, as far as RBAC is concerned.

    ``creates`` names the ``(group, resource)`` pairs the review list may create. The target's own
    identity reads and writes unless the host impersonates the people (``impersonation``) or sends
    their own credentials (``own_credentials``, such as their OIDC tokens).
    """

    policy: ScopePolicy
    saves: bool = True
    creates: frozenset[tuple[str, str]] = frozenset()
    deletes: bool = False
    impersonation: Impersonated | None = None
    own_credentials: bool = False
    access_reviews: bool = False

    @property
    def acts_as_people(self) -> bool:
        """Whether reads and writes reach Kubernetes as each person rather than as the target's identity."""
        return self.impersonation is not None or self.own_credentials


@dataclass(frozen=True, slots=True)
class NeededAccess:
    """The target identity's permissions, and the people's when the host impersonates them."""

    identity: tuple[Permission, ...]
    people: tuple[Permission, ...] = ()


def namespaces_of(entry: AllowedResource, policy: ScopePolicy) -> list[str]:
    """The namespaces ``entry`` is served in, ``""`` standing for the cluster scope (a cluster-scoped
    resource, all namespaces at once, or any one namespace)."""
    if entry.cluster_scoped:
        return [""]
    listed = policy.namespaces if entry.namespaces is None else entry.namespaces
    named = sorted(n for n in listed if n != ANY_NAMESPACE)
    return named + ([""] if entry.all_namespaces or ANY_NAMESPACE in listed else [])


def _verbs(access: HostAccess, entry: AllowedResource) -> list[str]:
    verbs = list(READ_VERBS)
    if access.saves:
        verbs.append("patch")
    if (entry.group, entry.resource) in access.creates:
        verbs.append("create")
    if access.deletes:
        verbs.append("delete")
    return verbs


def served_permissions(access: HostAccess) -> list[Permission]:
    """The reads and writes of every served resource, in every namespace it is served in."""
    return sorted(
        {
            Permission(namespace, entry.group, entry.resource, verb)
            for entry in access.policy.resources
            for namespace in namespaces_of(entry, access.policy)
            for verb in _verbs(access, entry)
        }
    )


def impersonation_permissions(impersonated: Impersonated) -> list[Permission]:
    """``impersonate`` on users, and on what else an impersonating client sends."""
    needed = [Permission("", "", "users", "impersonate")]
    if impersonated.groups:
        needed.append(Permission("", "", "groups", "impersonate"))
    if impersonated.uid:
        needed.append(Permission("", AUTHENTICATION_GROUP, "uids", "impersonate"))
    extras = impersonated.extra_keys
    needed += [Permission("", AUTHENTICATION_GROUP, f"userextras/{key}", "impersonate") for key in extras]
    return needed


def needed_access(access: HostAccess) -> NeededAccess:
    """The permissions ``access`` needs: the target identity's and, with impersonation, the people's."""
    served = served_permissions(access)
    identity: list[Permission] = []
    if access.access_reviews:
        identity.append(Permission("", AUTHORIZATION_GROUP, "subjectaccessreviews", "create"))
    if not access.acts_as_people:
        return NeededAccess(tuple(sorted(identity + served)))
    if access.impersonation is not None:
        identity += impersonation_permissions(access.impersonation)
    return NeededAccess(tuple(sorted(identity)), tuple(served))


# ------------------------------------------------------------------------------- the objects --


@dataclass(frozen=True, slots=True)
class ServiceAccountRef:
    """The subject the bindings name, and the name the roles and bindings get."""

    name: str
    namespace: str
    role_name: str = ""

    @property
    def roles(self) -> str:
        return self.role_name or self.name


def rules(permissions: Iterable[Permission]) -> list[dict[str, list[str]]]:
    """RBAC policy rules granting exactly ``permissions`` (their namespaces aside): one rule per
    API group and verb set, its resources sorted, in the order of API group and first resource."""
    verbs_by_resource: dict[tuple[str, str], set[str]] = {}
    for permission in permissions:
        verbs_by_resource.setdefault((permission.group, permission.resource), set()).add(permission.verb)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), verbs in sorted(verbs_by_resource.items()):
        verb_list = tuple(sorted(verbs, key=lambda verb: Permission("", group, resource, verb).verb_rank))
        grouped.setdefault((group, verb_list), []).append(resource)
    in_order = sorted(grouped.items(), key=lambda item: (item[0][0], sorted(item[1])))
    return [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(verbs)}
        for (group, verbs), resources in in_order
    ]


def _by_namespace(permissions: Iterable[Permission]) -> dict[str, list[Permission]]:
    grouped: dict[str, list[Permission]] = {}
    for permission in permissions:
        grouped.setdefault(permission.namespace, []).append(permission)
    return dict(sorted(grouped.items()))


def _metadata(name: str, namespace: str) -> dict[str, str]:
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def _role(kind: str, name: str, namespace: str, granted: Sequence[Permission]) -> dict[str, t.Any]:
    metadata = _metadata(name, namespace)
    return {"apiVersion": RBAC_API_VERSION, "kind": kind, "metadata": metadata, "rules": rules(granted)}


def _binding(kind: str, role_kind: str, name: str, namespace: str, account: ServiceAccountRef) -> dict[str, t.Any]:
    metadata = _metadata(name, namespace)
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account.name, "namespace": account.namespace}],
    }


def rbac_objects(needed: NeededAccess, account: ServiceAccountRef) -> list[dict[str, t.Any]]:
    """Roles and RoleBindings (per namespace), a ClusterRole and ClusterRoleBinding (for what has no
    namespace) granting ``needed.identity`` to ``account``; with impersonation, also the people's
    Roles (``<roles>-people``), unbound: bind them to the people's users or groups."""
    objects: list[dict[str, t.Any]] = []
    for namespace, granted in _by_namespace(needed.identity).items():
        if namespace:
            objects.append(_role("Role", account.roles, namespace, granted))
            objects.append(_binding("RoleBinding", "Role", account.roles, namespace, account))
        else:
            objects.append(_role("ClusterRole", account.roles, "", granted))
            objects.append(_binding("ClusterRoleBinding", "ClusterRole", account.roles, "", account))
    people = f"{account.roles}-people"
    for namespace, granted in _by_namespace(needed.people).items():
        objects.append(_role("Role" if namespace else "ClusterRole", people, namespace, granted))
    return objects
