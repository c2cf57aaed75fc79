"""Audit records of writes: who, where, which object, what happened and an RFC 6902 diff.

Pure: no Flask, no gevent, no network. A redacted path is named in the diff but its value never
appears: an operation at or under a redacted path loses its ``value`` and gains
``"redacted": true``; a value above one has the withheld members cut out. Records and their
:meth:`AuditRecord.log_line` are safe to log and to send to an audit system.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import jsonpatch

from ..logvalues import log_value
from ..projection import SECRET_VALUE_FIELDS, holds_object_copy, pointer
from ..store import apply_merge_patch
from .outcomes import pointer_path

Operation = Literal["patch", "create", "delete"]


@dataclass(frozen=True, slots=True)
class ObjectIdentity:
    """Which object a write was about. ``uid`` is empty for a create that was not accepted."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    uid: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any], *, uid: str | None = None) -> ObjectIdentity:
        """The identity of a (projected or raw) object; ``uid`` overrides the object's own."""
        found = obj.get("metadata")
        metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        return cls(
            api_version=str(obj.get("apiVersion") or ""),
            kind=str(obj.get("kind") or ""),
            name=str(metadata.get("name") or ""),
            namespace=metadata.get("namespace") or None,
            uid=uid if uid is not None else str(metadata.get("uid") or ""),
        )


@dataclass(frozen=True, slots=True)
class WriteCall:
    """One write through the save hook: when it was sent (seconds since the epoch), how long it
    took, the HTTP status of its answer (0: none came, or the hook failed) and the identity the
    client impersonated, if it did."""

    started: float
    duration: float
    code: int = 0
    impersonated_user: str | None = None
    impersonated_groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One write attempt and its outcome.

    :param principal: the signed-in principal's name.
    :param target: the logical cluster name.
    :param operation: ``patch``, ``create`` or ``delete``.
    :param outcome: the outcome kind (``saved-pending``, ``version-stale``, ``invalid``...).
    :param diff: RFC 6902 operations from the object as the editor held it to the object as
        written; redacted values withheld.
    :param redacted_paths: the RFC 6901 paths whose values were withheld.
    :param resource_version: the version written (accepted writes), else ``None``.
    :param reason: why a write was not made or not accepted, value-free (the host's refusal, the
        Kubernetes status reason, each 422 cause's field and message with messages at redacted
        paths withheld), else ``None``. Not part of :meth:`log_line`.
    :param resource: the resource written (``configmaps``), with ``api_group`` its API group.
    :param call: how the write went on the wire, when it was sent (see :class:`WriteCall`).
    """

    principal: str
    target: str
    operation: Operation
    identity: ObjectIdentity
    outcome: str
    diff: tuple[Mapping[str, Any], ...]
    redacted_paths: tuple[str, ...] = ()
    resource_version: str | None = None
    reason: str | None = None
    resource: str = ""
    api_group: str = ""
    call: WriteCall | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        """The RFC 6901 paths the write touched (no values)."""
        return tuple(dict.fromkeys(str(op["path"]) for op in self.diff))

    def log_line(self) -> str:
        """One value-free line: operation, identity, outcome and the touched paths.

        Every value is written with :func:`~flask_krm.logvalues.log_value`: a name, key or path
        holding a line break, an escape sequence or a space is quoted, so the line stays one line
        and cannot pose as another field.
        """
        ident = self.identity
        where = f"{ident.namespace}/{ident.name}" if ident.namespace else ident.name
        fields = ",".join(log_value(field) for field in self.fields) or "-"
        return (
            f"{log_value(self.operation)} {log_value(ident.kind)} {log_value(where)} uid={log_value(ident.uid or '-')} "
            f"target={log_value(self.target)} outcome={log_value(self.outcome)} fields={fields}"
        )


def diff(
    before: Mapping[str, Any], after: Mapping[str, Any], redacted_paths: Iterable[str] = ()
) -> tuple[dict[str, Any], ...]:
    """RFC 6902 operations turning ``before`` into ``after``, with redacted values withheld."""
    ops = jsonpatch.make_patch(dict(before), dict(after)).patch
    return withhold(ops, redacted_paths)


def patch_diff(
    before: Mapping[str, Any], patch: Mapping[str, Any], redacted_paths: Iterable[str] = ()
) -> tuple[dict[str, Any], ...]:
    """The diff of applying the merge ``patch`` to ``before``; preconditions are not changes."""
    patch = dict(patch)
    metadata = patch.get("metadata")
    if isinstance(metadata, Mapping):
        patch["metadata"] = {k: v for k, v in metadata.items() if k not in ("uid", "resourceVersion")}
    return diff(before, apply_merge_patch(before, patch), redacted_paths)


def create_diff(body: Mapping[str, Any], redacted_paths: Iterable[str] = ()) -> tuple[dict[str, Any], ...]:
    """A create as one ``add`` of the whole object at the root, redacted values withheld."""
    return withhold([{"op": "add", "path": "", "value": dict(body)}], redacted_paths)


def delete_diff() -> tuple[dict[str, Any], ...]:
    """A delete: one ``remove`` at the root."""
    return ({"op": "remove", "path": ""},)


def merge_patch_ops(patch: Mapping[str, Any], redacted_paths: Iterable[str] = ()) -> tuple[dict[str, Any], ...]:
    """A merge patch as RFC 6902 operations when the object it was applied to is unknown.

    ``null`` becomes ``remove``, any other leaf ``add`` (which replaces an existing member);
    the ``metadata.uid`` and ``metadata.resourceVersion`` preconditions are not changes.
    """
    ops: list[dict[str, Any]] = []

    def walk(node: Mapping[str, Any], prefix: str, top: bool) -> None:
        for key, value in node.items():
            if top and prefix == "/metadata" and key in ("uid", "resourceVersion"):
                continue
            pointer = prefix + "/" + str(key).replace("~", "~0").replace("/", "~1")
            if isinstance(value, Mapping) and value:
                walk(value, pointer, top and prefix == "")
            elif value is None:
                ops.append({"op": "remove", "path": pointer})
            elif not isinstance(value, Mapping):
                ops.append({"op": "add", "path": pointer, "value": copy.deepcopy(value)})

    walk(patch, "", True)
    return withhold(ops, redacted_paths)


def secret_value_paths(obj: Mapping[str, Any], patch: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """Pointers of every Secret value in ``obj`` and ``patch``, parts of a Secret (``/data/<key>``,
    ``/stringData/<key>``, and each annotation holding a copy of the object,
    :func:`~flask_krm.projection.holds_object_copy`).

    For unprojected (native) objects, whose Secret values are not redacted already; the caller
    asks :func:`~flask_krm.projection.is_secret` of the scope first.
    """
    out: dict[str, None] = {}
    for source in (obj, patch or {}):
        for root in SECRET_VALUE_FIELDS:
            values = source.get(root)
            if isinstance(values, Mapping):
                for key in values:
                    out[pointer(root, str(key))] = None
            elif root in source:
                out[f"/{root}"] = None
        metadata = source.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        if isinstance(annotations, Mapping):
            for key, value in annotations.items():
                if holds_object_copy(str(key), value):
                    out[pointer("metadata", "annotations", str(key))] = None
    return tuple(out)


def withhold(ops: Sequence[Mapping[str, Any]], redacted_paths: Iterable[str]) -> tuple[dict[str, Any], ...]:
    """``ops`` with every value at, under or inside a redacted path removed (paths kept)."""
    hidden = [pointer_path(p) for p in redacted_paths]
    out: list[dict[str, Any]] = []
    for op in ops:
        op = dict(op)
        path = pointer_path(str(op.get("path", "")))
        source = pointer_path(str(op["from"])) if "from" in op else None
        if source is not None and any(_overlaps(source, h) or _overlaps(path, h) for h in hidden):
            if op["op"] == "move":
                out.append({"op": "remove", "path": op["from"]})
            out.append({"op": "add", "path": op["path"], "redacted": True})
            continue
        if "value" in op:
            if any(path[: len(h)] == h for h in hidden):
                del op["value"]
                op["redacted"] = True
            else:
                below = [h[len(path) :] for h in hidden if len(h) > len(path) and h[: len(path)] == path]
                if below:
                    op["value"], cut = _without(op["value"], below)
                    if cut:
                        op["redacted"] = True
        out.append(op)
    return tuple(out)


def _overlaps(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _without(value: Any, paths: list[tuple[str, ...]]) -> tuple[Any, bool]:
    value = copy.deepcopy(value)
    cut = False
    for path in paths:
        node = value
        for segment in path[:-1]:
            node = _child(node, segment)
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            cut = True
        elif isinstance(node, list) and path[-1].isdecimal() and int(path[-1]) < len(node):
            node[int(path[-1])] = None
            cut = True
    return value, cut


def _child(node: Any, segment: str) -> Any:
    if isinstance(node, dict):
        return node.get(segment)
    if isinstance(node, list) and segment.isdecimal() and int(segment) < len(node):
        return node[int(segment)]
    return None
