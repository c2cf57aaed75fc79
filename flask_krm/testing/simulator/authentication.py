"""Who is asking: static bearer tokens resolved to an identity."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"


@dataclass(frozen=True)
class User:
    """A token user of the simulator (the analogue of a row in kube-apiserver's token file)."""

    name: str
    token: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Identity:
    """``user.Info`` of a request: name, groups (with ``system:authenticated``), uid and extra."""

    name: str
    groups: tuple[str, ...]
    uid: str = ""
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)


class Authenticator:
    """Bearer-token authentication against a fixed, extendable user table."""

    def __init__(self, users: Iterable[User]) -> None:
        self._by_token: dict[str, User] = {}
        self.users: dict[str, User] = {}
        for user in users:
            self.add(user)

    def add(self, user: User) -> None:
        """Accept ``user``'s token from now on."""
        self._by_token[user.token] = user
        self.users[user.name] = user

    def authenticate(self, authorization: str | None) -> Identity | None:
        """The identity for an ``Authorization`` header, or ``None`` (401) if missing or unknown."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        user = self._by_token.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            return None
        groups = tuple(user.groups) + ((AUTHENTICATED,) if AUTHENTICATED not in user.groups else ())
        return Identity(user.name, groups, user.name)
