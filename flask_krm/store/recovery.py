"""Recovery copies: a detached copy of a draft, kept for a while after its object disappears.

Deleting or pruning an object discards its draft. With recovery copies enabled, the store records
a copy of the draft on every edit, keyed by the object's identity and uid; when the object leaves
the store the copy's lifetime starts. A host offers the copy for copy-out ("this configuration was
removed; here is what you had typed"), never as a draft to reconcile or save.
"""

from __future__ import annotations

import time
import typing as t
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..events import Identity
from .values import json_copy


def identity_of(obj: Mapping[str, Any]) -> Identity:
    """The identity of a KRM object (uid, apiVersion, kind, namespace, name)."""
    metadata = obj.get("metadata") or {}
    return Identity(
        uid=str(metadata.get("uid", "")),
        api_version=str(obj.get("apiVersion", "")),
        kind=str(obj.get("kind", "")),
        name=str(metadata.get("name", "")),
        namespace=metadata.get("namespace") or None,
    )


@dataclass(frozen=True, slots=True)
class RecoveryCopy:
    """A detached draft of the object ``identity`` and the patch it held; ``removed_at`` once gone."""

    identity: Identity
    draft: dict[str, Any]
    patch: dict[str, Any] | None
    removed_at: float | None = None


class RecoveryCopies:
    """Recovery copies per identity (uid included), each kept ``lifetime`` seconds after removal.

    ``clock`` returns seconds (monotonic by default; inject a fake one in tests).
    """

    def __init__(self, lifetime: float, clock: Callable[[], float] = time.monotonic) -> None:
        if lifetime <= 0:
            raise ValueError("a recovery copy lifetime is a positive number of seconds")
        self.lifetime = lifetime
        self._clock = clock
        self._copies: dict[Identity, RecoveryCopy] = {}

    def record(self, identity: Identity, draft: Any, patch: dict[str, Any] | None) -> None:
        """Keep (or replace) the copy for ``identity``; a clean draft (no patch) discards it."""
        self._expire()
        if patch is None:
            self._copies.pop(identity, None)
        else:
            self._copies[identity] = RecoveryCopy(identity, json_copy(draft), json_copy(patch))

    def removed(self, uid: str) -> None:
        """The object with ``uid`` left the store: start its copy's lifetime."""
        now = self._clock()
        for identity, copy in list(self._copies.items()):
            if identity.uid == uid and copy.removed_at is None:
                self._copies[identity] = RecoveryCopy(identity, copy.draft, copy.patch, now)
        self._expire()

    def get(self, identity: Identity) -> RecoveryCopy | None:
        """The live copy for ``identity`` (a detached copy of it), or None."""
        self._expire()
        found = self._copies.get(identity)
        if found is None:
            return None
        return RecoveryCopy(found.identity, json_copy(found.draft), json_copy(found.patch), found.removed_at)

    def for_uid(self, uid: str) -> RecoveryCopy | None:
        """The live copy for the object ``uid``, whatever its identity, or None."""
        self._expire()
        for identity in self._copies:
            if identity.uid == uid:
                return self.get(identity)
        return None

    def for_name(self, name: str, namespace: str | None = None) -> RecoveryCopy | None:
        """The live copy of the most recently removed object named ``name`` (in ``namespace``; any
        namespace when it is empty), or None. Copies of objects still held are not considered."""
        self._expire()
        removed = [
            copy
            for identity, copy in self._copies.items()
            if identity.name == name
            and (not namespace or identity.namespace == namespace)
            and copy.removed_at is not None
        ]
        if not removed:
            return None
        return self.get(max(removed, key=lambda copy: t.cast(float, copy.removed_at)).identity)

    def export(self, uid: str) -> dict[str, Any] | None:
        """The copy for ``uid`` as JSON (its age instead of this process's clock), or None."""
        copy = self.for_uid(uid)
        if copy is None:
            return None
        age = None if copy.removed_at is None else max(0.0, self._clock() - copy.removed_at)
        return {"identity": copy.identity.to_json(), "draft": copy.draft, "patch": copy.patch, "removedAgo": age}

    def adopt(self, data: Any) -> None:
        """Keep the copy :meth:`export` gave (in any process). Raises ``ValueError`` when ``data`` is
        not one; a copy older than the lifetime is not kept."""
        if not isinstance(data, Mapping) or not isinstance(data.get("identity"), Mapping):
            raise ValueError("a recovery copy is an object with an identity")
        ident, draft, patch, age = data["identity"], data.get("draft"), data.get("patch"), data.get("removedAgo")
        fields = ("uid", "apiVersion", "kind", "name")
        if not all(isinstance(ident.get(k), str) for k in fields) or not isinstance(draft, dict):
            raise ValueError("a recovery copy names its object and holds its draft")
        if not isinstance(patch, dict) or not (age is None or (isinstance(age, int | float) and age >= 0)):
            raise ValueError("a recovery copy holds a patch and its age")
        namespace = ident.get("namespace")
        identity = Identity(ident["uid"], ident["apiVersion"], ident["kind"], ident["name"], namespace or None)
        removed_at = None if age is None else self._clock() - float(age)
        self._copies[identity] = RecoveryCopy(identity, json_copy(draft), json_copy(patch), removed_at)
        self._expire()

    def discard(self, identity: Identity) -> None:
        """Forget the copy for ``identity`` (the person copied their work out)."""
        self._copies.pop(identity, None)

    def __len__(self) -> int:
        self._expire()
        return len(self._copies)

    def _expire(self) -> None:
        deadline = self._clock() - self.lifetime
        for identity, copy in list(self._copies.items()):
            if copy.removed_at is not None and copy.removed_at <= deadline:
                del self._copies[identity]
