"""``LiveResourceStore``: server objects and the person's drafts, per uid, for one stream.

One store serves one target, projection and session. It keeps what Kubernetes says (the server
object, replaced whole by every event) apart from what the person typed (the draft), and merges
every server change into the draft three-way, so an edit is never lost: it is kept, converges,
or becomes a conflict holding the server's value. Dirty paths, changes and patches are derived
from draft vs server on every read. Every getter returns a copy; the store never aliases a
caller's object.

The server objects live in a :class:`~.truth.ServerTruth`: the store's own, fed by :meth:`apply`,
or one shared by every store of the same stream (the live UI's sessions of one watch), fed once by
its own writer. The store itself holds only what its person did (:class:`_Resource`, made at the
first edit, restore or adopted object of a uid): a clean object is read from the truth.
"""

from __future__ import annotations

import threading
import typing as t
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..events import Event, Redaction
from .bounds import DraftRefused, check_draft
from .errors import (
    InvalidEventError,
    InvalidValueError,
    ItemExistsError,
    KeyExistsError,
    MalformedPathError,
    MissingItemError,
    PathError,
    PathTypeError,
    ReadOnlyPathError,
    UnknownResourceError,
    UnversionedResourceError,
)
from .intents import SaveIntent
from .items import Address, address_of, as_address, keyed_items, resolve
from .journal import Edit, EditRecord
from .keyed_lists import KeyedLists, Schema, identities
from .merge import Conflict, flashed_paths, three_way_merge
from .patch import Change, changes, merge_patch
from .paths import MISSING, Path, as_path, get_at, path_to_pointer
from .policy import DEFAULT_POLICY, EditPolicy
from .reconcile import Reconciliation, Refusal, resolve_redactions
from .recovery import RecoveryCopies, identity_of
from .regions import Regions
from .truth import TICKS, ServerObject, ServerTruth, TruthChange, redacted_paths, uid_of
from .values import check_value, delete_in, json_copy, json_equal, rename_in, set_in, share
from .view_edits import ViewEditRefused, ViewEditResult, ViewProblem, apply_items, plan_view_edits

Subscriber = Callable[[frozenset[str]], None]

NULL_IN_MAP = "An empty value (null) cannot be stored in a map: remove the key, or write '' for an empty string."


@dataclass(slots=True)
class _Resource:
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


def _put(root: Any, path: Path, value: Any) -> Any:
    return delete_in(root, path) if value is MISSING else set_in(root, path, value)


def _present(value: Any) -> Any:
    """A copy of ``value``, or None for :data:`MISSING` (a conflict's removed value)."""
    return None if value is MISSING else json_copy(value)


def _prefix(a: Path, b: Path) -> bool:
    return len(a) <= len(b) and b[: len(a)] == a


def _view_problem_of(refused: DraftRefused, edits: Sequence[Any], items: Sequence[Any]) -> ViewProblem:
    """``refused`` where the person's view has it: under the edit it came from, or at the first edit."""
    message = refused.message[:1].upper() + refused.message[1:] + "."
    for edit in [*edits, *items]:
        if _prefix(edit.path, refused.path):
            return ViewProblem(edit.view_path + refused.path[len(edit.path) :], message)
    for edit in [*edits, *items]:
        if _prefix(refused.path, edit.path):  # a limit: at the first edit under it
            return ViewProblem(edit.view_path if refused.limit else edit.view_path[: len(refused.path)], message)
    return ViewProblem(refused.path, message)


class LiveResourceStore:
    """Server objects, drafts, conflicts and redactions per uid, for one target and projection.

    ``policy`` decides what is editable (:data:`DEFAULT_POLICY`: spec, labels, annotations, data,
    stringData); ``schemas`` maps ``(apiVersion, kind)`` to a structural OpenAPI schema whose keyed
    lists merge by key; ``recovery`` keeps copies of drafts whose objects disappear; ``truth`` is a
    :class:`~.truth.ServerTruth` shared with other stores of the same stream and fed by its own
    writer (``None``: a private one, fed by :meth:`apply`).
    """

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
        self._resources: dict[str, _Resource] = {}
        """What the person did, per uid (a clean object has no entry)."""
        self._hidden: set[str] = set()
        """Uids removed here (an optimistic delete) while the truth still holds them."""
        self._subscribers: list[Subscriber] = []
        self._restoring: dict[str, EditRecord] = {}
        self._lock = threading.RLock()
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

    def detach(self) -> None:
        """Stop following the shared truth: the store keeps the objects it holds now (the same
        immutable objects, no copies) and takes no more server changes, as a store whose stream
        ended. Edits go on. Nothing for a store with a private truth, or one already detached."""
        with self._lock:
            if not self._shared or self._followed is not None:
                return
            self._followed, self._truth = self._truth, self._truth.frozen()

    def reattach(self) -> None:
        """Follow the shared truth again after :meth:`detach`: what changed on the server meanwhile
        is merged as one snapshot cycle would be, and notified."""
        with self._lock:
            shared, held = self._followed, self._truth
            if shared is None:
                return
            self._followed, self._truth = None, shared
            now = {uid: shared.get(uid) for uid in shared.uids()}
            moved = frozenset(uid for uid, server in now.items() if server is not held.get(uid))
            dropped = {uid: server for uid in held.uids() if uid not in now and (server := held.get(uid)) is not None}
            changed = self._absorb(TruthChange(moved, moved, dropped, cycle_ended=True))
        self._notify(changed)

    def diverged(self) -> bool:
        """Whether this store shows a server object other than the truth's: one it removed (an
        optimistic delete) or adopted (a save's result, a guarded read) before the truth caught up."""
        with self._lock:
            if self._hidden:
                return True
            truth = self._truth
            for uid, held in self._resources.items():
                server = truth.get(uid)
                if server is None or server.object is not held.server:
                    return True
            return False

    # -- stream events ---------------------------------------------------------------------------

    def apply(self, event: Event) -> set[str]:
        """Apply one protocol event; return the uids whose state changed (and notify subscribers).

        ``reset`` opens a snapshot cycle (prunes nothing); ``added``/``modified`` replace the server
        object and merge it into the draft; ``deleted`` drops the uid; ``synced`` prunes every uid
        the cycle did not resend; errors change nothing. Re-applying an event changes nothing.
        A store following a shared truth applies the event to the truth, for every store of it.
        """
        if self._shared:
            change = (self._followed or self._truth).apply(event)
            return set(change.changed) | set(change.dropped)
        with self._lock:
            changed = self._absorb(self._truth.apply(event, notify=False))
        self._notify(changed)
        return changed

    def truth_changed(self, change: TruthChange) -> None:
        """The shared truth changed (called by its writer): merge into the drafts, notify."""
        with self._lock:
            if self._followed is not None:
                return  # detached: :meth:`reattach` catches up
            changed = self._absorb(change)
        self._notify(changed)

    @property
    def snapshot_complete(self) -> bool:
        """A snapshot cycle has reached ``synced`` and no newer one is open."""
        return self._truth.snapshot_complete

    def _absorb(self, change: TruthChange) -> set[str]:
        """Bring what the person did in line with ``change`` of the truth; the uids to notify."""
        changed: set[str] = set()
        truth = self._truth
        for uid in change.touched:
            server = truth.get(uid)
            if server is None:
                continue
            if uid in self._hidden:
                self._hidden.discard(uid)
                changed.add(uid)
            held = self._resources.get(uid)
            if held is None:
                record = self._restoring.pop(uid, None)
                if record is not None:
                    held = self._resources[uid] = self._materialized(server)
                    self._replay(uid, held, record)
                    changed.add(uid)
                elif uid in change.changed:
                    changed.add(uid)
                continue
            if self._merge(held, server):
                changed.add(uid)
        for uid in change.dropped:
            if uid in self._hidden:
                self._hidden.discard(uid)
                continue
            self._drop(uid)
            changed.add(uid)
        if change.cycle_ended:
            for uid in [uid for uid in self._resources if uid not in truth]:
                changed |= self._drop(uid)
            for uid in [uid for uid in self._restoring if uid not in truth]:
                del self._restoring[uid]
            self._hidden &= set(truth.uids())
        return changed

    def _materialized(self, server: ServerObject) -> _Resource:
        """A clean object's state, read from the truth (kept only once the person does something)."""
        obj = server.object
        previous = None if server.previous is None else (server.previous, server.previous)
        lists = self._keyed_lists(obj)
        return _Resource(obj, obj, server.redactions, server.regions(self.policy), lists, {}, previous, server.tick)

    def _merge(self, held: _Resource, server: ServerObject) -> bool:
        """Merge the truth's newer ``server`` object into ``held``'s draft three-way."""
        held.tick = server.tick
        if share(server.object, held.server) is held.server and server.redactions == held.redactions:
            if held.draft is held.server:
                held.draft = server.object
            held.server = server.object  # the same content: read the truth's copy, keep none
            return False
        theirs = server.object
        regions = server.regions(self.policy)
        lists = self._keyed_lists(theirs)
        merged = three_way_merge(held.server, held.draft, theirs, regions, lists, held.conflicts)
        held.previous = (held.server, held.draft)
        held.server, held.draft, held.redactions = theirs, merged.draft, server.redactions
        held.regions, held.lists, held.conflicts = regions, lists, merged.conflicts
        return True

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
                held = self._resources[uid] = _Resource(copy, copy, redactions, regions, lists, {}, None, next(TICKS))
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

    # -- host writes -----------------------------------------------------------------------------

    def adopt_saved(self, obj: Mapping[str, Any], redacted: Sequence[Redaction] | None = None) -> None:
        """Adopt a projected object synchronously: a created object, or a save's result.

        A known uid is merged like a server event (later edits survive) and keeps its redactions
        unless ``redacted`` is given; the watch echo of the same object is then a no-op. Unguarded:
        never pass a delayed response (use :meth:`capture_reconciliation`) or a raw object.
        """
        uid = uid_of(obj)
        with self._lock:
            held = self._resources.get(uid)
            if held is None:
                server = self._visible(uid)
                held = None if server is None else self._materialized(server)
            if redacted is not None:
                redactions = tuple(redacted)
            else:
                redactions = held.redactions if held is not None else ()
            changed = self._upsert(uid, obj, redactions)
        self._notify(changed)

    def remove_resource(self, uid: str) -> bool:
        """Drop ``uid`` and its draft now (an optimistic delete); False when it was not held."""
        with self._lock:
            if uid in self._hidden or (uid not in self._resources and uid not in self._truth):
                return False
            self._drop(uid)
            if uid in self._truth:
                self._hidden.add(uid)
        self._notify({uid})
        return True

    def capture_save(self, uid: str) -> SaveIntent | None:
        """The save intent for ``uid``: uid, held resourceVersion and patch, or None when clean."""
        with self._lock:
            held = self._get(uid)
            patch = self._patch_of(held)
            if patch is None:
                return None
            version = held.server.get("metadata", {}).get("resourceVersion")
            if not isinstance(version, str) or not version:
                raise UnversionedResourceError(uid)
            return SaveIntent(uid, version, patch)

    def capture_reconciliation(self, uid: str) -> Reconciliation:
        """A guard for a read of ``uid`` started after this call; see :class:`Reconciliation`."""
        with self._lock:
            tick = self._get(uid).tick
            epoch = self._truth.epoch

        def accept(obj: Any, paths: Sequence[str] | None, redacted: Sequence[Redaction] | None) -> Refusal | None:
            with self._lock:
                refusal = self._refusal(uid, tick, epoch, obj)
                if refusal is not None:
                    return refusal
                held = self._get(uid)
                redactions = resolve_redactions(held.redactions, paths, redacted)
                if redactions is None:
                    return Refusal.UNKNOWN_REDACTION
                try:
                    self._upsert(uid, obj, redactions)
                except InvalidEventError:
                    return Refusal.UNKNOWN_REDACTION
            self._notify({uid})
            return None

        return Reconciliation(uid, accept)

    def _refusal(self, uid: str, tick: int, epoch: int, obj: Any) -> Refusal | None:
        if self._truth.epoch != epoch:
            return Refusal.SNAPSHOT
        held = self._find(uid)
        if held is None:
            return Refusal.REMOVED
        if held.tick != tick:
            return Refusal.NEWER_EVENT
        try:
            read_uid = uid_of(obj)
        except InvalidEventError:
            return Refusal.INVALID_OBJECT
        return Refusal.REPLACED if read_uid != uid else None

    # -- edits -----------------------------------------------------------------------------------

    def set_value(self, uid: str, path: Sequence[Any], value: Any) -> None:
        """Set the draft's value at ``path``, creating missing maps (or a list for index 0)."""
        with self._lock:
            held, where = self._editable(uid, path)
            value = json_copy(value)
            check_value(value, in_map=isinstance(where[-1], str))
            changed = self._commit(uid, held, set_in(held.draft, where, value), where)
        self._notify(changed)

    def add_key(self, uid: str, path: Sequence[Any], value: Any = "") -> None:
        """Add the map key ``path[-1]`` with ``value``; raises KeyExistsError if it is there."""
        with self._lock:
            held, where = self._editable(uid, path)
            if not isinstance(where[-1], str):
                raise PathTypeError(where, "add_key adds a map key; the last segment is an index")
            parent = get_at(held.draft, where[:-1])
            if isinstance(parent, dict) and where[-1] in parent:
                raise KeyExistsError(where, "the key already exists")
            value = json_copy(value)
            check_value(value, in_map=True)
            changed = self._commit(uid, held, set_in(held.draft, where, value), where)
        self._notify(changed)

    def remove_key(self, uid: str, path: Sequence[Any]) -> None:
        """Remove the map key at ``path`` from the draft (nothing happens if it is absent)."""
        with self._lock:
            held, where = self._editable(uid, path)
            changed = self._commit(uid, held, delete_in(held.draft, where), where)
        self._notify(changed)

    def rename_key(self, uid: str, path: Sequence[Any], new_key: str) -> None:
        """Rename the map key at ``path`` to ``new_key`` in place; both keys must be editable."""
        with self._lock:
            held, where = self._editable(uid, path)
            if not isinstance(new_key, str):
                raise MalformedPathError(new_key, "a map key is a string")
            target = where[:-1] + (new_key,)
            if not held.regions.editable_in(held.draft, target):
                raise ReadOnlyPathError(target, "read-only path")
            draft = rename_in(held.draft, where, new_key)
            changed = self._commit(uid, held, draft, where, target)
        self._notify(changed)

    def revert(self, uid: str, path: Sequence[Any] | None = None) -> None:
        """Give ``path`` (or the whole object) the server's value again; its conflicts clear."""
        with self._lock:
            held = self._get(uid)
            if path is None:
                had_conflicts = bool(held.conflicts)
                held.conflicts = {}
                changed = self._commit(uid, held, held.server) | ({uid} if had_conflicts else set())
            else:
                changed = self._commit(uid, held, self._reverted(held, as_path(path)), as_path(path))
        self._notify(changed)

    def edit_view(
        self, uid: str, before: Any, after: Any, refuse: Callable[[Path], str | None] | None = None
    ) -> ViewEditResult:
        """Apply what changed from the view ``before`` to the view ``after`` as leaf-level edits of
        the current draft (:mod:`.view_edits`): all of them, or none.

        An edited value the draft moved away from since the view (a server change) is kept as the
        person's, with the server's value as a conflict. ``refuse(path)`` narrows the policy further
        (a message refuses the path). Raises :class:`~.view_edits.ViewEditRefused` with every problem.
        """
        with self._lock:
            held = self._get(uid)
            keys = held.lists.map_keys if held.lists is not None else None
            plan = plan_view_edits(before, after, held.draft, keys)
            problems = list(plan.problems)
            for edit in plan.edits:
                refused = self._view_problem(held, edit.path, refuse)
                if refused is not None:
                    problems.append(ViewProblem(edit.view_path, refused, 403))
                elif edit.value is None and isinstance(edit.path[-1], str):
                    problems.append(ViewProblem(edit.view_path, NULL_IN_MAP))
                elif edit.value is not MISSING:
                    try:
                        check_value(edit.value, in_map=isinstance(edit.path[-1], str))
                    except InvalidValueError as exc:
                        problems.append(ViewProblem(edit.view_path, str(exc)[:1].upper() + str(exc)[1:] + "."))
            for items in plan.items:
                problem = self._view_problem(held, items.path, refuse)
                if problem is not None:
                    problems.append(ViewProblem(items.view_path, problem, 403))
            if problems:
                raise ViewEditRefused(tuple(problems))
            draft, conflicts = held.draft, dict(held.conflicts)
            try:
                for edit in plan.edits:
                    current, theirs = get_at(draft, edit.path), get_at(held.server, edit.path)
                    moved = not json_equal(current, edit.seen) and not json_equal(current, edit.value)
                    if moved and json_equal(current, theirs):
                        conflicts[edit.path] = Conflict(edit.path, _present(theirs), theirs is not MISSING)
                    value = json_copy(edit.value)
                    draft = delete_in(draft, edit.path) if value is MISSING else set_in(draft, edit.path, value)
                for items in plan.items:
                    merged, conflicting = apply_items(get_at(draft, items.path), items)
                    if conflicting:
                        theirs = get_at(held.server, items.path)
                        conflicts[items.path] = Conflict(items.path, _present(theirs), theirs is not MISSING)
                    draft = set_in(draft, items.path, json_copy(merged))
            except PathTypeError as exc:
                where = exc.path if isinstance(exc.path, tuple) else ()
                raise ViewEditRefused((ViewProblem(where, "This field no longer has that shape.", 409),)) from None
            edited = [e.path for e in plan.edits] + [i.path for i in plan.items]
            try:
                check_draft(held.server, held.draft, draft, edited)
            except DraftRefused as refused:
                raise ViewEditRefused((_view_problem_of(refused, plan.edits, plan.items),)) from None
            held.conflicts = conflicts
            changed = self._commit(uid, held, draft, *edited, checked=True)
            conflicted = tuple(p for p in edited if p in held.conflicts)
        self._notify(changed)
        return ViewEditResult(len(edited), conflicted)

    def _view_problem(self, held: _Resource, path: Path, refuse: Callable[[Path], str | None] | None) -> str | None:
        if not path or not held.regions.editable_in(held.draft, path):
            return f"{path_to_pointer(path) or 'The object'} is read-only in this editor."
        return refuse(path) if refuse is not None else None

    def _reverted(self, held: _Resource, where: Path) -> Any:
        if where and held.regions.editable_in(held.draft, where):
            return self._revert_at(held, held.draft, where)
        if not held.regions.container(where):
            raise ReadOnlyPathError(where, "read-only path")
        draft = held.draft
        for change in changes(held.regions, held.server, held.draft):
            if _prefix(where, change.path):
                draft = self._revert_at(held, draft, change.path)
        return draft

    def take_theirs(self, uid: str, path: Sequence[Any]) -> None:
        """Resolve a conflict by taking the server's value at ``path`` (the same as :meth:`revert`)."""
        self.revert(uid, as_path(path))

    def keep_mine(self, uid: str, path: Sequence[Any]) -> None:
        """Resolve the conflicts at, under or around ``path`` by keeping the draft; the next Save sends it."""
        with self._lock:
            held = self._get(uid)
            where = as_path(path)
            if not (held.regions.editable_in(held.draft, where) or held.regions.container(where)):
                raise ReadOnlyPathError(where, "read-only path")
            kept = {p: c for p, c in held.conflicts.items() if not (_prefix(p, where) or _prefix(where, p))}
            if len(kept) == len(held.conflicts):
                return
            held.conflicts = kept
            held.sequence += 1
            self._resources[uid] = held
        self._notify({uid})

    def _revert_at(self, held: _Resource, draft: Any, path: Path) -> Any:
        """``draft`` with the server's value at ``path``, widening to the enclosing value if needed."""
        where = path
        while True:
            theirs = self._server_at(held, draft, where)
            try:
                if theirs is not MISSING:
                    return set_in(draft, where, theirs)
                items = get_at(draft, where[:-1])
                if where and isinstance(where[-1], int) and type(items) is list and where[-1] < len(items):
                    return set_in(draft, where[:-1], [*items[: where[-1]], *items[where[-1] + 1 :]])
                return delete_in(draft, where)
            except PathTypeError:
                parent = where[:-1]
                if not parent or not held.regions.editable_in(draft, parent):
                    raise
                where = parent

    def _editable(self, uid: str, path: Sequence[Any]) -> tuple[_Resource, Path]:
        held = self._get(uid)
        where = as_path(path)
        if not where or not held.regions.editable_in(held.draft, where):
            raise ReadOnlyPathError(where, "read-only path")
        return held, where

    def _commit(
        self, uid: str, held: _Resource, draft: dict[str, Any], *edited: Path, checked: bool = False
    ) -> set[str]:
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
            if any(_prefix(p, e) or _prefix(e, p) for e in edited)
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

    # -- edit records ----------------------------------------------------------------------------

    def edit_record(self, uid: str) -> EditRecord | None:
        """What the person did to ``uid`` (edits with their bases, open conflicts), or None when
        ``uid`` is not held. A clean object gives a record without edits."""
        with self._lock:
            held = self._find(uid)
            if held is None:
                return self._restoring.get(uid)
            edits = tuple(
                Edit(
                    c.path,
                    MISSING if c.kind == "add" else json_copy(c.old),
                    MISSING if c.kind == "delete" else json_copy(c.new),
                )
                for c in changes(held.regions, held.server, held.draft)
            )
            return EditRecord(uid, edits, tuple(c.path for c in self._open_conflicts(held)), held.sequence)

    def restore(self, record: EditRecord) -> None:
        """Make ``record`` the person's draft of its object: at once when the object is held,
        otherwise when it arrives (a snapshot cycle that ends without it forgets the record).

        The record replaces the draft held. Its edits merge three-way into the server object: an
        edit whose base the server has since changed becomes a conflict (or converges), and the
        conflicts it names stay open while the draft and the server still disagree there. A record
        older than the draft held (a lower :meth:`edit_sequence`) changes nothing.
        """
        with self._lock:
            held = self._find(record.uid)
            if held is None:
                waiting = self._restoring.get(record.uid)
                if waiting is None or waiting.sequence <= record.sequence:
                    self._restoring[record.uid] = record
                return
            if record.sequence < held.sequence:
                return
            self._resources[record.uid] = held
            changed = self._replay(record.uid, held, record)
        self._notify(changed)

    def _replay(self, uid: str, held: _Resource, record: EditRecord) -> set[str]:
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

    def _open_conflicts(self, held: _Resource) -> list[Conflict]:
        return [
            c
            for p, c in held.conflicts.items()
            if not json_equal(get_at(held.draft, p), self._server_at(held, held.draft, p))
        ]

    # -- list items ------------------------------------------------------------------------------

    def kind_schema(self, uid: str) -> Schema | None:
        """The schema this store holds for ``uid``'s kind (``None``: none), as editors read it."""
        with self._lock:
            held = self._get(uid)
            obj = held.server
            return self._schemas.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))

    def list_keys(self, uid: str, path: Sequence[Any]) -> tuple[str, ...] | None:
        """The list-map keys of the list at ``path`` by the kind's schema, or None: not a keyed list."""
        with self._lock:
            held = self._get(uid)
            return self._map_keys(held)(as_path(path))

    def resolve(self, uid: str, address: Sequence[Any]) -> Path:
        """The path in the draft now of ``address``, whose keyed-list items are named by their keys
        (see :mod:`.items`); raises ``MalformedPathError``, ``MissingItemError`` or ``PathTypeError``."""
        with self._lock:
            held = self._get(uid)
            return resolve(held.draft, as_address(address), self._map_keys(held))

    def address(self, uid: str, path: Sequence[Any]) -> Address:
        """``path`` of the draft with the items of keyed lists named by their keys."""
        with self._lock:
            held = self._get(uid)
            return address_of(held.draft, as_path(path), self._map_keys(held))

    def insert_item(self, uid: str, path: Sequence[Any], value: Any, index: int | None = None) -> int:
        """Insert ``value`` into the list at ``path`` (at ``index``; the end by default) and return
        its index. A keyed list takes only an item with all its keys, unlike every other item's
        (``InvalidValueError``, ``ItemExistsError``)."""
        with self._lock:
            held, where = self._editable(uid, path)
            items = self._list_at(held, where, allow_missing=True)
            at = len(items) if index is None else index
            if not 0 <= at <= len(items):
                raise PathTypeError(where + (at,), f"index {at} is outside a list of {len(items)}")
            value = json_copy(value)
            check_value(value, in_map=False)
            updated = [*items[:at], value, *items[at:]]
            keys = self._map_keys(held)(where)
            if keys is not None:
                if type(value) is not dict or not all(value.get(k) is not None for k in keys):
                    raise InvalidValueError(f"an item of this list needs {', '.join(keys)}")
                if identities(updated, keys) is None:
                    raise ItemExistsError(where, "an item with these keys already exists")
            changed = self._commit(uid, held, set_in(held.draft, where, updated), where)
        self._notify(changed)
        return at

    def remove_item(self, uid: str, path: Sequence[Any]) -> None:
        """Remove the list item at ``path`` (a path ending in an index) from the draft."""
        with self._lock:
            held, where = self._editable(uid, path)
            items, at = self._item_at(held, where)
            updated = [*items[:at], *items[at + 1 :]]
            changed = self._commit(uid, held, set_in(held.draft, where[:-1], updated), where[:-1])
        self._notify(changed)

    def move_item(self, uid: str, path: Sequence[Any], index: int) -> None:
        """Move the list item at ``path`` to position ``index`` of its list."""
        with self._lock:
            held, where = self._editable(uid, path)
            items, at = self._item_at(held, where)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(items):
                raise PathTypeError(where, f"position {index!r} is outside a list of {len(items)}")
            updated = [*items[:at], *items[at + 1 :]]
            updated.insert(index, items[at])
            changed = self._commit(uid, held, set_in(held.draft, where[:-1], updated), where[:-1])
        self._notify(changed)

    def set_contested(self, uid: str, path: Sequence[Any], value: Any) -> None:
        """Set the draft's value at ``path`` like :meth:`set_value`, for an edit made against a value
        the draft no longer holds: unless the result equals the server's, a conflict is recorded
        holding the server's value (at the item field, or at the first list merged whole).
        """
        with self._lock:
            held, where = self._editable(uid, path)
            value = json_copy(value)
            check_value(value, in_map=isinstance(where[-1], str))
            changed = self._commit(uid, held, set_in(held.draft, where, value), where)
            at = self._merged_whole(held, where)
            theirs = self._server_at(held, held.draft, at)
            if not json_equal(get_at(held.draft, at), theirs):
                present = theirs is not MISSING
                held.conflicts[at] = Conflict(at, theirs if present else None, present)
                changed = {uid}
        self._notify(changed)

    def _map_keys(self, held: _Resource) -> Callable[[Path], tuple[str, ...] | None]:
        lists = held.lists
        return (lambda path: None) if lists is None else lists.map_keys

    def _server_at(self, held: _Resource, draft: Any, path: Path) -> Any:
        """The server's value for ``path`` of ``draft``: the same keyed-list items, wherever they are."""
        keys_of = self._map_keys(held)
        try:
            return get_at(held.server, resolve(held.server, address_of(draft, path, keys_of), keys_of))
        except MissingItemError:
            return MISSING
        except (MalformedPathError, PathTypeError):
            return get_at(held.server, path)

    def _list_at(self, held: _Resource, where: Path, *, allow_missing: bool = False) -> list[Any]:
        items = get_at(held.draft, where)
        if items is MISSING and allow_missing:
            return []
        if type(items) is not list:
            raise PathTypeError(where, "not a list")
        return items

    def _item_at(self, held: _Resource, where: Path) -> tuple[list[Any], int]:
        at = where[-1]
        if not isinstance(at, int):
            raise PathTypeError(where, "an item is named by its position in its list")
        items = self._list_at(held, where[:-1])
        if at >= len(items):
            raise PathTypeError(where, f"index {at} is past the end of a list of {len(items)}")
        return items, at

    def _merged_whole(self, held: _Resource, where: Path) -> Path:
        """``where`` cut at the first list the merge treats as one value (not keyed)."""
        keys_of = self._map_keys(held)
        node: Any = held.draft
        for depth, segment in enumerate(where):
            if type(node) is list and not keyed_items(node, keys_of(where[:depth])):
                return where[:depth]
            node = get_at(node, (segment,))
        return where

    # -- queries ---------------------------------------------------------------------------------

    def uids(self) -> list[str]:
        """The uids held, in arrival order (objects adopted here before the server sent them last)."""
        with self._lock:
            truth, hidden = self._truth, self._hidden
            held = [uid for uid in truth.uids() if uid not in hidden] if hidden else truth.uids()
            return held + [uid for uid in self._resources if uid not in truth]

    def server(self, uid: str) -> dict[str, Any] | None:
        """A copy of the server object held for ``uid``, or None."""
        with self._lock:
            held = self._resources.get(uid)
            if held is not None:
                return t.cast("dict[str, Any]", json_copy(held.server))
            server = self._visible(uid)
            return None if server is None else t.cast("dict[str, Any]", json_copy(server.object))

    def draft(self, uid: str) -> dict[str, Any] | None:
        """A copy of the person's draft of ``uid``, or None."""
        with self._lock:
            held = self._resources.get(uid)
            if held is not None:
                return t.cast("dict[str, Any]", json_copy(held.draft))
            server = self._visible(uid)
            return None if server is None else t.cast("dict[str, Any]", json_copy(server.object))

    def edited_uids(self) -> list[str]:
        """The uids the person did something to (edited, restored, adopted), in the order they
        did: every uid with a dirty path or a conflict is among them; a clean object never is."""
        with self._lock:
            return [uid for uid in self._resources if uid not in self._hidden]

    def clean(self, uid: str) -> ServerObject | None:
        """The truth's delivery of ``uid`` when this store holds nothing of its own for it (never
        edited, restored, adopted or removed here): what every such store shows alike. Shared:
        never mutate its object."""
        with self._lock:
            return None if uid in self._resources else self._visible(uid)

    def named(self, name: str, namespace: str | None = None) -> list[str]:
        """The uids whose server object is named ``name`` (in ``namespace``, when given), in
        arrival order; nothing is copied."""
        found = []
        with self._lock:
            for uid in self.uids():
                held = self._resources.get(uid)
                server = held.server if held is not None else self._truth.get(uid)
                obj = server.object if isinstance(server, ServerObject) else server
                metadata = (obj or {}).get("metadata") or {}
                if metadata.get("name") == name and (not namespace or metadata.get("namespace", "") == namespace):
                    found.append(uid)
        return found

    def unsaved(self) -> bool:
        """Whether any object has a dirty path or an open conflict (clean objects are not looked at)."""
        with self._lock:
            return any(
                changes(held.regions, held.server, held.draft) or self._open_conflicts(held)
                for held in self._resources.values()
            )

    def redactions(self, uid: str) -> tuple[Redaction, ...]:
        """The withheld paths of ``uid`` with their stream revisions."""
        with self._lock:
            return self._get(uid).redactions

    def is_read_only(self, uid: str, path: Sequence[Any]) -> bool:
        """Whether an edit at ``path`` would be refused with :class:`ReadOnlyPathError`."""
        with self._lock:
            held = self._get(uid)
            where = as_path(path)
            return not where or not held.regions.editable_in(held.draft, where)

    def changes(self, uid: str) -> list[Change]:
        """The person's editable changes (copies), derived from draft vs server now."""
        with self._lock:
            held = self._get(uid)
            return [
                replace(c, old=json_copy(c.old), new=json_copy(c.new))
                for c in changes(held.regions, held.server, held.draft)
            ]

    def dirty(self, uid: str) -> list[Path]:
        """The paths the person changed (an array counts as one path)."""
        with self._lock:
            held = self._get(uid)
            return [c.path for c in changes(held.regions, held.server, held.draft)]

    def is_dirty(self, uid: str, path: Sequence[Any] = ()) -> bool:
        """Whether the person changed ``path`` (or, for a container such as ``()``, anything beneath)."""
        with self._lock:
            held = self._get(uid)
            where = as_path(path)
            if where and held.regions.editable_in(held.draft, where):
                return not json_equal(get_at(held.draft, where), self._server_at(held, held.draft, where))
            if not held.regions.container(where):
                return False
            return any(_prefix(where, c.path) for c in changes(held.regions, held.server, held.draft))

    def edit_sequence(self, uid: str) -> int:
        """How many edits the person has made to ``uid`` (0 when it is not held). It only grows, and
        a draft read after it holds every one of them: a render that reads it first shows them all.
        """
        with self._lock:
            held = self._resources.get(uid)
            return held.sequence if held is not None else 0

    def conflicts(self, uid: str) -> list[Conflict]:
        """The disagreements to resolve, each with the server's value (a copy)."""
        with self._lock:
            held = self._get(uid)
            return [replace(c, theirs=json_copy(c.theirs)) for c in self._open_conflicts(held)]

    def flashed(self, uid: str) -> list[Path]:
        """The paths the last server change moved where the person had not edited (to highlight).

        Empty after a re-delivered (unchanged) object; an array counts as one path.
        """
        with self._lock:
            held = self._get(uid)
            if held.previous is None:
                return []
            return flashed_paths(held.previous[0], held.previous[1], held.server)

    def patch(self, uid: str) -> dict[str, Any] | None:
        """The RFC 7386 merge patch of the person's editable changes, or None."""
        with self._lock:
            return self._patch_of(self._get(uid))

    def _patch_of(self, held: _Resource) -> dict[str, Any] | None:
        return merge_patch(changes(held.regions, held.server, held.draft))

    def _find(self, uid: str) -> _Resource | None:
        """What this store holds for ``uid``: the person's state, else the clean object's as read
        from the truth (not kept: an edit keeps it), else None."""
        held = self._resources.get(uid)
        if held is not None:
            return held
        server = self._visible(uid)
        return None if server is None else self._materialized(server)

    def _get(self, uid: str) -> _Resource:
        held = self._find(uid)
        if held is None:
            raise UnknownResourceError(uid)
        return held

    # -- notifications ---------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(changed_uids)`` after every change; returns the unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def _notify(self, changed: set[str]) -> None:
        if not changed:
            return
        frozen = frozenset(changed)
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            callback(frozen)
