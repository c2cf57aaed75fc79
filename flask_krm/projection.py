"""The three named projections, Secret redaction with revisions, and the visible-content key.

A projection is a fixed, named set of removal rules applied to every object a stream delivers:

``krm-raw/v1``
    machinery removed, nothing else.
``krm-full/v1`` (the default)
    machinery removed; the values of a core ``v1`` ``Secret``'s ``data`` and ``stringData`` withheld,
    and so are the values of its annotations that hold a copy of the object (below).
``krm-spec/v1``
    as ``krm-full/v1``, and ``status`` removed.

Machinery is ``metadata.managedFields`` and the annotation
``kubectl.kubernetes.io/last-applied-configuration`` (which holds a full copy of the object, Secret
values included). Removing machinery is not a redaction: it is never listed in ``redacted``.

Other tools keep copies of the objects they apply in annotations too (kapp's
``kapp.k14s.io/original``), Secret values included. On a core Secret, under ``krm-full/v1`` and
``krm-spec/v1``, the value of an annotation that holds such a copy (:func:`holds_object_copy`: kapp's
original, or any value that parses as a JSON object carrying ``data`` or ``stringData``) is withheld
like a data value: its path (``/metadata/annotations/<key>``) is listed in ``redacted`` with a
revision that grows when the copy changes, and the value is never sent. This goes beyond the
specification's projections on purpose; the last-applied annotation stays machinery (removed, not
listed).

A withheld value is absent: no placeholder is ever put in its place (a mask could be saved back over
the real value). Its RFC 6901 path is listed in ``redacted_paths`` (sorted). A container the
projection emptied is removed (an ``annotations`` map that held only the last-applied annotation, a
Secret's ``data`` once its values are withheld); a container the server sent empty is kept, as is
everything else, verbatim: no reordering, coercion or synthesized fields.

:func:`project` never mutates its input and returns a new object that shares nothing with it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from .events import Redaction

__all__ = [
    "PROJECTIONS",
    "DEFAULT_PROJECTION",
    "RAW",
    "FULL",
    "SPEC",
    "LAST_APPLIED_ANNOTATION",
    "OBJECT_COPY_ANNOTATIONS",
    "holds_object_copy",
    "SECRET_VALUE_FIELDS",
    "is_secret",
    "is_secret_object",
    "UnknownProjection",
    "Projected",
    "check_projection",
    "project",
    "pointer",
    "escape_pointer_segment",
    "Revisions",
    "next_revisions",
    "RedactionRevisions",
    "content_key",
    "visible_key",
]

RAW: Final = "krm-raw/v1"
FULL: Final = "krm-full/v1"
SPEC: Final = "krm-spec/v1"
PROJECTIONS: Final = (RAW, FULL, SPEC)
DEFAULT_PROJECTION: Final = FULL

LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
OBJECT_COPY_ANNOTATIONS: Final = frozenset({"kapp.k14s.io/original"})
"""Annotations known to hold a copy of the object they annotate (besides the last-applied one)."""
SECRET_VALUE_FIELDS: Final = ("data", "stringData")
"""The members of a Secret that hold its values."""

# Digests of withheld values are keyed with a per-process secret, so a digest that leaked (it never
# should: none is ever sent or logged) could not be used to test guesses of a short Secret value.
_DIGEST_KEY: Final = os.urandom(32)

_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False, allow_nan=True
)


class UnknownProjection(ValueError):
    """A projection name that is not one of :data:`PROJECTIONS`."""

    def __init__(self, name: object) -> None:
        shown = repr(name) if isinstance(name, str) and len(name) <= 80 else "that name"
        super().__init__(f"unknown projection {shown}: the projections are {', '.join(PROJECTIONS)}")
        self.name = name


def check_projection(name: object) -> str:
    """Return ``name`` if it is a known projection, else raise :class:`UnknownProjection`."""
    if isinstance(name, str) and name in PROJECTIONS:
        return name
    raise UnknownProjection(name)


@dataclass(frozen=True, slots=True)
class Projected:
    """A projected object and the RFC 6901 paths of the values it withholds (sorted).

    ``hidden`` holds, per withheld path, a keyed digest of the withheld value (never the value): it
    is what :class:`RedactionRevisions` compares. It stays out of ``repr`` and equality.
    """

    object: dict[str, Any]
    redacted_paths: tuple[str, ...] = ()
    hidden: tuple[tuple[str, bytes], ...] = field(default=(), repr=False, compare=False)


def escape_pointer_segment(key: str) -> str:
    """RFC 6901: ``~`` becomes ``~0`` first, then ``/`` becomes ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def pointer(*segments: str) -> str:
    """An RFC 6901 pointer from unescaped segments: ``pointer("data", "a/b") == "/data/a~1b"``."""
    return "".join("/" + escape_pointer_segment(s) for s in segments)


def _copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (mappings become dicts, tuples lists); fast."""
    t = type(value)
    if t is dict:
        return {k: _copy(v) for k, v in value.items()}
    if t is list:
        return [_copy(v) for v in value]
    if t is str or t is int or t is bool or t is float or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    return value


def _keep(value: Any) -> Any:
    """No copy (:func:`project` with ``share``)."""
    return value


def _digest(value: Any) -> bytes:
    text = _CANONICAL.encode(value)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=_DIGEST_KEY, digest_size=16).digest()


def is_secret(group: str, resource: str) -> bool:
    """Whether ``group`` and ``resource`` name Secrets: the core (``""``) group's ``secrets``, the
    one resource whose values flask-krm withholds. Every "is this a Secret" question asks this."""
    return group == "" and resource == "secrets"


def is_secret_object(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj``, as a server sends it, is a Secret (:func:`is_secret`): its ``apiVersion``
    names the group (``v1``: the core group, version v1) and its kind ``Secret`` is the resource
    ``secrets``' kind."""
    api_version = obj.get("apiVersion")
    if obj.get("kind") != "Secret" or not isinstance(api_version, str):
        return False
    group, _, version = api_version.rpartition("/")
    return version == "v1" and is_secret(group, "secrets")


def holds_object_copy(key: str, value: Any) -> bool:
    """Whether the annotation ``key: value`` holds a copy of an object: one of
    :data:`OBJECT_COPY_ANNOTATIONS`, or a value that parses as a JSON object with a ``data`` or
    ``stringData`` member (what a copy of a Secret carries its values in)."""
    if key in OBJECT_COPY_ANNOTATIONS:
        return True
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return False
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and any(name in parsed for name in SECRET_VALUE_FIELDS)


def project(raw: Mapping[str, Any], name: str = DEFAULT_PROJECTION, *, share: bool = False) -> Projected:
    """Apply projection ``name`` to ``raw`` (an upstream object). ``raw`` is not modified.

    The result shares nothing with ``raw``, unless ``share``: then the values the projection keeps
    as they are (everything but the top-level map, ``metadata`` and a filtered ``annotations``) are
    ``raw``'s own, which is only for objects nobody ever mutates (a watch's cache) and a result
    nobody mutates either.

    Raises :class:`UnknownProjection` for an unknown name and ``TypeError`` when ``raw`` is not a
    mapping.
    """
    check_projection(name)
    if not isinstance(raw, Mapping):
        raise TypeError("an object to project must be a mapping")
    redact = name != RAW and is_secret_object(raw)
    if share and not redact and type(raw) is dict:
        return Projected(_shared_view(raw, name))
    copy = _keep if share else _copy
    out: dict[str, Any] = {}
    hidden: list[tuple[str, bytes]] = []
    for key, value in raw.items():
        if key == "metadata" and isinstance(value, Mapping):
            out[key] = _project_metadata(value, copy, hidden if redact else None)
        elif key == "status" and name == SPEC:
            continue
        elif redact and key in SECRET_VALUE_FIELDS:
            kept = _withhold(key, value, hidden)
            if kept is not _REMOVED:
                out[key] = kept
        else:
            out[key] = copy(value)
    hidden.sort(key=lambda item: item[0])
    return Projected(out, tuple(path for path, _ in hidden), tuple(hidden))


def _shared_view(raw: dict[str, Any], name: str) -> dict[str, Any]:
    """:func:`project` with ``share`` of an object with nothing to withhold: one copy of the
    top-level map, in its order, then only what the projection changes."""
    out = dict(raw)
    metadata = raw.get("metadata")
    if isinstance(metadata, Mapping):
        out["metadata"] = _project_metadata(metadata, _keep)
    if name == SPEC:
        out.pop("status", None)
    return out


_REMOVED: Final = object()


def _withhold(key: str, value: Any, hidden: list[tuple[str, bytes]]) -> Any:
    """Withhold a Secret's ``data``/``stringData``: returns what stays, or ``_REMOVED``."""
    if value is None:
        return None  # no value to withhold; verbatim
    if isinstance(value, Mapping):
        if not value:
            return {}  # the server sent it empty: kept
        for entry_key, entry_value in value.items():
            hidden.append((f"/{key}/{escape_pointer_segment(str(entry_key))}", _digest(entry_value)))
        return _REMOVED  # every value withheld, so the map the projection emptied goes too
    # Not a map (no conforming server sends this): withhold it whole rather than guess its shape.
    hidden.append((f"/{key}", _digest(value)))
    return _REMOVED


def _project_metadata(
    metadata: Mapping[str, Any], copy: Callable[[Any], Any], hidden: list[tuple[str, bytes]] | None = None
) -> dict[str, Any]:
    """``metadata`` without machinery; with ``hidden`` (a redacted Secret), without the values of
    annotations holding a copy of the object, whose paths and digests go to ``hidden``."""
    if copy is _keep and type(metadata) is dict:
        shared = dict(metadata)  # values shared: only the machinery goes
        shared.pop("managedFields", None)
        annotations = shared.get("annotations")
        if isinstance(annotations, Mapping):
            kept = _project_annotations(annotations, copy, hidden)
            if kept is _REMOVED:
                del shared["annotations"]
            elif kept is not None:
                shared["annotations"] = kept
        return shared
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if key == "managedFields":
            continue
        if key == "annotations" and isinstance(value, Mapping):
            kept = _project_annotations(value, copy, hidden)
            if kept is not _REMOVED:
                out[key] = {k: copy(v) for k, v in value.items()} if kept is None else kept
            continue
        out[key] = copy(value)
    return out


def _project_annotations(
    annotations: Mapping[str, Any], copy: Callable[[Any], Any], hidden: list[tuple[str, bytes]] | None
) -> Any:
    """The annotations a projection keeps: ``None`` when all of them (unchanged), ``_REMOVED``
    when the projection emptied the map (sent empty, it is kept), else the kept ones."""
    if LAST_APPLIED_ANNOTATION not in annotations and (
        hidden is None or not any(holds_object_copy(k, v) for k, v in annotations.items())
    ):
        return None
    kept: dict[str, Any] = {}
    for key, value in annotations.items():
        if key == LAST_APPLIED_ANNOTATION:
            continue
        if hidden is not None and holds_object_copy(key, value):
            hidden.append((pointer("metadata", "annotations", str(key)), _digest(value)))
            continue
        kept[key] = copy(value)
    return kept or _REMOVED


Revisions: TypeAlias = Mapping[str, tuple[bytes, int]]
"""One uid's redaction state on one connection: per withheld path, the keyed digest of the value
last observed and its revision. Never mutated: each step makes a new one."""


def next_revisions(previous: Revisions | None, projected: Projected) -> tuple[Revisions | None, tuple[Redaction, ...]]:
    """One revision step: the state after observing ``projected`` and its
    redaction records. ``None`` is the state of a uid with nothing withheld.

    Per withheld path: rev 1 on first sighting; +1 each time the withheld value differs from the
    last one observed (compared by keyed digest); a path no longer withheld is forgotten.
    """
    if not projected.hidden:
        return None, ()
    seen_before = previous or {}
    current: dict[str, tuple[bytes, int]] = {}
    records = []
    for path, digest in projected.hidden:
        seen = seen_before.get(path)
        if seen is None:
            rev = 1
        elif seen[0] == digest:
            rev = seen[1]
        else:
            rev = seen[1] + 1
        current[path] = (digest, rev)
        records.append(Redaction(path, rev))
    return current, tuple(records)


class RedactionRevisions:
    """Per-connection revisions of withheld values, by uid: :func:`next_revisions`
    for each uid, the value never kept. State survives snapshot cycles of one connection;
    :meth:`forget` a deleted uid and :meth:`retain` the uids a cycle delivered.
    """

    __slots__ = ("_state",)

    def __init__(self) -> None:
        self._state: dict[str, Revisions] = {}

    def revise(self, uid: str, projected: Projected) -> tuple[Redaction, ...]:
        """Record ``projected``'s withheld values for ``uid`` and return its redaction records."""
        state, records = next_revisions(self._state.get(uid), projected)
        if state is None:
            self._state.pop(uid, None)
        else:
            self._state[uid] = state
        return records

    def forget(self, uid: str) -> None:
        self._state.pop(uid, None)

    def retain(self, uids: Iterable[str]) -> None:
        """Discard the state of every uid not in ``uids``."""
        keep = set(uids)
        for uid in [u for u in self._state if u not in keep]:
            del self._state[uid]

    def __len__(self) -> int:
        return len(self._state)

    def __contains__(self, uid: object) -> bool:
        return uid in self._state


def content_key(projected: Projected | Mapping[str, Any]) -> bytes:
    """A digest of the projected object without ``metadata.resourceVersion``: equal for two
    objects a consumer cannot tell apart, apart from the resourceVersion (redactions aside).

    It depends on the object alone, so it can be computed once per object and projection and
    shared by every connection; :func:`visible_key` adds a connection's redaction records.
    """
    obj = projected.object if isinstance(projected, Projected) else projected
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping) and "resourceVersion" in metadata:
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in metadata.items() if k != "resourceVersion"}
    text = _CANONICAL.encode(obj)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def visible_key(projected: Projected | Mapping[str, Any], redactions: Iterable[Redaction] = ()) -> bytes:
    """The key compared for suppression: a digest of the projected object without
    ``metadata.resourceVersion`` (its :func:`content_key`), together with the redaction records
    (path and rev).

    Two deliveries with equal keys look identical to a consumer, apart from the resourceVersion.
    """
    records = _CANONICAL.encode([[r.path, r.rev] for r in redactions])
    return hashlib.sha256(content_key(projected) + records.encode("utf-8", "surrogatepass")).digest()
