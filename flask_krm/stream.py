"""The stream engine: source operations to protocol events, for one connection.

:class:`StreamEngine` is pure and synchronous: a source (a scripted fixture, the Kubernetes watch,
the shared hub) calls :meth:`StreamEngine.feed` with each :mod:`flask_krm.ops` operation and writes
the events it returns, in order. Sequence numbers are the writer's job (see :mod:`flask_krm.sse`).

What it guarantees (inventory sections C, D and E):

* Framing. Every cycle is ``reset``, the snapshot's members as ``added``, ``synced``; live deltas
  follow. A named scope whose object is absent is ``reset``, ``synced``. Pruning is the consumer's
  job at ``synced``; the engine only frames.
* Recovery on the same connection. Any loss of continuity (:class:`~flask_krm.ops.ContinuityLost`,
  a non-terminal ``RESYNC_REQUIRED`` failure, a snapshot arriving while the previous cycle is live)
  emits a non-terminal ``RESYNC_REQUIRED`` and ``reset``; the following snapshot's members and
  ``synced`` complete the new cycle. A metadata-only object (``PartialObjectMetadata``), an object
  without ``metadata`` or ``metadata.uid``, a tombstone without a complete identity, a non-mapping
  object or an unknown watch event type is never forwarded: the engine emits ``RESYNC_REQUIRED`` and
  ``reset`` at once and :attr:`~StreamEngine.needs_snapshot` becomes true.
* While a snapshot is awaited, live changes are dropped: the snapshot supersedes them.
* Per-object monotonicity within a cycle: an upsert or delete older than the uid's high-water
  resourceVersion is dropped silently; equal passes. A deleted uid keeps its deletion's
  resourceVersion as the mark (for the last :data:`MAX_REMEMBERED_DELETIONS` deletions), so a
  replayed older state cannot resurrect it. Strict ordering ends the stream with a terminal
  ``INTERNAL`` error on any resourceVersion it cannot order (empty ones included); lenient ordering
  passes them through.
* Suppression: an upsert whose visible content (projected object without
  ``metadata.resourceVersion``, plus its redaction records) equals what was last delivered for that
  uid in this cycle is not emitted. Each cycle delivers every member again.
* ``added``/``modified`` mirror the upstream type; ``deleted`` carries a complete identity; bookmarks
  are absorbed; an object outside the scope's namespace or name is dropped (defence in depth: the
  source should never deliver one).
* A terminal error is the last event: afterwards :attr:`~StreamEngine.closed` is true and
  :meth:`~StreamEngine.feed` returns nothing. No exception escapes :meth:`~StreamEngine.feed`: an
  internal failure becomes a terminal ``INTERNAL`` error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final, Literal, NoReturn

from .events import (
    ERROR_CODES,
    RESYNC_REQUIRED,
    Deleted,
    ErrorCode,
    Event,
    Identity,
    Reset,
    StreamError,
    Synced,
    Upsert,
)
from .ops import Bookmark, Change, ContinuityLost, Failure, Snapshot, SourceOp
from .projection import DEFAULT_PROJECTION, RedactionRevisions, check_projection, project, visible_key
from .scope import Scope
from .versions import Ordering, compare, is_decimal, unorderable_message

__all__ = ["StreamEngine", "Ordering", "PARTIAL_KINDS", "TERMINAL_CODES", "MAX_REMEMBERED_DELETIONS"]

log = logging.getLogger(__name__)

PARTIAL_KINDS: Final = frozenset({"PartialObjectMetadata", "PartialObjectMetadataList"})
"""Kinds that carry metadata only: never forwarded, whatever their uid."""

TERMINAL_CODES: Final[frozenset[str]] = frozenset(
    {"FORBIDDEN", "UNAUTHENTICATED", "SCOPE_INVALID", "SLOW_CONSUMER"}
)
"""Codes that always end a stream. ``UPSTREAM_UNAVAILABLE`` and ``RESYNC_REQUIRED`` never do;
``INTERNAL`` ends it when its source says so."""

_DEFAULT_MESSAGES: Final[dict[str, str]] = {
    "FORBIDDEN": "access to this stream is not permitted",
    "UNAUTHENTICATED": "the caller could not be identified",
    "SCOPE_INVALID": "the requested scope is not valid",
    "UPSTREAM_UNAVAILABLE": "the upstream API server is unavailable; retrying",
    "SLOW_CONSUMER": "the consumer could not keep up with the stream",
    "INTERNAL": "internal error",
}

MAX_REMEMBERED_DELETIONS: Final = 4096
"""How many deleted uids a cycle remembers, to drop replays of their older states."""

_SYNCED: Final = Synced()
_INTERNAL_FAILURE: Final = StreamError(
    "INTERNAL", "internal error while processing an upstream event", terminal=True
)

# outcomes of the ordering check
_ADMIT, _STALE, _CLOSED = 0, 1, 2


class _Abandoned(Exception):
    """The current cycle was abandoned (resnapshot announced) or the stream closed."""


class StreamEngine:
    """Source operations to protocol events for one connection (see the module documentation).

    ``projection`` must be one of :data:`flask_krm.projection.PROJECTIONS` (else
    :class:`~flask_krm.projection.UnknownProjection` is raised here, before anything streams).
    """

    __slots__ = (
        "scope",
        "projection",
        "ordering",
        "closed",
        "_reset",
        "_revisions",
        "_high_water",
        "_deleted",
        "_delivered",
        "_members",
        "_cycles",
        "_awaiting",
    )

    def __init__(
        self,
        scope: Scope,
        projection: str = DEFAULT_PROJECTION,
        ordering: Ordering | str = Ordering.STRICT,
    ) -> None:
        if not isinstance(scope, Scope):
            raise TypeError("scope must be a flask_krm.scope.Scope")
        self.scope: Final = scope
        self.projection: Final = check_projection(projection)
        self.ordering: Final = Ordering(ordering)
        self.closed = False
        self._reset = Reset(scope=scope.to_wire(), projection=projection)
        self._revisions = RedactionRevisions()
        self._high_water: dict[str, Any] = {}
        self._deleted: dict[str, Any] = {}
        self._delivered: dict[str, bytes] = {}
        self._members: set[str] = set()
        self._cycles = 0
        self._awaiting = False

    # ------------------------------------------------------------------------------- state --

    @property
    def needs_snapshot(self) -> bool:
        """True until the first snapshot, and after the engine began a new cycle that a snapshot
        must fill (it has already emitted ``RESYNC_REQUIRED`` and ``reset``)."""
        return not self.closed and (self._cycles == 0 or self._awaiting)

    @property
    def cycles(self) -> int:
        """How many snapshot cycles have begun (``reset`` events emitted)."""
        return self._cycles

    @property
    def synced(self) -> bool:
        """A cycle is complete and live deltas flow."""
        return not self.closed and self._cycles > 0 and not self._awaiting

    # -------------------------------------------------------------------------------- feed --

    def feed(self, op: SourceOp) -> list[Event]:
        """The protocol events ``op`` produces, in order (possibly none)."""
        out: list[Event] = []
        if self.closed:
            return out
        try:
            if isinstance(op, Change):
                self._change(op, out)
            elif isinstance(op, Snapshot):
                self._snapshot(op, out)
            elif isinstance(op, Bookmark):
                pass  # absorbed: never forwarded, never the snapshot boundary
            elif isinstance(op, ContinuityLost):
                self._continuity_lost(out)
            elif isinstance(op, Failure):
                self._failure(op, out)
            else:
                self._terminal(
                    out, StreamError("INTERNAL", "the upstream source sent an unknown operation", True)
                )
        except _Abandoned:
            pass
        except Exception as exc:  # never let a malformed upstream event escape
            _log_failure(op, exc)
            out.append(_INTERNAL_FAILURE)
            self.closed = True
        return out

    # ------------------------------------------------------------------------ the op kinds --

    def _snapshot(self, op: Snapshot, out: list[Event]) -> None:
        if self._cycles == 0:
            self._begin_cycle(out, announce=False)
        elif not self._awaiting:
            self._begin_cycle(out, announce=True)  # an unannounced relist is a continuity loss
        objects = op.objects
        if isinstance(objects, (str, bytes, Mapping)) or objects is None:
            raise TypeError("a snapshot's objects must be a sequence of objects")
        for obj in objects:
            self._upsert("added", obj, out)
        out.append(_SYNCED)
        self._awaiting = False
        self._revisions.retain(self._members)

    def _change(self, op: Change, out: list[Event]) -> None:
        if self.needs_snapshot:
            return  # superseded by the snapshot the source must deliver next
        kind = op.type
        if kind == "ADDED":
            self._upsert("added", op.object, out)
        elif kind == "MODIFIED":
            self._upsert("modified", op.object, out)
        elif kind == "DELETED":
            self._delete(op.object, out)
        elif kind == "BOOKMARK":
            pass  # a bookmark delivered as a change: absorbed all the same
        else:
            self._resnapshot(out)  # ERROR or anything unknown: re-establish the truth

    def _continuity_lost(self, out: list[Event]) -> None:
        if self._cycles == 0 or self._awaiting:
            return  # the snapshot to come already starts a fresh cycle
        self._begin_cycle(out, announce=True)

    def _failure(self, op: Failure, out: list[Event]) -> None:
        code: ErrorCode = op.code if op.code in ERROR_CODES else "INTERNAL"
        if code == "RESYNC_REQUIRED":
            self._continuity_lost(out)
            return
        if code in TERMINAL_CODES:
            terminal = True
        elif code == "UPSTREAM_UNAVAILABLE":
            terminal = False
        else:
            terminal = op.terminal is True
        message = op.message if isinstance(op.message, str) and op.message.strip() else ""
        retry = op.retry_after_ms
        if not (isinstance(retry, int) and not isinstance(retry, bool) and retry >= 0):
            retry = None
        error = StreamError(code, message or _DEFAULT_MESSAGES[code], terminal, retry)
        if terminal:
            self._terminal(out, error)
        else:
            out.append(error)

    # ---------------------------------------------------------------------------- objects --

    def _upsert(self, kind: Literal["added", "modified"], obj: object, out: list[Event]) -> None:
        metadata = _metadata(obj)
        uid = metadata.get("uid") if metadata is not None else None
        if (
            metadata is None
            or not isinstance(uid, str)
            or not uid
            or not isinstance(obj, Mapping)
            or obj.get("kind") in PARTIAL_KINDS
        ):
            self._resnapshot(out)  # metadata-only or identity-less: never forwarded
        if not self._in_scope(metadata):
            return
        if self._order(uid, metadata.get("resourceVersion"), out) == _STALE:
            return
        projected = project(obj, self.projection)
        records = self._revisions.revise(uid, projected)
        key = visible_key(projected, records)
        if self._delivered.get(uid) == key:
            return  # nothing a consumer can see has changed
        self._delivered[uid] = key
        self._members.add(uid)
        out.append(Upsert(kind, projected.object, records))

    def _delete(self, obj: object, out: list[Event]) -> None:
        metadata = _metadata(obj)
        identity = _identity(obj, metadata)
        if metadata is None or identity is None:
            self._resnapshot(out)  # never guess an identity: resnapshot and let synced prune
        if not self._in_scope(metadata):
            return
        uid = identity.uid
        if self._order(uid, metadata.get("resourceVersion"), out) == _STALE:
            return
        out.append(Deleted(identity))
        # A deleted uid never returns, so a later event for it is a replay of an older state: its
        # deletion resourceVersion stays the high-water mark (bounded; a new cycle clears it).
        self._deleted.pop(uid, None)
        self._deleted[uid] = self._high_water.pop(uid, None)
        if len(self._deleted) > MAX_REMEMBERED_DELETIONS:
            del self._deleted[next(iter(self._deleted))]
        self._delivered.pop(uid, None)
        self._members.discard(uid)
        self._revisions.forget(uid)

    def _in_scope(self, metadata: Mapping[str, Any]) -> bool:
        # namespace and name are immutable, so an object failing this was never delivered
        scope = self.scope
        if scope.namespace and metadata.get("namespace") != scope.namespace:
            return False
        if scope.name and metadata.get("name") != scope.name:
            return False
        return True

    def _order(self, uid: str, rv: object, out: list[Event]) -> int:
        strict = self.ordering is Ordering.STRICT
        if strict and not is_decimal(rv):
            self._terminal(out, StreamError("INTERNAL", unorderable_message(rv), terminal=True))
        high_water = self._high_water.get(uid)
        if high_water is None:
            high_water = self._deleted.get(uid)
        if high_water is not None:
            order = compare(rv, high_water)
            if order is not None and order < 0:
                return _STALE
        self._high_water[uid] = rv
        return _ADMIT

    # ---------------------------------------------------------------------------- cycles --

    def _begin_cycle(self, out: list[Event], *, announce: bool) -> None:
        if announce:
            out.append(RESYNC_REQUIRED)
        out.append(self._reset)
        self._cycles += 1
        self._awaiting = True
        self._high_water.clear()
        self._deleted.clear()
        self._delivered.clear()
        self._members.clear()

    def _resnapshot(self, out: list[Event]) -> NoReturn:
        """Abandon the current cycle: announce a new one that a fresh snapshot must fill."""
        self._begin_cycle(out, announce=True)
        raise _Abandoned

    def _terminal(self, out: list[Event], error: StreamError) -> NoReturn:
        out.append(error)
        self.closed = True
        raise _Abandoned


def _metadata(obj: object) -> Mapping[str, Any] | None:
    """The object's ``metadata`` map, or ``None`` when either is not a mapping."""
    if not isinstance(obj, Mapping):
        return None
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else None


def _identity(obj: object, metadata: Mapping[str, Any] | None) -> Identity | None:
    """The complete identity a ``deleted`` event needs, or ``None`` if any part is missing."""
    if metadata is None or not isinstance(obj, Mapping):
        return None
    uid, name = metadata.get("uid"), metadata.get("name")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    namespace = metadata.get("namespace")
    if not (isinstance(uid, str) and uid and isinstance(name, str) and name):
        return None
    if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind):
        return None
    if kind in PARTIAL_KINDS or not (namespace is None or isinstance(namespace, str)):
        return None
    return Identity(uid, api_version, kind, name, namespace or None)


def _log_failure(op: object, exc: BaseException) -> None:
    # Name the failure and where it happened, never values: an object may hold Secret data.
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "?"
    log.error(
        "stream engine failed on %s: %s at %s; the stream ends with INTERNAL",
        type(op).__name__,
        type(exc).__name__,
        where,
    )
