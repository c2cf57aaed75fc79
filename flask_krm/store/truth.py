"""``ServerTruth``: the server objects of one stream, held once for every store that follows it.

A :class:`~flask_krm.store.LiveResourceStore` keeps what its person did (drafts with their bases,
conflicts, edit sequences); what the server says is kept here, once. Each object is an immutable
:class:`ServerObject` (the object, its redactions, a tick that moves with every delivery, and the
object it replaced, for highlighting what moved). Objects are never mutated once held: stores refer
to them, build drafts from them by copying only the edited path, and hand out copies.

A truth is fed protocol events by exactly one writer (:meth:`apply`) and tells the stores attached
to it (held weakly: a store nobody else holds goes away) which objects changed. A store made
without a truth has a private one; the live UI gives every session store of the same watch and
projection the same truth (see ``docs/internals.md``), so a clean object costs a session nothing.
Pure: no Flask, no gevent; guarded by a lock.
"""

from __future__ import annotations

import itertools
import threading
import typing as t
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..events import Deleted, Event, Redaction, Reset, StreamError, Synced, Upsert
from .errors import InvalidEventError, MalformedPathError
from .paths import pointer_to_path
from .policy import EditPolicy
from .regions import Regions
from .values import json_copy, share

MAX_VIEWS = 64
"""Views (:meth:`ServerTruth.view`) one truth keeps; the least recently used is dropped first."""

TICKS = itertools.count(1)
T = t.TypeVar("T")
_NONE: Any = object()
"""Ticks of every truth and store of the process: a tick is never given twice, so a tick captured
from one names exactly one delivery."""


def uid_of(obj: Any) -> str:
    """``metadata.uid`` of ``obj``; ``InvalidEventError`` when it has none."""
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
    if not isinstance(uid, str) or not uid:
        raise InvalidEventError("an object without metadata.uid cannot be held")
    return uid


def redacted_paths(redactions: tuple[Redaction, ...]) -> list[tuple[str, ...]]:
    """The paths of ``redactions``; ``InvalidEventError`` for a malformed one."""
    try:
        return [pointer_to_path(r.path) for r in redactions]
    except (MalformedPathError, AttributeError) as exc:
        raise InvalidEventError(f"malformed redaction: {exc}") from exc


@dataclass(frozen=True, slots=True, eq=False)
class ServerObject:
    """One object as the server last delivered it. Shared: never mutate ``object``."""

    object: dict[str, Any]
    redactions: tuple[Redaction, ...]
    tick: int
    previous: dict[str, Any] | None
    """The object this delivery replaced (``None`` for the first, or a re-delivery of the same)."""
    _derived: dict[Hashable, Any] = field(default_factory=dict, repr=False)

    def regions(self, policy: EditPolicy) -> Regions:
        """The object's editable regions under ``policy``, made once per policy."""
        return self.derived(policy, lambda: Regions(policy, self.object, redacted_paths(self.redactions)))

    def derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """What ``make()`` derives from this delivery (regions, a digest), made once per ``key``."""
        derived = self._derived.get(key, _NONE)
        if derived is _NONE:
            derived = self._derived[key] = make()
        return t.cast(T, derived)


@dataclass(frozen=True, slots=True)
class TruthChange:
    """What one event changed: the uids delivered (changed or not: their ticks moved), the uids
    whose object changed, the objects dropped (with what they were), and whether a cycle ended."""

    touched: frozenset[str] = frozenset()
    changed: frozenset[str] = frozenset()
    dropped: Mapping[str, ServerObject] = field(default_factory=dict)
    cycle_ended: bool = False


NOTHING = TruthChange()


class Follower(Protocol):
    """A store attached to a truth."""

    def truth_changed(self, change: TruthChange) -> None: ...


class ServerTruth:
    """The server objects of one stream (one watch seen through one projection), by uid."""

    def __init__(self) -> None:
        self._objects: dict[str, ServerObject] = {}
        self._seen: set[str] | None = None
        self._synced = False
        self.epoch = 0
        """Counts the snapshot cycles opened (``reset``)."""
        self._followers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._views: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.RLock()

    # -- the writer ----------------------------------------------------------------------------

    def apply(self, event: Event, *, notify: bool = True) -> TruthChange:
        """Apply one protocol event (as :meth:`LiveResourceStore.apply
        <flask_krm.store.LiveResourceStore.apply>` describes); tell every follower unless
        ``notify`` is false (a store applying to its private truth absorbs the change itself)."""
        with self._lock:
            if isinstance(event, Reset):
                self.epoch += 1
                self._seen = set()
                change = NOTHING
            elif isinstance(event, Upsert):
                uid = uid_of(event.object)
                change = self._upsert(uid, event.object, tuple(event.redacted))
                if self._seen is not None:
                    self._seen.add(uid)
            elif isinstance(event, Deleted):
                held = self._objects.pop(event.uid, None)
                change = NOTHING if held is None else TruthChange(dropped={event.uid: held})
            elif isinstance(event, Synced):
                change = self._end_cycle()
            elif isinstance(event, StreamError):
                change = NOTHING
            else:
                raise InvalidEventError(f"not a protocol event: {event!r}")
        if notify and change is not NOTHING:
            for follower in list(self._followers):
                follower.truth_changed(change)
        return change

    def _upsert(self, uid: str, obj: Mapping[str, Any], redactions: tuple[Redaction, ...]) -> TruthChange:
        redacted_paths(redactions)  # refused before anything changes
        held = self._objects.get(uid)
        if held is None:
            self._objects[uid] = ServerObject(json_copy(obj), redactions, next(TICKS), None)
            return TruthChange(frozenset((uid,)), frozenset((uid,)))
        theirs = share(obj, held.object)
        if theirs is held.object and redactions == held.redactions:
            self._objects[uid] = ServerObject(held.object, redactions, next(TICKS), held.previous, held._derived)
            return TruthChange(touched=frozenset((uid,)))
        self._objects[uid] = ServerObject(theirs, redactions, next(TICKS), held.object)
        return TruthChange(frozenset((uid,)), frozenset((uid,)))

    def _end_cycle(self) -> TruthChange:
        if self._seen is None:
            return NOTHING
        seen, self._seen = self._seen, None
        self._synced = True
        dropped = {uid: held for uid, held in self._objects.items() if uid not in seen}
        for uid in dropped:
            del self._objects[uid]
        return TruthChange(dropped=dropped, cycle_ended=True)

    # -- readers -------------------------------------------------------------------------------

    def follow(self, follower: Follower) -> None:
        """Tell ``follower`` (held weakly) of every change from now on."""
        with self._lock:
            self._followers.add(follower)

    def frozen(self) -> ServerTruth:
        """A truth of its own holding the same objects as this one now (nothing is copied)."""
        with self._lock:
            copy = ServerTruth()
            copy._objects = dict(self._objects)
            copy._synced, copy.epoch = self.snapshot_complete, self.epoch
            return copy

    def view(self, key: Hashable, make: Callable[[], T]) -> T:
        """What ``make()`` derives from this truth, made once per ``key`` and shared by every reader
        (a list's sorted, filtered order); the :data:`MAX_VIEWS` most recently used are kept."""
        with self._lock:
            made = self._views.get(key)
            if made is None:
                made = self._views[key] = make()
                while len(self._views) > MAX_VIEWS:
                    self._views.popitem(last=False)
            else:
                self._views.move_to_end(key)
            return t.cast(T, made)

    def get(self, uid: str) -> ServerObject | None:
        """What the server last delivered for ``uid``, or ``None``."""
        return self._objects.get(uid)

    def uids(self) -> list[str]:
        """The uids held, in arrival order."""
        with self._lock:
            return list(self._objects)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, uid: object) -> bool:
        return uid in self._objects

    @property
    def snapshot_complete(self) -> bool:
        """A snapshot cycle has reached ``synced`` and no newer one is open."""
        return self._synced and self._seen is None


__all__ = ["ServerObject", "ServerTruth", "TruthChange", "uid_of"]
