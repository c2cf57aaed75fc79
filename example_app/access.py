"""Who may do what, and as whom the application talks to Kubernetes.

Two hooks, registered on the extension in ``create_app``:

- the **authorizer** decides every stream, read and write for the exact scope and projection
  before flask-krm does anything. It is the host's policy: here, everyone signed in may read,
  only editors may write, and nobody gets Secret values (``krm-raw/v1``).
- the **client loader** picks the Kubernetes identity. With ``EXAMPLE_IMPERSONATE`` the
  application impersonates the signed-in person, so Kubernetes RBAC applies on top of the
  authorizer (the simulator's demo RBAC mirrors the roles below). Without it, every request uses
  the target's own credentials and the authorizer is the only boundary.
"""

from __future__ import annotations

import typing as t

from kubernetes.client import ApiClient

from flask_krm import KrmStream, Principal, Scope
from flask_krm.upstream.clients import Impersonation

from .accounts import Account

READ_VERBS: t.Final = frozenset({"get", "list", "watch"})
WRITE_VERBS: t.Final = frozenset({"create", "patch", "delete"})
RAW_PROJECTION: t.Final = "krm-raw/v1"


def authorize(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
    """The example's policy; flask-krm has already checked the scope against ``KRM_SCOPE_POLICY``."""
    account = principal.user
    if not isinstance(account, Account):
        return False  # not one of our users: refuse rather than guess
    if projection == RAW_PROJECTION:
        return False  # raw includes Secret values: never sent to a browser here
    if verb in READ_VERBS:
        return True
    return verb in WRITE_VERBS and account.can_write


def client_loader(krm: KrmStream, *, impersonate: bool) -> t.Callable[[str, Principal], ApiClient | None]:
    """The client loader for ``krm``: impersonate the person, or use the target's identity (``None``)."""

    def load(target: str, principal: Principal) -> ApiClient | None:
        if impersonate:
            return krm.runtime().api_clients().acting_as(target, Impersonation(principal.name))
        return None

    return load
