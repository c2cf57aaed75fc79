"""The state every part of a :class:`~.store.LiveResourceStore` shares, and the steps they share.

A store keeps what its person did per uid (:class:`Held`: the server object the draft was merged
against, the draft, conflicts, the edit sequence), made at the first edit, restore or adopted
object of a uid; a clean object is read from the :class:`~.truth.ServerTruth`. :class:`StoreCore`
holds that state and the lock, and the steps that more than one part takes: reading what is held,
installing an edited draft (:meth:`StoreCore._commit`), merging an object adopted here, replaying
an edit record, forgetting a uid, notifying subscribers.

Pure: no Flask, no gevent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..events import Redaction
from .bounds import check_draft
from .errors import (
    MalformedPathError,
    MissingItemError,
    PathError,
    PathTypeError,
    UnknownResourceError,
)
from .items import address_of, resolve
from .journal import EditRecord
from .keyed_lists import KeyedLists, Schema
from .merge import Conflict, three_way_merge
from .patch import changes, merge_patch
from .paths import MISSING, Path, get_at
from .policy import DEFAULT_POLICY, EditPolicy
from .recovery import RecoveryCopies, identity_of
from .regions import Regions
from .truth import TICKS, ServerObject, ServerTruth, TruthChange, redacted_paths
from .values import delete_in, json_copy, json_equal, set_in, share

Subscriber = Callable[[frozenset[str]], None]


@dataclass(slots=True)
class Held:
    """What a session holds for one object: the server object its draft was merged against (the
    truth's own, shared, unless the person adopted a newer one), the draft, conflicts and edits."""

    server: dict[str, Any]
    draft: dict[str, Any]
    redactions: tuple[Redaction, ...]
    regions: Regions
    lists: KeyedLists | None
    conflicts: dict[Path, Conflict]
    previous: tuple[dict[str, Any], dict[str, Any]] | None
    tick: int
    sequence: int = 0
    """Edits the person has made to the object (see :meth:`LiveResourceStore.edit_sequence`)."""


def prefix_of(a: Path, b: Path) -> bool:
    """Whether ``a`` is ``b`` or one of its ancestors."""
    return len(a) <= len(b) and b[: len(a)] == a


def _put(root: Any, path: Path, value: Any) -> Any:
    return delete_in(root, path) if value is MISSING else set_in(root, path, value)


class StoreCore:
    """The held state of a store and the steps its parts share (see the module doc)."""

    truth_changed: Callable[[TruthChange], None]
    """Called by a shared truth with what changed (:class:`~.streaming.StreamApplication`)."""

    def __init__(
        self,
        policy: EditPolicy = DEFAULT_POLICY,
        schemas: Mapping[tuple[str, str], Schema] | None = None,
        *,
        recovery: RecoveryCopies | None = None,
        truth: ServerTruth | None = None,
    ) -> None:
        self.policy = policy
        self.recovery = recovery
        self._schemas = dict(schemas or {})
        self._lists: dict[tuple[str, str], KeyedLists | None] = {}
        self._shared = truth is not None
        self._truth = truth if truth is not None else ServerTruth()
        self._followed: ServerTruth | None = None
        """The shared truth while this store is detached from it (:meth:`detach`)."""
        self._resources: dict[str, Held] = {}
        """What the person did, per uid (a clean object has no entry)."""
        self._hidden: set[str] = set()
        """Uids removed here (an optimistic delete) while the truth still holds them."""
        self._subscribers: tuple[Subscriber, ...] = ()
        """Replaced, never changed in place: a notification reads it without the lock."""
        self._restoring: dict[str, EditRecord] = {}
        self._lock = threading.RLock()
        self._collecting_for: tuple[int, set[str]] | None = None
        """The thread collecting notifications while it holds the lock (:meth:`_collecting`)."""
        if truth is not None:
            truth.follow(self)

    @property
    def truth(self) -> ServerTruth:
        """Where the server objects this store reads are held."""
        return self._truth

    @property
    def shared(self) -> bool:
        """Whether :attr:`truth` is shared with other stores (fed by its own writer) and followed."""
        return self._shared and self._followed is None

    @contextmanager
    def _collecting(self) -> Iterator[set[str]]:
        """Hold the lock and collect the notifications of the steps taken meanwhile; the caller
        notifies them once the lock is released."""
        with self._lock:
            collected: set[str] = set()
            self._collecting_for = (threading.get_ident(), collected)
            try:
                yield collected
            finally:
                self._collecting_for = None

    def _materialized(self, server: ServerObject) -> Held:
        """A clean object's state, read from the truth (kept only once the person does something)."""
        obj = server.object
        previous = None if server.previous is None else (server.previous, server.previous)
        lists = self._keyed_lists(obj)
        return Held(obj, obj, server.redactions, server.regions(self.policy), lists, {}, previous, server.tick)

    def _upsert(self, uid: str, obj: Mapping[str, Any], redactions: tuple[Redaction, ...]) -> set[str]:
        """Adopt ``obj`` for this store only (a save's result, a guarded read): merged like a server
        event into the person's draft; the truth's later delivery of it changes nothing more."""
        paths = redacted_paths(redactions)
        held = self._resources.get(uid)
        if held is None:
            server = self._visible(uid)
            if server is None:
                copy = json_copy(obj)
                regions = Regions(self.policy, copy, paths)
                lists = self._keyed_lists(copy)
                held = self._resources[uid] = Held(copy, copy, redactions, regions, lists, {}, None, next(TICKS))
                self._hidden.discard(uid)
                record = self._restoring.pop(uid, None)
                if record is not None:
                    self._replay(uid, held, record)
                return {uid}
            held = self._resources[uid] = self._materialized(server)
        held.tick = next(TICKS)
        theirs = share(obj, held.server)
        if theirs is held.server and redactions == held.redactions:
            return set()
        regions = Regions(self.policy, theirs, paths)
        lists = self._keyed_lists(theirs)
        merged = three_way_merge(held.server, held.draft, theirs, regions, lists, held.conflicts)
        held.previous = (held.server, held.draft)
        held.server, held.draft, held.redactions = theirs, merged.draft, redactions
        held.regions, held.lists, held.conflicts = regions, lists, merged.conflicts
        return {uid}

    def _visible(self, uid: str) -> ServerObject | None:
        """The truth's object for ``uid``, unless this store removed it."""
        return None if uid in self._hidden else self._truth.get(uid)

    def _keyed_lists(self, obj: Mapping[str, Any]) -> KeyedLists | None:
        kind = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if kind not in self._lists:
            schema = self._schemas.get(kind)
            self._lists[kind] = KeyedLists(schema) if schema is not None else None
        return self._lists[kind]

    def _drop(self, uid: str) -> set[str]:
        """Forget what the person did to ``uid`` (kept as a recovery copy when unsaved)."""
        held = self._resources.pop(uid, None)
        if held is None:
            return set()
        if self.recovery is not None:
            self.recovery.record(identity_of(held.server), held.draft, self._patch_of(held))
            self.recovery.removed(uid)
        return {uid}

    def _commit(self, uid: str, held: Held, draft: dict[str, Any], *edited: Path, checked: bool = False) -> set[str]:
        """Install an edited draft (``checked``: already by :func:`.bounds.check_draft`; raises
        :class:`.bounds.DraftRefused` before anything changes), drop the conflicts it settled, keep
        a recovery copy.

        Returns the uids to notify (none when nothing changed).
        """
        unchanged = draft is held.draft
        if not unchanged and not checked:
            check_draft(held.server, held.draft, draft, edited)
        self._resources[uid] = held
        held.draft = draft
        settled = [
            p
            for p in held.conflicts
            if any(prefix_of(p, e) or prefix_of(e, p) for e in edited)
            and json_equal(get_at(draft, p), self._server_at(held, draft, p))
        ]
        for p in settled:
            del held.conflicts[p]
        if unchanged and not settled:
            return set()
        held.sequence += 1
        if self.recovery is not None:
            self.recovery.record(identity_of(held.server), draft, self._patch_of(held))
        return {uid}

    def _replay(self, uid: str, held: Held, record: EditRecord) -> set[str]:
        base = ours = held.server
        for edit in record.edits:
            try:
                base, ours = _put(base, edit.path, edit.base), _put(ours, edit.path, edit.mine)
            except PathError:
                continue  # the server's object no longer has a map there: its value stands
        opened: dict[Path, Conflict] = {}
        for path in record.conflicts:
            theirs = get_at(held.server, path)
            opened[path] = Conflict(path, None if theirs is MISSING else theirs, theirs is not MISSING)
        merged = three_way_merge(base, ours, held.server, held.regions, held.lists, opened)
        sequence = max(held.sequence, record.sequence)
        if json_equal(merged.draft, held.draft) and merged.conflicts == held.conflicts:
            if sequence == held.sequence:
                return set()
            held.sequence = sequence
            return {uid}
        held.draft, held.conflicts, held.sequence = merged.draft, merged.conflicts, sequence
        if self.recovery is not None:
            self.recovery.record(identity_of(held.server), held.draft, self._patch_of(held))
        return {uid}

    def _open_conflicts(self, held: Held) -> list[Conflict]:
        return [
            c
            for p, c in held.conflicts.items()
            if not json_equal(get_at(held.draft, p), self._server_at(held, held.draft, p))
        ]

    def _map_keys(self, held: Held) -> Callable[[Path], tuple[str, ...] | None]:
        lists = held.lists
        return (lambda path: None) if lists is None else lists.map_keys

    def _server_at(self, held: Held, draft: Any, path: Path) -> Any:
        """The server's value for ``path`` of ``draft``: the same keyed-list items, wherever they are."""
        keys_of = self._map_keys(held)
        try:
            return get_at(held.server, resolve(held.server, address_of(draft, path, keys_of), keys_of))
        except MissingItemError:
            return MISSING
        except (MalformedPathError, PathTypeError):
            return get_at(held.server, path)

    def _patch_of(self, held: Held) -> dict[str, Any] | None:
        return merge_patch(changes(held.regions, held.server, held.draft))

    def holds_nothing_of(self, uid: str) -> bool:
        """Whether this store shows the truth's object for ``uid`` and holds nothing of its own for
        it (no edit, adoption, removal or restore waiting). Read without the lock, as a hint for a
        subscriber told of ``uid``: whatever the person does to ``uid`` later notifies it again."""
        return (
            uid not in self._resources
            and uid not in self._restoring
            and uid not in self._hidden
            and self._truth.get(uid) is not None
        )

    def _find(self, uid: str) -> Held | None:
        """What this store holds for ``uid``: the person's state, else the clean object's as read
        from the truth (not kept: an edit keeps it), else None."""
        held = self._resources.get(uid)
        if held is not None:
            return held
        server = self._visible(uid)
        return None if server is None else self._materialized(server)

    def _get(self, uid: str) -> Held:
        held = self._find(uid)
        if held is None:
            raise UnknownResourceError(uid)
        return held

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(changed_uids)`` after every change; returns the unsubscribe function."""
        with self._lock:
            self._subscribers = (*self._subscribers, callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    kept = list(self._subscribers)
                    kept.remove(callback)
                    self._subscribers = tuple(kept)

        return unsubscribe

    def _dirty_at(self, held: Held, where: Path) -> bool:
        """Whether the person changed ``where`` (or, for a container, anything beneath)."""
        if where and held.regions.editable_in(held.draft, where):
            return not json_equal(get_at(held.draft, where), self._server_at(held, held.draft, where))
        if not held.regions.container(where):
            return False
        return any(prefix_of(where, c.path) for c in changes(held.regions, held.server, held.draft))

    def _notify(self, changed: set[str]) -> None:
        """Tell the subscribers which uids changed; within :meth:`_collecting`, once at its end."""
        if not changed:
            return
        collecting = self._collecting_for
        if collecting is not None and collecting[0] == threading.get_ident():
            collecting[1].update(changed)
            return
        frozen = frozenset(changed)
        for callback in self._subscribers:
            callback(frozen)
