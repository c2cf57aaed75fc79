"""The stream engine: source operations to protocol events, for one connection.

:class:`StreamEngine` is pure and synchronous: a source (a scripted fixture, the Kubernetes watch,
the shared hub) calls :meth:`StreamEngine.feed` with each :mod:`flask_krm.ops` operation and writes
the events it returns, in order. Sequence numbers are the writer's job (see :mod:`flask_krm.sse`).

What it guarantees:

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

Engines fed the same raw objects (the subscribers of one upstream watch) share the per-object work
through :class:`SharedProjections`: each object is projected, digested and encoded once per
projection, and connections that agree on an event get the same ``(event, body)`` pair. What stays
per connection is the state: ordering, suppression, redaction revisions, cycles.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Mapping, Sequence
from typing import Any, Final, Literal, NoReturn, TypeAlias

from .events import (
    ERROR_CODES,
    RESYNC_REQUIRED,
    Deleted,
    ErrorCode,
    Event,
    Identity,
    Redaction,
    Reset,
    StreamError,
    Synced,
    Upsert,
    encode_body,
)
from .ops import Bookmark, Change, ContinuityLost, Failure, Snapshot, SourceOp
from .projection import (
    DEFAULT_PROJECTION,
    Revisions,
    check_projection,
    content_key,
    next_revisions,
    project,
)
from .scope import Scope
from .versions import Ordering, compare, is_decimal, unorderable_message

__all__ = [
    "StreamEngine",
    "SharedProjections",
    "SharedChange",
    "feed_each",
    "Pair",
    "Ordering",
    "PARTIAL_KINDS",
    "TERMINAL_CODES",
    "MAX_REMEMBERED_DELETIONS",
]

log = logging.getLogger(__name__)

PARTIAL_KINDS: Final = frozenset({"PartialObjectMetadata", "PartialObjectMetadataList"})
"""Kinds that carry metadata only: never forwarded, whatever their uid."""

TERMINAL_CODES: Final[frozenset[str]] = frozenset({"FORBIDDEN", "UNAUTHENTICATED", "SCOPE_INVALID", "SLOW_CONSUMER"})
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
_INTERNAL_FAILURE: Final = StreamError("INTERNAL", "internal error while processing an upstream event", terminal=True)

Pair: TypeAlias = tuple[Event, bytes]
"""A protocol event and its encoded body (:func:`flask_krm.events.encode_body`)."""

_Records: TypeAlias = tuple[Redaction, ...]
_UpsertKind: TypeAlias = Literal["added", "modified"]
_NOT_YET: Final[Any] = object()


# ------------------------------------------------------------------------ per-uid state --


class _Known:
    """What one connection knows of one uid: the high-water resourceVersion and what it last
    delivered (a view and its redaction records: the visible key) in the current cycle, both
    ``None`` before its first admitted upsert in the cycle, and the redaction revisions, which
    survive cycles.

    Immutable and compared by identity: engines in the same state for a uid hold the same instance,
    so a step computed for one of them serves every other (see :class:`SharedProjections`).
    """

    __slots__ = ("rv", "delivered", "revisions", "_carried")

    def __init__(self, rv: object, delivered: tuple[_View, _Records] | None, revisions: Revisions | None) -> None:
        self.rv: Final = rv
        self.delivered: Final = delivered
        self.revisions: Final = revisions
        self._carried: _Known | None = _NOT_YET

    def carried(self) -> _Known | None:
        """The state a new cycle starts from: the revisions alone (``None`` without any)."""
        if self._carried is _NOT_YET:
            if self.revisions is None:
                self._carried = None
            elif self.rv is None and self.delivered is None:
                self._carried = self
            else:
                self._carried = _Known(None, None, self.revisions)
        return self._carried


_Outcome: TypeAlias = tuple["_Known | None", "Upsert | None"]


class _View:
    """One raw object under one projection: the projection, its content key (computed when first
    compared), and the upsert events made of it (one per event type and redaction records),
    encoded into ``bodies`` when shared."""

    __slots__ = ("projected", "_content", "_upserts", "_bodies")

    def __init__(self, raw: Mapping[str, Any], projection: str, bodies: dict[int, Pair] | None) -> None:
        # shared raw objects are never mutated, and neither are the events made of them
        self.projected = project(raw, projection, share=bodies is not None)
        self._content: bytes | None = None
        self._upserts: dict[tuple[str, _Records], Upsert] = {}
        self._bodies = bodies

    @property
    def content(self) -> bytes:
        """The content key (:func:`flask_krm.projection.content_key`)."""
        if self._content is None:
            self._content = content_key(self.projected)
        return self._content

    def looks_like(self, other: _View) -> bool:
        """A consumer cannot tell the two apart, apart from the resourceVersion."""
        return self is other or self.content == other.content

    def upsert(self, kind: _UpsertKind, records: _Records) -> Upsert:
        event = self._upserts.get((kind, records))
        if event is None:
            event = self._upserts[(kind, records)] = Upsert(kind, self.projected.object, records)
            if self._bodies is not None:
                self._bodies[id(event)] = (event, encode_body(event))
        return event

    def discard(self) -> None:
        """The object was replaced or deleted: keep only the content key, which connections that
        delivered this view still compare with."""
        if self._content is None:
            self._content = content_key(self.projected)
        if self._bodies is not None:
            for event in self._upserts.values():
                self._bodies.pop(id(event), None)
        self._upserts = {}
        del self.projected


class _Object:
    """One raw object (by identity) as engines see it: its resourceVersion, its views per
    projection (made when first needed) and the outcome of each upsert step already taken."""

    __slots__ = ("raw", "metadata", "rv", "decimal", "_views", "_steps", "_bodies")

    def __init__(self, raw: Mapping[str, Any], metadata: Mapping[str, Any], bodies: dict[int, Pair] | None) -> None:
        self.raw: Final = raw
        self.metadata: Final = metadata
        self.rv: Final = metadata.get("resourceVersion")
        self.decimal: Final = is_decimal(self.rv)
        self._views: dict[str, _View] = {}
        self._steps: dict[tuple[str, str], dict[_Known | None, _Outcome]] = {}  # by kind, projection; state
        self._bodies = bodies

    def view(self, projection: str) -> _View:
        view = self._views.get(projection)
        if view is None:
            view = self._views[projection] = _View(self.raw, projection, self._bodies)
        return view

    def step(self, projection: str, kind: _UpsertKind, known: _Known | None) -> _Outcome:
        """:meth:`admit` against the state's own high-water mark, computed once per state."""
        steps = self._steps.get((kind, projection))
        if steps is None:
            steps = self._steps[(kind, projection)] = {}
        outcome = steps.get(known)
        if outcome is None:
            outcome = steps[known] = self.admit(projection, kind, known, known.rv if known else None)
        return outcome

    def admit(self, projection: str, kind: _UpsertKind, known: _Known | None, high_water: object) -> _Outcome:
        """One upsert of this object on a connection in state ``known`` for its uid: the state
        after it and the event to emit (``None``: stale, or nothing visible changed)."""
        if high_water is not None:
            order = compare(self.rv, high_water)
            if order is not None and order < 0:
                return known, None  # older than what this cycle already admitted: dropped
        view = self.view(projection)
        revisions, records = next_revisions(known.revisions if known else None, view.projected)
        after = _Known(self.rv, (view, records), revisions)
        delivered = known.delivered if known is not None else None
        if delivered is not None and delivered[1] == records and delivered[0].looks_like(view):
            return after, None  # nothing a consumer can see has changed
        return after, view.upsert(kind, records)

    def discard(self) -> None:
        """Drop the views (idempotent; a later step would make them again)."""
        views, self._views = self._views, {}
        self._steps = {}
        for view in views.values():
            view.discard()


class SharedProjections:
    """Per-object work shared by the engines fed the same raw objects (one upstream watch).

    Each raw object, by identity (objects are shared and never mutated), is projected and digested
    once per projection, and an upsert step is computed once per connection state: engines in the
    same state for a uid share one immutable state object, so the first of them computes the step
    (ordering, redaction revisions, suppression) and the others reuse its outcome, the same event
    object and, from :meth:`pair`, the same encoded bytes. Nothing crosses projections, and
    redaction revisions stay per connection: a connection that joined later, with revisions of its
    own, is in another state and gets events of its own.

    Holds the latest object seen per uid (a newer object under the same uid replaces it and all
    that was made of it); the source drops deleted uids with :meth:`forget` and keeps only the
    members of a fresh snapshot with :meth:`retain`.
    """

    __slots__ = ("_objects", "_bodies")

    def __init__(self) -> None:
        self._objects: dict[str, _Object] = {}
        self._bodies: dict[int, Pair] = {}

    def _object(
        self, uid: str, raw: Mapping[str, Any], metadata: Mapping[str, Any], *, keep_replaced: bool = False
    ) -> _Object:
        entry = self._objects.get(uid)
        if entry is None or entry.raw is not raw:
            if entry is not None and not keep_replaced:
                entry.discard()
            entry = self._objects[uid] = _Object(raw, metadata, self._bodies)
        return entry

    def prepare(self, op: SourceOp, *, keep_replaced: bool = False) -> SharedChange | None:
        """A live upsert resolved once for every engine sharing these projections (see
        :meth:`StreamEngine.feed_change`); ``None`` for any other operation or an untrusted object.

        With ``keep_replaced``, the object this one replaces stays usable by changes prepared
        earlier: the caller hands it to :meth:`discard_stale` once no engine can still take them
        (the hub does when they leave its event log). Also keep deleted uids with :meth:`release`.
        """
        if not isinstance(op, Change):
            return None
        upsert = _UPSERT_KINDS.get(op.type)
        trusted = _trusted(op.object) if upsert is not None else None
        if upsert is None or trusted is None:
            return None
        uid, raw, metadata = trusted
        return SharedChange(op, self, uid, upsert, self._object(uid, raw, metadata, keep_replaced=keep_replaced))

    def discard_stale(self, change: SharedChange) -> None:
        """Discard what was made of ``change``'s object unless it is still the uid's current one."""
        if self._objects.get(change.uid) is not change.entry:
            change.entry.discard()

    def release(self, uid: str) -> None:
        """Drop ``uid`` (deleted) but keep what was made of it for changes prepared earlier."""
        self._objects.pop(uid, None)

    def pair(self, event: Event) -> Pair | None:
        """The shared ``(event, body)`` pair of an upsert an engine made from these projections;
        ``None`` for any other event."""
        pair = self._bodies.get(id(event))
        return pair if pair is not None and pair[0] is event else None

    def forget(self, uid: str) -> None:
        """Drop ``uid`` (deleted)."""
        entry = self._objects.pop(uid, None)
        if entry is not None:
            entry.discard()

    def retain(self, uids: Container[str]) -> None:
        """Drop every uid not in ``uids`` (the members of a fresh snapshot)."""
        for uid in [u for u in self._objects if u not in uids]:
            self.forget(uid)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, uid: object) -> bool:
        return uid in self._objects


class SharedChange:
    """A live upsert of a trusted object, resolved once against :class:`SharedProjections`: what
    every engine sharing them needs to take its own step (:meth:`StreamEngine.feed_change`)."""

    __slots__ = ("op", "shared", "uid", "kind", "entry")

    def __init__(self, op: Change, shared: SharedProjections, uid: str, kind: _UpsertKind, entry: _Object) -> None:
        self.op: Final = op
        self.shared: Final = shared
        self.uid: Final = uid
        self.kind: Final = kind
        self.entry: Final = entry


# ------------------------------------------------------------------------------- engine --


class _Abandoned(Exception):
    """The current cycle was abandoned (resnapshot announced) or the stream closed."""


class StreamEngine:
    """Source operations to protocol events for one connection (see the module documentation).

    ``projection`` must be one of :data:`flask_krm.projection.PROJECTIONS` (else
    :class:`~flask_krm.projection.UnknownProjection` is raised here, before anything streams).
    ``shared`` (settable at any time) shares the per-object work with the other engines fed the same
    objects; it changes no event, only how often each is computed.
    """

    __slots__ = (
        "scope",
        "projection",
        "ordering",
        "shared",
        "closed",
        "_reset",
        "_known",
        "_deleted",
        "_cycles",
        "_awaiting",
        "_carrying",
        "_strict",
    )

    def __init__(
        self,
        scope: Scope,
        projection: str = DEFAULT_PROJECTION,
        ordering: Ordering | str = Ordering.STRICT,
        *,
        shared: SharedProjections | None = None,
    ) -> None:
        if not isinstance(scope, Scope):
            raise TypeError("scope must be a flask_krm.scope.Scope")
        self.scope: Final = scope
        self.projection: Final = check_projection(projection)
        self.ordering: Final = Ordering(ordering)
        self.shared = shared
        self.closed = False
        self._reset = Reset(scope=scope.to_wire(), projection=projection)
        self._known: dict[str, _Known] = {}
        self._deleted: dict[str, Any] = {}
        self._cycles = 0
        self._awaiting = False
        self._carrying = False  # the current cycle started with revisions carried over
        self._strict = self.ordering is Ordering.STRICT

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
                self._terminal(out, StreamError("INTERNAL", "the upstream source sent an unknown operation", True))
        except _Abandoned:
            pass
        except Exception as exc:  # never let a malformed upstream event escape
            self._failed(op, exc, out)
        return out

    def feed_change(self, change: SharedChange) -> list[Event]:
        """:meth:`feed` of ``change.op``, with the shared work already done: an engine in a live
        cycle on the same projections only takes its step (memoized per state)."""
        if self.shared is not change.shared or self.closed or self._awaiting or not self._cycles:
            return self.feed(change.op)  # its own work, or nothing to take (awaiting, closed)
        # the common case of _step inlined (this runs per subscriber and event); the rare ones go
        # through _step itself
        entry, uid = change.entry, change.uid
        scope = self.scope
        if (scope.namespace or scope.name) and not self._in_scope(entry.metadata):
            return []
        known = self._known.get(uid)
        if (known is None or known.rv is None) and uid in self._deleted or not entry.decimal and self._strict:
            out: list[Event] = []  # a uid deleted in this cycle, or a resourceVersion to refuse
            try:
                self._step(entry, uid, change.kind, out)
            except _Abandoned:
                pass
            except Exception as exc:  # as feed does
                self._failed(change.op, exc, out)
            return out
        try:
            after, event = entry.step(self.projection, change.kind, known)
        except Exception as exc:  # as feed does
            out = []
            self._failed(change.op, exc, out)
            return out
        if after is not known and after is not None:
            self._known[uid] = after
        return [event] if event is not None else []

    def _failed(self, op: SourceOp, exc: Exception, out: list[Event]) -> None:
        _log_failure(op, exc)
        out.append(_INTERNAL_FAILURE)
        self.closed = True

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
        if self._carrying:  # revisions of uids this cycle did not deliver are discarded
            self._known = {uid: k for uid, k in self._known.items() if k.delivered is not None}
            self._carrying = False

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

    def _upsert(self, kind: _UpsertKind, obj: object, out: list[Event]) -> None:
        trusted = _trusted(obj)
        if trusted is None:
            self._resnapshot(out)  # metadata-only or identity-less: never forwarded
        uid, raw, metadata = trusted
        if not self._in_scope(metadata):
            return
        shared = self.shared
        if shared is not None:
            self._step(shared._object(uid, raw, metadata), uid, kind, out)
        else:
            entry = _Object(raw, metadata, None)
            self._step(entry, uid, kind, out)
            entry.discard()  # a view of this engine's own: only its content key is kept

    def _step(self, entry: _Object, uid: str, kind: _UpsertKind, out: list[Event]) -> None:
        """An upsert of a trusted, in-scope object: ordering, revisions, suppression."""
        if self._strict and not entry.decimal:
            self._terminal(out, StreamError("INTERNAL", unorderable_message(entry.rv), terminal=True))
        known = self._known.get(uid)
        if (known is not None and known.rv is not None) or uid not in self._deleted:
            after, event = entry.step(self.projection, kind, known)
        else:  # a uid deleted in this cycle: its deletion's resourceVersion is the mark
            after, event = entry.admit(self.projection, kind, known, self._deleted[uid])
        if after is not known and after is not None:
            self._known[uid] = after
        if event is not None:
            out.append(event)

    def _delete(self, obj: object, out: list[Event]) -> None:
        metadata = _metadata(obj)
        identity = _identity(obj, metadata)
        if metadata is None or identity is None:
            self._resnapshot(out)  # never guess an identity: resnapshot and let synced prune
        if not self._in_scope(metadata):
            return
        uid = identity.uid
        rv = metadata.get("resourceVersion")
        if self._strict and not is_decimal(rv):
            self._terminal(out, StreamError("INTERNAL", unorderable_message(rv), terminal=True))
        known = self._known.get(uid)
        high_water = known.rv if known is not None and known.rv is not None else self._deleted.get(uid)
        if high_water is not None:
            order = compare(rv, high_water)
            if order is not None and order < 0:
                return  # older than what this cycle already admitted: dropped
        out.append(Deleted(identity))
        # A deleted uid never returns, so a later event for it is a replay of an older state: its
        # deletion resourceVersion stays the high-water mark (bounded; a new cycle clears it). Its
        # suppression memory and redaction revisions go.
        self._deleted.pop(uid, None)
        self._deleted[uid] = rv
        if len(self._deleted) > MAX_REMEMBERED_DELETIONS:
            del self._deleted[next(iter(self._deleted))]
        self._known.pop(uid, None)

    def _in_scope(self, metadata: Mapping[str, Any]) -> bool:
        # namespace and name are immutable, so an object failing this was never delivered
        scope = self.scope
        if scope.namespace and metadata.get("namespace") != scope.namespace:
            return False
        if scope.name and metadata.get("name") != scope.name:
            return False
        return True

    # ---------------------------------------------------------------------------- cycles --

    def _begin_cycle(self, out: list[Event], *, announce: bool) -> None:
        if announce:
            out.append(RESYNC_REQUIRED)
        out.append(self._reset)
        self._cycles += 1
        self._awaiting = True
        self._deleted.clear()
        # ordering and suppression start over; redaction revisions carry over
        self._known = {uid: kept for uid, known in self._known.items() if (kept := known.carried()) is not None}
        self._carrying = bool(self._known)

    def _resnapshot(self, out: list[Event]) -> NoReturn:
        """Abandon the current cycle: announce a new one that a fresh snapshot must fill."""
        self._begin_cycle(out, announce=True)
        raise _Abandoned

    def _terminal(self, out: list[Event], error: StreamError) -> NoReturn:
        out.append(error)
        self.closed = True
        raise _Abandoned


def feed_each(engines: Sequence[StreamEngine], op: SourceOp) -> list[list[Event]]:
    """``[engine.feed(op) for engine in engines]``, with the work per engine cut down for a live
    upsert on engines that share their projections: the object is checked and looked up once
    (:meth:`SharedProjections.prepare`), and each engine in a live cycle only takes its step."""
    out: list[list[Event]] = []
    change: SharedChange | None = None
    for engine in engines:
        shared = engine.shared
        if shared is None or not engine.synced:
            out.append(engine.feed(op))
            continue
        if change is None or change.shared is not shared:
            change = shared.prepare(op)
            if change is None:
                out.append(engine.feed(op))  # not a trusted upsert: the engine's own path
                continue
        out.append(engine.feed_change(change))
    return out


_UPSERT_KINDS: Final[Mapping[str, _UpsertKind]] = {"ADDED": "added", "MODIFIED": "modified"}


def _trusted(obj: object) -> tuple[str, Mapping[str, Any], Mapping[str, Any]] | None:
    """An object's uid, itself and its metadata, or ``None`` when it cannot be trusted: not a
    mapping, without a ``metadata`` map or a non-empty string uid, or metadata-only."""
    if not (isinstance(obj, dict) or isinstance(obj, Mapping)):
        return None
    metadata = obj.get("metadata")
    if not (isinstance(metadata, dict) or isinstance(metadata, Mapping)):
        return None
    uid = metadata.get("uid")
    if not isinstance(uid, str) or not uid or obj.get("kind") in PARTIAL_KINDS:
        return None
    return uid, obj, metadata


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
