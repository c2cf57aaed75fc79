"""``Impersonate-*`` headers: who a request acts as, and whether the requester may make it act so.

As kube-apiserver 1.37 with constrained impersonation: a mode that fits the wanted user is tried
first (``impersonate-on:<mode>:<verb>`` on the request itself, then ``impersonate:<mode>`` on the
user, groups, uid and extras in ``authentication.k8s.io``), then the legacy ``impersonate`` verb;
if none allows it, the first refusal is the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .authentication import AUTHENTICATED, Identity
from .errors import ApiError, bad_request
from .rbac import Attributes, RbacAuthorizer, require

AUTHENTICATION_GROUP = "authentication.k8s.io"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class ImpersonationRequest:
    """The ``Impersonate-*`` headers of one request (one group per header line)."""

    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) when the wanted user is a service account."""
        parts = self.user.split(":")
        if self.user.startswith(SERVICE_ACCOUNT_PREFIX) and len(parts) == 4:
            return parts[2], parts[3]
        return None

    def identity(self) -> Identity:
        """The identity the request acts as (``system:authenticated`` added unless a system group is given)."""
        groups = list(self.groups)
        account = self.service_account
        if account is not None and not groups:
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{account[0]}"]
        if self.user != "system:anonymous" and not {AUTHENTICATED, "system:unauthenticated"} & set(groups):
            groups.append(AUTHENTICATED)
        return Identity(self.user, tuple(groups), self.uid, dict(self.extra))


def _go_string_slice(values: Iterable[str]) -> str:
    items = list(values)
    return "[]string{" + ", ".join(json.dumps(item) for item in items) + "}" if items else "[]string(nil)"


def parse_impersonation(header_lines: Iterable[tuple[str, str]]) -> ImpersonationRequest | None:
    """The impersonation a request asks for, ``None`` if none; 400 if it names groups, uid or extras but no user."""
    user, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for name, value in header_lines:
        lowered = name.lower()
        if lowered == "impersonate-user":
            user = user or value
        elif lowered == "impersonate-uid":
            uid = uid or value
        elif lowered == "impersonate-group":
            groups.append(value)
        elif lowered.startswith("impersonate-extra-"):
            extra.setdefault(lowered[len("impersonate-extra-") :], []).append(value)
    if not user:
        if groups or uid or extra:
            extras = (
                "map[string][]string(nil)"
                if not extra
                else (
                    "map[string][]string{"
                    + ", ".join(f"{json.dumps(k)}:{_go_string_slice(v)}" for k, v in extra.items())
                    + "}"
                )
            )
            described = f'&user.DefaultInfo{{Name:"", UID:{json.dumps(uid)}, Groups:{_go_string_slice(groups)}, Extra:{extras}}}'
            raise bad_request(f"requested {described} without impersonating a user name")
        return None
    return ImpersonationRequest(user, tuple(groups), uid, tuple((k, tuple(v)) for k, v in extra.items()))


def _wanted_attributes(requester: Identity, wanted: ImpersonationRequest, verb: str, group: str) -> list[Attributes]:
    """What impersonating ``wanted`` requires under ``verb``: the user (or service account), groups, uid, extras."""
    account = wanted.service_account
    if account is not None:
        checks = [Attributes(requester, verb, group, "serviceaccounts", namespace=account[0], name=account[1])]
    else:
        checks = [Attributes(requester, verb, group, "users", name=wanted.user)]
    checks += [Attributes(requester, verb, group, "groups", name=name) for name in wanted.groups]
    if wanted.uid:
        checks.append(Attributes(requester, verb, AUTHENTICATION_GROUP, "uids", name=wanted.uid))
    for key, values in wanted.extra:
        checks += [Attributes(requester, verb, AUTHENTICATION_GROUP, "userextras", key, name=value) for value in values]
    return checks


def impersonate(
    authorizer: RbacAuthorizer, requester: Identity, wanted: ImpersonationRequest, request: Attributes
) -> Identity:
    """The identity ``request`` runs as, or the 403 of the first impersonation mode that refused it."""
    mode = (
        "serviceaccount"
        if wanted.service_account is not None and not (wanted.groups or wanted.uid or wanted.extra)
        else (None if wanted.service_account is not None or wanted.user.startswith("system:node:") else "user-info")
    )
    first_refusal: ApiError | None = None
    attempts = ([(mode, f"impersonate:{mode}", AUTHENTICATION_GROUP)] if mode else []) + [(None, "impersonate", "")]
    for constrained_mode, verb, group in attempts:
        try:
            if constrained_mode is not None:
                require(
                    authorizer,
                    replace(request, user=requester, verb=f"impersonate-on:{constrained_mode}:{request.verb}"),
                )
            for attributes in _wanted_attributes(requester, wanted, verb, group):
                require(authorizer, attributes)
        except ApiError as refusal:
            first_refusal = first_refusal or refusal
            continue
        return wanted.identity()
    assert first_refusal is not None
    raise first_refusal
