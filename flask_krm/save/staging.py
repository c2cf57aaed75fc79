"""Pending creates and deletes, and the one review list under one Save.

Pure: no Flask, no gevent, no network. The store holds only objects that have a uid, so a pending
create lives here under a local draft id (never a fabricated uid) and a pending delete under the
uid the person selected. :meth:`Staging.review` lists deletes, creates and the store's edited
objects (skipping those pending delete) as one list. A successful write clears its entry; a failed
one keeps it with its outcome, so nothing is submitted twice and nothing is lost silently.
"""

from __future__ import annotations

import copy
import math
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, Protocol

from ..bodies import MAX_DEPTH, nests_too_deep
from ..store.bounds import DraftRefused, check_draft
from .outcomes import Outcome, Path

MACHINERY: Final[tuple[Path, ...]] = (
    ("metadata", "uid"),
    ("metadata", "resourceVersion"),
    ("metadata", "generation"),
    ("metadata", "creationTimestamp"),
    ("metadata", "deletionTimestamp"),
    ("metadata", "deletionGracePeriodSeconds"),
    ("metadata", "managedFields"),
    ("metadata", "selfLink"),
    ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
    ("status",),
)
"""Paths no create may carry, whatever the host allows: the server assigns or owns them."""

_DNS1123_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


class CreateRejected(ValueError):
    """A create body the host must not send. ``path`` is where, ``reason`` says why (value-free)."""

    def __init__(self, path: Path, reason: str) -> None:
        where = "/".join(str(s) for s in path) or "the body"
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.reason = reason


class StagingError(LookupError):
    """An unknown draft id or uid was named."""


@dataclass(frozen=True, slots=True)
class CreatePolicy:
    """What a pending create may contain, pinned to one resource kind.

    :param api_version: the object's ``apiVersion`` (``v1``, ``apps/v1``); written by the host.
    :param kind: the object's ``kind``; written by the host.
    :param allowed: field roots the person may fill, e.g. ``(("metadata", "name"),
        ("metadata", "labels"), ("data",))``. Every leaf of a body must lie under one of them.
    :param required: paths that must hold a value (``metadata.name`` by default).
    """

    api_version: str
    kind: str
    allowed: tuple[Path, ...]
    required: tuple[Path, ...] = (("metadata", "name"),)

    def validate(self, body: Any, *, namespace: str | None) -> dict[str, Any]:
        """The sanitized object to POST: only allowed fields, with kind, version and namespace pinned.

        Raises :class:`CreateRejected` for anything else: a non-object body, a leaf outside the
        allowed fields, a server-owned field, a ``null``, a non-JSON value (``NaN`` and infinite
        numbers included), nesting deeper than :data:`~flask_krm.bodies.MAX_DEPTH`, another
        kind, version or namespace, a missing required field or an invalid name.
        """
        if not isinstance(body, Mapping):
            raise CreateRejected((), "a create body is a JSON object")
        if nests_too_deep(body):
            raise CreateRejected((), f"is nested deeper than {MAX_DEPTH} levels")
        body = dict(body)
        for key, pinned in (("apiVersion", self.api_version), ("kind", self.kind)):
            if key in body and body.pop(key) != pinned:
                raise CreateRejected((key,), f"must be {pinned}")
        metadata = body.get("metadata")
        if isinstance(metadata, Mapping) and "namespace" in metadata:
            metadata = dict(metadata)
            if metadata.pop("namespace") != (namespace or None):
                raise CreateRejected(("metadata", "namespace"), "is fixed by the view")
            body["metadata"] = metadata
        for path, _value in _leaves(body, ()):
            if any(_overlaps(path, m) for m in MACHINERY):
                raise CreateRejected(path, "is set by Kubernetes, not by a create")
            if not any(path[: len(root)] == root for root in self.allowed):
                raise CreateRejected(path, "is not a field this form may set")
        for path in self.required:
            if _get(body, path) in (None, "", {}, []):
                raise CreateRejected(path, "is required")
        name = _get(body, ("metadata", "name"))
        if name is not None and (not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name)):
            raise CreateRejected(("metadata", "name"), "must be a lowercase DNS subdomain name")
        out: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind}
        out.update(copy.deepcopy(body))
        metadata = dict(out.get("metadata") or {})
        if namespace:
            metadata["namespace"] = namespace
        out["metadata"] = metadata
        try:
            check_draft(out, {}, out, [(key,) for key in out])
        except DraftRefused as refused:
            raise CreateRejected(refused.path, refused.message) from None
        return out


def _leaves(value: Any, path: Path) -> list[tuple[Path, Any]]:
    if isinstance(value, Mapping):
        if not value and path:
            return [(path, value)]
        out: list[tuple[Path, Any]] = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise CreateRejected(path, "map keys are strings")
            out += _leaves(item, (*path, key))
        return out
    if value is None:
        raise CreateRejected(path, "a create carries no null values")
    if isinstance(value, list):
        for item in value:
            _check_json(item, path)
        return [(path, value)]
    _check_json(value, path)
    return [(path, value)]


def _check_json(value: Any, path: Path) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CreateRejected(path, "map keys are strings")
            _check_json(item, path)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, path)
    elif isinstance(value, float) and not math.isfinite(value):
        raise CreateRejected(path, "is not a finite number (JSON has no NaN or Infinity)")
    elif not isinstance(value, (str, int, float, bool)) and value is not None:
        raise CreateRejected(path, "is not a JSON value")


def _overlaps(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _get(obj: Any, path: Path) -> Any:
    for segment in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(segment)
    return obj


@dataclass(frozen=True, slots=True)
class PendingCreate:
    """A validated object waiting for Save, under a local draft id (not a uid)."""

    draft_id: str
    body: Mapping[str, Any]
    outcome: Outcome | None = None

    @property
    def name(self) -> str:
        return str(_get(self.body, ("metadata", "name")) or "")


@dataclass(frozen=True, slots=True)
class PendingDelete:
    """A delete of the object the person selected, bound to its uid."""

    uid: str
    name: str
    namespace: str | None = None
    resource_version: str | None = None
    outcome: Outcome | None = None


class ReviewStore(Protocol):
    """The part of ``LiveResourceStore`` the review list reads."""

    def uids(self) -> list[str]: ...

    def edited_uids(self) -> list[str]: ...

    def server(self, uid: str) -> Mapping[str, Any] | None: ...

    def dirty(self, uid: str) -> Sequence[Path]: ...


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """One line of the review list.

    :param key: the uid (edit, delete) or the local draft id (create).
    :param changes: the edited paths of an edit.
    """

    kind: Literal["delete", "create", "edit"]
    key: str
    name: str
    changes: tuple[Path, ...] = ()
    outcome: Outcome | None = None


@dataclass
class Staging:
    """The pending creates and deletes of one list view.

    :param new_id: makes local draft ids; the default draws random ``draft-…`` tokens.
    """

    new_id: Callable[[], str] = field(default=lambda: "draft-" + secrets.token_urlsafe(9))
    _creates: dict[str, PendingCreate] = field(default_factory=dict)
    _deletes: dict[str, PendingDelete] = field(default_factory=dict)

    def stage_create(self, body: Any, policy: CreatePolicy, *, namespace: str | None) -> PendingCreate:
        """Validate ``body`` and keep it as a pending create. Raises :class:`CreateRejected`."""
        pending = PendingCreate(self.new_id(), policy.validate(body, namespace=namespace))
        self._creates[pending.draft_id] = pending
        return pending

    def update_create(self, draft_id: str, body: Any, policy: CreatePolicy, *, namespace: str | None) -> PendingCreate:
        """Replace a pending create's body (validated again); its last outcome is cleared."""
        self._create(draft_id)
        pending = PendingCreate(draft_id, policy.validate(body, namespace=namespace))
        self._creates[draft_id] = pending
        return pending

    def stage_delete(
        self, uid: str, *, name: str, namespace: str | None = None, resource_version: str | None = None
    ) -> PendingDelete:
        """Mark the object with ``uid`` for deletion (bound to that uid, not to its name)."""
        if not uid:
            raise StagingError("a delete needs the uid of the selected object")
        pending = PendingDelete(uid, name, namespace, resource_version)
        self._deletes[uid] = pending
        return pending

    def discard(self, key: str) -> None:
        """Drop a pending create (by draft id) or delete (by uid). Raises :class:`StagingError`."""
        if self._creates.pop(key, None) is None and self._deletes.pop(key, None) is None:
            raise StagingError(f"nothing is pending under {key!r}")

    def creates(self) -> list[PendingCreate]:
        return list(self._creates.values())

    def deletes(self) -> list[PendingDelete]:
        return list(self._deletes.values())

    def is_pending_delete(self, uid: str) -> bool:
        return uid in self._deletes

    def record(self, key: str, outcome: Outcome) -> None:
        """Record a write's outcome: success clears the entry, anything else keeps it with the outcome."""
        if key in self._creates:
            if outcome.wrote:
                del self._creates[key]
            else:
                self._creates[key] = replace(self._creates[key], outcome=outcome)
        elif key in self._deletes:
            if outcome.wrote:
                del self._deletes[key]
            else:
                self._deletes[key] = replace(self._deletes[key], outcome=outcome)
        else:
            raise StagingError(f"nothing is pending under {key!r}")

    def forget_missing(self, store: ReviewStore) -> None:
        """Drop pending deletes whose object the store no longer holds (deleted by anyone)."""
        present = set(store.uids())
        for uid in [u for u in self._deletes if u not in present]:
            del self._deletes[uid]

    def review(self, store: ReviewStore) -> list[ReviewItem]:
        """Deletes, then creates, then edited objects not pending delete: one list, one Save."""
        items = [ReviewItem("delete", d.uid, d.name, outcome=d.outcome) for d in self._deletes.values()]
        items += [ReviewItem("create", c.draft_id, c.name, outcome=c.outcome) for c in self._creates.values()]
        edited = set(store.edited_uids())  # a clean object has no changes: never read
        for uid in store.uids():
            if uid in self._deletes or uid not in edited:
                continue
            changes = tuple(store.dirty(uid))
            if changes:
                items.append(ReviewItem("edit", uid, _name(store.server(uid)), changes))
        return items

    def to_json(self) -> dict[str, Any] | None:
        """What is pending as JSON, for a shared draft backend (``None``: nothing). Outcomes, shown
        with the answer that made them, are not part of it."""
        if not self._creates and not self._deletes:
            return None
        return {
            "creates": [{"id": c.draft_id, "body": dict(c.body)} for c in self._creates.values()],
            "deletes": [
                {"uid": d.uid, "name": d.name, "namespace": d.namespace, "resourceVersion": d.resource_version}
                for d in self._deletes.values()
            ],
        }

    def adopt(self, data: Any) -> None:
        """Make what :meth:`to_json` gave (``None``: nothing) what is pending here; an entry still
        pending keeps the outcome it has here. Raises ``ValueError`` when ``data`` is not that."""
        if data is None:
            data = {"creates": [], "deletes": []}
        try:
            creates = {
                str(c["id"]): PendingCreate(str(c["id"]), dict(c["body"]), self._outcome(self._creates, c["id"]))
                for c in data["creates"]
            }
            deletes = {
                str(d["uid"]): PendingDelete(
                    str(d["uid"]),
                    str(d["name"]),
                    _optional(d.get("namespace")),
                    _optional(d.get("resourceVersion")),
                    self._outcome(self._deletes, d["uid"]),
                )
                for d in data["deletes"]
            }
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a list of pending creates and deletes: {exc}") from None
        self._creates, self._deletes = creates, deletes

    @staticmethod
    def _outcome(held: Mapping[str, PendingCreate] | Mapping[str, PendingDelete], key: Any) -> Outcome | None:
        pending = held.get(str(key))
        return pending.outcome if pending is not None else None

    def _create(self, draft_id: str) -> PendingCreate:
        try:
            return self._creates[draft_id]
        except KeyError:
            raise StagingError(f"no pending create {draft_id!r}") from None


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


def _name(obj: Mapping[str, Any] | None) -> str:
    return str(_get(obj or {}, ("metadata", "name")) or "")
